"""Every figure reads at the size the docs show it (``plots.readability``: text ≥ 8 px, panels ≥ 250 px once a
notebook's inline figure is shrunk into an 800-px docs column), and the check itself can fail."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import seaborn as sns
from PIL import Image

from specdec import plots

FIGURES = sorted((Path(__file__).resolve().parent.parent / "figures" / "tiny").glob("*.png"))


def heatmaps(per_row: int, width: float = 3.2):
    """Five annotated 6×6 heatmaps (notebook 32's OOD panels), ``per_row`` to a row."""
    rows = -(-5 // per_row)
    fig, axes = plt.subplots(rows, per_row, figsize=(width * per_row, 3.0 * rows), squeeze=False)
    for ax in axes.flat[:5]:
        sns.heatmap(np.arange(36.0).reshape(6, 6), annot=True, fmt=".2f", ax=ax, cbar=False, annot_kws={"size": 7})
    for ax in axes.flat[5:]:
        ax.set_visible(False)
    return fig


def test_five_heatmaps_in_a_row_are_unreadable_and_warn(tmp_path):
    fig = heatmaps(per_row=5)
    with pytest.warns(UserWarning, match="hard to read at the docs width"):
        plots.save(fig, tmp_path / "row.png")
    stored = json.loads(Image.open(tmp_path / "row.png").text["Readability"])
    assert stored == plots.readability(fig) and not stored["readable"]
    assert stored["min_text_px"] < plots.MIN_TEXT_PX and stored["min_panel_px"] < plots.MIN_PANEL_PX
    plt.close(fig)


def test_reflowed_heatmaps_read(tmp_path):
    fig = heatmaps(per_row=2, width=4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no readability warning
        plots.save(fig, tmp_path / "grid.png")
    read = plots.readability(fig)
    assert read["readable"] and read["min_text_px"] >= plots.MIN_TEXT_PX, read
    plt.close(fig)


@pytest.mark.parametrize("path", FIGURES, ids=[p.name for p in FIGURES])
def test_every_committed_figure_reads_at_its_docs_size(path):
    """``plots.save`` records each figure's readability in the PNG: every committed figure must pass it."""
    text = Image.open(path).text
    assert "Readability" in text, f"{path.name} was not saved by plots.save (make reproduce rewrites it)"
    read = json.loads(text["Readability"])
    assert read["readable"], f"{path.name} at {plots.DOCS_WIDTH_PX} px: {read}"


def test_tick_labels_that_run_into_each_other_are_unreadable():
    names = ["AASD", "AASD k=1", "AASD own cache only", "AASD w/o image KV", "AASD w/o projector", "AASD w/o text KV"]
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    ax.bar(names, range(len(names)))
    fig.tight_layout()
    level = plots.readability(fig)
    assert level["overlapping_ticks"] > 0 and not level["readable"], level
    plt.setp(ax.get_xticklabels(), rotation=25, ha="right")  # slanted: parallel strips a line of text apart
    fig.tight_layout()
    slanted = plots.readability(fig)
    assert slanted["overlapping_ticks"] == 0 and slanted["readable"], slanted
    plt.close(fig)
