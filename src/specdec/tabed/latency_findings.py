"""TABED latency, read: the notebook's verdicts on the measured tables of ``specdec.tabed.latency`` (Table 4's
caption cost, Fig. 9's components, Remark 3's batched drafting, Eq. (1)'s expected speedup) and its two figures.

Each verdict is a sentence for notebook 14 that names the device it was measured on; on a CPU the comparisons the
paper makes on a GPU are reported, not judged.
"""

from __future__ import annotations

import os

import pandas as pd

from specdec.tabed.latency import COMPONENTS, PAPER_RATIO, paper_caption_table
from specdec.validate import reads_frame


# ------------------------------------------------------------------------------------------------- findings
@reads_frame
def verdict_caption(captions: pd.DataFrame, components: pd.DataFrame | None, device: str) -> str:
    """Table 4: does captioning finish before the target's prefill, and what share of a whole generation is it."""
    ours = captions.loc["caption / prefill"]
    paper = paper_caption_table()
    hides = bool((ours <= 1).all())
    name = [r for r in captions.index if r.startswith("caption (")]
    name = name[0].removeprefix("caption (").removesuffix(")") if name else "draft LLaVA"
    text = (
        f"**Table 4 premise {'holds' if hides else 'does not hold'} here** ({device}): the tiny captioner "
        f"({name}) takes {_span(ours)}x the tiny target's prefill for {_images(ours.index)} images "
        f"(paper, GPU: BLIP {_span(paper.loc['BLIP / prefill'])}x, Florence-2 "
        f"{_span(paper.loc['Florence-2 / prefill'])}x of LLaVA-1.5 7B's prefill)."
    )
    if not hides:
        text += (
            " Our captioner is a decode loop of a tiny LLaVA (up to 24 tokens) per image, one image after "
            "another, while the tiny target's prefill is one short call; the paper's captioners are "
            "dedicated models racing a 7B prefill."
        )
    if components is not None:
        caption = captions.loc[[r for r in captions.index if r.startswith("caption")][0]]
        share = caption / components["total"].reindex(caption.index)
        text += (
            f" Run once per request, the caption costs {_span(100 * share, '.0f')}% of a "
            "whole target generation of the Fig. 9 length."
        )
    return text


@reads_frame
def verdict_components(table: pd.DataFrame, device: str) -> str:
    """Fig. 9: vision encoder and prefill take longer with more images (fewest vs most), decode dominates."""
    grows = {c: bool(table[c].iloc[-1] > table[c].iloc[0]) for c in ("vision encoder", "prefill")}
    steady = [c for c in grows if not table[c].is_monotonic_increasing]
    dominates = bool((table["decode share"] > 0.5).all())
    holds = all(grows.values()) and dominates
    n = table.index
    ms = lambda c, i: f"{1e3 * table[c].iloc[i]:.1f}"  # noqa: E731
    return (
        f"**Fig. 9 {'holds' if holds else 'does not hold'}** ({device}): from {n[0]} to {n[-1]} images the "
        f"vision encoder goes {ms('vision encoder', 0)} → {ms('vision encoder', -1)} ms and the prefill "
        f"{ms('prefill', 0)} → {ms('prefill', -1)} ms"
        + (
            f" (not monotone through {n[1]} images for the {' and '.join(steady)}: a few ms of noise on a shared CPU)"
            if steady
            else ""
        )
        + f", while decode takes {_span(100 * table['decode share'], '.0f')}% of the time "
        f"({'dominant' if dominates else 'not dominant'} in every case). The tiny vision tower (2 layers, "
        f"16 patches) costs little per image, so its growth is small next to a 7B LVLM's 576-token images."
    )


@reads_frame
def verdict_batch(
    table: pd.DataFrame, gpu: pd.DataFrame | None, device: str, tol: float = 0.05, load: float | None = None
) -> str:
    """Remark 3: a draft step with m rows costs about one with 1 row (|ΔT/T| < tol)."""
    change = table["T_q(m) / T_q(1)"] - 1
    holds = bool((change.abs() < tol).all())
    text = (
        f"**Remark 3 {'holds' if holds else 'does not hold'} on {device}**: one draft step with m = "
        f"{table.index.min()}..{table.index.max()} TABED rows costs {_span(table['T_q(m) / T_q(1)'], '.2f')}x "
        f"the one-row step (paper's threshold |ΔT/T| < {tol}): {100 * change.iloc[-1]:+.0f}% at m = "
        f"{table.index[-1]}, far below the {table.index[-1]}x of running the rows one after another"
        + (
            f" (measured at a load average of {load:.1f} on {os.cpu_count()} cores, other jobs sharing the "
            f"CPU; ratios are paired within each repeat to cancel most of that)"
            if load is not None and load > os.cpu_count()
            else ""
        )
        + "."
    )
    if gpu is not None and len(gpu):
        ratios = gpu.filter(like="T(B=").drop(columns=[c for c in gpu.columns if "T(B=1)/T(B=1)" in c])
        values = ratios.to_numpy(dtype=float).ravel()
        batches = "/".join(c.split("B=")[1].split(")")[0] for c in ratios.columns)
        text += (
            f" Reference, {gpu.device.iloc[0]} (random-weight 68M draft, stored grid, S = "
            f"{'/'.join(str(s) for s in gpu.S)}): batch {batches} costs {min(values):.3f}–{max(values):.3f}x "
            f"batch 1 — {_gpu_reading(values, tol)}."
        )
    return text


