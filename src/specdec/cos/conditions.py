"""Measured proxy conditions of CoS's speed findings (docs/papers/cos.md, *Proxy conditions*; data/DATA_CARD.md),
each a threshold fixed from the paper's words before its verdict was recomputed (issue 44), read from the committed
rows of every training seed:

- **C1, C1-SD, C1 <set> T=<T>, C4-APF** (``acceptance_check``): the paper's speedups rest on the proposer's tokens
  being accepted (Sec. 4.2: "CoS maintains a consistently high acceptance rate in the WE scenario"; "when the
  acceptance rate is low, SD may perform slower"). The proxy's CoS acceptance (pooled ``accepted / proposed`` of
  every model, ``cos`` rows) must reach the lowest acceptance at which Thm 3.6 (γ_p = 1, γ_q in 1-5) at the
  regime's c gives the paper's smallest reported CoS speedup of the setting (``paper_acceptance_floor``: WE 1.34x,
  three models 1.27x, CD 1.11x): a pair that agrees less than any of the paper's pairs tests a regime it never ran.
  C4-APF also needs bonus tokens (APF acts only through them: ``bonus_reused`` > 0 in each set).
- **C4-λ** (``lambda_check``): "for any λ, an appropriate proposal model can be selected to maintain a high
  acceptance rate" (Sec. 4.3, Cor. 3.3: "a lower bound of at least 0.5"): CoS's acceptance at every λ ≥ 0.5.
- **C4-μ, C4-μ-trend** (``acceptance_check`` on the CD rows at μ = 0.1, the paper's default): the CD floor above.
- **C4-γ WE** (``similar_size_check``): "when the models are similar in size" (Sec. 4.3): the WE models' measured
  call costs (``cos_call_costs.csv``) within a factor 2, cheaper / dearer ≥ ``SIMILAR_SIZE``.
- **C1-GPU** (``gpu_rows_check``): an interval needs per-prompt rows, at least ``GPU_MIN_ROWS`` per cell and method.

A condition that holds gives ``met`` (``partly`` on the tiny proxies, ``yes`` on the paper's models); one that fails
gives ``no`` ("not testable on this proxy"); one the profile's rows cannot measure says ``NOT_MEASURED``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specdec.validate import reads_frame
from specdec.verdict import validity

PAPER_MIN_SPEEDUP = {"we": 1.34, "we3": 1.27, "cd": 1.11}  # Sec. 4.2: the smallest CoS speedup of each setting
PAPER_GAMMAS = (1, 2, 3, 4, 5)  # γ_q the floor may pick (the paper's Fig. 6 range); γ_p = 1 (Sec. 4.1)
COR_33_FLOOR = 0.5  # Cor. 3.3: "by selecting an appropriate proposal model, [α] has a lower bound of at least 0.5"
SIMILAR_SIZE = 0.5  # C4-γ WE: call cost of the cheaper WE model / the dearer one, at least (within a factor 2)
GPU_MIN_ROWS = 8  # C1-GPU: per-prompt rows per (cell, method) an interval needs
CD_DEFAULT_MU = 0.1  # the paper's CD default (Sec. 4.3 sweeps μ 0.1-0.5)
NOT_MEASURED = "not measured on this profile"


def thm36_speedup(alpha: float, gamma: int, c: float) -> float:
    """Thm 3.6 with γ_p = 1: ``(1 − α^γ)(1 + c) / ((1 − α)(1 + cγ − αc))``, the speedup over standard collaborative
    decoding; at α = 1 its limit ``γ(1 + c) / (1 + cγ − c)``."""
    if not (0 <= alpha <= 1) or int(gamma) < 1 or not c >= 0:
        raise ValueError(f"thm36_speedup needs 0 ≤ α ≤ 1, γ ≥ 1 and c ≥ 0, got α={alpha!r}, γ={gamma!r}, c={c!r}")
    if alpha >= 1:
        return gamma * (1 + c) / (1 + c * gamma - c)
    return (1 - alpha**gamma) * (1 + c) / ((1 - alpha) * (1 + c * gamma - alpha * c))


def paper_acceptance_floor(speedup: float, c: float, gammas=PAPER_GAMMAS) -> float:
    """The smallest α at which ``thm36_speedup`` reaches ``speedup`` at some γ of ``gammas`` (bisection; it rises
    with α); ``inf`` where no γ reaches it."""
    if not speedup > 0:
        raise ValueError(f"paper_acceptance_floor needs a positive speedup, got {speedup!r}")
    best = float("inf")
    for gamma in gammas:
        if thm36_speedup(1.0, gamma, c) < speedup:
            continue
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if thm36_speedup(mid, gamma, c) < speedup else (lo, mid)
        best = min(best, hi)
    return best


def set_floor(set_name: str, regimes) -> float:
    """``paper_acceptance_floor`` of a set (``we``, ``we3``, ``cd``; ``we/proposer0`` reads as ``we``) at the cost
    of its regime's cheaper model (``findings.paper_regimes``)."""
    base = str(set_name).split("/")[0]
    if base not in PAPER_MIN_SPEEDUP or base not in regimes:
        raise ValueError(f"set_floor: unknown set {set_name!r} (known: {sorted(PAPER_MIN_SPEEDUP)})")
    c = min(regimes[base].costs.values()) / max(regimes[base].costs.values())
    return paper_acceptance_floor(PAPER_MIN_SPEEDUP[base], c)


