"""The CoS speed claims as ``Verdict``s: C1 (Tables 2-4) and C4 (Figs. 4-6, App. C.4), with 95% bootstrap intervals
over prompts (never tokens).

Every speed claim is a per-prompt ratio of tokens/s measured side by side (the methods of one prompt run back
to back, so they are paired by prompt), summarised by the geometric mean over prompts (``exp`` of the mean
log ratio); the bootstrap resamples prompts (a prompt of one task in one cell is one unit). Where the paper
reports SD / CoS at their best proposal length γ, γ is picked per cell on all prompts first (median ratio, as
``tables.best_over_gamma``) and then held fixed in the resamples, which makes the interval a little optimistic.
``value`` picks the speed: ``tokens_per_second`` (measured) or ``priced_speed`` (``findings.with_priced_speed``,
the paper's regime).

- ``c1_verdicts``: C1, CoS faster than standard collaborative decoding (and C1-SD, CoS vs SD), Tables 2-4;
- ``c1_gpu_verdict``: C1 on the stored GPU grid (aggregates only, so no interval);
- ``c4_lambda_verdict`` (Fig. 4), ``c4_mu_verdicts`` (Fig. 5), ``c4_gamma_verdicts`` (Fig. 6),
  ``c4_apf_verdict`` (App. C.4: APF).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specdec.results import paper_numbers
from specdec.validate import reads_frame
from specdec.verdict import INCONCLUSIVE, MEASURED, Verdict, bootstrap_rows, decide

UNIT = ["set", "temperature", "task", "prompt"]  # one prompt of one task in one cell


def paper_cells(a: str, b: str) -> str:
    """How many of the paper's speedup cells (Tables 2-4) have method ``a`` above ``b``, with the others named."""
    t = pd.concat([paper_numbers(n) for n in ("cos_table2_we", "cos_table3_cd", "cos_table4_opt")])
    key = ["table", "model_pair", "n_models", "temperature", "dataset"]
    t = t.assign(
        v=t.value.astype(float),
        temperature=t.temperature.fillna(""),
        method=t.method.str.replace(r"^(CD|WE)-", "", regex=True),  # Table 4 prints CD-SD, CD-CoS
    )
    wide = t[t.method.isin([a, b])].pivot_table(index=key, columns="method", values="v").dropna()
    above = wide[a] > wide[b]
    others = [
        f"{k[0]} {k[1]} T={k[3]} {k[4]}: {wide.loc[k, a]:.2f}x vs {wide.loc[k, b]:.2f}x" for k in wide.index[~above]
    ]
    return f"{a} > {b} in {int(above.sum())} of {len(wide)} cells" + (
        f" (not in: {'; '.join(others)})" if others else ""
    )


def wide(frame: pd.DataFrame, unit: list[str], columns: list[str], value: str, aggfunc="mean") -> pd.DataFrame:
    """Units (rows) × ``columns`` of ``value``; units missing a column are dropped (methods are paired). A unit has
    one row per column, or one per training seed where seeds are pooled (``verdict.over_seeds``): the mean is then
    the unit's value averaged over its seeds."""
    return frame.pivot_table(index=unit, columns=columns, values=value, aggfunc=aggfunc).dropna()


def _geo(logs: np.ndarray) -> float:
    return float(np.exp(np.mean(logs))) if len(logs) else float("nan")


def _best_gamma(tps: pd.DataFrame, method: str, baseline_cols) -> pd.Series:
    """Per cell (index levels but the prompt), the γ of ``method`` with the highest median per-prompt ratio
    to ``baseline_cols`` (a column of ``tps`` or a Series)."""
    base = tps[baseline_cols] if not isinstance(baseline_cols, pd.Series) else baseline_cols
    cols = [c for c in tps.columns if c[0] == method]
    ratios = pd.DataFrame({c[1]: tps[c] / base for c in cols})
    cell = [n for n in tps.index.names if n != "prompt"]
    return ratios.groupby(level=cell).median().idxmax(axis=1)


