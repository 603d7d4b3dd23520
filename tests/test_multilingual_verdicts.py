"""Multilingual verdicts on hand-built per-run frames: each one holds, fails and is inconclusive where it should."""

import pathlib

import numpy as np
import pandas as pd
import pytest

from specdec import costs
from specdec.multilingual import drafter_verdicts, scaling_verdicts
from specdec.multilingual import findings as mf
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all

NOISE = np.array([0.0, 0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.0])  # symmetric: geometric mean of exp(c + NOISE) = e^c


def _runs(speed: dict, tau: dict | None = None, pair="de-en", temperature=0.0, spread=0.1, chrf=None, seeds=(0,)):
    """One row per (prompt, seed, method): tokens/s 100·speed[m]·exp(spread·noise) (noise rolled per method, so
    methods are not perfectly correlated), τ from new tokens / target calls, chrF 50 + chrf[m][prompt]."""
    rows = []
    for k, (m, s) in enumerate(speed.items()):
        noise = np.roll(NOISE, 3 * k) * (k > 0)
        for i in range(len(NOISE)):
            for seed in seeds:
                t = (tau or {}).get(m, 1.0)
                t = t[i] if np.ndim(t) else t
                rows.append(
                    dict(
                        pair=pair,
                        source="django",
                        temperature=temperature,
                        seed=seed,
                        prompt=f"{pair}:p{i}",
                        method=m,
                        tokens_per_second=100.0 * s * np.exp(spread * noise[i]),
                        new_tokens=round(100 * t),
                        target_calls=100,
                        chrf=50.0 + (chrf or {}).get(m, np.zeros(len(NOISE)))[i],
                        same_as_ar=True,
                    )
                )
    return pd.DataFrame(rows)


MAIN = dict(ar=1.0, **{"sps-generic": 1.0, "sps-f": 1.2, "pld": 1.1})


@pytest.mark.parametrize("pf,spread,status", [(1.5, 0.1, HOLDS), (1.0, 0.1, FAILS), (1.25, 1.0, INCONCLUSIVE)])
def test_m1(pf, spread, status):
    vs = drafter_verdicts.m1_verdicts(_runs({**MAIN, "sps-pf": pf}, spread=spread))
    joint = vs[0]
    assert joint.name == "M1 T=0" and joint.status == status and joint.n == len(NOISE)
    assert joint.estimate == pytest.approx(pf / 1.2)  # F is the strongest baseline
    assert [v.name for v in vs[1:]] == ["M1 vs generic SpS T=0", "M1 vs F T=0", "M1 vs PLD T=0"]


def test_m1_fails_when_pld_is_faster():
    vs = drafter_verdicts.m1_verdicts(_runs({**MAIN, "pld": 2.0, "sps-pf": 1.5}))
    assert vs[0].status == FAILS and "PLD" in vs[0].detail
    assert vs[1].status == HOLDS and vs[3].status == FAILS


@pytest.mark.parametrize(
    "taus,status,estimate",
    [
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 2.2}, HOLDS, 0.7),
        # F below the generic drafter (issue 44 point 3: an order the paper never states): P-F beats both, holds
        ({"sps-generic": 1.6, "sps-f": 1.0, "sps-pf": 2.2}, HOLDS, 0.6),
        ({"sps-generic": 1.0, "sps-f": 2.5, "sps-pf": 2.2}, FAILS, -0.3),
        ({"sps-generic": 2.4, "sps-f": 1.0, "sps-pf": 2.2}, FAILS, -0.2),  # P-F below the generic drafter
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 1.5 + 0.02 + np.roll(NOISE, 1) * 3}, INCONCLUSIVE, 0.02),
    ],
)
def test_m1_tau(taus, status, estimate):
    v = drafter_verdicts.m1_tau_verdict(_runs(dict.fromkeys(taus, 1.0), tau=taus))
    assert v.status == status and v.n == len(NOISE) and v.estimate == pytest.approx(estimate, abs=0.01)
    assert "outperforms models that are only finetuned" in v.paper  # the paper's words on the row
    judged = judge_all([v], {v.name: ("no", "no: planted proxy without the condition")})[0]
    assert judged.status == NOT_TESTABLE


