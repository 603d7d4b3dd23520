"""Results store (resume, no duplicates), latency helpers and the papers' formulas."""

import pytest
import torch

from conftest import random_llama
from specdec import bench
from specdec.results import ResultStore, model_fingerprint, stale_rows, stratified_sample
from specdec.tabed import tables as tabed_tables


def test_store_skips_finished_keys_and_survives_restart(tmp_path):
    store = ResultStore("tiny", "demo", key=["draft", "gamma"], root=tmp_path)
    store.append([{"draft": "a", "gamma": 1, "tau": 1.5}])
    assert store.done(draft="a", gamma=1) and not store.done(draft="a", gamma=2)
    again = ResultStore("tiny", "demo", key=["draft", "gamma"], root=tmp_path)  # a rerun after an interruption
    assert again.done(draft="a", gamma=1)
    again.append([{"draft": "a", "gamma": 1, "tau": 9.9}, {"draft": "a", "gamma": 2, "tau": 2.0}])
    frame = again.frame()
    assert len(frame) == 2 and frame.tau.tolist() == [1.5, 2.0]
    with pytest.raises(ValueError, match="new ones"):
        again.append([{"draft": "b", "gamma": 1, "tau": 1.0, "extra": 3}])


def test_a_base_layer_counts_as_done_is_read_back_and_never_written(tmp_path):
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    base = ResultStore("tiny", "demo", key=["draft", "gamma"], root=committed)
    base.append(
        [{"draft": "a", "gamma": 1, "tau": 1.5, "note": "x"}, {"draft": "a", "gamma": 2, "tau": 2.5, "note": "y"}]
    )
    before = base.path.read_bytes()
    store = ResultStore("tiny", "demo", key=["draft", "gamma"], root=fresh, base=committed)
    assert store.done(draft="a", gamma=1) and not store.done(draft="b", gamma=1)
    assert store.get(draft="a", gamma=2)["tau"] == "2.5"
    computed = []
    keys = [{"draft": d, "gamma": g} for d in "ab" for g in (1, 2)]
    store.run(keys, lambda **k: computed.append(k) or {"tau": 9.0, "note": "z"})
    assert computed == [{"draft": "b", "gamma": 1}, {"draft": "b", "gamma": 2}]  # only what the base lacks
    store.append([{"draft": "a", "gamma": 1, "tau": 7.0, "note": "w"}])  # a key of the base: skipped
    frame = store.frame()
    assert frame.tau.tolist() == [1.5, 2.5, 9.0, 9.0] and frame.note.tolist() == ["x", "y", "z", "z"]
    assert base.path.read_bytes() == before and len(ResultStore("tiny", "demo", ["draft", "gamma"], fresh).frame()) == 2
    # the base folder being the store's own folder is no base; a missing base table is no base either
    assert ResultStore("tiny", "demo", ["draft", "gamma"], root=committed, base=committed).base_path is None
    assert ResultStore("tiny", "other", ["draft", "gamma"], root=fresh, base=committed).frame().empty


def test_a_requested_frame_holds_only_the_rows_this_run_asked_for(tmp_path):
    key = ["weights", "prompt", "gamma"]
    committed = ResultStore("tiny", "demo", key, root=tmp_path / "committed")
    committed.append([{"weights": "0a", "prompt": p, "gamma": 1, "tau": 1.0} for p in ("x", "y")])  # old weights
    store = ResultStore("tiny", "demo", key, root=tmp_path / "fresh", base=tmp_path / "committed")
    assert store.frame(requested=True).empty  # nothing asked for yet
    store.run([{"weights": "0b", "prompt": "x", "gamma": 1}], lambda **k: {"tau": 2.0})  # retrained: computed
    store.want([{"weights": "0a", "prompt": "y", "gamma": 1}])  # asked for, already stored: read back
    assert len(store.frame()) == 3  # the table holds all three
    requested = store.frame(requested=True)
    assert requested[["weights", "prompt", "tau"]].values.tolist() == [["0a", "y", 1.0], ["0b", "x", 2.0]]
    own = ResultStore("tiny", "demo", key, root=tmp_path / "committed")  # no base: the same filter
    own.want([{"weights": "0a", "prompt": "x", "gamma": 1.0}])  # formatted as written: 1.0 is the key 1
    assert own.frame(requested=True).prompt.tolist() == ["x"] and len(own.frame()) == 2