def _at_best(tps: pd.DataFrame, method: str, best: pd.Series) -> pd.Series:
    cell = [n for n in tps.index.names if n != "prompt"]
    keys = tps.index.droplevel("prompt") if len(cell) > 1 else tps.index.get_level_values(cell[0])
    gam = best.reindex(keys).to_numpy()
    return pd.Series([tps.loc[i, (method, g)] for i, g in zip(tps.index, gam)], index=tps.index)


def _ratio_verdict(name, claim, paper, log_ratio: pd.Series, detail: str, threshold: float = 1.0) -> Verdict:
    est, low, high = bootstrap_rows(log_ratio.to_numpy(), lambda v: float(np.mean(v)))
    est, low, high = float(np.exp(est)), float(np.exp(low)), float(np.exp(high))
    return Verdict(name, claim, est, low, high, len(log_ratio), decide(low, high, threshold), paper, detail)


# ------------------------------------------------------------------------------------------------ C1
@reads_frame
def c1_verdicts(frame: pd.DataFrame, per_config: bool = True, value: str = MEASURED) -> list[Verdict]:
    """C1 (Tables 2-4): CoS at its best γ is faster than standard collaborative decoding, and (C1-SD) than SD
    at its best γ. Estimate: geometric mean over (cell, prompt) of the per-prompt tokens/s ratio; > 1.0.
    ``frame``: ``cos_main`` rows (methods standard, sd, cos). With ``per_config`` also one C1 per (set, T).
    ``value``: ``tokens_per_second`` (measured) or ``priced_speed`` (``with_priced_speed``, the paper's regime)."""
    tps = wide(frame, UNIT, ["method", "gamma"], value)
    std = tps[("standard", 0)]
    best_cos = _best_gamma(tps, "cos", std)
    best_sd = _best_gamma(tps, "sd", std)
    cos = _at_best(tps, "cos", best_cos)
    sd = _at_best(tps, "sd", best_sd)
    log_cos, log_sd = np.log(cos / std), np.log(cos / sd)
    cells = log_cos.groupby(level=["set", "temperature", "task"]).apply(_geo_series)
    below = [f"{s}/{t} T={T:g} {v:.2f}x" for (s, T, t), v in cells.items() if v <= 1.0]
    out = [
        _ratio_verdict(
            "C1",
            "CoS (best γ) is faster than standard collaborative decoding",
            "1.11x-2.23x",
            log_cos,
            f"Per-prompt speed ratio over {len(cells)} cells (set × T × task), geometric mean; cells at or below "
            f"1.0x: {', '.join(below) or 'none'}. γ picked per cell on all prompts (interval slightly optimistic).",
        ),
        _ratio_verdict(
            "C1-SD",
            "CoS (best γ) is faster than SD (best γ, no role swap)",
            paper_cells("CoS", "SD"),
            log_sd,
            "Per-prompt speed ratio CoS / SD, geometric mean over (cell, prompt).",
        ),
    ]
    if per_config:
        for (s, T), g in log_cos.groupby(level=["set", "temperature"], sort=False):
            out.append(
                _ratio_verdict(
                    f"C1 {s} T={T:g}",
                    f"CoS is faster than standard decoding ({s}, T = {T:g})",
                    "1.11x-2.23x",
                    g,
                    f"{g.index.get_level_values('task').nunique()} tasks × prompts.",
                )
            )
    return out


def _geo_series(s: pd.Series) -> float:
    return _geo(s.to_numpy())


