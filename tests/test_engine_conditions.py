"""The engine rows' measured conditions (issue 44: ``engine_findings.iid_validity``, ``efficiency_validity``) on
hand-built rows: with the condition met the row holds, does not hold or is inconclusive; a planted proxy lacking it
reads "not testable on this proxy"."""

import pandas as pd
import pytest
from test_foundation_verdicts import speed_rows, sweep_rows

from specdec import engine_findings as ef
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all


def _judged(v, condition) -> str:
    return judge_all([v], {v.name: condition})[0].status


def _mixed() -> pd.DataFrame:
    level = sweep_rows([{1: 0.5, 3: 0.5, 6: 0.5}] * 6, draft="a")
    return pd.concat([level, sweep_rows([{1: 0.5, 3: 0.5, 6: 0.5}] * 6 + [{1: 0.2, 3: 0.8, 6: 0.8}] * 2, draft="b")])


@pytest.mark.parametrize(
    "frame, expected",
    [
        (sweep_rows([{1: 0.5, 3: 0.5, 6: 0.5}] * 10), HOLDS),
        (sweep_rows([{1: 0.3, 3: 0.5, 6: 0.7}] * 10), FAILS),
        (_mixed(), INCONCLUSIVE),
        (sweep_rows([{1: 0.97, 3: 0.97, 6: 0.97}] * 10), NOT_TESTABLE),  # β near 1: every pattern implies it
        (sweep_rows([{1: 0.5, 3: 0.5}] * 10), NOT_TESTABLE),  # two γ values only
    ],
    ids=["holds", "fails", "inconclusive", "beta-near-one", "two-gammas"],
)
def test_iid_needs_a_sweep_that_can_move_beta(frame, expected):
    condition = ef.iid_validity(frame)
    assert "implied β at γ = 1" in condition[1]
    assert _judged(ef.iid_verdict(frame), condition) == expected


def _with_draft_calls(rows: list[dict], per_block: float) -> list[dict]:
    """``speed_rows`` whose SD rows made ``per_block`` draft calls per target call (γ 1 prices one)."""
    return [{**r, "draft_calls": 0 if r["method"] == "autoregressive" else per_block * r["target_calls"]} for r in rows]


@pytest.mark.parametrize(
    "efficiencies, per_block, expected",
    [
        ([1.0] * 8, 1.0, HOLDS),
        ([0.5] * 8, 1.0, FAILS),
        ([0.6, 1.4] * 4, 1.0, INCONCLUSIVE),
        ([1.0] * 8, 0.5, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "half-the-priced-draft-calls"],
)
def test_efficiency_needs_the_draft_calls_it_prices(efficiencies, per_block, expected):
    rows = _with_draft_calls(speed_rows(efficiencies), per_block)
    condition = ef.efficiency_validity(rows, gamma=1)
    assert f"{per_block:.2f} draft calls per block" in condition[1]
    v = ef.engine_verdict(rows, gamma=1, latency_ratio_value=0.0, verify_cost=1.0)
    assert _judged(v, condition) == expected


def test_the_board_reads_both_conditions():
    found = {v.name: v for v in ef.findings_from_results("tiny")}
    assert "needs each in [0.1, 0.9]" in found["i.i.d. acceptance"].validity_why
    assert "draft calls per block" in found["engine efficiency"].validity_why