def test_stale_rows_names_every_difference_and_a_missing_recomputation():
    import pandas as pd

    committed = pd.DataFrame(
        {"m": ["A", "A", "B"], "row": ["1", "2", "1"], "out": ["[1, 2]", "[3]", "[4]"], "tau": ["2", "1", "1.5"]}
    )
    fresh = committed.assign(tau=[2.0, 1.0, 1.50001]).astype({"tau": float})
    assert stale_rows(committed, fresh, ["m", "row"], ["out", "tau"], {"tau": 1e-4}) == []
    doctored = fresh.copy()
    doctored.loc[1, "out"] = "[3, 5]"  # what a committed row looks like after the code changed
    problems = stale_rows(committed, doctored.iloc[:2], ["m", "row"], ["out", "tau"], {"tau": 1e-4})
    assert len(problems) == 2 and "out committed '[3]'" in problems[0] and "not recomputed" in problems[1]
    assert (
        len(stale_rows(committed, fresh, ["m", "row"], ["tau"])) == 1
    )  # as stored (6 digits) unless given a tolerance


def test_stratified_sample_takes_every_group_and_depends_on_the_seed():
    import pandas as pd

    frame = pd.DataFrame({"m": list("AAAABBBBCC"), "s": list("xxyyxxyyxy"), "i": range(10)})
    sample = stratified_sample(frame, ["m", "s"], n=1, seed=0)
    assert sorted(zip(sample.m, sample.s)) == [("A", "x"), ("A", "y"), ("B", "x"), ("B", "y"), ("C", "x"), ("C", "y")]
    picks = {tuple(stratified_sample(frame, ["m", "s"], n=1, seed=k).i) for k in range(8)}
    assert len(picks) > 1
    assert len(stratified_sample(frame, ["m"], n=3, seed=0)) == 3 + 3 + 2


def test_formulas():
    assert bench.expected_block_efficiency(0.0, 5) == 1.0
    assert bench.expected_block_efficiency(1.0, 5) == 6.0
    assert bench.expected_block_efficiency(0.5, 1) == pytest.approx(1.5)
    assert bench.expected_speedup(2.29, 5, 0.063) == pytest.approx(1.7414, abs=1e-3)


def test_tabed_headline_recomputed():
    table = tabed_tables.tabed_expected_speedups().set_index("method")
    assert round(table.loc["MT*", "expected_speedup"], 2) == 1.74
    assert table.loc["MT*", "expected_speedup"] > table.loc["M", "expected_speedup"]


def test_latency_measurement_runs():
    model = random_llama(64, 16, 1)
    rows = bench.latency_grid(model, [1, 2], [8], [1, 3], repeats=2, name="r")
    assert len(rows) == 4 and all(r["seconds"] > 0 for r in rows)
    assert bench.latency_ratio(model, model, context=8, repeats=3) > 0


def test_store_keys_match_after_a_round_trip(tmp_path):
    """Floats are written with %g: a rerun asking for temperature 0.0 must find the stored "0"."""
    store = ResultStore("tiny", "rt", key=["temperature", "gamma"], root=tmp_path)
    store.append([{"temperature": 0.0, "gamma": 5, "tau": 2.5}])
    again = ResultStore("tiny", "rt", key=["temperature", "gamma"], root=tmp_path)
    assert again.done(temperature=0.0, gamma=5)
    assert again.get(temperature=0.0, gamma=5)["tau"] == "2.5"