def _tokens_frame(taus_by_budget):
    grid = pd.DataFrame([dict(model=f"m-b{b}", recipe="P-F", finetune_tokens=float(b)) for b in taus_by_budget])
    frame = _runs({f"m-b{b}": 1.0 for b in taus_by_budget}, tau={f"m-b{b}": t for b, t in taus_by_budget.items()})
    return frame, grid


@pytest.mark.parametrize(
    "taus,status,slope",
    [
        ({1000: 1.0, 10000: 1.5, 100000: 2.0}, HOLDS, 0.5),
        ({1000: 2.0, 10000: 1.5, 100000: 1.0}, FAILS, -0.5),
        ({1000: 1.5 + np.roll(NOISE, 2) * 3, 10000: 1.5, 100000: 1.52 + NOISE * 3}, INCONCLUSIVE, 0.01),
    ],
)
def test_m2(taus, status, slope):
    v, _ = scaling_verdicts.m2_verdicts(*_tokens_frame(taus))
    assert v.name == "M2 P-F" and v.status == status and v.n == len(NOISE)
    assert v.estimate == pytest.approx(slope, abs=0.01) and "R²" in v.detail


def _ood_frame(same_in, same_out, noise=0.0):
    """Two drafters (de, fr); τ home 3.0, input-language match ``same_in``, output match ``same_out``."""
    frames = []
    for d, x, y in (("pf-de", "de", "fr"), ("pf-fr", "fr", "de")):
        taus = {f"{x}-en": 3.0, f"{x}-{y}": same_in, f"{y}-en": same_out, f"en-{x}": 1.0}
        for pair, t in taus.items():
            t = t + noise * np.roll(NOISE, len(pair) + len(frames)) if pair in (f"{x}-{y}", f"{y}-en") else t
            f = _runs({d: 1.0}, tau={d: t}, pair=pair)
            frames.append(f)
    return pd.concat(frames)


@pytest.mark.parametrize(
    "same_in,same_out,noise,status", [(2.5, 1.5, 0.0, HOLDS), (1.2, 2.0, 0.0, FAILS), (1.52, 1.5, 3.0, INCONCLUSIVE)]
)
def test_m3(same_in, same_out, noise, status):
    v = scaling_verdicts.m3_verdict(_ood_frame(same_in, same_out, noise))
    assert v.status == status and v.n == 6 * len(NOISE)  # 6 distinct directions, one prompt set each
    assert v.estimate == pytest.approx(same_in - same_out, abs=0.01)


@pytest.mark.parametrize(
    "large_speed,large_tau,spread,speed_status,tau_status",
    [
        (0.7, 2.1, 0.1, HOLDS, HOLDS),
        (1.3, 3.0, 0.1, FAILS, FAILS),
        (0.98, 2.0 + 0.36 + NOISE * 3, 1.0, INCONCLUSIVE, INCONCLUSIVE),
    ],
)
def test_m4(large_speed, large_tau, spread, speed_status, tau_status):
    frame = _runs(dict(ar=1.0, small=1.0, large=large_speed), tau=dict(small=2.0, large=large_tau), spread=spread)
    speed, close = scaling_verdicts.m4_verdicts(frame, latency_ratios={"small": 0.4, "large": 0.8})
    assert speed.status == speed_status and speed.n == len(NOISE)
    assert speed.estimate == pytest.approx(large_speed)
    assert close.status == tau_status and close.n == len(NOISE)
    assert close.estimate == pytest.approx(abs(np.mean(large_tau) / 2.0 - 1), abs=0.01)
    assert "0.15x the target's non-embedding parameters" in speed.detail and "0.80" in speed.detail


@pytest.mark.parametrize("shift,spread,status", [(0.5, 1.0, HOLDS), (-5.0, 1.0, FAILS), (-2.0, 20.0, INCONCLUSIVE)])
def test_quality(shift, spread, status):
    t1 = _runs({"ar": 1.0, "sps-pf": 1.0}, temperature=1.0, seeds=(0, 1, 2), chrf={"sps-pf": shift + spread * NOISE})
    t0 = _runs({"ar": 1.0, "sps-pf": 1.0})
    greedy, sampled = drafter_verdicts.quality_verdicts(pd.concat([t0, t1]))
    assert greedy.status == HOLDS and greedy.estimate == 1.0
    assert sampled.name == "Quality sps-pf T=1" and sampled.status == status and sampled.n == len(NOISE)
    assert sampled.estimate == pytest.approx(shift)