def c1_gpu_verdict(gpu: pd.DataFrame | None) -> Verdict:
    """C1 on the stored GPU grid (``cos_main_gpu``: one row per cell and method with the median speedup over
    its prompts). It holds only aggregates, so there is no interval: the verdict is inconclusive by
    construction; ``detail`` says in how many cells CoS is above 1.0x."""
    claim, paper = "CoS (best γ) is faster than standard collaborative decoding, on a GPU", "1.11x-2.23x"
    if gpu is None or not len(gpu):
        return Verdict(
            "C1-GPU", claim, float("nan"), float("nan"), float("nan"), 0, INCONCLUSIVE, paper, "No GPU grid stored."
        )
    cos = gpu[gpu.method == "cos"]
    above = int((cos.speedup > 1.0).sum())
    n = int(cos.prompts.iloc[0]) if "prompts" in cos else 0
    return Verdict(
        "C1-GPU",
        claim,
        _geo(np.log(cos.speedup.to_numpy(float))),
        float("nan"),
        float("nan"),
        len(cos),
        INCONCLUSIVE,
        paper,
        f"{cos.device.iloc[0]}: the stored table has only per-cell aggregates (median over {n} prompts), no per-prompt "
        f"rows, so no bootstrap interval; estimate = geometric mean of the {len(cos)} cells' median speedups "
        f"(range {cos.speedup.min():.2f}x-{cos.speedup.max():.2f}x, above 1.0x in {above}/{len(cos)}); n counts cells.",
    )


# ------------------------------------------------------------------------------------------------ C4
def _log_ratio_table(frame: pd.DataFrame, point: str, method: str = "cos", best: bool = True, value: str = MEASURED):
    """Per (task, prompt) unit × ``point`` value: log tokens/s ratio of ``method`` (at its best γ per point and
    task if ``best``, else the single γ) to standard decoding at the same point."""
    unit = ["task", point, "prompt"]
    tps = wide(frame, unit, ["method", "gamma"], value)
    std = tps[("standard", 0)]
    gammas = sorted({c[1] for c in tps.columns if c[0] == method})
    if best and len(gammas) > 1:
        meth = _at_best(tps, method, _best_gamma(tps, method, std))
    else:
        meth = tps[(method, gammas[0])]
    return np.log(meth / std).unstack(point).dropna()


def c4_lambda_verdict(sweeps: pd.DataFrame, at_least: float = 1.5, value: str = MEASURED) -> Verdict:
    """C4-λ (Fig. 4): "CoS consistently achieves a high speedup of at least 1.5x across all tested values" of λ.
    Estimate: the smallest, over λ, of the geometric-mean per-prompt speedup (CoS γ = 1 over standard, same λ),
    tested against ``at_least`` (the paper's 1.5x).
    ``sweeps``: ``cos_sweeps`` rows of set ``we`` (methods standard and cos at γ = 1)."""
    logs = _log_ratio_table(sweeps, "lam", best=False, value=value)
    est, low, high = bootstrap_rows(logs.to_numpy(), lambda v: float(np.exp(v.mean(0).min())))
    per = np.exp(logs.mean())
    return Verdict(
        "C4-λ",
        f"CoS is at least {at_least:g}x faster than standard WE at every λ (Fig. 4)",
        est,
        low,
        high,
        len(logs),
        decide(low, high, at_least),
        "≥ 1.5x at every λ in 0.1-0.9 (GPU)",
        "Geometric-mean speedup per λ: " + ", ".join(f"{k:g}: {v:.2f}x" for k, v in per.items()) + "; estimate = min.",
    )


