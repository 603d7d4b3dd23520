"""The one experiment harness (``specdec.harness.experiment``) on a tiny random model pair."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from conftest import random_llama
from specdec.harness import counts as hc
from specdec.harness import experiment as hx
from specdec.results import ResultStore

KEY = ["weights", "method", "gamma", "temperature", "max_new_tokens", "seed", "row", "request"]


@pytest.fixture(scope="module")
def pair():
    return random_llama(64, 32, 2, seed=0), random_llama(64, 16, 1, seed=1)


def requests(n=3):
    out = []
    for i in range(n):
        ids = torch.tensor([1, 5 + i, 9, 11 + 2 * i])
        out.append(hx.Request(id=f"r{i}", prompt_ids=ids, key=dict(row=f"r{i}", request=f"digest{i}")))
    return out


def accept_everything(draft_tokens, draft_probs, target_logits, sampling, generator):
    """A broken verifier: keeps every draft token, whatever the target says."""
    return len(draft_tokens), int(target_logits[len(draft_tokens)].argmax())


def make(tmp_path, pair, methods=None, max_new_tokens=8, seed=0, weights="w0", table="runs", **kw):
    target, draft = pair
    methods = methods or {
        "plain": hx.plain(target),
        "sd": hx.speculative(target, lambda request: draft, gamma=3),
    }
    setting = hx.Setting(max_new_tokens=max_new_tokens, seed=seed)
    store = ResultStore("tiny", table, KEY, root=tmp_path)
    fixed = dict(weights=weights, **setting.columns())
    return hx.Experiment(store, requests(), methods, fixed=fixed, setting=setting, **kw)


def test_rows_are_lossless_and_a_planted_wrong_method_is_caught(tmp_path, pair):
    target, draft = pair
    methods = {
        "plain": hx.plain(target),
        "sd": hx.speculative(target, lambda request: draft, gamma=3),
        "broken": hx.speculative(target, lambda request: draft, gamma=3, verifier=accept_everything),
    }
    frame = make(tmp_path, pair, methods).run()
    by = frame.groupby("method").lossless.agg(lambda s: set(s.astype(bool)))
    assert by["plain"] == {True} and by["sd"] == {True}
    assert False in by["broken"]  # random models disagree: accepting every draft changes the output
    # the reference ran once per request, first
    assert list(frame.method[:3]) == ["plain", "sd", "broken"]
    assert (frame.method == "plain").sum() == 3


def test_mark_lossless_on_a_table_without_the_column(tmp_path, pair):
    target, draft = pair
    methods = {
        "plain": hx.plain(target),
        "broken": hx.speculative(target, lambda request: draft, gamma=3, verifier=accept_everything),
    }
    frame = make(tmp_path, pair, methods, lossless_column=None).run()
    assert "lossless" in frame  # marked when read, not stored
    stored = make(tmp_path, pair, methods, lossless_column=None).store.frame()
    assert "lossless" not in stored
    assert frame[frame.method == "plain"].lossless.all() and not frame[frame.method == "broken"].lossless.all()


def test_resume_skips_keys_already_stored(tmp_path, pair):
    calls = []
    target, draft = pair

    def counting(request):
        calls.append(request.id)
        return draft

    methods = {"plain": hx.plain(target), "sd": hx.speculative(target, counting, gamma=3)}
    first = make(tmp_path, pair, methods).run()
    assert len(calls) == 3
    again = make(tmp_path, pair, methods).run()
    assert len(calls) == 3  # nothing decoded again
    assert first.equals(again)
    # a new key (another max_new_tokens) is computed, the old ones stay
    make(tmp_path, pair, methods, max_new_tokens=6).run()
    assert len(calls) == 6
    assert len(make(tmp_path, pair, methods).store.frame()) == 12


def test_resume_stands_on_a_read_only_base_layer(tmp_path, pair):
    base = tmp_path / "base"
    make(base, pair).run()
    before = (base / "tiny" / "runs.csv").read_bytes()
    target, draft = pair

    def refuse(request):
        raise AssertionError("a key of the base layer was recomputed")

    store = ResultStore("tiny", "runs", KEY, root=tmp_path / "own", base=base)
    setting = hx.Setting(max_new_tokens=8)
    methods = {"plain": hx.plain(target), "sd": hx.speculative(target, refuse, gamma=3)}
    exp = hx.Experiment(store, requests(), methods, fixed=dict(weights="w0", **setting.columns()), setting=setting)
    assert len(exp.run()) == 6
    assert (base / "tiny" / "runs.csv").read_bytes() == before
    assert not (tmp_path / "own" / "tiny" / "runs.csv").exists()


def test_keys_differ_when_a_parameter_differs(tmp_path, pair):
    base = make(tmp_path, pair)
    keys = {json.dumps(k, sort_keys=True) for k in base.keys()}
    assert len(keys) == len(base.keys()) == 6
    for other in (
        make(tmp_path, pair, max_new_tokens=9),
        make(tmp_path, pair, seed=1),
        make(tmp_path, pair, weights="w1"),
        make(tmp_path, pair, methods={"plain": hx.plain(pair[0]), "sd": hx.speculative(pair[0], None, gamma=4)}),
    ):
        assert not keys & {json.dumps(k, sort_keys=True) for k in other.keys() if k["method"] == "sd"}


def test_a_key_that_misses_a_parameter_is_refused(tmp_path, pair):
    target, draft = pair
    # two methods that differ only in γ, with γ not in the key
    store = ResultStore("tiny", "runs", ["method", "row"], root=tmp_path)
    same = {
        "plain": hx.plain(target),
        "a": hx.speculative(target, None, method="sd"),
        "b": hx.speculative(target, None, method="sd"),
    }
    with pytest.raises(ValueError, match="same key"):
        hx.Experiment(store, requests(), same)
    with pytest.raises(ValueError, match="no value for key columns"):
        make(tmp_path, pair, table="other").__class__(
            ResultStore("tiny", "x", KEY, root=tmp_path), requests(), {"plain": hx.plain(target)}
        )


def test_counts_per_model_are_the_engines(tmp_path, pair):
    frame = make(tmp_path, pair).run()
    plain = frame[frame.method == "plain"]
    assert (plain.calls_target == plain.new_tokens).all()  # one target call per new token
    assert "calls_draft" in frame and plain.calls_draft.isna().all()
    sd = frame[frame.method == "sd"]
    assert (sd.calls_target == sd.target_calls).all() and (sd.calls_draft == sd.draft_calls).all()
    assert (sd.tokens_fed_target == sd.target_tokens_fed).all() and (sd.seconds_draft > 0).all()
    table = hc.counts(frame).set_index(["method", "model"])
    assert table.loc[("plain", "target"), "calls"] == plain.new_tokens.sum()
    assert table.loc[("sd", "draft"), "tokens_fed"] == sd.draft_tokens_fed.sum()
    assert table.loc[("plain", "draft"), "calls"] != table.loc[("plain", "draft"), "calls"]  # nan: no draft


def test_batched_path_gives_the_same_tokens(tmp_path, pair):
    target, draft = pair
    one = make(tmp_path / "one", pair).run()
    sd = hx.speculative(target, lambda request: draft, gamma=3, batched=True)
    sizes = []

    def counting(requests, setting):
        sizes.append(len(requests))
        return sd.decode_batch(requests, setting)

    methods = {"plain": hx.plain(target), "sd": hx.Method(sd.decode, sd.params, decode_batch=counting)}
    walltime = ("total_time", "tokens_per_second", "seconds_target")
    batched = make(tmp_path / "batch", pair, methods, batch_size=3, walltime=walltime).run()
    assert sizes == [3]  # the three requests' SD runs in one batch, after every reference
    by_run = lambda f: f.set_index(["method", "row"]).output.sort_index()  # noqa: E731
    assert by_run(one).equals(by_run(batched)) and batched.lossless.all()
    # a batched row's walltime columns are empty (they time one request decoded alone); its counts are kept
    sd_rows = batched[batched.method == "sd"]
    assert sd_rows[list(walltime)].isna().all().all() and (sd_rows.target_calls > 0).all()
    assert batched[batched.method == "plain"][list(walltime)].notna().all().all()  # no decode_batch: decoded alone


def test_recompute_and_check_find_a_stale_row(tmp_path, pair):
    exp = make(tmp_path, pair)
    exp.run()
    assert exp.check(by=["method"], columns=["output", "new_tokens", "lossless"]) == []
    path = tmp_path / "tiny" / "runs.csv"
    text = path.read_text().splitlines()
    header = text[0].split(",")
    i = header.index("new_tokens")
    cells = text[2].split(",")
    cells[i] = str(int(cells[i]) + 1)
    path.write_text("\n".join([*text[:2], ",".join(cells), *text[3:]]) + "\n")
    stale = make(tmp_path, pair).check(by=["method", "row"], columns=["new_tokens"])
    assert len(stale) == 1 and "new_tokens" in stale[0]
    # a row stored with other weights comes back under today's: stale
    fresh = exp.recompute([{**exp.keys()[1], "weights": "old"}])
    assert fresh.weights[0] == "w0"


def test_method_row_hook_and_protocols(tmp_path, pair):
    target, draft = pair
    sd = hx.speculative(target, lambda request: draft, gamma=2)
    tagged = hx.Method(decode=sd.decode, params=sd.params, row=lambda request, result: {"note": request.id})
    ref = hx.plain(target)
    ref = hx.Method(decode=ref.decode, params=ref.params, row=lambda request, result: {"note": ""})
    frame = make(tmp_path, pair, {"plain": ref, "sd": tagged}).run()
    assert list(frame[frame.method == "sd"].note) == ["r0", "r1", "r2"]
    res = sd.decode(requests()[0], hx.Setting(max_new_tokens=4))
    assert isinstance(res, hx.Decoded)


def test_a_vlm_request_carries_its_images_and_a_second_turn_is_built_from_the_first(tmp_path):
    """What TABED and AASD need: pixel inputs per request, two targets in one table (keyed by their weights), and a
    second turn whose prompt holds the target's first answer (a suite stage, built after the first turn ran)."""
    from conftest import LLAVA_IMAGE_TOKEN, random_llava

    targets = {"w-a": random_llava(32, 2, seed=0), "w-b": random_llava(32, 1, seed=2)}
    draft = random_llava(16, 1, seed=1)
    g = torch.Generator().manual_seed(0)
    pixels = {"pixel_values": torch.randn(1, 3, 32, 32, generator=g)}
    image = [1, *[LLAVA_IMAGE_TOKEN] * 4, 5]
    first = [
        hx.Request(
            f"q{i}", torch.tensor([*image, 9 + i, 12]), dict(row=f"q{i}", request=f"d{i}", turn=1), pixels, pixels
        )
        for i in range(2)
    ]
    key = ["weights", "method", "gamma", "turn", "row", "request"]
    store = ResultStore("tiny", "vlm", key, root=tmp_path)
    setting = hx.Setting(max_new_tokens=6, eos_token_id=[])
    suite = hx.Suite(store)

    def methods(target):
        return {"plain": hx.plain(target), "sd": hx.speculative(target, lambda request: draft, gamma=2)}

    for weights, target in targets.items():
        suite.add(hx.Experiment(store, first, methods(target), fixed=dict(weights=weights), setting=setting))

    def second_turn(suite):
        target = targets["w-a"]
        requests = []
        for r in first:
            answer = json.loads(
                store.get(weights="w-a", method="plain", gamma=0, turn=1, row=r.id, request=r.key["request"])["output"]
            )
            ids = torch.tensor([*r.prompt_ids.tolist(), *answer, 7, 8])
            requests.append(hx.Request(r.id, ids, {**r.key, "turn": 2}, pixels, pixels))
        return hx.Experiment(store, requests, methods(target), fixed=dict(weights="w-a"), setting=setting)

    suite.add(second_turn)
    frame = suite.run()
    assert len(frame) == 2 * 2 * 2 + 2 * 2 and frame.lossless.all()
    assert set(frame[frame.turn == 2].weights) == {"w-a"} and set(frame.weights) == {"w-a", "w-b"}
    sd = frame[frame.method == "sd"]
    assert (sd.calls_draft > 0).all()


