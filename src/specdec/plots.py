"""Figures and rich displays used by the notebooks; every figure is saved under ``figures/`` by ``save``.

One look for every figure: ``theme()`` (seaborn ``whitegrid``, colour-blind palette) is applied on import,
axes and legends get human labels (``label``), categorical axes keep their natural order (1, 4, 16, ALL),
legends sit outside the axes so that they never cover data, and ``save`` writes 150 dpi PNGs. Where the
paper has the value, it is drawn beside ours (diamonds in the colour of their method, dashed lines).
"""

from __future__ import annotations

import html
import json
import pathlib
import re
import warnings

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import seaborn as sns
from matplotlib import font_manager

from specdec import validate
from specdec.validate import reads_frame

DPI = 150

# Column and method names as a reader says them.
LABELS = {
    "tau": "block efficiency τ",
    "block_efficiency": "block efficiency τ",
    "expected_block_efficiency": "i.i.d. formula (1 − α^(γ+1)) / (1 − α)",
    "acceptance_rate": "acceptance rate α",
    "alpha": "acceptance rate α",
    "gamma": "γ (draft length)",
    "h": "window h (verified positions)",
    "lam": "λ",
    "mu": "μ",
    "speedup": "speedup over standard decoding",
    "expected_speedup": "expected speedup, Eq. (1)",
    "measured_speedup": "measured walltime speedup",
    "speed_vs_sd": "speed relative to vanilla SD",
    "quality": "quality",
    "seconds": "seconds",
    "S": "context S",
    "B": "batch B",
    "method": "method",
    "task": "task",
    "group": "scenario group",
    "curve": "setting",
    "sps-pf": "SpS, pretrained + finetuned drafter",
    "sps-f": "SpS, finetuned drafter",
    "sps-generic": "SpS, generic drafter",
    "pld": "prompt lookup (PLD)",
    "nlp": "text only (NQ, GSM8K)",
    "ood": "multi-image stories (OOD)",
    "benchmark t1": "benchmark, 1st turn",
    "benchmark t2": "benchmark, 2nd turn",
}


def label(name) -> str:
    """The human label of a column, method or group name (the name itself when it has none)."""
    return LABELS.get(str(name), str(name))


def theme() -> None:
    """The one look of every figure in this repository."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind", font_scale=0.85)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": DPI, "legend.frameon": False, "axes.titlesize": 10})
    bundled_fonts_only()


def bundled_fonts_only() -> None:
    """Text drawn only with the fonts matplotlib ships (the lock's version), never a font of this machine's: a
    system DejaVu Sans of another version (or a fallback another machine has) would change a figure's pixels, and
    a rerun on unchanged inputs must give the same bytes everywhere."""
    bundled = pathlib.Path(matplotlib.get_data_path()).resolve()
    manager = font_manager.fontManager
    manager.ttflist = [f for f in manager.ttflist if pathlib.Path(f.fname).resolve().is_relative_to(bundled)]
    # an earlier lookup may have named a system font; matplotlib keeps that cache in a private function
    font_manager.FontManager._findfont_cached.cache_clear()  # type: ignore[attr-defined]


theme()


def natural_order(values) -> list:
    """Numbers ascending, then text ("ALL" after 16), each value once: the order a reader expects on an axis."""

    def key(value):
        text = str(value)
        return (0, float(text), "") if re.fullmatch(r"-?\d+(\.\d*)?(e-?\d+)?", text) else (1, 0.0, text)

    return sorted(dict.fromkeys(values), key=key)


def legend_outside(ax, title: str | None = None, **kwargs) -> None:
    """The legend to the right of the axes, where it cannot cover data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=7, title=title, **kwargs)


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
    gamma = validate.integer("gamma", gamma, minimum=1)
    if any(not 0 <= int(a) <= gamma for a in accepted_per_block):
        raise ValueError(f"accepted_per_block holds counts in [0, gamma = {gamma}], got {list(accepted_per_block)}")
    ax = ax or plt.subplots(figsize=(5, 3))[1]
    counts = np.bincount(np.asarray(accepted_per_block, dtype=int), minlength=gamma + 1)
    ax.bar(range(gamma + 1), counts, color="#40916c")
    ax.set_xlabel("draft tokens accepted in the block")
    ax.set_ylabel("blocks")
    ax.set_xticks(range(gamma + 1))
    ax.set_title(title or f"accepted tokens per block (γ = {gamma})")
    return ax


