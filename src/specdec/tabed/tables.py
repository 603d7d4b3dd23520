"""TABED's paper numbers as the findings read them: the thresholds drawn from the paper's tables.

``rank_counts`` counts the cells where a method is best or second best; ``paper_top_two_share`` /
``paper_max_shortfall`` (T2) and ``paper_window_tolerance`` (T5) compute from the paper's Tables 3 and 10-14
(``data/paper/tabed_block_efficiency.csv``, through ``bench.pair_paper_table``) the thresholds that
``specdec.tabed.findings`` holds our estimates to.
"""

from __future__ import annotations

import pandas as pd

from specdec.tabed.bench import PAPER_SETTING, pair_paper_table, paper_table_name, paper_window_table

T2_METHODS = ("M", "T", "MT", "MT*")


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    return table[[d != "Avg." for d in table.index.get_level_values(2)]]


def rank_counts(table: pd.DataFrame, method: str, tol: float = 0.0) -> tuple[int, int]:
    """``(cells where method is best or second best, cells)``: at most one method strictly better (by > tol)."""
    cells = _cells(table)
    better = (cells.sub(cells[method], axis=0) > tol).sum(axis=1)
    return int((better <= 1).sum()), len(cells)


def paper_cells(methods, setting: dict | None = PAPER_SETTING) -> pd.DataFrame:
    """The paper's cells of ``setting`` that T1-T4 compare (no ``Avg.``, no NLP first turn); all NaN where the
    paper has no table for it."""
    table = pair_paper_table(list(methods), setting)
    table = table[[d != "Avg." for d in table.index.get_level_values(2)]]
    return table[[not (g == "nlp" and t == 1) for t, g, _ in table.index]]


def threshold_setting(setting: dict | None) -> dict:
    """Where a default threshold comes from: ``setting``'s table, else (the paper has none) Table 10's."""
    return setting if paper_table_name(setting) else PAPER_SETTING


def paper_top_two_share(methods=T2_METHODS, method: str = "MT*", setting: dict | None = PAPER_SETTING) -> float:
    """The share of the paper's cells of ``setting`` (default Table 10; benchmark and OOD first turns, benchmark
    and NLP second turns) where ``method`` is best or second best among ``methods``; NaN where it has none."""
    if not paper_table_name(setting):
        return float("nan")
    top2, n = rank_counts(paper_cells(methods, setting), method)
    return top2 / n


def paper_max_shortfall(methods=T2_METHODS, method: str = "MT*", setting: dict | None = PAPER_SETTING) -> float:
    """The largest relative gap ``(best − method) / best`` in any cell of ``setting``'s table (default Table 10):
    how far behind the best the paper still calls MT* 'close to the best' (Table 10: 1.7%, Spot first turn);
    NaN where the paper has no table for ``setting``."""
    cells = paper_cells(methods, setting)
    return float(((cells.max(axis=1) - cells[method]) / cells.max(axis=1)).max())


def paper_window_tolerance() -> float:
    """The paper's Table 3 spread: max over h ∈ {1, 4, 16} and the groups (benchmark, OOD) of
    ``|τ(h) − τ(ALL)| / τ(ALL)`` on the group means (0.99%: OOD, h = 1 and h = 4)."""
    table = paper_window_table()
    ood = [d for d in table.index if d in ("PSV", "VIST")]
    groups = pd.DataFrame({"benchmark": table.drop(index=ood).mean(), "ood": table.loc[ood].mean()}).T
    return float(((groups.drop(columns="ALL").sub(groups["ALL"], axis=0)).abs().div(groups["ALL"], axis=0)).max().max())
