"""The multilingual measured validity conditions (issue 44, ``multilingual.conditions``) on hand-built frames: for M1,
M1 vs F, M4-τ, Table 3 and Table 7 a run where the condition holds and the claim holds, does not hold or is
inconclusive, and a planted proxy that lacks the condition, which reads "not testable on this proxy"."""

import numpy as np
import pandas as pd
import pytest
from test_multilingual_verdicts import MAIN, NOISE, _runs

from specdec.multilingual import conditions, drafter_verdicts, scaling_verdicts
from specdec.multilingual import findings as mf
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all

WHY = "hand-built"


def _judged(v, condition) -> str:
    return judge_all([v], {v.name: condition})[0].status


def _summary(pf_agree: float, p_agree: float = 0.5, p_prose: float = 4.0, langs=("de", "zh")) -> pd.DataFrame:
    """A training summary: P and the P-F drafters with held-out agreement on each language's X→En pages."""
    rows = [dict(model="ml-draft-generic", parameters=100, loss_prose=p_prose)]
    rows += [dict(model=f"ml-draft-pf-{lang}", parameters=100, loss_prose=5.0) for lang in langs]
    frame = pd.DataFrame(rows)
    for lang in langs:
        for page in ("django", "sphinx"):
            frame[f"agree_{page}-{lang}"] = np.where(frame.model == "ml-draft-generic", p_agree, pf_agree)
    return frame


@pytest.mark.parametrize(
    "pf, spread, agree, expected",
    [(1.5, 0.1, 0.7, HOLDS), (1.0, 0.1, 0.7, FAILS), (1.25, 1.0, 0.7, INCONCLUSIVE), (1.5, 0.1, 0.45, NOT_TESTABLE)],
    ids=["holds", "fails", "inconclusive", "pf-not-specialized"],
)
def test_m1_needs_a_specialized_pf_drafter(pf, spread, agree, expected):
    condition = conditions.specialized_check({0: _summary(agree), 1: _summary(agree)}, ("de", "zh"), WHY, "partly")
    assert f"{agree - 0.5:+.2f}" in condition[1] and "over 4 (seed, language) pairs" in condition[1]
    joint = drafter_verdicts.m1_verdicts(_runs({**MAIN, "sps-pf": pf}, spread=spread))[0]
    assert _judged(joint, condition) == expected


def test_m1_reads_every_training_seed():
    """A P-F drafter that did not specialize on one training seed fails the condition."""
    condition = conditions.specialized_check({0: _summary(0.7), 2: _summary(0.4)}, ("de",), WHY, "partly")
    assert condition[0] == "no" and "seed 2 de" in condition[1]
    assert conditions.specialized_check({}, ("de",), WHY, "partly")[0] == "partly"


@pytest.mark.parametrize(
    "pf, f_tau, expected",
    [(1.5, 1.3, HOLDS), (1.0, 1.3, FAILS), (1.25, 1.3, INCONCLUSIVE), (1.5, 1.02, NOT_TESTABLE)],
    ids=["holds", "fails", "inconclusive", "untrained-f"],
)
def test_m1_vs_f_needs_an_f_past_the_onset(pf, f_tau, expected):
    frame = _runs({**MAIN, "sps-pf": pf}, tau={"sps-f": f_tau}, spread=1.0 if pf == 1.25 else 0.1)
    condition = conditions.trained_f_check({0: frame, 1: frame}, 0.0, WHY, "partly")
    assert f"pooled τ {f_tau:.2f} over {2 * len(NOISE)}" in condition[1]
    vs_f = drafter_verdicts.m1_verdicts(frame)[2]
    assert vs_f.name == "M1 vs F T=0" and _judged(vs_f, condition) == expected


@pytest.mark.parametrize(
    "taus, prose, expected",
    [
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 2.2}, 4.0, HOLDS),
        ({"sps-generic": 1.0, "sps-f": 2.5, "sps-pf": 2.2}, 4.0, FAILS),
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 1.5 + 0.02 + np.roll(NOISE, 1) * 3}, 4.0, INCONCLUSIVE),
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 2.2}, 9.0, NOT_TESTABLE),  # P at or above a uniform guess
        ({"sps-generic": 1.2, "sps-f": 1.0, "sps-pf": 2.2}, 4.0, NOT_TESTABLE),  # F below the onset
    ],
    ids=["holds", "fails", "inconclusive", "untrained-p", "untrained-f"],
)
def test_table3_needs_every_stage_trained(taus, prose, expected):
    frame = pd.concat([_runs(dict.fromkeys(taus, 1.0), tau=taus, pair="zh-en"), _runs(dict.fromkeys(taus, 1.0))])
    condition = conditions.stages_check({0: frame}, {0: _summary(0.7, p_prose=prose)}, WHY, "partly")
    assert _judged(drafter_verdicts.table3_verdict(frame), condition) == expected


@pytest.mark.parametrize(
    "large_tau, spread, params, expected",
    [
        (2.1, 0.1, (100, 1600), HOLDS),
        (3.0, 0.1, (100, 1600), FAILS),
        (2.0 + 0.36 + NOISE * 3, 1.0, (100, 1600), INCONCLUSIVE),
        (2.1, 0.1, (100, 160), NOT_TESTABLE),  # 1.6x: drafters this close in size
    ],
    ids=["holds", "fails", "inconclusive", "drafters-of-like-size"],
)
def test_m4_tau_needs_a_much_larger_drafter(large_tau, spread, params, expected):
    frame = _runs(dict(ar=1.0, small=1.0, large=0.7), tau=dict(small=2.0, large=large_tau), spread=spread)
    _, close = scaling_verdicts.m4_verdicts(frame)
    condition = conditions.size_check(*params, WHY, "partly")
    assert f"{params[1] / params[0]:.1f}x" in condition[1]
    assert _judged(close, condition) == expected


@pytest.mark.parametrize(
    "pf_speed, pf_tau, spread, share, expected",
    [
        (1.8, 2.4, 0.1, 1.0, HOLDS),
        (0.8, 0.9, 0.1, 1.0, FAILS),
        (1.02, 1.02 + NOISE * 3, 1.0, 1.0, INCONCLUSIVE),
        (1.8, 2.4, 0.1, 0.25, NOT_TESTABLE),  # the target translates a quarter of the held-out prompts
    ],
    ids=["holds", "fails", "inconclusive", "untranslated-set"],
)
def test_table7_needs_a_set_the_target_translates(pf_speed, pf_tau, spread, share, expected):
    frame = _runs({"ar": 1.0, "sps-generic": 1.0, "sps-pf": pf_speed}, tau={"sps-pf": pf_tau}, spread=spread)
    translatable = pd.DataFrame({"pair": "de-en", "prompt": range(8), "translatable": np.arange(8) < 8 * share})
    condition = conditions.translatable_check(translatable, WHY, "partly")
    assert f"translates {share:.0%} of the 8" in condition[1]
    for v in drafter_verdicts.table7_verdicts(frame):
        assert _judged(v, condition) == expected
    assert conditions.NOT_MEASURED in conditions.translatable_check(None, WHY, "partly")[1]


def test_the_board_reads_the_measured_conditions():
    found = {v.name: v for v in mf.findings_from_results("tiny")}
    for name in ("M1 T=0", "M1 vs F T=1", "M1 vs PLD T=1", "M4-τ T=0", "Table 3 zh-en T=0", "Table 7-τ"):
        assert "needs" in found[name].validity_why, name
    assert found["M4-τ T=0"].status == NOT_TESTABLE and "1.6x" in found["M4-τ T=0"].validity_why
