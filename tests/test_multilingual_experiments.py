"""Multilingual experiments (specdec.multilingual.experiments, tables): lossless greedy SD for every shipped drafter on
translation prompts, the grid on the harness, the tables, the statistics and the paper profile's offline error."""

import numpy as np
import pandas as pd
import pytest
import torch

from specdec import zoo
from specdec.harness.profile import Profile
from specdec.multilingual import experiments as mb
from specdec.multilingual import hubdata, parallel, scaling_verdicts
from specdec.multilingual import tables as mt
from specdec.results import ResultStore
from specdec.zoo.tasks import encode

TINY = mb.Drafters("tiny")

ML_ZOO = (zoo.MODELS / "ml-target" / "config.json").exists()
needs_zoo = pytest.mark.skipif(not ML_ZOO, reason="multilingual zoo not shipped")


def _shipped_drafters() -> list[str]:
    return sorted(p.name for p in zoo.MODELS.glob("ml-draft-*") if (p / "config.json").exists())


def test_prompt_set_is_a_seeded_sample_of_heldout_prompts():
    a = mb.prompt_set(TINY, "django", "de", "en", 5, seed=0)
    assert [r["id"] for r in a] == [r["id"] for r in mb.prompt_set(TINY, "django", "de", "en", 5, seed=0)]
    assert [r["id"] for r in a] != [r["id"] for r in mb.prompt_set(TINY, "django", "de", "en", 5, seed=1)]
    heldout = {r["id"] for r in parallel.pairs("django", "de", "heldout")}
    for r in a:
        assert r["prompt"].startswith("Translate German to English: ") and r["prompt"].endswith("\nEnglish:")
        assert r["id"].rsplit(":", 1)[0] in heldout
        assert r["ids"][0] == 1 and len(r["ids"]) <= 96
    fr_ja = mb.prompt_set(TINY, "sphinx", "fr", "ja", 3)
    assert all(r["direction"] == "fr-ja" and r["prompt"].endswith("\nJapanese:") for r in fr_ja)
    with pytest.raises(ValueError, match="asked for"):
        mb.prompt_set(TINY, "django", "de", "en", 10_000)
    with pytest.raises(ValueError, match="profile"):
        mb.Drafters("huge")


def test_prompt_set_none_is_every_heldout_pair_of_the_direction():
    every = mb.prompt_set(TINY, "django", "de", "en", None)
    heldout = [parallel.direction_prompt(r) for r in parallel.joined_pairs("django", "de", "en", "heldout")]
    short = [r for r in heldout if len(encode(TINY.tokenizer, r["prompt"])) <= 96]
    assert [r["id"] for r in every] == [r["id"] for r in short] and len(every) > 50
    assert {r["id"] for r in mb.prompt_set(TINY, "django", "de", "en", 5, seed=0)} <= {r["id"] for r in every}
    with pytest.raises(ValueError, match="None"):
        mb.prompt_set(TINY, "django", "de", "en", 0)


def test_prompt_seed_depends_on_the_seed_and_the_prompt_id_only():
    assert mb.prompt_seed(1, "a:de-en") == mb.prompt_seed(1, "a:de-en")
    assert mb.prompt_seed(1, "a:de-en") != mb.prompt_seed(2, "a:de-en")
    assert mb.prompt_seed(1, "a:de-en") != mb.prompt_seed(1, "b:de-en")


def test_paper_profile_fails_offline_naming_the_dataset(monkeypatch):
    from specdec.hub import DatasetNotAvailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-specdec-cache")
    with pytest.raises(DatasetNotAvailableError, match="wmt16.*hf download"):
        mb.prompt_set(mb.Drafters(Profile.load("paper", "cpu")), "django", "de", "en", 3)
    with pytest.raises(DatasetNotAvailableError, match="iwslt2017"):
        mb.prompt_set(mb.Drafters(Profile.load("paper", "cpu")), "sphinx", "de", "en", 3)
    with pytest.raises(DatasetNotAvailableError, match="JParaCrawl"):
        mb.prompt_set(mb.Drafters(Profile.load("paper", "cpu")), "django", "ja", "en", 3)
    with pytest.raises(DatasetNotAvailableError, match="wmt14"):
        mb.prompt_set(mb.Drafters(Profile.load("paper", "cpu")), "django", "en", "fr", 3)
    with pytest.raises(ValueError, match="no de->fr set"):
        mb.prompt_set(mb.Drafters(Profile.load("paper", "cpu")), "django", "de", "fr", 3)
    assert "{prompt}" in hubdata.paper_setup()["chat_template"]


