"""The multilingual zoo's training (specdec.multilingual.zoo_run): data step, end-to-end pipeline, lossless SD."""

import json
import random

import pytest
import torch

from specdec import zoo
from specdec.engine import autoregressive, generate
from specdec.multilingual import algorithm, metrics, parallel, recipe, zoo_retrain, zoo_run
from specdec.multilingual import data as mldata

LANGS = list(parallel.LANGUAGES)
# A minimal run: a few documents and pairs, a few steps with small batches (CPU, seconds).
TINY = dict(
    batch_size=4, seq_len=32, ft_batch_size=8, eval_windows=2, eval_batch_size=16, max_new_tokens=8, gen_batch_size=16
)
TINY.update(n_budgets=2, budget_factor=2)  # Fig. 4's grid on 3 prompts per pair: 2 and 3 of them


@pytest.fixture(scope="module")
def data():
    return mldata.build_data(max_docs=4, max_pairs=6)


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ml_models")
    rows = zoo_run.train_all(data, out, device="cpu", steps_scale=0.001, prompts_per_set=3, **TINY)
    return out, rows


def test_data_kinds_and_examples(data):
    for split in ("train", "heldout"):
        streams = data["general"][split]
        assert set(streams) == {"prose", "code", "translation"}
        for stream in streams.values():
            assert stream.dtype == torch.int16 and len(stream) > 100
            assert 0 <= int(stream.min()) and int(stream.max()) < zoo.VOCAB_SIZE
    train, heldout = data["train"], data["heldout"]
    assert {r["source"] for r in train["rows"]} == {"django"}
    assert {r["source"] for r in heldout["rows"]} == {"django", "sphinx"}
    for ex in (train, heldout):
        assert {(r["lang"], r["direction"]) for r in ex["rows"]} == {
            (lang, d) for lang in LANGS for d in parallel.DIRECTIONS
        }
        assert len(ex["offsets"]) == len(ex["rows"]) + 1 == len(ex["prompt_len"]) + 1
    assert len(train["rows"]) == 6 * len(LANGS) * 2  # max_pairs per language, both directions

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    for i in (0, 7, len(heldout["rows"]) - 1):
        prompt_ids, answer_ids = mldata.example_ids(heldout, i)
        row = heldout["rows"][i]
        assert prompt_ids[0] == tok.bos_token_id and answer_ids[-1] == tok.eos_token_id
        assert tok.decode(prompt_ids[1:]) == row["prompt"]
        assert tok.decode(answer_ids[:-1]) == row["reference"]
        language = "English" if row["direction"] == "xx-en" else parallel.LANGUAGES[row["lang"]][0]
        assert row["prompt"].startswith("Translate ") and row["prompt"].endswith(f"\n{language}:")


def test_train_and_heldout_prompts_are_disjoint(data):
    train, heldout = data["train"]["rows"], data["heldout"]["rows"]
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in heldout}
    train_en = {
        parallel.english_key(r["prompt"].split(": ", 1)[1].rsplit("\n", 1)[0])
        for r in train
        if r["direction"] == "en-xx"
    }
    held_en = {
        parallel.english_key(r["prompt"].split(": ", 1)[1].rsplit("\n", 1)[0])
        for r in heldout
        if r["direction"] == "en-xx"
    }
    assert train_en and held_en and not train_en & held_en


def test_heldout_entries_are_removed_from_the_general_text():
    doc = {
        "name": "po:de:core:0",
        "kind": "translation",
        "text": "English: Arabic\nGerman: Arabisch\n\nEnglish: Welsh\nGerman: Walisisch\n\n"
        "English: Two\n\nparagraphs\nGerman: Zwei",
    }
    text, dropped = mldata.drop_heldout_entries(doc, {"welsh", "two paragraphs"}, {"de": "German"})
    assert dropped == 2 and text == "English: Arabic\nGerman: Arabisch"


def test_metrics_helpers():
    assert metrics.chrf("the cat", "the cat") == 100.0 and metrics.chrf("xyz", "abc") == 0.0
    assert 0 < metrics.chrf("the cat sat", "the cat") < 100
    perm = metrics.derangement(7, random.Random(0))
    assert sorted(perm) == list(range(7)) and all(p != k for k, p in enumerate(perm))
    assert recipe.subset_fractions(recipe.TRAIN) == [1 / 64, 1 / 16, 1 / 4, 1]


