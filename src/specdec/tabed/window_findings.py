"""TABED's T5 (Table 3, App. B.1) as a ``Verdict``: is h = ALL a reasonable default window, read with its sign.

The paper varies the window h (the last h *verified positions* whose target distributions score the ensemble
weights; ``algorithm.softmax_weights``) over 1, 4, 16 and ALL and concludes: "there is no clear winner among the
different window lengths h. Therefore, by default, using all previous information (i.e., ALL) before the current
timestep is a reasonable choice." The claim a reader acts on is the default: no h beats ALL by more than the
paper's own Table 3 does. An h far *below* ALL does not weaken the default (it strengthens it), so the statistic is
signed, ``max over groups and h of (τ(h) − τ(ALL)) / τ(ALL)``, and every signed deviation is in ``detail``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from specdec.tabed.paired import cell_bootstrap, make_verdict, wide
from specdec.tabed.tables import PAPER_SETTING, paper_table_name, paper_window_tolerance
from specdec.validate import reads_frame
from specdec.verdict import Verdict, over_complete_seeds

PAPER_TABLE1 = "Table 10"  # the pair of Table 3 (LLaVA-1.5 68M on 7B)
NO_NUMBER = "the paper has no number for this pair"
T5_GROUPS = ("benchmark t1", "ood")  # the paper's Table 3: first turns of the benchmark and OOD datasets
T5_QUOTE = (
    "App. B.1: 'there is no clear winner among the different window lengths h. Therefore, by default, using all"
    " previous information (i.e., ALL) ... is a reasonable choice'"
)


def _deviations(cells: list[np.ndarray]) -> np.ndarray:
    """``[group, h]`` signed ``(τ(h) − τ(ALL)) / τ(ALL)`` of the group means (ALL is each array's last column)."""
    return np.array([(c.mean(0)[:-1] - c.mean(0)[-1]) / c.mean(0)[-1] for c in cells])


@reads_frame
def verdict_t5(
    frame: pd.DataFrame,
    *,
    tolerance: float | None = None,
    method: str = "MT*",
    groups=T5_GROUPS,
    setting: dict | None = PAPER_SETTING,
    n_boot: int = 2000,
    seed: int = 0,
) -> Verdict:
    """T5 (h = ALL is a reasonable default): ``max over groups and h ≠ ALL of (τ(h) − τ(ALL)) / τ(ALL)`` on the
    group means of ``method``, over the requests run at every window in ``frame`` (runs of several windows, e.g.
    ``pd.concat(runs(f, window=h) for h in ...)``), resampling requests within their group. Holds if the upper
    bound is below ``tolerance`` (default: ``paper_window_tolerance(signed=True)``, the most an h beats ALL in
    Table 3), does not hold if the lower bound reaches it (some h clearly beats the default). Table 3 is of Table
    10's pair: for a ``setting`` of another table, or none, the paper has no number to quote and the default
    threshold stays Table 3's."""
    own = paper_table_name(setting) == PAPER_TABLE1
    fallback = "" if own or tolerance is not None else " Threshold: Table 3 (Table 10's pair)."
    tolerance = paper_window_tolerance(signed=True) if tolerance is None else tolerance
    frame = frame[frame.method == method]
    table, info = wide(frame, "window")
    windows = sorted((w for w in table.columns if w != "ALL"), key=lambda w: (len(w), w))
    names: list[str] = []
    if "ALL" not in table or not windows:
        cells, detail = [], "This frame has no runs at h = ALL and another window: not tested."
    else:
        table = table[[*windows, "ALL"]].dropna()
        by_group = info.loc[table.index].groupby("cell").groups
        names = [g for g in groups if g in by_group]
        cells = [table.loc[by_group[g]].to_numpy() for g in names]
        detail = f"h ∈ {{{', '.join(windows)}}} (verified positions) vs ALL in {', '.join(names)}."
    est, low, high = cell_bootstrap(cells, lambda cs: float(_deviations(cs).max()), n_boot=n_boot, seed=seed)
    if cells:
        dev = _deviations(cells)
        signed = "; ".join(
            f"{g}: " + ", ".join(f"h={w} {100 * d:+.1f}%" for w, d in zip(windows, row)) for g, row in zip(names, dev)
        )
        worst = np.unravel_index(np.argmin(dev), dev.shape)
        lead = "ALL" if dev.max() <= 0 else f"h={windows[int(np.unravel_index(np.argmax(dev), dev.shape)[1])]}"
        detail += (
            f" Signed (τ(h) − τ(ALL)) / τ(ALL): {signed}. Best: {lead}; furthest below ALL: h={windows[worst[1]]}"
            f" in {names[worst[0]]} ({100 * dev[worst]:+.1f}%)."
        )
    return make_verdict(
        "T5",
        f"h = ALL is a reasonable default window: no h beats ALL by {tolerance:.2%} of τ(ALL) or more for {method}"
        " (value: the largest signed (τ(h) − τ(ALL)) / τ(ALL) of a group mean)",
        est,
        low,
        high,
        sum(len(c) for c in cells),
        threshold=tolerance,
        greater=False,
        paper=f"{paper_window_tolerance(signed=True):+.2%} (Table 3, the most an h beats ALL by, a group mean; "
        f"{T5_QUOTE})"
        if own
        else NO_NUMBER,
        detail=detail + fallback,
    )


def verdict_t5_over_seeds(frames: dict[int, pd.DataFrame], setting: dict | None = PAPER_SETTING, **bootstrap):
    """T5 per training seed and pooled over the seeds with every run seed 0 has (``verdict.over_complete_seeds``)."""
    t5 = lambda f: [verdict_t5(f, setting=setting, **bootstrap)]  # noqa: E731
    rules = {"T5": (paper_window_tolerance(signed=True), False)}
    return over_complete_seeds(t5, frames, ["method", "row", "window"], rules)[0]