@needs_zoo
def test_greedy_sd_is_lossless_for_every_shipped_drafter_and_pld():
    torch.set_num_threads(1)
    target = TINY.load("ml-target")
    drafters = {"ar": None, "pld": "pld", **{name: name for name in _shipped_drafters()}}
    assert {"ml-draft-generic", "ml-draft-pf-de", "ml-draft-f-zh"} <= set(drafters)
    for _x, direction in (("de", ("de", "en")), ("ja", ("en", "ja"))):
        prompt = mb.prompt_set(TINY, "django", *direction, 1, seed=3)[0]
        rows = mb.run_group(TINY, target, drafters, prompt, gamma=3, temperature=0.0, seed=0, max_new_tokens=24)
        assert all(r["same_as_ar"] is True for r in rows)  # run_group also asserts it
        assert len({r["text"] for r in rows}) == 1 and len({r["chrf"] for r in rows}) == 1
        assert rows[0]["target_calls"] == rows[0]["new_tokens"]  # plain decoding: one call per token


@needs_zoo
def test_run_grid_resumes_and_tables_add_up(tmp_path):
    torch.set_num_threads(1)
    store = ResultStore("tiny", "ml_main", mb.KEYS, root=tmp_path)
    prompts = {"de-en": mb.prompt_set(TINY, "django", "de", "en", 2)}
    kwargs = dict(gamma=3, temperatures=[0.0, 1.0], seeds=[0, 1], max_new_tokens=12)
    exp = mb.grid(TINY, store, prompts, mb.table1_drafters, **kwargs)
    frame = exp.run()
    assert len(frame) == 2 * (1 + 2) * len(mt.METHODS) and len(exp.experiments) == 3  # T 0 once, T 1 per seed
    assert (frame[frame.temperature == 0].same_as_ar.astype(str) == "True").all()
    references = exp.context["references"]
    again = mb.grid(TINY, store, prompts, mb.table1_drafters, **kwargs).run()  # everything done: nothing appended
    assert len(store.frame()) == len(frame) == len(again)
    frame = mt.select(frame, prompts, 3, [0.0, 1.0], [0, 1], 12)
    ratios = {d: 0.25 for d in mb.table1_drafters("de-en").values() if d} | {"pld": 0.0}
    table = mt.method_table(frame, 3, ratios, references)
    ar = table[table.method == "ar"]
    assert (ar.tau == 1).all() and (ar.measured_speedup == 1).all() and (ar.expected_speedup == 1).all()
    pf = table[(table.method == "sps-pf") & (table.temperature == 0)].iloc[0]
    assert pf.expected_speedup == pytest.approx(pf.tau / (3 * 0.25 + 1))
    wide = mt.table1(table, "tau")
    assert {"Medusa", "EAGLE", "Lookahead"} <= set(wide.index) and wide.loc["EAGLE"].isna().all()
    assert (0.0, "mean") in wide.columns
    quality = mt.quality_table(frame, references)
    assert quality[(quality.temperature == 0) & (quality.method != "ar")].identical_to_ar.all()
    assert quality[quality.temperature == 1].vs_ar_p_value.dropna().between(0, 1).all()


@needs_zoo
def test_a_sampled_row_does_not_depend_on_the_prompts_place_in_the_sample(tmp_path):
    torch.set_num_threads(1)
    a, b = mb.prompt_set(TINY, "django", "de", "en", 2, seed=4)
    kwargs = dict(gamma=3, temperatures=[1.0], seeds=[1], max_new_tokens=10)
    drafters = {"ar": None, "sps-pf": "ml-draft-pf-de"}
    texts = []
    for i, rows in enumerate(([a, b], [b])):
        store = ResultStore("tiny", f"ml_place{i}", mb.KEYS, root=tmp_path)
        frame = mb.grid(TINY, store, {"de-en": rows}, lambda p: drafters, **kwargs).run()
        texts.append(frame[frame.prompt == b["id"]].set_index("method").text.to_dict())
    assert texts[0] == texts[1]
    fresh = mb.recompute(
        [
            dict(
                pair="de-en",
                source="django",
                gamma=3,
                max_new_tokens=10,
                temperature=1.0,
                seed=1,
                device="cpu",
                prompt=b["id"],
                method="sps-pf",
                drafter="ml-draft-pf-de",
            )
        ]
    )
    assert fresh.text.tolist() == [texts[0]["sps-pf"]]


