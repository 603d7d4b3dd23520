"""One cost model for every speed finding: a run's hardware-independent counts priced at a regime's per-call costs.

A speed claim of a paper is made on a GPU with large models, where a small draft costs a few percent of a target
call and verifying γ + 1 tokens costs about one target step (decoding is memory-bound). On the tiny proxies on a
CPU a draft costs half a target call and verification 1.4-1.6 steps, so measured walltime tests this machine,
not the paper. The counts a run stores do not depend on the machine:

- ``target_calls``: target decode calls (an SD step verifies one block in one call; plain decoding makes one
  call per new token, so its count is ``new_tokens``; the prefill call is not counted on either side);
- draft calls per model: one forward call per drafted token (the engine's ``draft_calls`` equals the drafted
  tokens; rows that store only ``drafted`` use it as the draft-call count); prompt lookup drafts for free;
- calls per model of a collaborative method (CoS rows: ``calls_0``, ``calls_1``, ``calls_2``).

``priced_time`` prices counts at a ``Regime`` (the cost of one call of each model in target decoding steps, and
the cost of one verification call, each with its source) and ``speedup`` / ``sd_speedup`` return the speedup over
the baseline (plain decoding: one target step per new token). For i.i.d. acceptance the expected counts per SD
step are τ new tokens, one target call and γ draft calls, so ``sd_speedup`` is Eq. (1) of speculative decoding,
``(1 − α^(γ+1)) / ((1 − α)(γ c + 1))``.

Regimes are data (``paper_table6_regime``, ``h100_regime``, ``same_size_regime``, ``implied_regime``): a paper
table, this project's H100 grid at the paper's model sizes (``results/tiny/latency_real_sizes.csv``), or c = 1
for pairs of the same size.
"""

from __future__ import annotations

import functools
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from specdec.results import COMMITTED, paper_numbers

TARGET = "target"
_COST_UNIT = "in target decoding steps per call: 1 = one target step"


@dataclass(frozen=True)
class Regime:
    """Per-call costs of one setting, in target decoding steps. ``costs``: model → cost of one call (the target is
    1 unless said otherwise); ``verify``: the cost of a call that verifies a block (γ + 1 tokens at once), in units
    of that model's single-token call; ``source``: where the costs come from."""

    name: str
    costs: Mapping[str, float] = field(default_factory=dict)
    verify: float = 1.0
    source: str = ""

    def __post_init__(self):
        """A cost is a finite number >= 0 (a free draft costs 0); a verification call costs more than nothing."""
        from specdec import validate

        if not isinstance(self.costs, Mapping):
            raise TypeError(f"Regime {self.name!r}: costs must map a model to its cost, got {self.costs!r}")
        for model, value in self.costs.items():
            validate.number(f"Regime {self.name!r} cost of {model!r}", value, minimum=0.0, hint=_COST_UNIT)
        validate.number(f"Regime {self.name!r} verify", self.verify, positive=True, hint=_COST_UNIT)

    def cost(self, model: str) -> float:
        if model == TARGET and TARGET not in self.costs:
            return 1.0
        if model not in self.costs:
            raise ValueError(f"regime {self.name!r} prices no model {model!r}: it prices {sorted(self.costs)}")
        return float(self.costs[model])

    def label(self) -> str:
        """``name: c draft 0.063, verify 1 step (source)`` for a scoreboard row."""
        parts = ", ".join(f"c {m} {v:.3g}" for m, v in self.costs.items() if m != TARGET)
        return f"{self.name}: {parts}; verify {self.verify:.3g} step ({self.source})"


def priced_time(calls: Mapping[str, float], regime: Regime, verify_calls: Mapping[str, float] | None = None):
    """Σ over models of calls × cost; ``verify_calls`` (model → calls that verify a block, a part of ``calls``)
    are charged ``regime.verify`` × the model's cost. Counts may be numbers or arrays / Series (elementwise)."""
    verify_calls = verify_calls or {}
    total: np.ndarray = np.asarray(0.0)
    for model, count in calls.items():
        n, wide = np.asarray(count, dtype=float), np.asarray(verify_calls.get(model, 0), dtype=float)
        if (n < 0).any() or (wide < 0).any():  # NaN (a count a partial table lacks) stays NaN
            raise ValueError(f"call counts are >= 0, got {count!r} calls of {model!r}")
        total = total + (n - wide + wide * regime.verify) * regime.cost(model)
    return float(total) if total.ndim == 0 else total


def speedup(method_calls: Mapping[str, float], baseline_calls: Mapping[str, float], regime: Regime, **kw):
    """Speedup of a method over a baseline that produced the same tokens: priced time of the baseline's counts /
    priced time of the method's (``method_verify`` / ``baseline_verify``: their verification calls)."""
    return priced_time(baseline_calls, regime, kw.get("baseline_verify")) / priced_time(
        method_calls, regime, kw.get("method_verify")
    )


