"""Figures and rich displays used by the notebooks (matplotlib; every figure is saved under ``figures/``)."""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import numpy as np


def highlight_html(tokenizer, result) -> str:
    """The generated text as HTML: tokens the target accepted from the draft on green, the target's own
    (corrected / bonus) tokens plain."""
    spans = []
    for tok, drafted in zip(result.output_ids, result.from_draft):
        text = html.escape(tokenizer.decode([tok])).replace("\n", "↵<br>")
        style = "background:#b7e4c7" if drafted else "background:#f1f1f1"
        spans.append(f'<span style="{style}">{text}</span>')
    prompt = html.escape(tokenizer.decode(result.prompt_ids, skip_special_tokens=True)).replace("\n", "<br>")
    return (
        f'<div style="font-family:monospace;white-space:pre-wrap"><b>{prompt}</b>{"".join(spans)}</div>'
        "<small>green: draft token accepted by the target; grey: token from the target "
        "(correction or bonus)</small>"
    )


def accepted_histogram(accepted_per_block, gamma: int, ax=None, title: str = ""):
    """Bar chart of how many draft tokens each block accepted (0..γ)."""
    ax = ax or plt.subplots(figsize=(5, 3))[1]
    counts = np.bincount(np.asarray(accepted_per_block, dtype=int), minlength=gamma + 1)
    ax.bar(range(gamma + 1), counts, color="#40916c")
    ax.set_xlabel("draft tokens accepted in the block")
    ax.set_ylabel("blocks")
    ax.set_xticks(range(gamma + 1))
    ax.set_title(title or f"accepted tokens per block (γ = {gamma})")
    return ax


def tau_vs_formula(df, ax=None):
    """Measured block efficiency against the i.i.d. formula, per γ. ``df``: gamma, block_efficiency,
    expected_block_efficiency (and optionally a ``draft`` column for one line per draft)."""
    ax = ax or plt.subplots(figsize=(5, 3.5))[1]
    groups = df.groupby("draft") if "draft" in df else [("", df)]
    for name, part in groups:
        (line,) = ax.plot(part.gamma, part.block_efficiency, "o-", label=f"measured {name}".strip())
        ax.plot(
            part.gamma,
            part.expected_block_efficiency,
            "--",
            color=line.get_color(),
            label=f"(1-α^(γ+1))/(1-α) {name}".strip(),
        )
    ax.set_xlabel("γ (draft length)")
    ax.set_ylabel("block efficiency τ")
    ax.legend(fontsize=7)
    return ax


def latency_lines(df, ax=None, x: str = "gamma", hue: str = "S", title: str = ""):
    """T(B, S, γ) in milliseconds against ``x``, one line per value of ``hue``."""
    ax = ax or plt.subplots(figsize=(5, 3.5))[1]
    for value, part in df.groupby(hue):
        ax.plot(part[x], part.seconds * 1e3, "o-", label=f"{hue}={value}")
    ax.set_xlabel(x)
    ax.set_ylabel("ms per forward call")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return ax


def save(fig, path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})


def speedup_bars(ours, paper=None, title: str = "", ax=None):
    """Grouped bars of speedup (rows: method, columns: task) with the paper's values as black ticks."""
    import numpy as np

    ax = ax or plt.subplots(figsize=(7, 3.2))[1]
    methods, tasks = list(ours.index), list(ours.columns)
    width = 0.8 / len(methods)
    x = np.arange(len(tasks))
    for i, method in enumerate(methods):
        ax.bar(x + i * width, ours.loc[method].values, width, label=method)
        if paper is not None and method in paper.index:
            vals = paper.reindex(columns=tasks).loc[method].values.astype(float)
            ax.scatter(
                x + i * width, vals, marker="_", s=200, color="black", zorder=3, label="paper" if i == 0 else None
            )
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x + 0.4 - width / 2, tasks)
    ax.set_ylabel("speedup over standard")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3)
    return ax


def sweep_lines(
    frame,
    x: str,
    y: str,
    hue: str,
    ax=None,
    title: str = "",
    xlabel: str | None = None,
    ylabel: str | None = None,
    logx: bool = False,
):
    """One line per ``hue`` value of ``y`` against ``x`` (tidy ``frame``)."""
    ax = ax or plt.subplots(figsize=(4.5, 3.2))[1]
    for key, group in frame.groupby(hue, sort=False):
        group = group.sort_values(x)
        ax.plot(group[x], group[y], marker="o", label=str(key))
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(ylabel or y)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return ax