def test_paired_bootstrap_and_loglinear_fit():
    rng = np.random.default_rng(0)
    a = rng.normal(50, 5, 200)
    same = mt.paired_bootstrap(a, a + rng.normal(0, 1, 200))
    assert same["ci_low"] < 0 < same["ci_high"] and same["p_value"] > 0.05
    shifted = mt.paired_bootstrap(a + 3, a)
    assert shifted["mean_diff"] == pytest.approx(3) and shifted["p_value"] < 0.01
    curve = pd.DataFrame({"finetune_tokens": [1e3, 1e4, 1e5, 1e6], "tau": [1.0, 1.5, 2.0, 2.5]})
    fit = scaling_verdicts.loglinear_fit(curve)
    assert (
        fit["slope"] == pytest.approx(0.5) and fit["intercept"] == pytest.approx(-0.5) and fit["r2"] == pytest.approx(1)
    )


@needs_zoo
def test_budget_grid_and_training_summary():
    grid = TINY.budget_grid("de")
    assert list(grid.recipe.unique()) == ["F", "P-F"] and len(grid) == 8
    assert set(grid[grid.finetune_budget == grid.finetune_budget.max()].load) == {"ml-draft-f-de", "ml-draft-pf-de"}
    assert all((zoo.MODELS / name / "config.json").exists() for name in grid.load)
    summary = TINY.training_summary()
    assert {"model", "parameters", "device", "seconds"} <= set(summary.columns)


@needs_zoo
def test_latency_ratio_is_measured_once_per_drafter_shape(tmp_path):
    torch.set_num_threads(1)
    store = ResultStore("tiny", "ml_latency", ["drafter", "device", "S"], root=tmp_path)
    ratios = mb.latency_ratios(store, TINY, ["ml-draft-generic", "ml-draft-pf-de", "pld"], repeats=3)
    assert ratios["ml-draft-generic"] == ratios["ml-draft-pf-de"] > 0 and ratios["pld"] == 0
    assert len(store.frame()) == 1 and store.frame().drafter[0].startswith("llama h64 L2")
    again = mb.latency_ratios(store, TINY, ["ml-draft-f-de"], repeats=3)  # same shape: read back, not re-measured
    assert again["ml-draft-f-de"] == ratios["ml-draft-generic"] and len(store.frame()) == 1


def test_weights_digest_keys_rows_by_the_weights(monkeypatch, tmp_path):
    """A retrained drafter (other bytes under the same name) gets another ``weights`` key: its rows never reuse the
    old model's."""
    import shutil

    ml = mb.Drafters("tiny")
    f, pf = ml.weights_digest("ml-draft-f-de"), ml.weights_digest("ml-draft-pf-de")
    assert len(f) == 12 and f != pf and ml.weights_digest(None) == ml.weights_digest("pld") not in (f, pf)
    shutil.copytree(zoo.model_dir("ml-draft-f-de"), tmp_path / "ml-draft-f-de")
    real = zoo.model_dir
    monkeypatch.setattr(zoo, "model_dir", lambda name: tmp_path / name if name == "ml-draft-f-de" else real(name))
    assert mb.Drafters("tiny").weights_digest("ml-draft-f-de") == f  # a new Drafters hashes again
    weights = tmp_path / "ml-draft-f-de" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-2] + b"\x00\x01")
    ml = mb.Drafters("tiny")
    assert ml.weights_digest("ml-draft-f-de") != f and ml.weights_digest("ml-draft-pf-de") == pf


