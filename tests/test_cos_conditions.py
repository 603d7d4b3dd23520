"""CoS's measured validity conditions (issue 44, ``cos.conditions``) on hand-built frames: for each speed finding a
run where its condition holds and the claim holds, does not hold or is inconclusive, and a planted proxy that lacks
the condition, which reads "not testable on this proxy" whatever its estimate."""

import numpy as np
import pandas as pd
import pytest
from test_cos_verdicts import NOISE, _apf_frame, _c1_frame, _gamma_frame, _sweep

from specdec.cos import conditions
from specdec.cos import findings as cf
from specdec.cos import speed_verdicts as speed
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all

WHY = "hand-built"
REGIMES = cf.paper_regimes()


def _judged(v, condition) -> str:
    return judge_all([v], {v.name: condition})[0].status


def _accepting(frame: pd.DataFrame, alpha: float, bonus: int = 1) -> pd.DataFrame:
    """``frame`` whose cos rows propose 100 tokens of model 0 and have ``alpha`` of them accepted."""
    cos = frame.method == "cos"
    return frame.assign(
        proposed_0=np.where(cos, 100.0, 0.0), accepted_0=np.where(cos, 100.0 * alpha, 0.0), bonus_reused=bonus
    )


def test_thm36_floor_reaches_the_papers_speedup():
    """At c = 1 and γ_q = γ_p = 1 Thm 3.6 is 2 / (2 − α): 1.34x needs α = 2 − 2/1.34; CD at c 0.063 needs less."""
    assert conditions.set_floor("we", REGIMES) == pytest.approx(2 - 2 / 1.34, abs=1e-6)
    assert conditions.set_floor("we/proposer0", REGIMES) == conditions.set_floor("we", REGIMES)
    cd = conditions.set_floor("cd", REGIMES)
    assert conditions.thm36_speedup(cd, 2, 0.063) == pytest.approx(1.11, abs=1e-6) and 0.1 < cd < 0.3
    assert conditions.paper_acceptance_floor(3.0, 1.0, gammas=(1,)) == float("inf")  # 2x is γ = 1's ceiling


@pytest.mark.parametrize(
    "center, spread, alpha, expected",
    [
        (np.log(1.3), 1.0, 0.7, HOLDS),
        (np.log(0.8), 1.0, 0.7, FAILS),
        (0.02, 1.0, 0.7, INCONCLUSIVE),
        (np.log(1.3), 1.0, 0.3, NOT_TESTABLE),  # a WE pair that agrees less than the paper's floor (0.51)
    ],
    ids=["holds", "fails", "inconclusive", "pair-below-the-papers-acceptance"],
)
def test_c1_needs_the_papers_acceptance(center, spread, alpha, expected):
    frame = _accepting(_c1_frame(center, spread), alpha)
    condition = conditions.acceptance_check(frame, REGIMES, WHY, "partly")
    assert condition[0] == ("partly" if alpha > 0.51 else "no") and f"we α {alpha:.2f} (needs ≥ 0.51)" in condition[1]
    v = speed.c1_verdicts(frame, per_config=False)[0]
    assert _judged(v, condition) == expected