def _nonembedding(parameters: int, hidden: int) -> int:
    return parameters - zoo.VOCAB_SIZE * hidden  # tied input / output embeddings


def test_pipeline_end_to_end(trained):
    from safetensors.torch import load_file

    from specdec.zoo.models import load

    out, rows = trained
    names = recipe.model_names(LANGS, TINY)
    by = {r["model"]: r for r in rows}
    grid = sorted((r for r in rows if r["model"].startswith("ml-draft-pf-de-b")), key=lambda r: r["finetune_budget"])
    grid_f = sorted((r for r in rows if r["model"].startswith("ml-draft-f-de-b")), key=lambda r: r["finetune_budget"])
    n = TINY["n_budgets"]
    assert len(grid) == len(grid_f) == n and len(rows) == len(names) + 2 * n and len(by) == len(rows)
    saved = [r["model"] for r in rows if not r.get("same_as")]
    assert set(names) <= set(saved) and len(saved) == len(names) + 2 * (n - 1)  # the grid's main points: aliases
    for name in saved:
        assert all(v.dtype == torch.float16 for v in load_file(out / name / "model.safetensors").values())
        log = json.loads((out / name / "training_log.json").read_text())
        assert log["summary"]["model"] == name and log["log"]
        model, tok = load(out / name)
        assert model.config.vocab_size == zoo.VOCAB_SIZE and len(tok) == zoo.VOCAB_SIZE
    sizes = {r["model"]: r["parameters"] for r in rows}
    assert 2.4e6 < sizes["ml-target"] < 2.8e6 and sizes["ml-draft-pf-de"] < sizes["ml-target"] / 6
    # Table 6: the large drafter stands to the target as Tiny-Vicuna 1B to Vicuna 7B (~0.15x non-embedding)
    large = _nonembedding(sizes[recipe.LARGE], recipe.SIZES["large"]["hidden_size"])
    target = _nonembedding(sizes["ml-target"], recipe.SIZES["target"]["hidden_size"])
    assert 0.12 < large / target < 0.18 and sizes[recipe.LARGE] > 1.4 * sizes["ml-draft-pf-de"]
    assert by["ml-draft-f-de"]["init"] == "scratch" and by["ml-draft-pf-de"]["init"] == recipe.GENERIC
    # Fig. 4: more distinct data, not more passes: examples and distinct tokens grow, the last is the main drafter
    for points, main in ((grid, "ml-draft-pf-de"), (grid_f, "ml-draft-f-de")):
        examples = [r["finetune_budget"] for r in points]
        distinct = [r["finetune_tokens"] for r in points]
        assert examples == sorted(set(examples)) and distinct == sorted(set(distinct))
        assert points[-1]["same_as"] == main and points[-1]["finetune_budget"] == by[main]["finetune_budget"]
        assert points[-1]["device"] == by[main]["device"] and points[-1]["parameters"] == by[main]["parameters"]
        passes = [r["finetune_tokens_seen"] / r["finetune_tokens"] for r in points]
        assert max(passes) < 3 * min(passes)  # about the same number of passes over each set
    distilled = [json.loads(line) for line in (out / "ml_distilled.jsonl").open()]
    assert {(d["lang"], d["temperature"]) for d in distilled} == {
        (lang, t) for lang in LANGS for t in (0.0, 0.3, 0.7, 1.0)
    }
    assert all(d["direction"] == "xx-en" and 0 < len(d["output_ids"]) <= TINY["max_new_tokens"] for d in distilled)
    assert (out / "ml_training.csv").read_text().count("\n") == len(rows) + 1
    run = json.loads((out / "ml_run.json").read_text())
    assert run["weights_bytes_total"] < 30e6 and run["fig4_grid"]["de"] == [r["finetune_budget"] for r in grid]