def test_translatable_set_depends_on_the_target_output_only():
    rows = mb.prompt_set(TINY, "sphinx", "de", "en", None)[:12]
    texts = [r["reference"] if i < 3 else "zzzz" for i, r in enumerate(rows)]
    frame = pd.DataFrame(
        {"pair": "de-en", "source": "sphinx", "method": "ar", "temperature": 0.0, "prompt": [r["id"] for r in rows]}
    ).assign(text=texts)
    got = mb.translatable_set(frame, TINY)
    assert got.translatable.tolist() == [True] * 3 + [False] * 9 and (got.chrf[:3] == 100).all()
    drafted = pd.concat([frame, frame.assign(method="sps-pf", text="other")])
    assert got.equals(mb.translatable_set(drafted, TINY))


@needs_zoo
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_batched_cell_stores_the_batch_one_rows(tmp_path, temperature):
    """A cell decoded 4 prompts at a time (``generate_batch``) stores the rows of the same cell decoded one prompt at
    a time in every column but the walltime ones: the same tokens for every method, PLD included, greedy and sampled
    (each prompt's own seed), so ``same_as_ar`` and the lossless assertion hold per row. The rows of a batch have
    empty walltime columns and a provenance line naming the batch size; the fifth prompt, decoded alone, is timed."""
    import json

    torch.set_num_threads(1)
    target = TINY.load("ml-target")
    prompts = mb.prompt_set(TINY, "django", "de", "en", 5, seed=2)
    frames, stores = {}, {}
    for b in (1, 4):
        stores[b] = ResultStore("tiny", "ml_main", mb.KEYS, root=tmp_path / f"b{b}")
        exp = mb.cell(stores[b], TINY, target, "de-en", prompts, mb.table1_drafters("de-en"), source="django",
                      gamma=3, temperature=temperature, seed=1, max_new_tokens=20, batch_size=b)  # fmt: skip
        frames[b] = exp.run().sort_values(["method", "prompt"]).reset_index(drop=True)
    one, batched = frames[1], frames[4]
    assert len(one) == 5 * len(mt.METHODS) and list(one.columns) == list(batched.columns)
    exact = [c for c in one.columns if c not in mb.WALLTIME]
    pd.testing.assert_frame_equal(one[exact].astype(str), batched[exact].astype(str))
    assert one.new_tokens.astype(int).sum() > 5 * len(mt.METHODS)  # the rows say something
    if temperature == 0:
        assert (batched.same_as_ar.astype(str) == "True").all()
    alone = batched.prompt == prompts[-1]["id"]
    assert batched.loc[~alone, list(mb.WALLTIME)].isna().all().all()
    assert batched.loc[alone, list(mb.WALLTIME)].notna().all().all() and one[list(mb.WALLTIME)].notna().all().all()
    lines = [json.loads(line) for line in stores[4].provenance_path.read_text().splitlines()]
    assert sorted({(line.get("batch_size"), len(line["keys"])) for line in lines}) == [(1, 1), (4, 4)]
    assert all("batch_size" not in json.loads(line) for line in stores[1].provenance_path.read_text().splitlines())


@needs_zoo
def test_a_batched_greedy_row_unlike_plain_decoding_stops_the_cell(tmp_path, monkeypatch):
    """The lossless check runs per row in a batch too: one token changed in one SD row of a batch raises."""
    from specdec import batching

    real = batching.generate_batch

    def one_token_off(target, prompts, drafter=None, **kw):
        out = real(target, prompts, drafter, **kw)
        if drafter is not None:
            out.rows[-1].output_ids[-1] += 1
        return out

    monkeypatch.setattr(batching, "generate_batch", one_token_off)
    torch.set_num_threads(1)
    store = ResultStore("tiny", "ml_main", mb.KEYS, root=tmp_path)
    methods = {"ar": None, "sps-pf": "ml-draft-pf-de"}
    prompts = mb.prompt_set(TINY, "django", "de", "en", 3, seed=2)
    exp = mb.cell(store, TINY, TINY.load("ml-target"), "de-en", prompts, methods, source="django", gamma=3,
                  temperature=0.0, seed=0, max_new_tokens=8, batch_size=3)  # fmt: skip
    with pytest.raises(AssertionError, match="greedy sps-pf differs from plain decoding.*lossless SD is broken"):
        exp.run()
