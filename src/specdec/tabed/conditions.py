"""Measured proxy conditions of TABED's findings (docs/papers/tabed.md, *Proxy conditions*; data/DATA_CARD.md), each
a threshold fixed before its verdict was recomputed (issue 44), read from the committed runs:

- **T1b, T1b-prev, T1** (``t1b_validity``): the paper's second turns include "follow-up requests with images from
  the same dataset" and long answers (its mean answer is ≥ 48 tokens, docs/papers/tabed.md, T2). Testable when at
  least ``T1B_MIN_ADDED`` of the benchmark second turns carry more images than any first turn of their scenario
  and their answers average at least ``T1B_MIN_TOKENS`` (half the paper's 48).
- **T4** (``t4_validity``): a caption draft C the draft can use. Testable when C with the generator's true captions
  (``captioner="oracle"``) drafts at least as well as T, ``mean τ(C, oracle) − τ(T) ≥ 0`` over the paper's
  scenarios: a caption row that cannot beat text-only drafting even with true captions gives MTCP* nothing to add.
- **T3b, T3** (``t3_by_construction``): when MT* equals T's τ on every OOD request, T3b ("close to the best single
  method", T being the best) holds by construction and T3 reduces to T3a: both are sanity checks then.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from specdec.tabed.paired import paired, wide
from specdec.validate import reads_frame
from specdec.verdict import validity

T1B_MIN_ADDED = 0.10  # share of benchmark second turns that add an image
T1B_MIN_TOKENS = 24.0  # mean answer tokens of the benchmark second turns (the paper's ≥ 48, halved)
T4_MIN_ORACLE_GAIN = 0.0  # mean τ(C with true captions) − τ(T)


@reads_frame
def t1b_measured(frame: pd.DataFrame) -> tuple[float, float, int]:
    """``(share of benchmark second turns carrying more images than any first turn of their scenario, mean answer
    tokens of those second turns (T's rows: lossless, so the target's answer), n)`` of a runs frame."""
    rows = frame[(frame.group == "benchmark") & (frame.method == "T")].drop_duplicates("row")
    first = rows[rows.turn.astype(int) == 1].groupby("scenario").n_images.max()
    second = rows[rows.turn.astype(int) == 2]
    if second.empty:
        return float("nan"), float("nan"), 0
    added = (second.n_images > second.scenario.map(first).fillna(float("inf"))).mean()
    return float(added), float(second.new_tokens.mean()), len(second)


@reads_frame
def t1b_validity(frame: pd.DataFrame, tiny_why: str) -> tuple[str, str]:
    """T1b's (and T1b-prev's, T1's) validity from ``t1b_measured``: ``partly`` (the tiny proxies) when the second
    turns have the paper's kinds by the thresholds above, else ``no``, with the measurement either way."""
    added, tokens, n = t1b_measured(frame)
    measured = (
        f"of {n} benchmark second turns {added:.0%} add an image (the paper's follow-ups 'with images from the same"
        f" dataset'; needs ≥ {T1B_MIN_ADDED:.0%}) and their answers average {tokens:.1f} tokens (needs ≥"
        f" {T1B_MIN_TOKENS:.0f}, half the paper's 48)"
    )
    if added >= T1B_MIN_ADDED and tokens >= T1B_MIN_TOKENS:
        return validity("partly", tiny_why, measured)
    lacks = ": the proxy's follow-ups lack the paper's multi-turn kinds (no summaries, stories or added images)"
    return validity("no", tiny_why, measured + lacks + ", so what a second turn rests on is not the paper's")


@reads_frame
def t4_measured(stored: pd.DataFrame, n_boot: int = 2000, seed: int = 0):
    """``(estimate, low, high, n)`` of ``τ(C, true captions) − τ(T)`` at γ = 5 on the paper's scenarios (every cell
    but the NLP first turns), paired by request, from stored ``tabed_runs`` rows."""
    rows = stored[(stored.gamma.astype(int) == 5) & ~((stored.group == "nlp") & (stored.turn.astype(int) == 1))]
    c = rows[(rows.method == "C") & (rows.captioner == "oracle")]
    return paired(pd.concat([c, rows[rows.method == "T"]]), "C", "T", n_boot, seed)


@reads_frame
def t4_validity(stored: pd.DataFrame, tiny_why: str) -> tuple[str, str]:
    """T4's validity from ``t4_measured``: ``partly`` when C with true captions reaches T (estimate ≥ 0), else
    ``no``; without oracle-caption rows (a profile without generated scenes) ``no``: the condition is unmeasured."""
    est, low, high, n = t4_measured(stored)
    if not n:
        return validity("no", tiny_why, "no run of C with the generator's true captions: the condition is unmeasured")
    measured = (
        f"with the generator's true captions C drafts {est:+.3f} τ [{low:+.3f}, {high:+.3f}] against T over {n}"
        f" requests (needs ≥ {T4_MIN_ORACLE_GAIN:.0f})"
    )
    if est >= T4_MIN_ORACLE_GAIN:
        return validity("partly", tiny_why, measured)
    return validity("no", tiny_why, measured + ": a caption row the tiny draft cannot use gives MTCP* nothing to add")


@reads_frame
def t3_by_construction(frame: pd.DataFrame) -> tuple[int, int]:
    """``(OOD requests where τ(MT*) equals τ(T), OOD requests run with both)``."""
    table, _ = wide(frame[(frame.group == "ood") & frame.method.isin(["T", "MT*"])])
    if not {"T", "MT*"} <= set(table.columns):
        return 0, 0
    both = table[["T", "MT*"]].dropna()
    return int((both["MT*"] == both["T"]).sum()), len(both)


SHIPPED_T5 = "T5 (shipped pair)"  # notebook 12's Table 3 on the shipped pair: no scoreboard row (the board's T5 is
# the long-answer pair's, ``windows.WINDOW_PAIR``)


def shipped_pair_t5(verdict, root=None):
    """Notebook 12's T5 on the shipped pair, named ``SHIPPED_T5`` and judged by T5's own check
    (``windows.t5_validity``'s thresholds) on the shipped pair's ``T2`` rows of ``<root>/tiny/proxy_conditions.csv``:
    its answers average at least ``T5_MIN_ANSWER`` tokens in Table 3's groups and h = 16 can cover every past
    position on fewer than ``T5_MAX_COVERED`` of the requests; else not testable on this proxy."""
    import pathlib

    from specdec import results
    from specdec.tabed import windows
    from specdec.verdict import judged

    rows = pd.read_csv(pathlib.Path(root or results.COMMITTED) / "tiny" / "proxy_conditions.csv")
    t2 = rows[rows.condition == "T2"].set_index(["quantity", "subset"]).value
    shortest = min(t2.get(("mean answer tokens", g), float("nan")) for g in ("benchmark turn 1", "ood turn 1"))
    covered = t2.get((windows.COVER_QUANTITY, "h=16"), float("nan"))
    measured = (
        f"the shipped pair's answers average {shortest:.1f} tokens or more in Table 3's groups (needs"
        f" {windows.T5_MIN_ANSWER}) and h = 16 can cover every past verified position on {covered:.0%} of the"
        f" requests (needs under {windows.T5_MAX_COVERED:.0%}; results/tiny/proxy_conditions.csv, T2 rows)"
    )
    level = "partly" if shortest >= windows.T5_MIN_ANSWER and covered < windows.T5_MAX_COVERED else "no"
    return judged(replace(verdict, name=SHIPPED_T5), *validity(level, windows.TINY_WHY, measured))