@reads_frame
def acceptance(rows: pd.DataFrame) -> tuple[float, int]:
    """``(pooled accepted / proposed over every model, proposed)`` of the ``cos`` rows of ``rows``."""
    cos = rows[rows.method == "cos"]
    cols = [m for m in ("0", "1", "2") if f"proposed_{m}" in cos]
    proposed = float(sum(cos[f"proposed_{m}"].fillna(0).sum() for m in cols))
    accepted = float(sum(cos[f"accepted_{m}"].fillna(0).sum() for m in cols))
    return (accepted / proposed if proposed else float("nan")), int(proposed)


@reads_frame
def acceptance_check(rows: pd.DataFrame, regimes, why: str, met: str, by=("set",), bonus: bool = False):
    """Per group ``by`` of ``rows`` (``set`` always among them), CoS's pooled acceptance against its set's
    ``set_floor``: ``met`` when every group reaches it (and, with ``bonus``, reuses a bonus token), else ``no``."""
    if rows.empty or not (rows.method == "cos").any():
        return validity("partly", why, f"{NOT_MEASURED}: no CoS rows")
    parts, ok = [], True
    for key, g in rows.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        alpha, n = acceptance(g)
        floor = set_floor(key[0], regimes)
        label = " ".join(f"{k}={v:g}" if isinstance(v, float) else str(v) for k, v in zip(by, key))
        text = f"{label} α {alpha:.2f} (needs ≥ {floor:.2f})"
        ok &= bool(alpha >= floor)
        if bonus:
            reused = int(g[g.method == "cos"].bonus_reused.fillna(0).sum())
            text += f", {reused} bonus tokens reused (needs > 0)"
            ok &= reused > 0
        parts.append(text)
    measured = (
        "CoS's pooled acceptance over every training seed's rows, against the α at which Thm 3.6 (γ_p = 1) at the"
        " regime's c reaches the paper's smallest speedup of the setting (WE 1.34x, three models 1.27x, CD 1.11x): "
        + "; ".join(parts)
    )
    if ok:
        return validity(met, why, measured)
    return validity("no", why, measured + ": the proxy's pair agrees less than any pair the paper ran")


@reads_frame
def lambda_check(rows: pd.DataFrame, why: str, met: str):
    """C4-λ: CoS's pooled acceptance at every λ of ``rows`` (WE, γ = 1) at least Cor. 3.3's 0.5."""
    if rows.empty or not (rows.method == "cos").any():
        return validity("partly", why, f"{NOT_MEASURED}: no CoS rows")
    per = {float(lam): acceptance(g)[0] for lam, g in rows.groupby("lam", sort=True)}
    measured = (
        "CoS's acceptance per λ over every training seed's rows: "
        + ", ".join(f"{lam:g}: {a:.2f}" for lam, a in per.items())
        + f" (needs ≥ {COR_33_FLOOR:g} at each, Cor. 3.3)"
    )
    if all(a >= COR_33_FLOOR for a in per.values()):
        return validity(met, why, measured)
    return validity("no", why, measured + ": the proxy does not keep the acceptance the paper's argument rests on")


