"""The papers' reported numbers (``data/paper/``) and what follows from them by the papers' formulas."""

from __future__ import annotations

from specdec.bench import expected_speedup
from specdec.results import paper_numbers
from specdec.verdict import FAILS, HOLDS, SANITY, Verdict

TABED_GAMMA = 5
TABED_LATENCY_RATIO = 0.063  # Table 6: LLaVA-1.5 7B target, 68M draft, A6000


def tabed_table1_block_efficiency():
    """Table 1 cells (LLaVA-1.5 7B, 68M draft) with the block efficiency as a float."""
    df = paper_numbers("tabed_block_efficiency")
    df = df[df.in_main_table.fillna("").str.contains("Table 1")].copy()
    df["block_efficiency"] = df.block_efficiency.astype(float)
    return df


def tabed_expected_speedups(latency_ratio: float = TABED_LATENCY_RATIO, gamma: int = TABED_GAMMA):
    """Per method: mean of the benchmark ``Avg.`` cells of Table 1 over both turns, and Eq. (1) speedup.

    With ``T_q/T_p = 0.063`` and ``γ = 5`` MT* gives the paper's headline 1.74x.
    """
    df = tabed_table1_block_efficiency()
    avg = df[(df.dataset == "Avg.") & (df.dataset_group == "benchmark")]
    out = avg.groupby("method", sort=False).block_efficiency.mean().rename("mean_block_efficiency").to_frame()
    out["expected_speedup"] = [expected_speedup(t, gamma, latency_ratio) for t in out.mean_block_efficiency]
    return out.reset_index()


def tabed_latency_ratios():
    df = paper_numbers("tabed_table6_latency_ratio")
    df["latency_ratio_Tq_over_Tp"] = df.latency_ratio_Tq_over_Tp.astype(float)
    return df


def tabed_headline_verdict() -> Verdict:
    """Notebook 01 (a): the paper's headline 1.74x for MT* follows from its own Table 1 and Table 6 through
    Eq. (1). Exact arithmetic on printed numbers: the interval is the point, n the four methods."""
    table = tabed_expected_speedups().set_index("method")
    mt_star = float(table.loc["MT*", "expected_speedup"])
    holds = round(mt_star, 2) == 1.74
    return Verdict(
        "Eq. (1) headline",
        "MT*'s expected walltime speedup from Table 1's τ and Table 6's T_q/T_p is the headline 1.74x",
        mt_star,
        mt_star,
        mt_star,
        len(table),
        HOLDS if holds else FAILS,
        "1.74x",
        f"γ = {TABED_GAMMA}, T_q/T_p = {TABED_LATENCY_RATIO} (Table 6, 7B target, 68M draft).",
        validity="yes",
        validity_why="yes: arithmetic on the paper's own tables (a check of the transcription and of Eq. (1))",
        section=SANITY,
    )
