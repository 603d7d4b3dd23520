"""Measuring CoS: resumable runs of every method on a task, speedup tables and the paper's theorems.

Walltime on a shared machine is noisy, so every prompt runs all methods back to back and a cell's speedup
is the median over prompts of the side-by-side ratio ``tokens/s(method) / tokens/s(standard)``. Calls per
token and acceptance are hardware-independent and reported beside it. ``cost_speedup`` converts the call
counts into time with per-call costs measured once (``call_costs``), which is what Theorems 3.1 / 3.6 model.
"""

from __future__ import annotations

import pandas as pd
import torch

from specdec import bench, cos
from specdec.collab import Combination
from specdec.sampling import SamplingConfig
from specdec.tasks import encode


def theorem_3_1(alpha: float, gamma: int, c: float) -> float:
    """Naive-CoS speedup over standard collaborative decoding (no bonus token):
    ``(1 − α^γ)(1 + c) / ((1 − α)(1 + cγ))``; ``c`` = proposer call time / verifier call time."""
    if alpha >= 1:
        return gamma * (1 + c) / (1 + c * gamma)
    return (1 - alpha ** gamma) * (1 + c) / ((1 - alpha) * (1 + c * gamma))


def theorem_3_6(alpha: float, gamma_q: int, gamma_p: int, c: float) -> float:
    """CoS with the alternate proposal framework: ``(1 − α^γq)(1 + c) / ((1 − α)(1 + cγq − α^γp c))``."""
    if alpha >= 1:
        alpha = 1 - 1e-9
    return (1 - alpha ** gamma_q) * (1 + c) / ((1 - alpha) * (1 + c * gamma_q - alpha ** gamma_p * c))


def we_acceptance(proposer_probs: torch.Tensor, other_probs: torch.Tensor, lam: float) -> torch.Tensor:
    """Exact Naive-CoS acceptance ``α = Σ min(q, r)`` with ``r = λ q + (1 − λ) p`` (Thm 3.2: ``α ≥ λ``)."""
    r = lam * proposer_probs + (1 - lam) * other_probs
    return torch.minimum(proposer_probs, r).sum(-1)


def call_costs(models, context: int = 64, repeats: int = 20) -> list[float]:
    """Median seconds of one one-token decode call T(1, context, 1) per model (``bench.forward_latency``)."""
    return [bench.forward_latency(m, 1, context, 1, repeats=repeats) for m in models]


def make_combination(kind: str, n_models: int, lam: float = 0.5, mu: float = 0.1, temperature: float = 1.0):
    """The paper's settings: WE with ``λ`` (two models) or ``1/n`` each; CD with ``μ`` and ``T`` (0 = argmax)."""
    if kind == "we":
        return Combination.weighted(lam, n_models)
    return Combination("cd", 2, mu=mu, temperature=temperature)


def run_task(store, *, models, tokenizer, rows, set_name: str, task: str, kind: str, methods, gamma: int = 5,
             temperature: float = 0.0, lam: float = 0.5, mu: float = 0.1, max_new_tokens: int = 64,
             seed: int = 0, desc: str = "") -> None:
    """Run every method on every prompt of ``rows`` and append one row per (prompt, method) to ``store``.

    Keys: set, task, method, gamma, temperature, lam, mu, prompt. ``temperature`` 0 is greedy decoding of
    ``argmax r``; otherwise tokens are sampled from ``r`` (CD uses ``T = temperature``, WE its members' T = 1).
    Methods of one prompt run back to back, so their walltime ratio sees the same machine state.
    """
    combine = make_combination(kind, len(models), lam, mu, temperature if kind == "cd" else 1.0)
    sampling = SamplingConfig(temperature=0.0 if temperature == 0 else 1.0)
    prompts = {r["id"]: encode(tokenizer, r["prompt"]) for r in rows}
    _warm_up(models, combine, next(iter(prompts.values())))

    def compute(set, task, method, gamma, temperature, lam, mu, prompt):
        res = cos.decode(models, prompts[prompt], combine, method, gamma=gamma, max_new_tokens=max_new_tokens,
                         sampling=sampling, seed=seed)
        row = {**_EMPTY, **res.summary()}
        row.pop("method")
        row["text"] = tokenizer.decode(res.output_ids)
        return row

    keys = [dict(set=set_name, task=task, method=m, gamma=gamma, temperature=temperature, lam=lam, mu=mu,
                 prompt=pid) for pid in prompts for m in methods]
    store.run(keys, compute, desc=desc or f"{set_name}/{task}")


def _warm_up(models, combine, prompt_ids) -> None:
    """One short run first: the first calls of a model pay one-time costs that would bias the first method."""
    cos.decode(models, prompt_ids, combine, "cos", gamma=2, max_new_tokens=4)


KEYS = ["set", "task", "method", "gamma", "temperature", "lam", "mu"]
MAX_MODELS = 3  # per-model columns are written for up to this many models, so one table holds every set
_EMPTY = {f"{name}_{i}": "" for name in ("calls", "tokens_fed", "proposed", "accepted") for i in range(MAX_MODELS)}


def speedup_table(frame: pd.DataFrame, baseline: str = "standard", costs: dict | None = None) -> pd.DataFrame:
    """One row per cell and method: median per-prompt walltime speedup over ``baseline``, tokens/s, calls per
    token, acceptance, and (if ``costs`` maps set -> per-model call times) the call-cost speedup."""
    cell = [k for k in KEYS if k != "method"]
    base = frame[frame.method == baseline].set_index(cell + ["prompt"])
    out = []
    for key, group in frame.groupby(KEYS, sort=False):
        g = group.set_index(cell + ["prompt"])
        ref = base.reindex(g.index)
        ratio = g.tokens_per_second / ref.tokens_per_second.values
        row = dict(zip(KEYS, key))
        row.update(speedup=float(ratio.median()), tokens_per_second=float(g.new_tokens.sum() / (g.total_time - g.prefill_time).sum()),
                   calls_per_token=float(_calls(g).sum() / g.new_tokens.sum()),
                   acceptance=float(_accepted(g).sum() / max(1, _proposed(g).sum())) if _proposed(g).sum() else float("nan"),
                   new_tokens=int(g.new_tokens.sum()), prompts=len(g))
        if costs and row["set"] in costs:
            c = costs[row["set"]]
            row["cost_speedup"] = float(_cost(ref, c).sum() / ref.new_tokens.sum()) / float(_cost(g, c).sum() / g.new_tokens.sum())
        out.append(row)
    return pd.DataFrame(out)


def _cols(g, prefix):
    return [c for c in g.columns if c.startswith(prefix) and c[len(prefix):].isdigit()]


def _calls(g):
    return g[_cols(g, "calls_")].fillna(0).sum(axis=1)


def _proposed(g):
    return g[_cols(g, "proposed_")].fillna(0).sum(axis=1)


def _accepted(g):
    return g[_cols(g, "accepted_")].fillna(0).sum(axis=1)


def _cost(g, costs):
    return sum(g[f"calls_{i}"].fillna(0) * c for i, c in enumerate(costs) if f"calls_{i}" in g)
