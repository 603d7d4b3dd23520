"""CoS verdicts on hand-built per-prompt frames: each one holds, fails and is inconclusive where it should."""

import numpy as np
import pandas as pd
import pytest

from specdec import costs
from specdec.cos import findings as cf
from specdec.cos import speed_verdicts as speed
from specdec.cos import theory_verdicts as theory
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all

NOISE = [0.0, 0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.0]  # symmetric: the geometric mean of exp(c + NOISE) is e^c


def _speed_rows(ratios, method="cos", gamma=1, point=None, cells=(("we", 1.0, "gsm8k"),)):
    """standard at 100 tokens/s and ``method`` at 100·ratio for each prompt of each cell."""
    rows = []
    for s, t, task in cells:
        for i, r in enumerate(ratios):
            base = dict(set=s, temperature=t, task=task, prompt=f"p{i}", **(point or {}))
            rows.append(dict(base, method="standard", gamma=0, tokens_per_second=100.0))
            rows.append(dict(base, method=method, gamma=gamma, tokens_per_second=100.0 * r))
    return pd.DataFrame(rows)


def _c1_frame(log_center, spread=1.0):
    cos = _speed_rows(np.exp(log_center + spread * np.array(NOISE)))
    sd = _speed_rows(np.ones(len(NOISE)), method="sd")
    return pd.concat([cos, sd[sd.method == "sd"]])


@pytest.mark.parametrize(
    "center,spread,status", [(np.log(1.3), 1.0, HOLDS), (np.log(0.8), 1.0, FAILS), (0.02, 1.0, INCONCLUSIVE)]
)
def test_c1(center, spread, status):
    v = speed.c1_verdicts(_c1_frame(center, spread), per_config=False)[0]
    assert v.name == "C1" and v.status == status and v.n == len(NOISE)
    assert v.estimate == pytest.approx(np.exp(center))
    assert v.low < v.estimate < v.high


def test_c1_best_gamma_and_sd():
    frame = _c1_frame(np.log(1.3))
    worse = _speed_rows([0.5] * len(NOISE), gamma=5)
    vs = speed.c1_verdicts(pd.concat([frame, worse[worse.method == "cos"]]))
    assert vs[0].estimate == pytest.approx(1.3)  # γ = 5 is worse: γ = 1 is kept
    assert vs[1].name == "C1-SD" and vs[1].status == HOLDS
    assert vs[2].name == "C1 we T=1"


def test_c1_gpu_has_no_interval():
    gpu = pd.DataFrame(
        dict(device="H100", set="we", task=["a", "b"], method="cos", temperature=1, speedup=[1.2, 0.9], prompts=4)
    )
    v = speed.c1_gpu_verdict(gpu)
    assert v.status == INCONCLUSIVE and v.n == 2 and "aggregates" in v.detail
    assert v.estimate == pytest.approx(np.sqrt(1.2 * 0.9))
    assert speed.c1_gpu_verdict(None).status == INCONCLUSIVE


def test_c3_sanity():
    exact = pd.DataFrame(dict(lam=[0.1, 0.9], proposer=0, alpha=[0.5, 0.95], bound=[0.1, 0.9]))
    assert theory.c3_sanity_verdict(exact).status == HOLDS
    assert theory.c3_sanity_verdict(exact.assign(alpha=[0.05, 0.95])).status == FAILS


def _c3_frame(excess):
    rows = []
    for lam in (0.3, 0.7):
        for k in (0, 1):
            bound = lam if k == 0 else 1 - lam
            for i, e in enumerate(excess):
                acc = dict(accepted_0=0, accepted_1=0, proposed_0=0, proposed_1=0)
                acc[f"proposed_{k}"] = 100
                acc[f"accepted_{k}"] = round(100 * min(1.0, bound + e))
                rows.append(dict(set=f"we/proposer{k}", task="gsm8k", prompt=f"p{i}", lam=lam, **acc))
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "excess,status,estimate",
    [
        ([0.05] * 6, HOLDS, 0.05),
        ([-0.05] * 6, FAILS, -0.05),
        ([0.1, -0.1, 0.1, -0.1, 0.02, 0.0], INCONCLUSIVE, 0.02 / 6),
    ],
)
def test_c3_measured(excess, status, estimate):
    v = theory.c3_verdict(_c3_frame(excess))
    assert v.status == status and v.n == 6 and v.estimate == pytest.approx(estimate, abs=1e-9)


def _sweep(values_by_point, point, method_gamma=1):
    return pd.concat(
        [
            _speed_rows(np.exp(np.log(r) + np.array(NOISE) * spread), gamma=method_gamma, point={point: x})
            for x, (r, spread) in values_by_point.items()
        ]
    )