def test_quality_t0_fails_on_a_mismatch():
    t0 = _runs({"ar": 1.0, "sps-pf": 1.0})
    t0.loc[t0.index[-1], "same_as_ar"] = False
    (greedy,) = drafter_verdicts.quality_verdicts(t0)
    assert greedy.status == FAILS and greedy.estimate == pytest.approx(7 / 8)


@pytest.mark.parametrize(
    "pf_speed,pf_tau,spread,status",
    [(1.8, 2.4, 0.1, HOLDS), (0.8, 0.9, 0.1, FAILS), (1.02, 1.02 + NOISE * 3, 1.0, INCONCLUSIVE)],
)
def test_table7(pf_speed, pf_tau, spread, status):
    frame = _runs({"ar": 1.0, "sps-generic": 1.0, "sps-pf": pf_speed}, tau={"sps-pf": pf_tau}, spread=spread)
    speed, every, tau = drafter_verdicts.table7_verdicts(frame)
    assert speed.name == "Table 7" and speed.status == status and speed.n == len(NOISE)
    assert every.name == "Table 7 all prompts" and every.estimate == pytest.approx(speed.estimate)
    assert speed.estimate == pytest.approx(pf_speed)
    assert tau.status == status and tau.estimate == pytest.approx(np.mean(pf_tau) - 1.0, abs=0.01)


def test_table7_counts_only_the_translatable_prompts():
    """The prompts the target cannot translate are left out: here P-F wins only on them, so the verdict fails."""
    tau = np.where(np.arange(len(NOISE)) < 4, 1.0, 3.0)
    frame = _runs({"ar": 1.0, "sps-generic": 1.0, "sps-pf": 1.0}, tau={"sps-pf": tau})
    assert drafter_verdicts.table7_verdicts(frame)[2].status == HOLDS  # every prompt: P-F ahead on half of them
    translatable = pd.DataFrame(
        {"pair": "de-en", "prompt": [f"de-en:p{i}" for i in range(8)], "translatable": tau == 1}
    )
    speed, every, v = drafter_verdicts.table7_verdicts(frame, translatable=translatable)
    assert v.n == speed.n == 4 and v.estimate == pytest.approx(0.0) and v.status != HOLDS
    assert every.n == 8 and "all 8 prompts" in every.detail and "translatable_set" in speed.detail
    none = drafter_verdicts.table7_verdicts(frame, translatable=translatable.assign(translatable=False))
    assert [(v.n, v.status) for v in none] == [(0, INCONCLUSIVE)] * 3 and "not testable" in none[0].detail


@pytest.mark.parametrize(
    "taus,status,estimate",
    [
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 2.2}, HOLDS, 0.7),
        ({"sps-generic": 1.0, "sps-f": 2.5, "sps-pf": 2.2}, FAILS, -0.3),
        ({"sps-generic": 2.3, "sps-f": 1.5, "sps-pf": 2.2}, FAILS, -0.1),
        ({"sps-generic": 1.0, "sps-f": 1.5, "sps-pf": 1.5 + 0.02 + np.roll(NOISE, 1) * 3}, INCONCLUSIVE, 0.02),
    ],
)
def test_table3(taus, status, estimate):
    frame = pd.concat([_runs(dict.fromkeys(taus, 1.0), tau=taus, pair="zh-en"), _runs(dict.fromkeys(taus, 1.0))])
    v = drafter_verdicts.table3_verdict(frame)
    assert v.name == "Table 3 zh-en T=0" and v.status == status and v.n == len(NOISE)
    assert v.estimate == pytest.approx(estimate, abs=0.01)