@reads_frame
def tau_vs_formula(df, ax=None):
    """Measured block efficiency per γ against the i.i.d. formula ``(1 − β^(γ+1)) / (1 − β)`` at one constant β
    per draft (the mean over γ of the β each τ implies; the curve the i.i.d. model predicts), and, dotted, the
    formula at accepted ÷ drafted (the biased plug-in: that ratio falls with γ even at constant β).
    ``df``: gamma, block_efficiency, expected_block_efficiency (the plug-in) and optionally ``draft``."""
    from specdec.bench import expected_block_efficiency, iid_acceptance

    ax = ax or plt.subplots(figsize=(5, 3.5))[1]
    groups = df.groupby("draft") if "draft" in df else [("", df)]
    for name, part in groups:
        part = part.sort_values("gamma")
        (line,) = ax.plot(part.gamma, part.block_efficiency, "o-", label=f"measured {name}".strip())
        beta = sum(iid_acceptance(t, int(g)) for t, g in zip(part.block_efficiency, part.gamma)) / len(part)
        gammas = range(int(part.gamma.min()), int(part.gamma.max()) + 1)
        ax.plot(
            list(gammas),
            [expected_block_efficiency(beta, g) for g in gammas],
            "--",
            color=line.get_color(),
            label=f"i.i.d., constant β = {beta:.2f} {name}".strip(),
        )
        ax.plot(
            part.gamma,
            part.expected_block_efficiency,
            ":",
            color=line.get_color(),
            alpha=0.6,
            label=f"formula at accepted/drafted {name}".strip(),
        )
    ax.set_xlabel(label("gamma"))
    ax.set_ylabel(label("tau"))
    legend_outside(ax)
    return ax


@reads_frame
def latency_lines(df, ax=None, x: str = "gamma", hue: str = "S", title: str = ""):
    """T(B, S, γ) in milliseconds against ``x``, one line per value of ``hue``."""
    ax = ax or plt.subplots(figsize=(5, 3.5))[1]
    for value, part in df.groupby(hue):
        ax.plot(part[x], part.seconds * 1e3, "o-", label=f"{value}")
    ax.set_xlabel(label(x))
    ax.set_ylabel("ms per forward call")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    legend_outside(ax, title=label(hue))
    return ax


def paper_line(ax, value: float, label: str, color: str = "black") -> None:
    """The paper's number as a dashed horizontal line, named in the legend (where the paper gives one number
    for what the axes show, e.g. an average speedup)."""
    if value == value:  # not NaN
        ax.axhline(value, color=color, lw=1.0, ls=(0, (4, 3)), label=label)
        legend_outside(ax)


# How the docs show a figure: a notebook's inline output (``figure.dpi``, 100) in the content column of a notebook
# page, 800 px wide in a 1280-px window (Material with both sidebars; measured 804 px), shrunk to fit when wider.
DOCS_WIDTH_PX = 800
SCREEN_DPI = 100
# Readable there: no text under 8 px (heatmap cells, ticks, legends), no panel under 250 px wide.
MIN_TEXT_PX, MIN_PANEL_PX = 8.0, 250.0


