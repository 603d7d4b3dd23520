"""The paired statistics TABED's findings share: τ per request x method (``wide``), the mean paired difference of
two methods (``paired``), a bootstrap that resamples requests within their cell (``cell_bootstrap``) and a
``Verdict`` that is inconclusive below ``MIN_REQUESTS`` paired requests (``make_verdict``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from specdec.verdict import INCONCLUSIVE, Verdict, decide, paired_difference, per_request

MIN_REQUESTS = 3  # fewer paired requests than this: inconclusive, whatever the interval says


def wide(frame: pd.DataFrame, column: str = "method") -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(τ per request x method (or window), request info)``; requests as ``verdict.per_request`` counts them (the
    small NQ fact pool repeats questions)."""
    table, first = per_request(frame, column, "block_efficiency")
    table.columns = [str(c) for c in table.columns]
    info = first[["scenario", "turn", "group"]]
    info = info.assign(turn=info.turn.astype(int))
    info["cell"] = info.group.where(info.group != "benchmark", "benchmark t" + info.turn.astype(str))
    return table, info.reindex(table.index)


def paired(frame: pd.DataFrame, a: str, b: str, n_boot: int, seed: int):
    """``(estimate, low, high, n)`` of the mean paired difference τ(a) − τ(b) over the requests run with both."""
    table, _ = wide(frame[frame.method.isin([a, b])])
    if a not in table or b not in table:
        return float("nan"), float("nan"), float("nan"), 0
    both = table[[a, b]].dropna()
    return (*paired_difference(both[a], both[b], n_boot=n_boot, seed=seed), len(both))


def cell_bootstrap(cells: list[np.ndarray], statistic, *, n_boot: int, seed: int) -> tuple[float, float, float]:
    """``statistic(list of per-cell arrays)`` and its 95% interval over resamples of the requests (rows of each
    array) *within* their cell, all columns of a row together (so methods or windows stay paired)."""
    if not cells:
        return float("nan"), float("nan"), float("nan")
    estimate = float(statistic(cells))
    rng = np.random.default_rng(seed)
    draws = [statistic([c[rng.integers(0, len(c), len(c))] for c in cells]) for _ in range(n_boot)]
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
    return estimate, float(low), float(high)


def make_verdict(
    name, claim, est, low, high, n, *, threshold=0.0, greater=True, paper="", detail="", min_n=MIN_REQUESTS
):
    status = decide(low, high, threshold, greater)
    if n < min_n:
        status = INCONCLUSIVE
        detail = f"{detail} Only {n} request(s): too few to decide (at least {min_n})."
    return Verdict(name, claim, float(est), float(low), float(high), int(n), status, paper, detail.strip())


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["MIN_REQUESTS", "wide"]