def c4_mu_verdicts(sweeps: pd.DataFrame, value: str = MEASURED) -> list[Verdict]:
    """C4-μ (Fig. 5): CoS still accelerates CD (> 1.0x) at every μ — estimate the smallest geometric-mean speedup
    over μ, CoS at its best γ per (task, μ); and C4-μ-trend (the paper, Sec. 4.3: "an increase in μ results in a
    reduced speedup"): slope of the mean log speedup on μ, tested < 0.
    ``sweeps``: ``cos_sweeps`` rows of set ``cd`` at T = 0 (standard and cos at the μ sweep's γs)."""
    logs = _log_ratio_table(sweeps, "mu", best=True, value=value)
    mus = logs.columns.to_numpy(float)
    est, low, high = bootstrap_rows(logs.to_numpy(), lambda v: float(np.exp(v.mean(0).min())))
    per = np.exp(logs.mean())
    still = Verdict(
        "C4-μ",
        "CoS still accelerates contrastive decoding (> 1.0x) at every μ (Fig. 5)",
        est,
        low,
        high,
        len(logs),
        decide(low, high, 1.0),
        "accelerates CD at every μ in 0.1-0.5",
        "Geometric-mean speedup per μ (best γ): "
        + ", ".join(f"{k:g}: {v:.2f}x" for k, v in per.items())
        + "; estimate = min.",
    )
    s_est, s_low, s_high = bootstrap_rows(logs.to_numpy(), lambda v: float(np.polyfit(mus, v.mean(0), 1)[0]))
    trend = Verdict(
        "C4-μ-trend",
        "CD speedup falls as μ grows (slope of log speedup per unit μ < 0)",
        s_est,
        s_low,
        s_high,
        len(logs),
        decide(s_low, s_high, 0.0, greater=False),
        "an increase in μ results in a reduced speedup (Sec. 4.3, Fig. 5)",
        "Least-squares slope of the mean per-prompt log speedup on μ.",
    )
    return [still, trend]


@reads_frame
def cd_gamma_condition(frame: pd.DataFrame, c: float | None = None) -> dict:
    """C4-γ CD's condition (docs/papers/cos.md, "C4-γ: where the shape is decided"): the paper's rise-then-fall needs
    moderate acceptance ("in some cases, however, speedup either monotonically increases or decreases due to high or
    low acceptance rates", Sec. 4.3). Measured: per task of ``frame`` (CD rows, ``cos`` at every γ with
    ``accepted_0`` / ``proposed_0``), the amateur's pooled acceptance α, and the γ that maximises Eq. (1)'s i.i.d.
    speedup (1 − α^(γ+1)) / ((1 − α)(γc + 1)) over the swept γ at ``c`` (default TABED Table 6's 68M-on-7B, the
    regime that decides). ``{task: (α, γ*, interior)}``; ``interior``: γ* strictly inside the swept range."""
    from specdec import costs

    c = costs.paper_table6_regime("7B", "68M").cost("draft") if c is None else c
    cos = frame[frame.method == "cos"]
    gammas = np.array(sorted(int(g) for g in cos.gamma.unique()), dtype=float)
    out = {}
    for task, g in cos.groupby("task", sort=True):
        alpha = float(g.accepted_0.sum() / g.proposed_0.sum())
        speed = (1 - alpha ** (gammas + 1)) / ((1 - alpha) * (gammas * c + 1))
        best = int(gammas[int(np.argmax(speed))])
        out[task] = (alpha, best, bool(gammas.min() < best < gammas.max()))
    return out


def _peak(v: np.ndarray) -> float:
    """Best interior γ over the better end, from per-unit log speedups (units × γ)."""
    m = v.mean(0)
    return float(np.exp(m[1:-1].max() - max(m[0], m[-1])))


def _surviving_cost(g: pd.DataFrame, tasks, gammas) -> str:
    """The largest amateur cost c (0.005 steps) at which the rows of ``tasks`` priced at c (expert at 1) still rise
    then fall (``_peak`` > 1 on the point estimate); "" without call counts."""
    if not {"calls_0", "calls_1", "new_tokens"} <= set(g.columns):
        return ""
    g = g[g.task.isin(tasks)]
    last = None
    for c in np.arange(0.005, 1.0, 0.005):
        priced = g.assign(p=g.new_tokens / (g.calls_0.fillna(0) * c + g.calls_1.fillna(0)))
        tps = wide(priced, ["task", "prompt"], ["method", "gamma"], "p")
        logs = np.log(np.stack([tps[("cos", k)] / tps[("standard", 0)] for k in gammas], axis=1))
        if _peak(logs) > 1:
            last = c
        elif last is not None:
            break
    return (
        f" Priced at other amateur costs, the rise then fall survives up to c = {last:.3f}."
        if last
        else (" Priced at any amateur cost c ≥ 0.005, the curve has no interior peak.")
    )