def _gpu_reading(values, tol: float) -> str:
    if (abs(values - 1) < tol).all():
        return "Remark 3 holds there"
    if (values < 1 + tol).all():
        return (
            f"no batch costs more than batch 1 (the point of Remark 3), though |ΔT/T| reaches "
            f"{max(abs(values - 1)):.3f} > {tol} because larger batches ran faster (noise at ~3 ms a call)"
        )
    return "Remark 3 does not hold there either"


@reads_frame
def verdict_speedup(table: pd.DataFrame, ratio: float, device: str, ratio_paper: float = PAPER_RATIO) -> str:
    """Eq. (1): which method is fastest with the measured and with the paper's latency ratio (``ratio_paper``: Table
    6's for the pair's sizes, ``tables.pair_latency_ratio``)."""
    measured, paper = "Eq.(1), measured T_q/T_p", [c for c in table.columns if c.startswith("Eq.(1), paper")][0]
    best_m, best_p = table[measured].idxmax(), table[paper].idxmax()
    return (
        f"**Eq. (1)**: with the measured T_q/T_p = {ratio:.3f} ({device}) the expected speedups are "
        f"{table[measured].min():.2f}–{table[measured].max():.2f}x (best {best_m}); with the paper's "
        f"T_q/T_p = {ratio_paper} (Table 6, A6000) they would be {table[paper].min():.2f}–"
        f"{table[paper].max():.2f}x (best {best_p}). MT* : {table.loc['MT*', measured]:.2f}x measured, "
        f"{table.loc['MT*', paper]:.2f}x at the paper's ratio{_papers_own(table)}. "
        + (
            "Per-call overhead dominates the steps of tiny models, so the measured ratio is far above the "
            "paper's and eats most of τ; "
            if ratio > 2 * ratio_paper
            else ""
        )
        + "the ranking of the methods is τ's at any one ratio."
        + _charged(table)
    )


def _papers_own(table: pd.DataFrame) -> str:
    """`` (paper: 1.74x with its own τ)``: MT*'s Eq. (1) from the paper's τ and ratio, where the table has it."""
    own = [c for c in table.columns if c.startswith("paper Eq.(1)")]
    if not own or pd.isna(table.loc["MT*", own[0]]):
        return " (the paper has no τ for this pair)"
    return f" (paper: {table.loc['MT*', own[0]]:.2f}x with its own τ)"


def _charged(table: pd.DataFrame) -> str:
    column = "Eq.(1), measured T_q/T_p × cost(m)"
    if column not in table:
        return ""
    ensembles = table[table["rows m"] > 1]
    best = table[column].idxmax()
    return (
        " Charging each ensemble's draft step at its measured m-row cost (Remark 3 not holding here) gives "
        + ", ".join(f"{m} {v:.2f}x" for m, v in ensembles[column].items())
        + f"; best {best} at {table.loc[best, column]:.2f}x."
    )


def _span(values, fmt: str = ".2f") -> str:
    lo, hi = float(min(values)), float(max(values))
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}–{hi:{fmt}}"


def _images(index) -> str:
    return ", ".join(str(i) for i in index)


# ------------------------------------------------------------------------------------------------- figures
@reads_frame
def plot_components(table: pd.DataFrame, ax=None, title: str = ""):
    """Fig. 9 layout: one stacked horizontal bar per number of images (seconds per component)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 2.6))[1]
    left = 0
    labels = [f"{n} image{'s' if n > 1 else ''}" for n in table.index]
    for component, color in zip(COMPONENTS, ("#4c72b0", "#dd8452", "#55a868")):
        ax.barh(labels, table[component], left=left, color=color, label=component)
        left = left + table[component]
    ax.set_xlabel("seconds")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, frameon=False)
    return ax


@reads_frame
def plot_batch_cost(table: pd.DataFrame, gpu: pd.DataFrame | None, ax=None, device: str = "", tol: float = 0.05):
    """T_q(m)/T_q(1) against m, with the paper's ±tol band and the stored GPU reference if given."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(4.5, 3.2))[1]
    ax.axhspan(1 - tol, 1 + tol, color="grey", alpha=0.2, label=f"±{tol:.0%} (Remark 3)")
    ax.plot(table.index, table["T_q(m) / T_q(1)"], marker="o", label=f"tiny draft, TABED rows ({device})")
    if gpu is not None and len(gpu):
        for _, row in gpu.iterrows():
            cols = [c for c in gpu.columns if "T(B=" in c]
            batches = [int(c.split("B=")[1].split(")")[0]) for c in cols]
            ax.plot(
                batches, row[cols].astype(float), marker="s", ls="--", label=f"68M random, S={row.S} ({row.device})"
            )
    ax.set_xlabel("rows in the draft batch (m)")
    ax.set_ylabel("T_q(m) / T_q(1)")
    ax.set_xticks(list(table.index))
    ax.legend(fontsize=6)
    return ax