def test_findings_from_results_lists_every_finding():
    found = {v.name: v for v in mf.findings_from_results("tiny")}
    names = list(found)
    for name in ("M1 T=0", "M1 vs PLD T=1", "M1-τ T=0", "M2 F", "M2 P-F", "M3", "M4-speed T=0", "M4-τ T=1"):
        assert name in names
    assert "Table 7" in names and "Quality T=0" in names and "Table 3 zh-en T=0" in names
    assert all(v.validity in ("yes", "partly", "no") and v.validity_why for v in found.values())
    level, why = mf.m3_validity()  # M3's validity is measured on the committed proxy_conditions.csv
    assert found["M3"].validity == level and found["M3"].validity_why == why
    assert (found["M3"].status == NOT_TESTABLE) == (level == "no")
    for name in ("M1 T=0", "M1 vs PLD T=1", "M4-speed T=0", "Table 7", "Table 7 all prompts"):
        v = found[name]
        assert v.machine is not None and "Table 6" in v.regime and "cpu" in v.machine.regime
    assert found["Quality T=0"].section == "sanity" and found["M1 T=0"].section == "finding"
    # issue 44 point 5: the large drafter's cost comes from the claim itself, so M4-speed is a sanity check
    assert found["M4-speed T=0"].section == "sanity" and "Sanity check, not a finding" in found["M4-speed T=0"].detail


def _counted(pf_calls, pld_calls, tokens=48):
    """M1 rows whose walltime says PLD is fastest (tokens/s) while the counts say P-F needs fewer priced steps:
    P-F ``pf_calls`` target calls with 4 draft calls each, PLD ``pld_calls`` target calls with free drafts."""
    speed = {"ar": 1.0, "sps-generic": 0.5, "sps-f": 0.6, "pld": 1.5, "sps-pf": 0.8}
    frame = _runs(speed)
    calls = {"ar": tokens, "sps-generic": 40, "sps-f": 30, "pld": pld_calls, "sps-pf": pf_calls}
    frame["new_tokens"] = tokens
    noise = NOISE[frame.prompt.str[-1].astype(int)] * 10
    frame["target_calls"] = frame.method.map(calls) + np.where(frame.method == "sps-pf", noise, 0)
    frame["drafted"] = np.where(frame.method.isin(["ar", "pld"]), 0, 4 * frame.target_calls)
    return frame


@pytest.mark.parametrize("pf_calls,status", [(16, HOLDS), (40, FAILS), (24, INCONCLUSIVE)])
def test_m1_in_the_papers_regime_prices_the_counts(pf_calls, status):
    """The paper regime (c = 0.063, PLD free, verify 1 step) decides; the measured walltime rides along."""
    frame = _counted(pf_calls, 30)
    priced = mf.with_priced_speed(frame)
    pf = priced[priced.method == "sps-pf"].iloc[0]
    c = costs.paper_table6_regime().cost("draft")
    assert pf.priced_speed == pytest.approx(48 / (pf.target_calls * (1 + 4 * c)))
    assert (priced[priced.method == "ar"].priced_speed == 1.0).all()
    joint = mf.in_two_regimes(drafter_verdicts.m1_verdicts, frame, 0.0, machine="cpu test")[0]
    assert joint.status == status and joint.machine.status == FAILS and joint.machine.regime == "cpu test"
    assert "Table 6" in joint.regime and "prompt lookup" in joint.regime


@pytest.mark.parametrize(
    "taus,status",
    [
        ({1000: 1.0, 10000: 1.5, 100000: 2.0}, HOLDS),
        ({100: 1.0, 1000: 1.01, 10000: 1.1, 100000: 2.0}, FAILS),
        ({1000: 1.2 + NOISE * 3, 10000: 1.5, 100000: 1.9 + np.roll(NOISE, 3) * 3}, INCONCLUSIVE),
    ],
)
def test_m2_linear(taus, status):
    _, v = scaling_verdicts.m2_verdicts(*_tokens_frame(taus))
    assert v.name == "M2-linear P-F" and v.status == status