def similar_size_check(call_costs: pd.DataFrame | None, why: str, met: str, set_name: str = "we"):
    """C4-γ WE: the measured call costs of the WE models (``cos_call_costs.csv``), cheaper / dearer ≥
    ``SIMILAR_SIZE``; unmeasured without the table or the set."""
    if call_costs is None or not (call_costs.set == set_name).any():
        return validity("partly", why, f"{NOT_MEASURED}: no measured call costs of the WE models")
    row = call_costs[call_costs.set == set_name].iloc[0]
    costs = [float(row[f"cost_{m}"]) for m in ("0", "1", "2") if f"cost_{m}" in row and pd.notna(row[f"cost_{m}"])]
    ratio = min(costs) / max(costs)
    measured = (
        f"the WE models' measured call costs ({row.device}) are {', '.join(f'{c * 1e3:.2f}' for c in costs)} ms,"
        f" cheaper / dearer {ratio:.2f} (needs ≥ {SIMILAR_SIZE:g}: 'similar in size')"
    )
    if ratio >= SIMILAR_SIZE:
        return validity(met, why, measured)
    return validity("no", why, measured + ": the WE models are not of similar size")


def gpu_rows_check(gpu: pd.DataFrame | None, why: str = "") -> tuple[str, str]:
    """C1-GPU: per-prompt rows (a ``prompt`` column, ≥ ``GPU_MIN_ROWS`` rows per cell and method), which an interval
    needs; the stored grid's aggregates (one row per cell and method) fail it."""
    reasons = (why,) if why else ()
    if gpu is None or not len(gpu):
        return validity("no", *reasons, "no GPU grid stored")
    cell = [c for c in ("set", "task", "method", "gamma", "temperature", "lam", "mu") if c in gpu]
    per = int(gpu.groupby(cell).size().min()) if "prompt" in gpu else 1
    measured = f"the stored GPU grid has {per} row(s) per cell and method (needs ≥ {GPU_MIN_ROWS} per-prompt rows)"
    if per >= GPU_MIN_ROWS:
        return validity("partly", *reasons, measured)
    return validity("no", *reasons, measured + ": per-cell aggregates (medians) give no interval")


def validities(tables: dict, call_costs, gpu, regimes, why: tuple[str, ...], met: str, cells, main_why=()) -> dict:
    """Each CoS speed finding's ``(validity, why)`` from its condition on ``tables`` (``{train seed: {table: rows}}``,
    every training seed), ``call_costs`` and ``gpu``; ``cells``: the findings module's selections
    (``main_cells``, ``lambda_cells``, ``mu_cells``, ``apf_cells``); ``main_why``: C1's further reasons."""
    if not isinstance(tables, dict) or not isinstance(cells, dict):
        raise TypeError(f"validities needs {{train seed: {{table: rows}}}} and the cell selections, got {tables!r}")
    why_text, c1_why = "; ".join(why), "; ".join((*why, *main_why))

    def rows(table: str, pick) -> pd.DataFrame:  # empty where no seed has the table yet (its notebook runs later)
        frames = [pick(t[table]) for t in tables.values() if table in t]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    main = rows("cos_main", cells["main"])
    found = {
        "C1": acceptance_check(main, regimes, c1_why, met),
        "C1-GPU": gpu_rows_check(gpu),
        "C4-λ": lambda_check(rows("cos_sweeps", cells["lambda"]), why_text, met),
        "C4-APF": acceptance_check(rows("cos_theory", cells["apf"]), regimes, why_text, met, bonus=True),
        "C4-γ WE": similar_size_check(call_costs, why_text, met),
    }
    found["C1-SD"] = found["C1"]
    for (s, T), g in main.groupby(["set", "temperature"], sort=True) if len(main) else ():
        found[f"C1 {s} T={T:g}"] = acceptance_check(g, regimes, c1_why, met)
    mu = rows("cos_sweeps", cells["mu"])
    mu = mu[np.isclose(mu.mu, CD_DEFAULT_MU)] if len(mu) else mu
    found["C4-μ"] = found["C4-μ-trend"] = acceptance_check(mu, regimes, why_text, met)
    return found