def readability(fig, shown_px: int = DOCS_WIDTH_PX) -> dict:
    """How ``fig`` (laid out) reads at the docs size: ``scale`` (shown / natural width), ``min_text_px`` (its
    smallest drawn text, in screen pixels) and ``min_panel_px`` (its narrowest axes, colour bars aside), with
    ``readable`` against ``MIN_TEXT_PX`` and ``MIN_PANEL_PX``."""
    renderer = fig.canvas.get_renderer()
    natural = fig.get_tightbbox(renderer).width * SCREEN_DPI  # the tight bbox is in inches
    scale = min(1.0, shown_px / natural)
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    # a colour bar's axes (made by colorbar, or a gridspec cell given to it as ``cax``) is no panel
    panels = [ax for ax in fig.axes if ax.get_visible() and not hasattr(ax, "_colorbar")]
    px = SCREEN_DPI * scale
    text = min((t.get_fontsize() for t in texts), default=72.0) / 72 * px
    panel = min((ax.get_position().width * fig.get_figwidth() for ax in panels), default=np.inf) * px
    overlaps = sum(overlapping_ticks(ax, renderer) for ax in panels)
    readable = bool(text >= MIN_TEXT_PX and panel >= MIN_PANEL_PX and overlaps == 0)
    return {
        "scale": round(float(scale), 3),
        "min_text_px": round(float(text), 1),
        "min_panel_px": round(float(panel), 1),
        "overlapping_ticks": overlaps,
        "readable": readable,
    }


def overlapping_ticks(ax, renderer) -> int:
    """How many neighbouring tick labels of ``ax`` run into each other as drawn: level labels whose boxes overlap
    along their axis; slanted x labels (rotation r) whose parallel strips are closer than a line of text (the gap
    between neighbours' anchors times sin r)."""
    count = 0
    for labels, axis in ((ax.get_xticklabels(), 0), (ax.get_yticklabels(), 1)):
        shown = [t for t in labels if t.get_visible() and t.get_text().strip()]
        boxes = sorted(((t.get_window_extent(renderer), t) for t in shown), key=lambda b: b[0].get_points()[0][axis])
        for (a, label), (b, following) in zip(boxes, boxes[1:]):
            slant = np.radians(label.get_rotation() % 180)
            if axis == 0 and abs(np.sin(slant)) > 0.05 and abs(np.cos(slant)) > 0.05:
                anchors = [t.get_transform().transform(t.get_position())[0] for t in (label, following)]
                gap = abs(anchors[1] - anchors[0]) * abs(np.sin(slant))
                count += int(gap + 1 < label.get_fontsize() * renderer.points_to_pixels(1.0))
            else:
                count += int(a.get_points()[1][axis] > b.get_points()[0][axis] + 1)
    return count


def save(fig, path) -> None:
    """``path`` as a PNG at ``DPI``, cropped to what is drawn (legends outside the axes included). The PNG carries
    its ``readability`` at the docs size (text chunk "Readability", which tests/test_figures.py checks), and an
    unreadable figure warns here, where its code can still reflow it."""
    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a matplotlib Figure (plt.subplots()[0]), got {type(fig).__name__} {fig!r:.80}")
    with warnings.catch_warnings():  # colorbar axes cannot be tight-laid; bbox_inches="tight" crops them anyway
        warnings.filterwarnings("ignore", message=".*not compatible with tight_layout.*")
        fig.tight_layout()
    standin_mark(fig)
    read = readability(fig)
    if not read["readable"]:
        warnings.warn(
            f"{pathlib.Path(path).name} is hard to read at the docs width ({DOCS_WIDTH_PX} px): smallest text "
            f"{read['min_text_px']} px (at least {MIN_TEXT_PX}), narrowest panel {read['min_panel_px']} px (at least "
            f"{MIN_PANEL_PX}); use fewer panels per row, a taller figure or larger text",
            stacklevel=2,
        )
    metadata = {"Software": None, "Readability": json.dumps(read, sort_keys=True)}
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata=metadata)


STANDIN_TEXT = "STAND-IN RUN: random weights, no number here means anything"