@pytest.mark.parametrize("ratios,status", [((1.9, 1.8), HOLDS), ((1.4, 1.2), FAILS), ((1.9, 1.52), INCONCLUSIVE)])
def test_c4_lambda(ratios, status):
    """The paper's claim is at least 1.5x at every λ, not merely faster."""
    v = speed.c4_lambda_verdict(_sweep({0.1: (ratios[0], 0.2), 0.9: (ratios[1], 1.0)}, "lam"))
    assert v.status == status and v.n == len(NOISE) and v.estimate == pytest.approx(min(ratios))


@pytest.mark.parametrize(
    "ratios,still,trend",
    [((1.4, 1.2), HOLDS, HOLDS), ((0.9, 0.7), FAILS, HOLDS), ((1.05, 1.0), INCONCLUSIVE, INCONCLUSIVE)],
)
def test_c4_mu(ratios, still, trend):
    still_v, trend_v = speed.c4_mu_verdicts(_sweep({0.1: (ratios[0], 0.2), 0.5: (ratios[1], 1.0)}, "mu"))
    assert still_v.name == "C4-μ" and still_v.status == still and still_v.n == len(NOISE)
    assert still_v.estimate == pytest.approx(min(ratios))
    assert trend_v.status == trend
    assert trend_v.estimate == pytest.approx(np.log(ratios[1] / ratios[0]) / 0.4)


def test_c4_mu_trend_fails_when_rising():
    _, trend = speed.c4_mu_verdicts(_sweep({0.1: (1.1, 0.1), 0.5: (1.5, 0.1)}, "mu"))
    assert trend.status == FAILS


def _gamma_frame(set_name, curve, spread=0.1, alpha=0.35):
    """Standard at γ 0 and cos at γ 1..len(curve) on GSM8K, cos at ``curve[γ-1]``; cos rows accept ``alpha`` of
    what the amateur proposes (``accepted_0`` / ``proposed_0``: C4-γ CD's condition)."""
    rows = []
    for g, r in zip(range(1, len(curve) + 1), curve):
        f = _speed_rows(np.exp(np.log(r) + spread * np.roll(NOISE, 3 * g)), gamma=g, cells=((set_name, 0.0, "gsm8k"),))
        rows.append(f if g == 1 else f[f.method == "cos"])
    return pd.concat(rows).assign(proposed_0=100.0, accepted_0=100.0 * alpha)


@pytest.mark.parametrize(
    "curve,spread,status",
    [((1.2, 1.22, 1.21), 0.01, HOLDS), ((1.5, 1.2, 1.0), 0.01, FAILS), ((1.2, 1.3, 1.2), 0.5, INCONCLUSIVE)],
)
def test_c4_gamma_we(curve, spread, status):
    (v,) = speed.c4_gamma_verdicts(_gamma_frame("we", curve, spread))
    assert v.name == "C4-γ WE" and v.status == status and v.n == len(NOISE)
    assert v.estimate == pytest.approx(max(curve) / min(curve))
    assert "Thm 3.6 at c = 1" in v.detail and "remains stable" in v.paper


@pytest.mark.parametrize(
    "curve,spread,alpha,status",
    [
        ((1.0, 1.5, 1.4, 1.1), 0.01, 0.35, HOLDS),
        ((1.5, 1.2, 1.1, 1.0), 0.01, 0.35, FAILS),
        ((1.2, 1.23, 1.22, 1.2), 1.0, 0.35, INCONCLUSIVE),
        # issue 44 point 8: low acceptance, the paper's stated exception (Eq. (1)'s optimum is γ = 1): not testable
        ((1.5, 1.2, 1.1, 1.0), 0.01, 0.15, NOT_TESTABLE),
    ],
)
def test_c4_gamma_cd_is_decided_where_the_acceptance_is_moderate(curve, spread, alpha, status):
    frame = _gamma_frame("cd", curve, spread, alpha)
    (v,) = speed.c4_gamma_verdicts(frame)
    (v,) = judge_all([v], {"C4-γ CD": speed.cd_gamma_validity(frame, "partly: hand-built")})
    assert v.name == "C4-γ CD" and v.status == status
    assert v.estimate == pytest.approx(max(curve[1:-1]) / max(curve[0], curve[-1]))
    assert ("tested)" in v.detail) == (status != NOT_TESTABLE) and "acceptance rates" in v.paper


def test_cd_gamma_condition_follows_eq1():
    """Eq. (1) at c = 0.063 over γ 1-5: α 0.15 peaks at γ = 1 (monotone), α 0.35 inside, α 0.9 at γ = 5 (rising)."""
    frame = pd.concat([_gamma_frame("cd", (1, 1, 1, 1, 1), 0.0, a).assign(task=f"t{a}") for a in (0.15, 0.35, 0.9)])
    got = speed.cd_gamma_condition(frame)
    assert [got[f"t{a}"][1:] for a in (0.15, 0.35, 0.9)] == [(1, False), (2, True), (5, False)]