WE_GAMMA_NOTE = (
    "Why it falls: Thm 3.6 at c = 1 (models of one size) with γ_p = 1 gives 2(1 − α^γ) / ((1 − α)(1 + γ − α)), which"
    " falls from γ = 1 on for every α < 1 and keeps max/min over γ = 1-5 below 1.10 only for α > 0.93, i.e. a γ = 1"
    " speedup above 1.87x, more than any CoS cell of the paper's own Table 2 (at most 1.85x)."
)
CD_GAMMA_QUOTE = (
    '"speedup initially increases with γ before decreasing ... In some cases, however, speedup either'
    ' monotonically increases or decreases due to high or low acceptance rates" (Sec. 4.3, Fig. 6b)'
)


def c4_gamma_verdicts(sweeps: pd.DataFrame, tolerance: float = 0.10, value: str = MEASURED) -> list[Verdict]:
    """C4-γ (Fig. 6). WE (models of similar size): speedup stable across γ — the spread max/min over γ of the
    geometric-mean speedup is below ``1 + tolerance``. CD: speedup first rises then falls — the best interior
    γ beats the better end (γ smallest / largest) by a ratio > 1.0, decided on the tasks where the claim's condition
    holds (``cd_gamma_condition``: Eq. (1)'s optimum γ at the measured acceptance is interior); none: inconclusive
    (its validity, ``cd_gamma_validity``, is then "no"). Units: (task, prompt) of each set.
    ``sweeps``: ``cos_sweeps`` rows with standard and cos at every γ of the sweep (WE T = 1 λ = 0.5; CD T = 0
    μ = 0.1), keyed by ``set``; CD rows carry ``accepted_0`` / ``proposed_0``."""
    out = []
    for set_name, g in sweeps.groupby("set", sort=True):
        tps = wide(g, ["task", "prompt"], ["method", "gamma"], value)
        gammas = sorted(c[1] for c in tps.columns if c[0] == "cos")
        all_logs = np.log(np.stack([tps[("cos", k)] / tps[("standard", 0)] for k in gammas], axis=1))
        tasks = tps.index.get_level_values("task")
        curves = {
            t: ", ".join(f"γ={k}: {v:.2f}x" for k, v in zip(gammas, np.exp(all_logs[tasks == t].mean(0))))
            for t in sorted(set(tasks))
        }
        if set_name == "we":
            logs = all_logs
            est, low, high = bootstrap_rows(logs, lambda v: float(np.exp(v.mean(0).max() - v.mean(0).min())))
            curve = ", ".join(f"γ={k}: {v:.2f}x" for k, v in zip(gammas, np.exp(logs.mean(0))))
            out.append(
                Verdict(
                    "C4-γ WE",
                    f"WE speedup is stable across γ (max/min over γ < {1 + tolerance:.2f})",
                    est,
                    low,
                    high,
                    len(logs),
                    decide(low, high, 1 + tolerance, greater=False),
                    '"when the models are similar in size, the speedup ratio remains stable across γ values"'
                    " (Sec. 4.3, Fig. 6a)",
                    f"{curve}. {WE_GAMMA_NOTE}",
                )
            )
            continue
        condition = cd_gamma_condition(g)
        tested = [t for t, (_, _, ok) in condition.items() if ok]
        logs = all_logs[np.isin(tasks, tested)] if tested else all_logs
        est, low, high = bootstrap_rows(logs, _peak)
        status = decide(low, high, 1.0) if tested else INCONCLUSIVE
        per_task = "; ".join(
            f"{t} (α {a:.2f}, Eq. (1) best γ {k}: {'tested' if ok else 'not tested, monotone by its acceptance'}):"
            f" {curves[t]}"
            for t, (a, k, ok) in condition.items()
        )
        out.append(
            Verdict(
                f"C4-γ {set_name.upper()}",
                "CD speedup first rises with γ, then falls where the acceptance is moderate (Eq. (1)'s optimum γ"
                " interior; best interior γ / better end > 1.0)",
                est,
                low,
                high,
                len(logs),
                status,
                CD_GAMMA_QUOTE,
                f"Tested on {', '.join(tested) or 'no task (none meets the condition)'}. {per_task}."
                + _surviving_cost(g, tested, gammas),
            )
        )
    return out