def test_a_request_seed_fixes_its_sampled_output_whatever_else_runs(tmp_path, pair):
    """Sampling at T = 1 with a seed of the request's own: a row's tokens do not depend on the other requests (the
    batched path gives each row its seed too; its sampled tokens are equal up to the rounding of batched forwards,
    so they are not compared here)."""
    from specdec.sampling import SamplingConfig

    target, draft = pair
    setting = hx.Setting(max_new_tokens=8, sampling=SamplingConfig(temperature=1.0), seed=0)
    seeded = [dataclasses.replace(r, seed=100 + i) for i, r in enumerate(requests())]

    def run(root, reqs, batched=False):
        methods = {"plain": hx.plain(target), "sd": hx.speculative(target, lambda r: draft, gamma=3, batched=batched)}
        store = ResultStore("tiny", "runs", KEY, root=root)
        exp = hx.Experiment(store, reqs, methods, fixed=dict(weights="w", **setting.columns()), setting=setting,
                            batch_size=3 if batched else 1)  # fmt: skip
        return exp.run().set_index(["method", "row"]).output

    alone = run(tmp_path / "a", seeded[1:2])
    every = run(tmp_path / "b", seeded)
    batched = run(tmp_path / "c", seeded, batched=True)
    assert alone[("sd", "r1")] == every[("sd", "r1")] and len(batched) == len(every)
    assert every.loc["plain"].nunique() > 1  # sampled, with different seeds


def test_priced_speedup_is_the_cost_models(tmp_path, pair):
    """The counts per model priced by ``specdec.costs``: SD's speedup over plain decoding is ``sd_speedup`` of its
    summed counts (target calls verify a block, draft calls cost c), plain decoding's 1."""
    from specdec import costs

    frame = make(tmp_path, pair).run()
    regime = costs.Regime("test", {"draft": 0.1}, verify=1.5, source="hand-set")
    got = hc.priced_speedup(frame, regime).set_index("method").priced_speedup
    sd = frame[frame.method == "sd"]
    assert got["plain"] == pytest.approx(1.0)
    want = costs.sd_speedup(sd.new_tokens.sum(), sd.target_calls.sum(), sd.draft_calls.sum(), regime)
    assert got["sd"] == pytest.approx(want)
