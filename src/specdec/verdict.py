"""Findings as data: a paper's claim, our estimate with a 95% interval, the sample size and the verdict.

Every paper's ``bench`` module turns its findings into ``Verdict`` objects with one function per finding,
so that the rule for "holds" is code, unit-tested on hand-built frames, and the same in every notebook:

- ``holds``: the whole 95% interval lies on the claim's side of its threshold;
- ``does not hold``: the whole interval lies on the other side;
- ``inconclusive``: the interval straddles the threshold (more prompts or requests would decide it).

``bootstrap_ci`` resamples the *units* a claim is about (prompts, requests), never tokens, since tokens of one
generation are not independent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


@dataclass(frozen=True)
class Verdict:
    """One finding. ``estimate`` and ``low``/``high`` (95% interval) are in the claim's unit; ``n`` counts the
    resampled units; ``status`` is ``HOLDS``, ``FAILS`` or ``INCONCLUSIVE``; ``detail`` says what was compared."""

    name: str
    claim: str
    estimate: float
    low: float
    high: float
    n: int
    status: str
    paper: str = ""
    detail: str = ""

    def row(self) -> dict:
        """A tidy row (for the scoreboard)."""
        return {
            "finding": self.name,
            "claim": self.claim,
            "paper": self.paper,
            "estimate": round(self.estimate, 3),
            "ci95": f"[{self.low:.3f}, {self.high:.3f}]",
            "n": self.n,
            "verdict": self.status,
        }

    def markdown(self) -> str:
        paper = f" Paper: {self.paper}." if self.paper else ""
        detail = f" {self.detail}" if self.detail else ""
        return (
            f"**{self.name} {self.status}** — {self.claim}.{paper} Ours: {self.estimate:.3f} "
            f"(95% CI {self.low:.3f} to {self.high:.3f}, n = {self.n}).{detail}"
        )


def decide(low: float, high: float, threshold: float = 0.0, greater: bool = True) -> str:
    """``HOLDS`` if the interval ``[low, high]`` lies wholly above ``threshold`` (below, if not ``greater``),
    ``FAILS`` if wholly on the other side, else ``INCONCLUSIVE``. Touching the threshold is not enough."""
    if any(np.isnan([low, high])):
        return INCONCLUSIVE
    if greater:
        return HOLDS if low > threshold else FAILS if high <= threshold else INCONCLUSIVE
    return HOLDS if high < threshold else FAILS if low >= threshold else INCONCLUSIVE


def bootstrap_ci(
    units: Sequence, statistic: Callable[[Sequence], float], *, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``(estimate, low, high)``: ``statistic`` on ``units`` and the 2.5 / 97.5 percentiles of it over
    ``n_boot`` resamples of the units with replacement (a seeded generator: the same interval every run)."""
    units = list(units)
    if not units:
        return float("nan"), float("nan"), float("nan")
    estimate = float(statistic(units))
    rng = np.random.default_rng(seed)
    draws = [statistic([units[i] for i in rng.integers(0, len(units), len(units))]) for _ in range(n_boot)]
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
    return estimate, float(low), float(high)


def per_request(frame, column: str, value: str):
    """``(wide, first)``: the mean ``value`` per request (index) x ``column`` of a runs frame, and each request's
    first row (same index). A request is a distinct ``request`` digest where the frame has one, so two row ids of
    one input (a generator that drew it twice) are one bootstrap unit, not two; else a ``row`` id. Requests are in
    the order of their row ids, so a frame without repeats resamples exactly as one indexed by ``row``."""
    unit = "request" if "request" in frame else "row"
    first = frame.sort_values("row", kind="stable").drop_duplicates(unit).set_index(unit)
    wide = frame.pivot_table(index=unit, columns=column, values=value, aggfunc="mean").reindex(first.index)
    return wide, first


def paired_difference(a: Sequence[float], b: Sequence[float], *, n_boot: int = 2000, seed: int = 0):
    """Mean of ``a − b`` over paired units (the same prompts under two methods) with its bootstrap interval."""
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return bootstrap_ci(list(diffs), lambda d: float(np.mean(d)), n_boot=n_boot, seed=seed)