@pytest.mark.parametrize(
    "ratios, alpha, expected",
    [
        ((1.9, 1.8), 0.7, HOLDS),
        ((1.4, 1.2), 0.7, FAILS),
        ((1.9, 1.52), 0.7, INCONCLUSIVE),
        ((1.9, 1.8), 0.4, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "acceptance-below-cor-3.3"],
)
def test_c4_lambda_needs_cor_33s_acceptance(ratios, alpha, expected):
    frame = _accepting(_sweep({0.1: (ratios[0], 0.2), 0.9: (ratios[1], 1.0)}, "lam"), alpha)
    condition = conditions.lambda_check(frame, WHY, "partly")
    assert condition[0] == ("partly" if alpha >= 0.5 else "no") and f"0.1: {alpha:.2f}" in condition[1]
    assert _judged(speed.c4_lambda_verdict(frame), condition) == expected


@pytest.mark.parametrize(
    "ratios, alpha, still, trend",
    [
        ((1.4, 1.2), 0.3, HOLDS, HOLDS),
        ((0.9, 0.7), 0.3, FAILS, HOLDS),
        ((1.05, 1.0), 0.3, INCONCLUSIVE, INCONCLUSIVE),
        ((1.4, 1.2), 0.1, NOT_TESTABLE, NOT_TESTABLE),  # a CD pair below the 1.11x floor (0.16)
    ],
    ids=["holds", "fails", "inconclusive", "cd-pair-below-the-floor"],
)
def test_c4_mu_needs_the_cd_floor(ratios, alpha, still, trend):
    frame = _accepting(_sweep({0.1: (ratios[0], 0.2), 0.5: (ratios[1], 1.0)}, "mu"), alpha).assign(set="cd")
    condition = conditions.acceptance_check(frame[frame.mu == 0.1], REGIMES, WHY, "partly")
    got = [_judged(v, condition) for v in speed.c4_mu_verdicts(frame)]
    assert got == [still, trend]


def _call_costs(cost_0: float, cost_1: float) -> pd.DataFrame:
    return pd.DataFrame([dict(set="we", device="cpu", cost_0=cost_0, cost_1=cost_1, cost_2=np.nan)])


@pytest.mark.parametrize(
    "curve, spread, costs, expected",
    [
        ((1.2, 1.22, 1.21), 0.01, (1.0, 1.1), HOLDS),
        ((1.5, 1.2, 1.0), 0.01, (1.0, 1.1), FAILS),
        ((1.2, 1.3, 1.2), 0.5, (1.0, 1.1), INCONCLUSIVE),
        ((1.2, 1.22, 1.21), 0.01, (0.2, 1.0), NOT_TESTABLE),  # WE models five times apart in cost
    ],
    ids=["holds", "fails", "inconclusive", "we-models-of-unlike-size"],
)
def test_c4_gamma_we_needs_models_of_similar_size(curve, spread, costs, expected):
    (v,) = speed.c4_gamma_verdicts(_gamma_frame("we", curve, spread))
    condition = conditions.similar_size_check(_call_costs(*costs), WHY, "partly")
    assert f"cheaper / dearer {min(costs) / max(costs):.2f}" in condition[1]
    assert _judged(v, condition) == expected


def test_c4_gamma_we_without_call_costs_is_not_measured():
    level, why = conditions.similar_size_check(None, WHY, "partly")
    assert level == "partly" and conditions.NOT_MEASURED in why


@pytest.mark.parametrize(
    "ratio, spread, alpha, bonus, expected",
    [
        (1.2, 0.1, 0.7, 3, HOLDS),
        (0.8, 0.1, 0.7, 3, FAILS),
        (1.01, 1.0, 0.7, 3, INCONCLUSIVE),
        (1.2, 0.1, 0.7, 0, NOT_TESTABLE),  # APF acts only through bonus tokens: none reused
        (1.2, 0.1, 0.12, 3, NOT_TESTABLE),  # both sets below their floors
    ],
    ids=["holds", "fails", "inconclusive", "no-bonus-tokens", "below-the-floor"],
)
def test_c4_apf_needs_acceptance_and_bonus_tokens(ratio, spread, alpha, bonus, expected):
    frame = _accepting(_apf_frame(ratio, spread), alpha, bonus)
    condition = conditions.acceptance_check(frame, REGIMES, WHY, "partly", bonus=True)
    assert _judged(speed.c4_apf_verdict(frame), condition) == expected


def test_c1_gpu_needs_per_prompt_rows():
    """The stored grid's aggregates fail; per-prompt rows (8 per cell and method) pass; no grid fails."""
    cell = dict(device="H100", set="we", task="a", method="cos", gamma=1, temperature=1, speedup=1.2, prompts=8)
    aggregates = pd.DataFrame([cell])
    assert conditions.gpu_rows_check(aggregates)[0] == "no"
    assert _judged(speed.c1_gpu_verdict(aggregates), conditions.gpu_rows_check(aggregates)) == NOT_TESTABLE
    per_prompt = pd.DataFrame([dict(cell, prompt=f"p{i}") for i in range(8)])
    assert conditions.gpu_rows_check(per_prompt)[0] == "partly"
    assert conditions.gpu_rows_check(None)[0] == "no"


def test_empty_rows_are_not_measured():
    assert conditions.acceptance_check(pd.DataFrame(dict(method=[])), REGIMES, WHY, "partly")[0] == "partly"
    assert conditions.NOT_MEASURED in conditions.lambda_check(pd.DataFrame(dict(method=[])), WHY, "partly")[1]


def test_the_board_reads_every_speed_findings_condition():
    """Every CoS speed finding on the board carries its measured condition ("needs …"), from every training seed."""
    found = {v.name: v for v in cf.findings_from_results("tiny")}
    for name in ("C1", "C1-SD", "C1 cd T=0", "C1 cd T=1", "C1 we T=1", "C1 we3 T=1", "C4-λ", "C4-μ", "C4-μ-trend"):
        assert "needs ≥" in found[name].validity_why and "every training seed" in found[name].validity_why, name
    assert "cheaper / dearer" in found["C4-γ WE"].validity_why and "bonus tokens" in found["C4-APF"].validity_why
    assert found["C1-GPU"].status == NOT_TESTABLE and "per-prompt rows" in found["C1-GPU"].validity_why
    assert len(NOISE) == 8
