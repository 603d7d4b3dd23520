"""The CoS theory checks as ``Verdict``s: C2 (exactness of speculative decoding with a combined distribution,
χ² on seeded draws) and C3 (Thm 3.2 / Cor. 3.3: Naive-CoS acceptance ≥ the proposer's weight). Both hold for any
models once the code is right, so the scoreboard lists them as sanity checks.

- ``c2_tests``, ``c2_verdict``: C2 on ``cos_c2`` rows (``exactness.c2_rows``);
- ``c3_sanity_verdict``: Thm 3.2's identity ``Σ min(q, r) ≥ λ`` on exact α;
- ``c3_verdict``: the *measured* Naive-CoS acceptance is at least the proposer's weight at every λ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specdec import verdict
from specdec.cos.speed_verdicts import wide
from specdec.validate import reads_frame
from specdec.verdict import HOLDS, INCONCLUSIVE, Verdict, bootstrap_rows, decide

# ------------------------------------------------------------------------------------------------ C2
C2_ALPHA = 1e-3  # family-wise level of the χ² tests (Bonferroni over the tests of the table)


@reads_frame
def c2_tests(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (set, test) of ``cos_c2`` rows (``exactness.c2_rows``): draws, cells, the χ² p-value of the draws
    against ``r`` and against the expert alone (the control), and the total variation from ``r``."""
    out = []
    for (set_name, test), g in cells.groupby(["set", "test"], sort=True):
        out.append(
            dict(
                set=set_name,
                test=test,
                draws=int(g.observed.sum()),
                cells=len(g),
                p_r=verdict.chi2_pvalue(g.observed, g.r),
                p_expert=verdict.chi2_pvalue(g.observed, g.expert),
                tv_r=verdict.total_variation(g.observed, g.r) if g.observed.sum() else float("nan"),
                role_swaps=int(g.role_swaps.iloc[0]) if "role_swaps" in g else 0,
            )
        )
    return pd.DataFrame(out)


@reads_frame
def c2_verdict(cells: pd.DataFrame, alpha: float = C2_ALPHA) -> Verdict:
    """C2 (Sec. 3, Alg. 2): speculative decoding with a combined distribution (WE, CD) samples exactly from it
    (T = 1). ``cells``: ``cos_c2`` rows (``exactness.c2_rows``: per set and test, the seeded draws' cell counts and
    each cell's exact probability under ``r`` and under the expert alone). Estimate: the smallest χ² p-value
    against ``r`` over the k tests; deterministic (seeded draws), so the interval is the point. Holds when it is
    above ``alpha / k`` (Bonferroni: family-wise level ``alpha``) and every test's control — the same draws against
    the expert alone, a wrong sampler — is rejected (p ≤ alpha / k); does not hold when it is at most ``alpha / k``
    (a bug);
    inconclusive when some control is not rejected (those draws could not tell ``r`` from a wrong sampler) or there
    are no draws. n: the draws of the ``first`` tests (each draw is one generation of two tokens)."""
    claim = "speculative decoding with a combined distribution (WE, CD) samples exactly from it at T = 1 (χ²)"
    paper = "Sec. 3, Alg. 2: the output follows the combined distribution"
    tests = c2_tests(cells) if len(cells) else pd.DataFrame()
    if tests.empty or tests.draws.min() == 0:
        nan = float("nan")
        return Verdict("C2", claim, nan, nan, nan, 0, INCONCLUSIVE, paper, "No draws stored.")
    k = len(tests)
    est = float(tests.p_r.min())
    status = decide(est, est, alpha / k)
    blind = tests[tests.p_expert > alpha / k]
    if status == HOLDS and len(blind):
        status = INCONCLUSIVE
    per = "; ".join(
        f"{t.set} {t.test}: p {t.p_r:.3g} vs r, {t.p_expert:.2g} vs the expert alone, TV {t.tv_r:.3f}, "
        f"{t.cells} cells" + (f", {t.role_swaps} role swaps" if t.test == "first" else "")
        for t in tests.itertuples()
    )
    why = (
        f"; no power: {', '.join(f'{t.set} {t.test}' for t in blind.itertuples())} cannot tell r from the expert"
        if len(blind)
        else ""
    )
    return Verdict(
        "C2",
        claim,
        est,
        est,
        est,
        int(tests[tests.test == "first"].draws.sum()),
        status,
        paper,
        f"Estimate: min χ² p-value vs r over {k} tests; holds when > {alpha / k:g} ({alpha:g} / {k}, Bonferroni) and "
        f"every control (the same draws vs the expert alone) is rejected at that level. {per}{why}.",
    )


