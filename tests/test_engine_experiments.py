"""The engine notebooks' experiments (``specdec.harness.engine_experiments``) stand on the committed rows: their keys
are the committed tables' keys, and what they decode is what those rows hold (nothing here writes a table)."""

from __future__ import annotations

import pytest

from specdec import results
from specdec.harness import engine_experiments as ee
from specdec.harness.profile import Profile

TAU_COLUMNS = ["new_tokens", "target_calls", "accepted", "drafted"]


@pytest.fixture(scope="module")
def engine():
    return ee.Engine.load(Profile.load("tiny", "cpu"), ["default", "xs"])


@pytest.fixture(scope="module")
def tau_sweep(engine):
    """Notebook 01 (b) at its parameters, and the committed table."""
    exp = ee.tau_vs_gamma(engine, n_per_kind=20, gammas=[1, 2, 3, 4, 6, 8], max_new_tokens=48)
    return exp, results.ResultStore("tiny", "tau_vs_gamma", ee.TAU_KEY, root=results.COMMITTED)


def test_tau_vs_gamma_keys_are_the_committed_ones(tau_sweep):
    exp, committed = tau_sweep
    keys = exp.keys()
    assert len(keys) == 2 * 6 * 60 and all(committed.done(**k) for k in keys)  # a rerun recomputes nothing


def test_tau_vs_gamma_decodes_the_committed_rows(tau_sweep):
    """One request at a time (``recompute``) and batched (the method's ``decode_batch``, as a run decodes)."""
    exp, committed = tau_sweep
    keys = exp.keys()
    sample = [keys[0], keys[365], keys[-1]]
    fresh = exp.recompute(sample)
    for key, row in zip(sample, fresh.to_dict("records")):
        stored = committed.get(**key)
        assert {c: int(row[c]) for c in TAU_COLUMNS} == {c: int(stored[c]) for c in TAU_COLUMNS}
    method = exp.order()[-1]  # the xs draft at the largest γ
    batch = exp.methods[method].decode_batch(exp.requests[:4], exp.setting)
    for request, result in zip(exp.requests[:4], batch):
        stored = committed.get(**exp.key(request, method))
        assert ee.acceptance_row(request, result) == {c: int(stored[c]) for c in TAU_COLUMNS}


def test_quickstart_row_is_the_committed_one():
    """Notebook 00 at its defaults: the key (but the device label, which names this machine's threads) and the
    deterministic columns of the committed row."""
    exp = ee.quickstart(Profile.load("tiny", "cpu"))
    key = exp.keys()[0]
    committed = results.ResultStore("tiny", "quickstart", ee.QUICKSTART_KEY, root=results.COMMITTED).frame()
    assert len(committed) == 1
    stored = committed.iloc[0]
    assert {k: results.key_text(v) for k, v in key.items() if k != "device"} == {
        k: results.key_text(stored[k]) for k in ee.QUICKSTART_KEY if k != "device"
    }
    row = exp.quickstart_row(exp.requests[0], exp.generations)
    assert row["new_tokens"] == stored.new_tokens and row["target_calls"] == stored.target_calls
    assert row["block_efficiency"] == pytest.approx(stored.block_efficiency, abs=1e-5)
    assert row["lossless"] is True and bool(stored.lossless)