def _apf_frame(cos_ratio, spread=0.1):
    rows = []
    for s in ("we", "cd"):
        for i, e in enumerate(NOISE):
            base = dict(set=s, task="gsm8k", prompt=f"p{i}", calls_per_token=1.0)
            rows += [
                dict(base, method="standard", gamma=0, tokens_per_second=100.0),
                dict(base, method="naive", gamma=1, tokens_per_second=110.0),  # γ = 1: naive's best
                dict(base, method="naive", gamma=5, tokens_per_second=90.0),
                dict(base, method="cos", gamma=1, tokens_per_second=110.0 * cos_ratio * np.exp(spread * e)),
            ]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ratio,spread,status", [(1.2, 0.1, HOLDS), (0.8, 0.1, FAILS), (1.01, 1.0, INCONCLUSIVE)])
def test_c4_apf(ratio, spread, status):
    v = speed.c4_apf_verdict(_apf_frame(ratio, spread))
    assert v.status == status and v.n == 2 * len(NOISE) and v.estimate == pytest.approx(ratio)


def test_findings_from_results_lists_every_finding():
    names = [v.name for v in cf.findings_from_results("tiny")]
    for name in ("C1", "C1-SD", "C1-GPU", "C3", "C4-λ", "C4-μ", "C4-μ-trend", "C4-γ WE", "C4-γ CD", "C4-APF"):
        assert name in names
    found = {v.name: v for v in cf.findings_from_results("tiny")}
    assert all(v.validity in ("yes", "partly", "no") and v.validity_why for v in found.values())
    assert found["C1-GPU"].status == NOT_TESTABLE and found["C3"].section == "sanity"
    for name in ("C1", "C1-SD", "C1 cd T=0", "C4-λ", "C4-μ", "C4-μ-trend", "C4-γ WE", "C4-γ CD", "C4-APF"):
        assert found[name].machine is not None and "cpu" in found[name].machine.regime
        assert "c 0 1" in found[name].regime or "Table 6" in found[name].regime


def _counted_rows(cos_calls, spread=0.0):
    """One CD cell: standard decoding calls both models once per token (40 tokens); CoS calls the amateur (model 0)
    ``cos_calls[0]`` and the expert ``cos_calls[1]`` times, the expert's count moved per prompt by ``spread``;
    tokens/s say CoS is slower (as on a CPU, where the amateur costs half an expert call)."""
    rows = []
    for i, e in enumerate(NOISE):
        base = dict(set="cd", temperature=0.0, task="gsm8k", prompt=f"p{i}", new_tokens=40, calls_2=np.nan)
        rows.append(dict(base, method="standard", gamma=0, calls_0=40, calls_1=40, tokens_per_second=100.0))
        rows.append(
            dict(base, method="sd", gamma=1, calls_0=60, calls_1=40, tokens_per_second=80.0)
        )  # SD: no fewer expert calls
        expert = cos_calls[1] + spread * e
        rows.append(dict(base, method="cos", gamma=1, calls_0=cos_calls[0], calls_1=expert, tokens_per_second=90.0))
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "cos_calls,spread,status", [((80, 20), 0.0, HOLDS), ((80, 44), 0.0, FAILS), ((80, 39), 30.0, INCONCLUSIVE)]
)
def test_c1_in_the_papers_regime_prices_the_calls(cos_calls, spread, status):
    """The counts at the paper's CD costs (amateur c = TABED Table 6's 68M on 7B, expert 1) decide; the measured
    tokens/s (CoS 0.9x of standard) ride along as this machine's estimate."""
    frame = _counted_rows(cos_calls, spread)
    c = costs.paper_table6_regime().cost("draft")
    priced = cf.with_priced_speed(frame)
    std = priced[priced.method == "standard"].priced_speed.iloc[0]
    assert std == pytest.approx(40 / (40 * c + 40))
    v = cf.in_two_regimes(speed.c1_verdicts, frame, per_config=False, machine="cpu test")[0]
    if spread == 0:
        assert v.estimate == pytest.approx((40 * c + 40) / (cos_calls[0] * c + cos_calls[1]))
    assert v.status == status and v.machine.estimate == pytest.approx(0.9) and v.machine.status == FAILS
    assert v.machine.regime == "cpu test" and "Table 6" in v.regime


