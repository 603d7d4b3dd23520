"""AASD's findings A1-A4 and the implicit "text-only small drafts beat multimodal ones" (A5) as ``Verdict``s.

Every draft decodes the same requests, so drafts are compared *paired by request* and the bootstrap resamples
requests (distinct ``request`` digests; ``row`` ids in a frame without them). A finding made of several comparisons
(targets x γ x baselines) holds only if every part holds, does not hold if any part does not, and is inconclusive
otherwise; its estimate and interval are those of the weakest part (the smallest estimate). Frames are
``bench.runs(...)`` frames (one row per draft x request).
"""

from __future__ import annotations

import pandas as pd

from specdec import results
from specdec.aasd.bench import KEY, runs
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, Verdict, decide, paired_difference, per_request

BASELINES = ("FT-LLaMA", "DT-LLaMA", "FT-LLaVA", "DT-LLaVA")
METRICS = {"tau": "block_efficiency", "alpha": "acceptance_rate", "omega": "speedup"}


def paired_part(frame: pd.DataFrame, a: str, b: str, metric: str, n_boot: int = 2000, seed: int = 0):
    """``(estimate, low, high, n)``: mean over requests of ``metric(a) − metric(b)`` (``metric`` a key of
    ``METRICS``), on the requests both drafts decoded (a request drawn twice counts once)."""
    col = METRICS[metric]
    wide, _ = per_request(frame[frame.draft.isin([a, b])], "draft", col)
    if a not in wide or b not in wide:
        return float("nan"), float("nan"), float("nan"), 0
    both = wide[[a, b]].dropna()
    est, low, high = paired_difference(both[a], both[b], n_boot=n_boot, seed=seed)
    return est, low, high, len(both)


def combine(name: str, claim: str, parts: list[tuple[str, tuple]], paper: str = "") -> Verdict:
    """One ``Verdict`` from ``(label, (estimate, low, high, n))`` parts, each claimed > 0 (see the module doc)."""
    if not parts:
        nan = float("nan")
        return Verdict(name, claim, nan, nan, nan, 0, INCONCLUSIVE, paper, "no runs")
    statuses = [decide(low, high) for _, (_, low, high, _) in parts]
    status = FAILS if FAILS in statuses else HOLDS if all(s == HOLDS for s in statuses) else INCONCLUSIVE
    label, (est, low, high, n) = min(parts, key=lambda p: p[1][0])
    held, failed = sum(s == HOLDS for s in statuses), sum(s == FAILS for s in statuses)
    detail = f"Of {len(parts)} comparisons {held} hold and {failed} do not; weakest: {label}."
    return Verdict(name, claim, est, low, high, n, status, paper, detail)


def _cells(frame: pd.DataFrame):
    for (target, gamma), cell in frame[frame.draft != "AR"].groupby(["target", "gamma"]):
        yield f"{target} γ={gamma}", cell


def verdict_a1(frame: pd.DataFrame, metric: str = "tau") -> Verdict:
    """A1: the AASD draft beats every baseline on ``metric`` (τ, α or ω) for every target and γ."""
    parts = [
        (f"{label} vs {b}", paired_part(cell, "AASD", b, metric))
        for label, cell in _cells(frame)
        for b in BASELINES
        if b in set(cell.draft)
    ]
    paper = {"tau": "τ 2.72-3.99 vs ≤ 2.61", "alpha": "α 0.62-0.63 vs ≤ 0.35", "omega": "ω 2.02-2.24x vs ≤ 1.46x"}
    return combine(
        f"A1-{metric}", f"AASD beats every baseline on {metric} ({metric}(AASD) − {metric}(baseline) > 0), every "
        "target and γ", parts, paper[metric],
    )  # fmt: skip


def verdict_a2(frame: pd.DataFrame) -> Verdict:
    """A2: the KV projector raises α and τ (AASD with the projector vs without), every γ."""
    parts = [
        (f"{label} {m}", paired_part(cell, "AASD", "AASD w/o projector", m))
        for label, cell in _cells(frame)
        for m in ("tau", "alpha")
    ]
    return combine(
        "A2", "the vision KV projector raises α and τ (with − without > 0)", parts, "τ +0.39 to +0.73, α +0.13 to +0.15"
    )


def verdict_a3(frame: pd.DataFrame) -> Verdict:
    """A3: reading the target's cache raises τ (AASD vs the module on its own K/V only)."""
    parts = [(label, paired_part(cell, "AASD", "AASD own cache only", "tau")) for label, cell in _cells(frame)]
    return combine("A3", "the target's KV cache raises τ (with − own cache only > 0)", parts, "Fig. 3 (no numbers)")


def verdict_a4(frame: pd.DataFrame) -> Verdict:
    """A4: dropping the text KV hurts τ more than dropping the image KV: τ(w/o image) − τ(w/o text) > 0."""
    parts = [
        (label, paired_part(cell, "AASD w/o image KV", "AASD w/o text KV", "tau")) for label, cell in _cells(frame)
    ]
    return combine(
        "A4", "dropping text KV hurts τ more than dropping image KV (τ(w/o image) − τ(w/o text) > 0)", parts,
        "Fig. 4 (no numbers)",
    )  # fmt: skip


def verdict_a5(frame: pd.DataFrame) -> Verdict:
    """A5 (implicit in Table 1): the text-only small drafts beat the multimodal ones on τ (FT and DT)."""
    parts = [
        (f"{label} {kind}", paired_part(cell, f"{kind}-LLaMA", f"{kind}-LLaVA", "tau"))
        for label, cell in _cells(frame)
        for kind in ("FT", "DT")
    ]
    return combine(
        "A5", "text-only small drafts beat multimodal ones (τ(LLaMA) − τ(LLaVA) > 0, FT and DT)", parts,
        "τ LLaMA 1.87-2.61 vs LLaVA 1.68-2.37",
    )  # fmt: skip


def table1_findings(frame: pd.DataFrame) -> list[Verdict]:
    return [verdict_a1(frame, "tau"), verdict_a1(frame, "alpha"), verdict_a1(frame, "omega"), verdict_a5(frame)]


def ablation_findings(frame: pd.DataFrame) -> list[Verdict]:
    return [verdict_a2(frame), verdict_a3(frame), verdict_a4(frame)]


def findings_from_results(profile: str = "tiny", root=None) -> list[Verdict]:
    """A1-A5 on the committed ``results/<profile>/aasd_runs.csv`` (``root``: the results folder, default
    ``results.RESULTS``; the scoreboard passes ``results.COMMITTED``)."""
    stored = results.ResultStore(profile, "aasd_runs", KEY, root=root).frame()
    if stored.empty:
        return []
    return table1_findings(runs(stored, "table1")) + ablation_findings(runs(stored, "ablations"))