@reads_frame
def cd_gamma_validity(frame: pd.DataFrame, *why: str) -> tuple[str, str]:
    """C4-γ CD's validity from its measured condition (``cd_gamma_condition``): ``partly`` (``why``: the proxy's
    reasons) when some task has an interior optimum γ, else ``no``."""
    from specdec.verdict import validity

    condition = cd_gamma_condition(frame[frame.set == "cd"])
    measured = "measured condition, Eq. (1)'s optimum γ at the amateur's acceptance and c 0.063: " + ", ".join(
        f"{t} α {a:.2f} → γ* {k}" for t, (a, k, _) in condition.items()
    )
    if any(ok for _, _, ok in condition.values()):
        return validity("partly", *why, measured)
    return validity("no", measured + ": every task is monotone by its acceptance, the paper's stated exception")


@reads_frame
def c4_apf_verdict(frame: pd.DataFrame, value: str = MEASURED) -> Verdict:
    """C4-APF (App. C.4): CoS with the alternate proposal framework is faster than Naive-CoS, both at their
    best γ per (set, task) (the two differ at every γ, γ = 1 included: their calls per token differ). Per-prompt
    speed ratio CoS / Naive-CoS, geometric mean; > 1.0. ``frame``: ``cos_theory`` rows of sets ``we`` / ``cd``
    (standard, naive, cos)."""
    unit = ["set", "task", "prompt"]
    tps = wide(frame, unit, ["method", "gamma"], value)
    std = tps[("standard", 0)]
    cos = _at_best(tps, "cos", _best_gamma(tps, "cos", std))
    naive_best = _best_gamma(tps, "naive", std)
    naive = _at_best(tps, "naive", naive_best)
    calls = wide(frame.assign(c=frame.calls_per_token), unit, ["method", "gamma"], "c")
    best_cos = _best_gamma(tps, "cos", std)
    fewer = sum(
        calls[("cos", best_cos[k])].xs(k, level=["set", "task"]).mean()
        <= calls[("naive", naive_best[k])].xs(k, level=["set", "task"]).mean()
        for k in best_cos.index
    )
    return _ratio_verdict(
        "C4-APF",
        "CoS (with APF) is faster than Naive-CoS (w/o APF), both at their best γ",
        paper_apf_cells(),
        np.log(cos / naive),
        "Best γ per (set, task) CoS / Naive: "
        + ", ".join(f"{s}/{t} {int(best_cos[(s, t)])}/{int(naive_best[(s, t)])}" for s, t in best_cos.index)
        + f"; CoS needs no more calls per token "
        f"in {fewer}/{len(best_cos)} cells.",
    )


def paper_apf_cells() -> str:
    """The paper's App. C.4 tables (7, 8): in how many cells CoS beats Naive-CoS (w/o APF), the others named."""
    t = paper_numbers("cos_apf_ablation")
    t = t.assign(v=t.value.astype(float), temperature=t.temperature.fillna(""), m=t.method.ne("w/o APF"))
    wide = t.pivot_table(index=["table", "model_pair", "temperature", "dataset"], columns="m", values="v")
    above = wide[True] > wide[False]
    others = [
        f"{k[1]} T={k[2]} {k[3]}: {wide.loc[k, True]:.2f}x vs {wide.loc[k, False]:.2f}x" for k in wide.index[~above]
    ]
    return f"CoS > Naive-CoS in {int(above.sum())} of {len(wide)} cells (App. C.4)" + (
        f"; not in: {'; '.join(others)}" if others else ""
    )


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "CD_GAMMA_QUOTE",
    "UNIT",
    "WE_GAMMA_NOTE",
    "c1_verdicts",
    "c4_apf_verdict",
    "cd_gamma_condition",
    "cd_gamma_validity",
]