def test_store_drops_a_last_line_cut_mid_write(tmp_path):
    """A row cut mid-write (fewer cells than the header, no line end; an older writer's kill) is not finished: it
    does not count, a read leaves the file alone, and the next append is not glued onto it."""
    store = ResultStore("tiny", "cut", key=["draft", "gamma"], root=tmp_path)
    store.append([{"draft": "a", "gamma": 1, "tau": 1.5}])
    with store.path.open("a") as f:
        f.write("a,2")  # the row of gamma=2, cut
    cut = store.path.read_bytes()
    again = ResultStore("tiny", "cut", key=["draft", "gamma"], root=tmp_path)
    assert again.done(draft="a", gamma=1) and not again.done(draft="a", gamma=2)
    assert again.rows() and store.path.read_bytes() == cut
    again.append([{"draft": "a", "gamma": 2, "tau": 2.25}])
    assert again.frame().tau.tolist() == [1.5, 2.25]


@pytest.mark.parametrize("content", ["", "draft,ga"])
def test_store_starts_over_from_an_empty_or_headless_file(tmp_path, content):
    path = tmp_path / "tiny" / "empty.csv"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    store = ResultStore("tiny", "empty", key=["draft", "gamma"], root=tmp_path)
    assert len(store.frame()) == 0
    store.append([{"draft": "a", "gamma": 1, "tau": 1.0}])
    assert store.frame().to_dict("records") == [{"draft": "a", "gamma": 1, "tau": 1.0}]


def _append_many(root, worker):
    store = ResultStore("tiny", "shared", key=["item"], root=root)
    for item in range(40):  # both workers try every item; each row must land once
        store.append([{"item": item, "worker": worker}])


def test_concurrent_writers_neither_duplicate_rows_nor_headers(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(tmp_path, w)) for w in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    frame = ResultStore("tiny", "shared", key=["item"], root=tmp_path).frame()
    assert sorted(frame["item"].tolist()) == list(range(40))
    assert (tmp_path / "tiny" / "shared.csv").read_text().count("item,worker") == 1


def test_every_append_records_its_provenance(tmp_path):
    import json

    store = ResultStore("tiny", "prov", key=["draft"], root=tmp_path)
    store.provenance.update(device="cpu", model_ids=["tiny-target", "tiny-draft-s"])
    store.append([{"draft": "a", "tau": 1.0}, {"draft": "b", "tau": 2.0}])
    (line,) = [json.loads(x) for x in store.provenance_path.read_text().splitlines()]
    assert line["keys"] == [["a"], ["b"]] and line["device"] == "cpu" and line["model_ids"][0] == "tiny-target"
    assert {"commit", "torch", "transformers", "cpu_capability"} <= set(line)


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.55, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_iid_acceptance_inverts_the_block_efficiency_formula(beta, gamma):
    tau = bench.expected_block_efficiency(beta, gamma)
    assert bench.iid_acceptance(tau, gamma) == pytest.approx(beta, abs=1e-8)


def test_accepted_over_drafted_falls_with_gamma_at_a_constant_per_token_rate():
    """The estimator notebook 01 used before: a constant β = 0.6 looked like falling acceptance."""
    beta = 0.6
    ratios = [(beta - beta ** (g + 1)) / ((1 - beta) * g) for g in (1, 2, 4, 8)]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] == pytest.approx(beta)
    assert all(bench.iid_acceptance(bench.expected_block_efficiency(beta, g), g) == pytest.approx(beta) for g in (1, 8))
    with pytest.raises(ValueError, match="block efficiency must lie"):
        bench.iid_acceptance(0.5, 3)


def test_model_fingerprint_changes_with_the_weights_not_with_a_reload():
    model = random_llama(seed=0)
    same = random_llama(seed=0)
    first = model_fingerprint(model)
    assert first == model_fingerprint(same)  # same name, same weights: same key
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1e-3  # a retrain under the same name
    changed = model_fingerprint(model)
    assert changed != first
    assert changed.split("@")[0] == first.split("@")[0]