def test_c4_gamma_cd_tests_only_the_tasks_whose_acceptance_is_moderate():
    """A curve that only falls at low acceptance (the paper's stated exception) does not decide the CD row."""
    moderate = _gamma_frame("cd", (1.0, 1.5, 1.1), 0.01, alpha=0.35)
    low = _gamma_frame("cd", (1.5, 1.2, 1.0), 0.01, alpha=0.15).assign(task="humaneval")
    (v,) = speed.c4_gamma_verdicts(pd.concat([moderate, low]))
    assert v.status == HOLDS and v.estimate == pytest.approx(1.5 / 1.1) and v.n == len(NOISE)
    assert "Tested on gsm8k." in v.detail and "humaneval (α 0.15, Eq. (1) best γ 1: not tested" in v.detail


def test_paper_columns_count_the_papers_own_cells():
    assert "Table 4 OPT T=1 CNNDM: 1.85x vs 1.85x" in speed.paper_cells("CoS", "SD")
    assert "Llama-2 T=1 GSM8K" in speed.paper_apf_cells()


# ------------------------------------------------------------------------------------------------ C2
R = np.array([0.5, 0.3, 0.15, 0.05])  # four cells: three tokens and the merged rest
EXPERT = np.array([0.2, 0.2, 0.5, 0.1])


def _c2_cells(sampler, expert=EXPERT, draws=400, seed=0, sets=("we", "cd")):
    """``cos_c2`` rows of both tests of ``sets``: ``draws`` seeded draws from the cell distribution ``sampler``,
    tabulated against the exact ``R`` and the control ``expert``."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in sets:
        for test in ("first", "pair"):
            observed = rng.multinomial(draws, sampler)
            for label, o, p, q in zip(["0", "1", "2", "rest"], observed, R, expert):
                rows.append(dict(set=s, test=test, cell=label, observed=o, r=p, expert=q, role_swaps=7))
    return pd.DataFrame(rows)


def test_c2_holds_for_draws_from_r():
    v = theory.c2_verdict(_c2_cells(R))
    assert v.status == HOLDS and v.name == "C2" and v.n == 2 * 400
    assert 1e-3 / 4 < v.estimate <= 1.0 and v.low == v.estimate == v.high
    assert "we first" in v.detail and "7 role swaps" in v.detail
    tests = theory.c2_tests(_c2_cells(R))
    assert len(tests) == 4 and (tests.p_expert < 1e-6).all() and (tests.draws == 400).all()


def test_c2_fails_for_a_wrong_sampler():
    """Draws from the expert alone (a sampler that ignores the amateur) are a bug."""
    v = theory.c2_verdict(_c2_cells(EXPERT))
    assert v.status == FAILS and v.estimate <= 1e-3 / 4
    # one wrong test of four is enough, and the Bonferroni factor is applied
    cells = pd.concat([_c2_cells(R, sets=("we",)), _c2_cells(EXPERT, sets=("cd",), seed=1)])
    tests = theory.c2_tests(cells)
    assert theory.c2_verdict(cells).status == FAILS
    assert theory.c2_verdict(cells).estimate == pytest.approx(tests.p_r.min()) and tests.p_r.max() > 1e-3


def test_c2_is_inconclusive_without_power_or_draws():
    """A control as near r as the draws' noise cannot be told apart: the check has no power, whatever p says."""
    v = theory.c2_verdict(_c2_cells(R, expert=R + np.array([0.01, -0.01, 0.0, 0.0])))
    assert v.status == INCONCLUSIVE and v.estimate > 1e-3 / 4 and "no power" in v.detail
    empty = theory.c2_verdict(_c2_cells(R).assign(observed=0))
    assert empty.status == INCONCLUSIVE and empty.n == 0 and np.isnan(empty.estimate)
    assert theory.c2_verdict(_c2_cells(R).iloc[0:0]).status == INCONCLUSIVE


def test_c2_is_a_sanity_check_on_the_board():
    found = {v.name: v for v in cf.findings_from_results("tiny")}
    c2 = found["C2"]
    assert c2.section == "sanity" and c2.validity == "yes" and c2.status == HOLDS
    assert c2.n == 2 * cf.C2_DRAWS


def test_c1_validity_names_the_mmlu_overlap_only_while_it_is_measured():
    """Issue 44 point 9: the MMLU-like test questions share 8-word shingles with training (template near-duplicates);
    C1's validity says so exactly while ``mmlu_near_duplicates`` measures it (a rebuilt set must drop the note)."""
    found = cf.mmlu_near_duplicates()
    overlapping = found["raw"] > 1  # GSM8K's rebuilt set: 0 of 16
    c1 = {v.name: v for v in cf.findings_from_results("tiny")}["C1"]
    assert overlapping == ("near-duplicates" in c1.validity_why)
    assert found["n"] == 16 and found["masked"] >= found["raw"]