# ------------------------------------------------------------------------------------------------ C3
@reads_frame
def c3_sanity_verdict(exact: pd.DataFrame) -> Verdict:
    """Sanity check of Thm 3.2's identity: exact ``α = Σ min(q, r) ≥`` the proposer's weight (columns lam,
    proposer, alpha, bound from ``tables.expected_we_acceptance``). Deterministic: the interval is the point.
    It holds for any q and p (``min(q, λq + (1−λ)p) ≥ λq``), so it tests the code, not the paper."""
    margin = exact.alpha.to_numpy(float) - exact.bound.to_numpy(float)
    m = float(margin.min())
    return Verdict(
        "C3-sanity",
        "exact α = Σ min(q, r) ≥ the proposer's weight (an identity: a check of the code)",
        m,
        m,
        m,
        len(exact),
        decide(m, m, -1e-9),
        "Thm 3.2",
        "Estimate: smallest α − bound over (λ, proposer) by teacher forcing; ≥ 0 up to rounding.",
    )


@reads_frame
def c3_verdict(theory: pd.DataFrame) -> Verdict:
    """C3 (Thm 3.2 / Cor. 3.3): the *measured* Naive-CoS acceptance (accepted / proposed tokens, T = 1) is at
    least the proposer's weight (λ if model 0 proposes, 1 − λ if model 1) at every λ and proposer.
    ``theory``: ``cos_theory`` rows of sets ``we/proposer0`` and ``we/proposer1``. Estimate: the smallest
    (pooled acceptance − weight) over (λ, proposer); units: (task, prompt), the same resample for all points."""
    t = theory[theory.set.str.startswith("we/proposer")]
    t = t.assign(
        proposer=t.set.str[-1].astype(int),
        acc=t[["accepted_0", "accepted_1"]].fillna(0).sum(axis=1),
        prop=t[["proposed_0", "proposed_1"]].fillna(0).sum(axis=1),
    )
    acc = wide(t, ["task", "prompt"], ["lam", "proposer"], "acc", aggfunc="sum")
    prop = wide(t, ["task", "prompt"], ["lam", "proposer"], "prop", aggfunc="sum").reindex(
        index=acc.index, columns=acc.columns
    )
    bound = np.array([lam if k == 0 else 1 - lam for lam, k in acc.columns])
    values = np.concatenate([acc.to_numpy(float), prop.to_numpy(float)], axis=1)
    half = acc.shape[1]

    def margin(v):
        return float(np.min(v[:, :half].sum(0) / v[:, half:].sum(0) - bound))

    est, low, high = bootstrap_rows(values, margin)
    pooled = acc.sum() / prop.sum()
    worst = (pooled - bound).idxmin()
    return Verdict(
        "C3",
        "measured Naive-CoS acceptance ≥ the proposer's weight at every λ (WE, T = 1)",
        est,
        low,
        high,
        len(acc),
        decide(low, high, 0.0),
        "α ≥ λ (Thm 3.2), ≥ max(λ, 1 − λ) with the better proposer (Cor. 3.3)",
        f"Estimate: min over {half} (λ, proposer) points of measured α − weight; tightest at λ = {worst[0]:g}, "
        f"proposer {worst[1]} (α {pooled[worst]:.3f} vs {bound[list(acc.columns).index(worst)]:.2f}).",
    )