@pytest.mark.parametrize(
    "taus,p_tau,status",
    [
        ({1000: 1.9, 10000: 2.3, 100000: 2.7}, 1.8, HOLDS),  # every budget past P's τ: a straight line, testable
        ({1000: 1.9, 10000: 2.0, 100000: 3.5}, 1.8, FAILS),  # past the onset everywhere, yet bent
        ({1000: 1.5, 10000: 1.6, 100000: 2.7}, 1.8, NOT_TESTABLE),  # issue 44 point 7: two budgets below P's τ
    ],
)
def test_m2_linear_is_read_only_past_the_onset(taus, p_tau, status):
    frame, grid = _tokens_frame(taus)
    generic = _runs({"sps-generic": 1.0}, tau={"sps-generic": p_tau})
    validity = scaling_verdicts.m2_linear_validity(pd.concat([frame, generic]), grid)
    _, v = judge_all(scaling_verdicts.m2_verdicts(frame, grid), {"M2 P-F": ("partly", "partly: x"), **validity})
    assert v.name == "M2-linear P-F" and v.status == status
    assert f"P's own τ {p_tau:.2f}" in v.validity_why


def _m3_conditions(tmp_path, generic_loss: float, into_own: list[float], chrf_xz: float = 20.0) -> pathlib.Path:
    """A results folder whose ``tiny/proxy_conditions.csv`` holds M3 rows: P's held-out phrasebook loss and the
    P-F drafters' τ from another input language into their own; and whose ``tiny/ml_ood.csv`` gives the target chrF
    ``chrf_xz`` on the input-match directions (X → Z) and 24 on the output-match ones (Y → En)."""
    rows = [("M3", "uniform loss ln|V|", "-", 8.318), ("M3", "heldout loss translation pages", "ml-draft-generic",
            generic_loss), ("M3", "tau", "ml-draft-pf-de: in other -> out en", 1.9)]  # fmt: skip
    rows += [("M3", "tau", f"ml-draft-pf-{x}: in other -> out drafter's", t) for x, t in zip("abcde", into_own)]
    folder = tmp_path / "tiny"
    folder.mkdir()
    frame = pd.DataFrame(rows, columns=["condition", "quantity", "subset", "value"]).assign(n=10, paper=None)
    frame.to_csv(folder / "proxy_conditions.csv", index=False)
    ood = [("de-fr", 0, chrf_xz), ("ja-de", 0, chrf_xz), ("fr-en", 0, 24.0), ("de-en", 0, 24.0), ("de-fr", 1, 99.0)]
    pd.DataFrame(ood, columns=["pair", "temperature", "chrf"]).to_csv(folder / "ml_ood.csv", index=False)
    return tmp_path


@pytest.mark.parametrize(
    "generic_loss,into_own,chrf_xz,level",
    [
        (2.4, [1.3, 1.2, 1.4, 1.25, 1.3], 20.0, "partly"),  # P writes the languages, the drafters write their own
        (10.3, [1.3, 1.2, 1.4, 1.25, 1.3], 20.0, "no"),  # P above a uniform guess
        (2.4, [1.09, 1.08, 1.09, 1.08, 1.04], 20.0, "no"),  # the English-only proxy's floor
        (2.4, [1.3, 1.2, 1.4, 1.25, 1.3], 7.0, "no"),  # the target does not translate X -> Z (issue 44 point 4)
    ],
)
def test_m3_validity_reads_the_condition_rows(tmp_path, generic_loss, into_own, chrf_xz, level):
    got, why = mf.m3_validity(_m3_conditions(tmp_path, generic_loss, into_own, chrf_xz))
    assert got == level
    assert f"{generic_loss:.2f}" in why and f"{sum(into_own) / 5:.2f}" in why and f"{chrf_xz:.1f} against 24.0" in why


def _ood_rows(gap: float, spread: float = 0.0) -> pd.DataFrame:
    """``ml_ood`` rows of one drafter ``ml-draft-pf-de``: 8 prompts on de-fr (input match) with τ 1.5 + gap (+ noise
    × ``spread``) and 8 on fr-en (output match) with τ 1.5."""
    rows = []
    for pair, tau in (("de-fr", 1.5 + gap + NOISE * spread), ("fr-en", np.full(len(NOISE), 1.5))):
        for i, t in enumerate(tau):
            rows.append({"method": "ml-draft-pf-de", "pair": pair, "prompt": f"{pair}:{i}", "new_tokens": 100 * t,
                         "target_calls": 100})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "gap,spread,level,status",
    [(0.3, 0.0, "partly", HOLDS), (-0.3, 0.0, "partly", FAILS), (0.01, 1.0, "partly", INCONCLUSIVE),
     (0.3, 0.0, "no", NOT_TESTABLE)],
)  # fmt: skip
def test_m3_verdict_and_its_measured_validity(tmp_path, gap, spread, level, status):
    """M3 on hand-built OOD rows, judged with the validity ``m3_validity`` measures (a planted proxy whose target
    does not translate X -> Z gives "not testable on this proxy", never "does not hold")."""
    chrf = 20.0 if level == "partly" else 5.0
    validity = mf.m3_validity(_m3_conditions(tmp_path, 2.4, [1.3] * 5, chrf))
    assert validity[0] == level
    v = judge_all([scaling_verdicts.m3_verdict(_ood_rows(gap, spread))], {"M3": validity})[0]
    assert v.status == status


