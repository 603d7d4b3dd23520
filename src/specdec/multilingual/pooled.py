"""Prompt-paired statistics the multilingual verdicts share: per-prompt speed ratios, τ pooled over resampled
prompts, and the geometric-mean speed verdict.

Every verdict takes the stored per-run rows (``results/<profile>/ml_*.csv``: one row per pair, temperature, seed,
prompt and method) and bootstraps over *prompts* (the stored ``prompt`` ids; at T = 1 the three seeds of a prompt
stay together), never over tokens. Methods are paired by prompt: every method of one prompt ran back to back, so
speed claims are per-prompt tokens/s ratios summarised by their geometric mean over prompts, and τ (block
efficiency: new tokens per target call) is pooled over the resampled prompts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from specdec.validate import reads_frame
from specdec.verdict import Verdict, bootstrap_rows, decide

RUN = ["pair", "source", "temperature", "seed", "prompt"]  # one run of one method


@reads_frame
def log_speed(frame: pd.DataFrame, a: str, b: str, value: str = "tokens_per_second") -> pd.Series:
    """Per prompt: mean over its seeds of log(``value`` of method ``a`` / ``value`` of ``b``) on the same run
    (``value``: measured ``tokens_per_second`` or ``priced_speed``, ``with_priced_speed``)."""
    tps = frame.pivot_table(index=RUN, columns="method", values=value)[[a, b]].dropna()
    return np.log(tps[a] / tps[b]).groupby(level=["pair", "prompt"]).mean()


def _sums(frame: pd.DataFrame, columns, value: str) -> pd.DataFrame:
    """Prompts (rows) × ``columns`` of the summed ``value`` over seeds."""
    return frame.pivot_table(index=["pair", "prompt"], columns=columns, values=value, aggfunc="sum")


def tau_arrays(frame: pd.DataFrame, columns) -> tuple[np.ndarray, list]:
    """``[new tokens | target calls]`` per prompt for each column (missing: 0) and the column labels."""
    new = _sums(frame, columns, "new_tokens").fillna(0)
    calls = _sums(frame, columns, "target_calls").reindex(index=new.index, columns=new.columns).fillna(0)
    return np.concatenate([new.to_numpy(float), calls.to_numpy(float)], axis=1), list(new.columns)


def pooled_tau(v: np.ndarray) -> np.ndarray:
    half = v.shape[1] // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return v[:, :half].sum(0) / v[:, half:].sum(0)


def geo_verdict(name, claim, paper, logs: np.ndarray, detail: str, threshold=1.0, greater=True) -> Verdict:
    est, low, high = bootstrap_rows(logs, lambda v: float(np.mean(v)))
    est, low, high = math.exp(est), math.exp(low), math.exp(high)
    return Verdict(name, claim, est, low, high, len(logs), decide(low, high, threshold, greater), paper, detail)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["RUN", "log_speed"]