def sd_speedup(new_tokens, target_calls, draft_calls, regime: Regime, draft: str = "draft"):
    """Speedup of speculative decoding over plain decoding (``new_tokens`` target steps): every target call of SD
    verifies a block (``regime.verify``), every draft call costs ``regime.cost(draft)``."""
    if not isinstance(regime, Regime):
        raise TypeError(f"regime must be a specdec.costs.Regime (e.g. implied_regime(...)), got {regime!r:.80}")
    for name, calls in (("new_tokens", new_tokens), ("target_calls", target_calls), ("draft_calls", draft_calls)):
        if np.any(np.asarray(calls, dtype=float) < 0) or np.any(np.isnan(np.asarray(calls, dtype=float))):
            raise ValueError(f"{name} must be counts >= 0, got {calls!r}")
    sd = priced_time({TARGET: target_calls, draft: draft_calls}, regime, {TARGET: target_calls})
    out = np.asarray(new_tokens, dtype=float) / sd
    return float(out) if np.ndim(out) == 0 else out


def expected_block_efficiency(alpha: float, gamma: int) -> float:
    """τ for i.i.d. acceptance α: ``(1 − α^(γ+1)) / (1 − α)``, counting the bonus token (a NaN α, no data: NaN)."""
    if not 0 <= alpha <= 1 and not np.isnan(alpha):
        raise ValueError(f"an acceptance rate alpha lies in [0, 1], got {alpha}")
    if alpha >= 1:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_speedup(block_efficiency: float, gamma: int, latency_ratio: float) -> float:
    """Eq. (1) (Leviathan et al.; TABED's Eq. (1)): expected walltime speedup ``τ / (γ · T_q/T_p + 1)`` over
    autoregressive decoding, for a block efficiency τ (a NaN τ or ratio, no data: NaN)."""
    if np.any(np.asarray(block_efficiency) < 0) or np.any(np.asarray(latency_ratio) < 0):  # arrays: elementwise
        raise ValueError(f"block efficiency and T_q/T_p are >= 0, got {block_efficiency} and {latency_ratio}")
    return block_efficiency / (gamma * latency_ratio + 1)


def eq1_speedup(alpha: float, gamma: int, c: float) -> float:
    """Eq. (1) of speculative decoding (Leviathan et al.) from the acceptance rate: ``(1 − α^(γ+1)) / ((1 − α)(γ c
    + 1))``, i.e. ``expected_speedup`` at the i.i.d. τ of α."""
    return expected_speedup(expected_block_efficiency(alpha, gamma), gamma, c)


# ------------------------------------------------------------------------------------------------ regimes
def paper_table6_regime(target_size: str = "7B", draft_size: str = "68M") -> Regime:
    """TABED Table 6's measured T_q/T_p (A6000) for a draft of ``draft_size`` on a target of ``target_size``;
    verification at one target step, as Eq. (1) assumes on a GPU."""
    t6 = paper_numbers("tabed_table6_latency_ratio")
    rows = t6[(t6.target_size == target_size) & (t6.draft_size == draft_size)]
    if rows.empty:
        pairs = sorted(zip(t6.draft_size, t6.target_size))
        raise ValueError(f"TABED Table 6 has no {draft_size} draft on a {target_size} target: it has {pairs}")
    row = rows.iloc[0]
    return Regime(
        f"paper regime ({draft_size} on {target_size})",
        {"draft": float(row.latency_ratio_Tq_over_Tp)},
        1.0,
        f"TABED Table 6, {row.hardware}",
    )


@functools.cache
def _real_sizes(path: str) -> pd.DataFrame:
    return pd.read_csv(path)


def h100_regime(draft: str, target: str, gamma: int, context: int = 128, path=None) -> Regime:
    """This project's H100 grid at real model sizes (``latency_real_sizes.csv``, random weights, fp16, batch 1):
    c = T_draft(1, S, 1) / T_target(1, S, 1) and verify = T_target(1, S, γ + 1) / T_target(1, S, 1)."""
    grid = _real_sizes(str(path or pathlib.Path(COMMITTED) / "tiny" / "latency_real_sizes.csv"))
    g = grid[(grid.B == 1) & (grid.S == context)].set_index(["model", "gamma"]).seconds
    missing = [m for m in (draft, target) if (m, 1) not in g.index]
    if missing:
        known = sorted({m for m, _ in g.index})
        raise ValueError(
            f"the H100 grid has no model {missing} at S={context}: it has {known} (contexts {sorted(set(grid.S))})"
        )
    step = float(g[(target, 1)])
    widths = sorted(k for m, k in g.index if m == target)
    width = min((k for k in widths if k >= gamma + 1), default=widths[-1])
    return Regime(
        f"H100 grid ({draft} on {target})",
        {"draft": float(g[(draft, 1)]) / step},
        float(g[(target, width)]) / step,
        f"results/tiny/latency_real_sizes.csv, S={context}, verify at width {width}",
    )


def same_size_regime(models=("draft",), source: str = "pair of the same size") -> Regime:
    """c = 1 for every model: the paper's models are of one size (e.g. CoS's WE pairs)."""
    return Regime("paper regime (same size)", {m: 1.0 for m in models}, 1.0, source)


def implied_cost(tau: float, speedup_value: float, gamma: int) -> float:
    """The draft cost c that Eq. (1) needs for a paper's reported τ and speedup: ``(τ / speedup − 1) / γ``."""
    if not gamma >= 1 or speedup_value == 0:
        raise ValueError(f"implied_cost needs gamma >= 1 and a speedup other than 0, got {gamma} and {speedup_value}")
    return (tau / speedup_value - 1) / gamma


def implied_regime(name: str, costs: Mapping[str, float], source: str) -> Regime:
    """Costs backed out of a paper's own table by Eq. (1) (``implied_cost``); verification at one step."""
    return Regime(name, dict(costs), 1.0, source)