def standin_mark(fig) -> None:
    """Across ``fig``, ``STANDIN_TEXT`` where ``$HF_HOME`` holds the stand-in hub (``make paper-try``): a figure file
    of such a run says so itself, wherever it is copied."""
    from specdec import hub

    if hub.standin_cache():
        fig.text(0.5, 0.5, STANDIN_TEXT, ha="center", va="center", rotation=20, fontsize=14, color="red", alpha=0.35)


def speedup_bars(ours, paper=None, title: str = "", ax=None, ylabel: str = "speedup over standard decoding"):
    """Grouped bars (rows of ``ours``: method, columns: task) with the paper's values as diamonds in the colour of
    their method's bar (black edge: visible on the bar and beside it). Task labels are slanted when there are more
    than three, so that neighbours never run into each other."""
    ax = ax or plt.subplots(figsize=(7, 3.2))[1]
    methods, tasks = list(ours.index), list(ours.columns)
    width = 0.8 / len(methods)
    x = np.arange(len(tasks))
    for i, method in enumerate(methods):
        bars = ax.bar(x + i * width, ours.loc[method].values, width, label=label(method))
        if paper is not None and method in paper.index:
            vals = paper.reindex(columns=tasks).loc[method].values.astype(float)
            ax.scatter(
                x + i * width,
                vals,
                marker="D",
                s=18,
                color=bars.patches[0].get_facecolor() if bars.patches else "black",
                edgecolor="black",
                linewidth=0.8,
                zorder=3,
                label=None,
            )
    if paper is not None and any(m in paper.index for m in methods):
        ax.scatter([], [], marker="D", s=18, color="white", edgecolor="black", label="paper (colour of its method)")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    many = len(tasks) > 3
    ax.set_xticks(
        x + 0.4 - width / 2, [label(t) for t in tasks], rotation=30 if many else 0, ha="right" if many else "center"
    )
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    legend_outside(ax)
    return ax


@reads_frame
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
    paper=None,
):
    """One line per ``hue`` value of ``y`` against ``x`` (tidy ``frame``), x in its natural order.

    A text-valued x (window h: 1, 4, 16, ALL) becomes evenly spaced categories. ``paper``: a tidy frame with
    the same ``x``, ``y`` and ``hue`` columns, drawn as dashed lines in the matching colour."""
    ax = ax or plt.subplots(figsize=(6, 3.2))[1]  # the legend sits right of the axes: 6 in keeps the panel ≥ 3 in
    order = natural_order(list(frame[x]) + ([] if paper is None else list(paper[x])))
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in order)
    position = (lambda v: v) if numeric else {str(v): i for i, v in enumerate(order)}.get

    def coords(group):
        group = group.assign(_pos=[position(v if numeric else str(v)) for v in group[x]]).sort_values("_pos")
        return group._pos, group[y]

    colours = {}
    for key, group in frame.groupby(hue, sort=False):
        (line,) = ax.plot(*coords(group), marker="o", label=label(key))
        colours[key] = line.get_color()
    if paper is not None:
        for key, group in paper.groupby(hue, sort=False):
            ax.plot(*coords(group), ls="--", marker="x", color=colours.get(key, "black"), alpha=0.8)
        ax.plot([], [], ls="--", marker="x", color="black", label="paper")
    if not numeric:
        ax.set_xticks(range(len(order)), [str(v) for v in order])
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel or label(x))
    ax.set_ylabel(ylabel or label(y))
    ax.set_title(title)
    legend_outside(ax, title=label(hue))
    return ax


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "DOCS_WIDTH_PX",
    "DPI",
    "LABELS",
    "SCREEN_DPI",
    "STANDIN_TEXT",
    "accepted_histogram",
    "highlight_html",
    "label",
    "latency_lines",
    "legend_outside",
    "overlapping_ticks",
    "paper_line",
    "readability",
    "save",
    "speedup_bars",
    "sweep_lines",
    "tau_vs_formula",
    "theme",
]