def test_drafters_step_retrains_what_the_pipeline_trained(trained, data, tmp_path):
    """``drafters`` (saved target + saved distillation + saved generic drafter) trains the very P-F drafter of the
    full pipeline, bit for bit, and rewrites the summary keeping the other models' rows."""
    import shutil

    from safetensors.torch import load_file

    out, rows = trained
    models = tmp_path / "models"
    shutil.copytree(out, models)
    original = load_file(out / "ml-draft-pf-fr" / "model.safetensors")
    shutil.rmtree(models / "ml-draft-pf-fr")
    new_rows = zoo_retrain.retrain_drafters(
        data,
        models,
        models / "ml_distilled.jsonl",
        models,
        only=["ml-draft-pf-fr"],
        steps_scale=0.001,
        prompts_per_set=3,
        **TINY,
    )
    again = load_file(models / "ml-draft-pf-fr" / "model.safetensors")
    assert again.keys() == original.keys() and all(torch.equal(again[k], original[k]) for k in original)
    assert sorted(r["model"] for r in new_rows) == sorted(r["model"] for r in rows)
    run = json.loads((models / "ml_run.json").read_text())
    assert run["retrained"][-1]["models"] == ["ml-draft-pf-fr"]


def _prompt_ids(tok, row):
    return torch.tensor([tok.bos_token_id] + tok(row["prompt"], add_special_tokens=False)["input_ids"])


def test_greedy_sd_with_a_trained_drafter_is_lossless(trained):
    from specdec.zoo.models import load

    out, _ = trained
    target, tok = load(out / "ml-target")
    drafter, _ = load(out / "ml-draft-pf-de")
    for row in parallel.pairs("sphinx", "de", "heldout")[:3]:
        ids = _prompt_ids(tok, parallel.translation_prompt(row, "xx-en"))
        ar = autoregressive(target, ids, max_new_tokens=24)
        sd = generate(target, ids, drafter, gamma=3, max_new_tokens=24)
        assert sd.output_ids == ar.output_ids and sd.target_calls <= ar.target_calls


def test_batched_greedy_generate_matches_the_engine(trained):
    """Distillation's batched, left-padded ``generate`` decodes like the batch-1 engine (greedy)."""
    from specdec.zoo.models import load

    out, _ = trained
    target, tok = load(out / "ml-target")
    rows = [parallel.translation_prompt(r, "xx-en") for r in parallel.pairs("django", "ja", "heldout")[:4]]
    prompts = [_prompt_ids(tok, r).tolist() for r in rows]
    assert len({len(p) for p in prompts}) > 1  # the batch needs padding
    batched = algorithm.generate_batched(target, prompts, 0.0, 12, batch_size=4, seed=0)
    for p, b in zip(prompts, batched):
        assert autoregressive(target, torch.tensor(p), max_new_tokens=12, eos_token_id=2).output_ids == b


@pytest.mark.skipif(not (zoo.MODELS / "ml-target" / "config.json").exists(), reason="multilingual zoo not shipped")
def test_shipped_zoo_translates_and_sd_is_lossless():
    from specdec.zoo.models import load

    target, tok = load("ml-target")
    summary = json.loads((zoo.MODELS / "ml-target" / "training_log.json").read_text())["summary"]
    held = summary["heldout_summary"]
    assert held["sphinx_xx-en_ref_loss"] < held["sphinx_xx-en_ref_loss_shuffled_source"]
    drafter, _ = load("ml-draft-pf-de")
    for row in parallel.pairs("django", "de", "heldout")[:3]:
        ids = _prompt_ids(tok, parallel.translation_prompt(row, "xx-en"))
        assert (
            generate(target, ids, drafter, gamma=3, max_new_tokens=48).output_ids
            == autoregressive(target, ids, max_new_tokens=48).output_ids
        )


def test_a_smoke_scale_run_has_a_fig4_grid_of_distinct_sets():
    """``--steps-scale 0.0005`` distils 8 prompts per pair: 4 nested quarters would repeat a size (1, 1, 2, 8) and
    ``Run.grid`` refused the CLI's own smoke run; the smoke settings keep 2 distinct sets."""
    import math

    cfg = recipe.tiny_settings(0.0005)
    counts = [max(1, math.ceil(f * 8)) for f in recipe.subset_fractions(cfg)]
    assert counts == sorted(set(counts)) and counts[-1] == 8
    assert recipe.tiny_settings(1.0)["n_budgets"] == 4  # the shipped zoo's grid is unchanged
