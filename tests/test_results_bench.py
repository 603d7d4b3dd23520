"""Results store (resume, no duplicates), latency helpers and the papers' formulas."""

import pytest

from conftest import random_llama
from specdec import bench, paper
from specdec.results import ResultStore


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


def test_formulas():
    assert bench.expected_block_efficiency(0.0, 5) == 1.0
    assert bench.expected_block_efficiency(1.0, 5) == 6.0
    assert bench.expected_block_efficiency(0.5, 1) == pytest.approx(1.5)
    assert bench.expected_speedup(2.29, 5, 0.063) == pytest.approx(1.7414, abs=1e-3)


def test_tabed_headline_recomputed():
    table = paper.tabed_expected_speedups().set_index("method")
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