def _seeded(frame: pd.DataFrame, pf_calls) -> pd.DataFrame:
    """A training seed's Table 1 rows: ``frame``'s retrained drafters (F, P-F) with P-F at ``pf_calls`` target calls
    (its walltime columns empty, as a batch-decoded seed's are) and nothing else."""
    rows = frame[frame.method.isin(["sps-f", "sps-pf"])].copy()
    rows.loc[rows.method == "sps-pf", "target_calls"] = pf_calls
    rows.loc[rows.method == "sps-pf", "drafted"] = 4 * pf_calls
    return rows.assign(tokens_per_second=np.nan, gamma=4, max_new_tokens=48)


@pytest.mark.parametrize(
    "calls,status",
    [((16, 15, 17), HOLDS), ((40, 41, 39), FAILS), ((16, 40, 16), INCONCLUSIVE)],
)
def test_m1_over_training_seeds_is_decided_in_the_papers_regime(calls, status):
    """M1 per training seed and pooled: a seed holds only its retrained drafters (F, P-F), the other methods are
    seed 0's rows (``seeds.with_seeds``); the paper regime decides over every seed and turns inconclusive when a seed
    reverses the pool; the measured walltime is seed 0's alone (a seed's rows have none)."""
    from specdec.multilingual import seeds

    frame = _counted(calls[0], 30).assign(gamma=4, max_new_tokens=48)
    seeded = {k: _seeded(frame, c) for k, c in enumerate(calls[1:], start=1)}
    frames = seeds.with_seeds(frame, seeded, set(frame.method), seeds.MAIN_SHARED)
    assert all(len(f) == len(frame) for f in frames.values())  # the shared methods in every seed, once each
    assert (frames[1][frames[1].method == "pld"].tokens_per_second.notna()).all()
    joint = mf.in_two_regimes(
        drafter_verdicts.m1_verdicts, frame, 0.0, machine="cpu test", frames=frames, rules=drafter_verdicts.m1_rules(0)
    )[0]
    assert joint.name == "M1 T=0" and joint.status == status and "Training seeds (3" in joint.detail
    assert joint.machine.status == FAILS and joint.machine.n == len(NOISE)  # seed 0's walltime: PLD is faster
    table = _seed_table(frames)
    assert list(table.columns) == ["finding", "seed 0", "seed 1", "seed 2", "pooled", "verdict"]
    assert table.set_index("finding").loc["M1 T=0", "verdict"] == status


def _seed_table(frames):
    from specdec.verdict import seed_table

    return seed_table(lambda f: mf.m1_paper_regime(f, 0.0), frames, drafter_verdicts.m1_rules(0))


@pytest.mark.parametrize("second,status", [((2.4, 1.6), HOLDS), ((1.3, 2.0), INCONCLUSIVE)])
def test_m3_over_training_seeds(second, status):
    """M3 holds over seeds when every seed keeps more τ on input-language match; a seed that reverses it makes the
    pooled verdict inconclusive."""
    from specdec.multilingual import seeds
    from specdec.verdict import over_seeds

    def rows(same_in, same_out):
        return _ood_frame(same_in, same_out).assign(gamma=4, max_new_tokens=24)

    frames = seeds.with_seeds(rows(2.5, 1.5), {1: rows(*second), 2: rows(2.6, 1.4)}, ["pf-de", "pf-fr"])
    v = over_seeds(lambda f: [scaling_verdicts.m3_verdict(f)], frames)[0]
    assert v.status == status and v.n == 6 * len(NOISE)  # a prompt's seeds are one unit
