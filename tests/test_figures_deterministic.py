"""A figure saved twice, or on another machine, is the same bytes (``plots.save``): no time or software stamp in
the PNG, and text drawn only with the fonts matplotlib ships, never with a font of this machine's."""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

from specdec import plots  # noqa: E402


def chunks(data: bytes) -> list[bytes]:
    """The chunk types of a PNG file, in order."""
    out, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        out.append(data[at + 4 : at + 8])
        at += 12 + length
    return out


def draw():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([1, 2, 3], [0.5, 0.7, 0.6], label="τ, De→En")
    ax.set_title("speedup 1.12×")
    plots.legend_outside(ax)
    return fig


def test_saved_twice_same_bytes_no_stamps(tmp_path):
    paths = [tmp_path / "a.png", tmp_path / "b.png"]
    for path in paths:
        fig = draw()
        plots.save(fig, path)
        plt.close(fig)
    first, second = (p.read_bytes() for p in paths)
    assert first == second
    kinds = chunks(first)
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND"
    assert not {b"tIME", b"iTXt", b"zTXt"} & set(kinds), kinds  # no date
    # one text chunk: the figure's readability at the docs size (tests/test_figures.py), no "Software: matplotlib x.y"
    assert kinds.count(b"tEXt") == 1 and b"Readability" in first and b"Software" not in first


def test_text_uses_only_matplotlibs_own_fonts():
    bundled = Path(matplotlib.get_data_path()).resolve()
    found = Path(font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]))).resolve()
    assert found.is_relative_to(bundled)
    assert all(Path(f.fname).resolve().is_relative_to(bundled) for f in font_manager.fontManager.ttflist)


def test_a_standin_run_marks_its_figures_and_verdicts(tmp_path, monkeypatch):
    """On the stand-in hub (random weights) each figure file and each verdict a notebook shows carries the mark, not
    only the banner at the notebook's top; elsewhere neither changes."""
    from specdec import hub
    from specdec.verdict import HOLDS, STANDIN_LABEL, Verdict

    verdict = Verdict("T1", "the claim", 1.2, 1.1, 1.3, 20, HOLDS)
    paths = {}
    for standins in (False, True):
        monkeypatch.setattr(hub, "standin_cache", lambda standins=standins: standins)
        fig = draw()
        paths[standins] = tmp_path / f"{standins}.png"
        plots.save(fig, paths[standins])
        assert any(t.get_text() == plots.STANDIN_TEXT for t in fig.texts) == standins
        plt.close(fig)
        assert verdict.markdown().startswith(STANDIN_LABEL) == standins
    assert paths[True].read_bytes() != paths[False].read_bytes()
