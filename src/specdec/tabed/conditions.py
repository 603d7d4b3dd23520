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
- **T1a** (``t1a_validity``), **T1b-text** (``t1b_text_validity``): M's draft reads its images (held-out answer loss
  lower with the real images than with white ones, its training log); T1b-text also needs NQ / GSM8K answers of
  at least ``T1B_MIN_TOKENS``.
- **T1c** (``t1c_validity``): the OOD stories carry more images than M's draft saw in any training row.
- **T2** (``t2_validity``): M and T fluctuate, each leading in at least half Table 10's minority share of cells.
- **T3a, T3b, T3** (``t3a_validity``): on each OOD set one of M, T fails, trailing by at least half Table 10's gap.
- **T-speed** (``t_speed_validity``): the per-cell better of M and T leaves at least the row's +4.8% over their mean.

A condition that holds gives ``partly`` on the tiny proxies, ``yes`` on the paper's own models; one that fails
gives ``no`` ("not testable on this proxy"); one a profile cannot measure says ``NOT_MEASURED``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from specdec.tabed.paired import paired, wide
from specdec.tabed.speed import gain, paper_gain, regime
from specdec.tabed.tables import paper_cells
from specdec.tabed.windows import TINY_WHY
from specdec.validate import reads_frame
from specdec.verdict import validity

T1B_MIN_ADDED = 0.10  # share of benchmark second turns that add an image
T1B_MIN_TOKENS = 24.0  # mean answer tokens of the benchmark second turns (the paper's ≥ 48, halved)
T4_MIN_ORACLE_GAIN = 0.0  # mean τ(C with true captions) − τ(T)
NOT_MEASURED = "not measured on this profile"  # a condition the profile's rows (or zoo) cannot measure


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
def t1b_validity(frame: pd.DataFrame, tiny_why: str, met: str = "partly") -> tuple[str, str]:
    """T1b's (and T1b-prev's, T1's) validity from ``t1b_measured``: ``met`` (``partly``: the tiny proxies) when the
    second turns have the paper's kinds by the thresholds above, else ``no``, with the measurement either way."""
    added, tokens, n = t1b_measured(frame)
    if not n:
        return validity("partly", tiny_why, f"{NOT_MEASURED}: no benchmark second turn")
    measured = (
        f"of {n} benchmark second turns {added:.0%} add an image (the paper's follow-ups 'with images from the same"
        f" dataset'; needs ≥ {T1B_MIN_ADDED:.0%}) and their answers average {tokens:.1f} tokens (needs ≥"
        f" {T1B_MIN_TOKENS:.0f}, half the paper's 48)"
    )
    if added >= T1B_MIN_ADDED and tokens >= T1B_MIN_TOKENS:
        return validity(met, tiny_why, measured)
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
def t4_validity(stored: pd.DataFrame, tiny_why: str, met: str = "partly") -> tuple[str, str]:
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
        return validity(met, tiny_why, measured)
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


# ------------------------------------------------------------------------------------------- issue 44, round two
# The conditions of the findings whose validity was a sentence (T1a, T1c, T1b-text, T2, T3a, T-speed), fixed before
# their verdicts were recomputed, each from the paper's own words and numbers (docs/papers/tabed.md, *Proxy
# conditions*; data/DATA_CARD.md). A condition that holds gives ``met`` (``partly`` for the tiny proxies, ``yes``
# on the paper's own models); one that fails gives ``no``: the finding is then "not testable on this proxy".
DRAFT = "tabed-draft"  # the shipped draft, whose training log holds the held-out loss with real and blank images
BENCHMARK_FIRST = ("describe", "docvqa", "pope", "mmvet", "iedit", "magicbrush", "spot")  # T1a's first turns
NLP_IMAGE_TURNS = ("describe", "docvqa", "pope", "mmvet")  # the image turns before NQ / GSM8K (scenes.make_row)
READS_IMAGES_MIN_GAIN = 0.0  # held-out loss(blank images) − loss(real images), token-weighted: must be above it
T2_MINORITY_OF_PAPER = 0.5  # the share of cells the less often leading of M, T leads: at least half the paper's
T3A_GAP_OF_PAPER = 0.5  # on each OOD set (best − worst) / best of M, T: at least half the paper's smallest


def draft_heldout(folder=None) -> dict | None:
    """The ``heldout`` block of the shipped draft's ``training_log.json`` (``{"<scenario>-t<turn>": {"loss",
    "loss_blank_images", "tokens", ...}}``, plus its ``summary`` under ``"summary"``), or None where it is absent."""
    import json
    import pathlib

    from specdec import zoo

    path = pathlib.Path(folder or zoo.model_dir(DRAFT)) / "training_log.json"
    if not path.exists():
        return None
    log = json.loads(path.read_text())
    return {**log["summary"]["heldout"], "summary": log["summary"]}


def reads_images(heldout: dict, scenarios) -> tuple[float, float, int]:
    """``(loss with real images, loss with blank images, tokens)`` of the draft's held-out answers on the first turns
    of ``scenarios``, token-weighted (``heldout``: ``draft_heldout``)."""
    if not isinstance(heldout, dict):
        raise TypeError(f"heldout must be a training log's held-out block (a dict, draft_heldout), got {heldout!r}")
    cells = [heldout[f"{s}-t1"] for s in scenarios if f"{s}-t1" in heldout]
    tokens = sum(c["tokens"] for c in cells)
    if not tokens:
        return float("nan"), float("nan"), 0
    real, blank = (sum(c[k] * c["tokens"] for c in cells) / tokens for k in ("loss", "loss_blank_images"))
    return float(real), float(blank), int(tokens)


def reads_images_check(heldout: dict | None, scenarios, why: str, met: str, what: str) -> tuple[str, str]:
    """Does M's draft read the images of ``scenarios`` (``what`` names them)? ``met`` when its held-out answer loss
    with the real images is below the loss with all-white ones by more than ``READS_IMAGES_MIN_GAIN``, else ``no``
    (a draft that ignores its image drafts as T does: M − T can then not show); unmeasured without a log."""
    if heldout is None:
        return validity("partly", why, f"{NOT_MEASURED}: whether M's draft reads the images of {what}")
    real, blank, tokens = reads_images(heldout, scenarios)
    measured = (
        f"M's draft ({DRAFT}, its training log) has a held-out answer loss of {real:.3f} with the real images of"
        f" {what} against {blank:.3f} with all-white ones over {tokens:,} tokens (needs lower with the real ones)"
    )
    if tokens and blank - real > READS_IMAGES_MIN_GAIN:
        return validity(met, why, measured)
    return validity("no", why, measured + ": a draft that does not read its images drafts as T does")


def t1a_validity(heldout: dict | None, why: str, met: str = "partly") -> tuple[str, str]:
    """T1a's condition (Sec. 4: in the first turn "the drafting method needs to identify the graphical information
    the user is referring to based on the input image"): M's draft reads the images of the benchmark first turns."""
    return reads_images_check(heldout, BENCHMARK_FIRST, why, met, "the benchmark first turns")


@reads_frame
def t1b_text_validity(
    frame: pd.DataFrame, heldout: dict | None = None, why: str = TINY_WHY, met: str = "partly"
) -> tuple[str, str]:
    """T1b-text's condition: the NQ / GSM8K second turns answer at the length of the paper's text tasks (mean answer
    tokens of T's rows ≥ ``T1B_MIN_TOKENS``, half the paper's 48) and M's draft reads the images of the conversation
    before them (``reads_images_check`` on ``NLP_IMAGE_TURNS``): else M and T draft alike and T − M cannot show."""
    rows = frame[(frame.group == "nlp") & (frame.turn.astype(int) == 2) & (frame.method == "T")].drop_duplicates("row")
    if rows.empty:
        return validity("partly", why, f"{NOT_MEASURED}: no NQ / GSM8K second turn")
    tokens = float(rows.new_tokens.mean())
    images = reads_images_check(heldout, NLP_IMAGE_TURNS, why, met, "the image turns before them")
    measured = (
        f"the {len(rows)} NQ / GSM8K second turns answer {tokens:.1f} tokens on average (needs ≥ {T1B_MIN_TOKENS:.0f})"
    )
    level = "no" if images[0] == "no" or tokens < T1B_MIN_TOKENS else images[0]
    short = ": shorter than the paper's text tasks" if tokens < T1B_MIN_TOKENS else ""
    return validity(level, why, measured + short, images[1].removeprefix(f"{images[0]}: ").removeprefix(f"{why}; "))


@reads_frame
def t1c_validity(
    frame: pd.DataFrame, heldout: dict | None = None, why: str = TINY_WHY, met: str = "partly"
) -> tuple[str, str]:
    """T1c's condition (Sec. 4: the OOD sets "featuring five images per query" test "unexpected and varied
    queries"; the paper's drafts are LLaVA-trained on single images): every OOD request carries more images than
    any training row in which M's draft saw images (its log's ``max_images``), else the stories are not out of M's
    distribution."""
    ood = frame[frame.group == "ood"]
    if heldout is None or ood.empty:
        return validity("partly", why, f"{NOT_MEASURED}: how many images M's draft saw in training")
    fewest, seen = int(ood.n_images.min()), int(heldout["summary"]["max_images"])
    measured = (
        f"every one of the {ood.row.nunique()} OOD requests carries {fewest} or more images; M's draft saw at most"
        f" {seen} per training row ({DRAFT}, its training log; needs fewer than the stories carry)"
    )
    if fewest > seen:
        return validity(met, why, measured)
    return validity("no", why, measured + ": the stories are not out of M's distribution")


def _cell_means(frame: pd.DataFrame, methods=("M", "T")) -> pd.DataFrame:
    """Mean τ per (group, scenario, turn) x method of the paper's scenarios (NLP first turns left out)."""
    rows = frame[frame.method.isin(methods) & ~((frame.group == "nlp") & (frame.turn.astype(int) == 1))]
    cells = rows.pivot_table(index=["group", "scenario", "turn"], columns="method", values="block_efficiency")
    return cells.reindex(columns=list(methods)).dropna()


def paper_leads() -> tuple[int, int, int]:
    """``(cells where M leads T, cells where T leads M, cells)`` of Table 10 (5, 13, 18)."""
    paper = paper_cells(["M", "T"])
    return int((paper.M > paper["T"]).sum()), int((paper["T"] > paper.M).sum()), len(paper)


def t2_minority_threshold() -> float:
    """``T2_MINORITY_OF_PAPER`` of the share of Table 10's cells the less often leading of M and T leads (5 of 18)."""
    m, t, n = paper_leads()
    return T2_MINORITY_OF_PAPER * min(m, t) / n


@reads_frame
def t2_validity(frame: pd.DataFrame, why: str = TINY_WHY, met: str = "partly") -> tuple[str, str]:
    """T2's condition (Sec. 4: the single methods "show scenario-specific performance fluctuations", the premise of
    MT*'s robustness): M leads T in some cells and T leads M in others, the less often leading one in at least
    ``t2_minority_threshold`` of the cells; where one method leads everywhere, "best or second best" asks nothing
    of the adaptation."""
    cells = _cell_means(frame)
    if cells.empty:
        return validity("partly", why, f"{NOT_MEASURED}: no cell run with both M and T")
    m, t, limit = int((cells.M > cells["T"]).sum()), int((cells["T"] > cells.M).sum()), t2_minority_threshold()
    pm, pt, pn = paper_leads()
    measured = (
        f"M leads T in {m} and T leads M in {t} of {len(cells)} cells (Table 10 has {pm} and {pt} of {pn}; the less"
        f" often leading one needs ≥ {limit:.0%} of the cells)"
    )
    if min(m, t) / len(cells) >= limit:
        return validity(met, why, measured)
    return validity("no", why, measured + ": the single methods do not fluctuate, so there is nothing to adapt to")


def t3a_gap_threshold() -> float:
    """``T3A_GAP_OF_PAPER`` of Table 10's smallest OOD ``(best − worst) / best`` of M and T (PSV 0.42)."""
    paper = paper_cells(["M", "T"])
    ood = paper[[g == "ood" for _, g, _ in paper.index]]
    return T3A_GAP_OF_PAPER * float(((ood.max(axis=1) - ood.min(axis=1)) / ood.max(axis=1)).min())


@reads_frame
def t3a_validity(frame: pd.DataFrame, why: str = TINY_WHY, met: str = "partly") -> tuple[str, str]:
    """T3a's condition (Table 1: "In OOD scenarios where some drafting methods fail, MT* significantly outperforms MT
    by discriminating between multiple methods"): on every OOD set one of M, T drafts far worse than the other,
    ``(best − worst) / best`` of their mean τ at least ``t3a_gap_threshold``."""
    cells = _cell_means(frame[frame.group == "ood"])
    if cells.empty:
        return validity("partly", why, f"{NOT_MEASURED}: no OOD request run with both M and T")
    gaps = (cells.max(axis=1) - cells.min(axis=1)) / cells.max(axis=1)
    limit = t3a_gap_threshold()
    each = ", ".join(f"{s} {g:.0%}" for (_, s, _), g in gaps.items())
    measured = f"on the OOD sets the worse of M and T trails the better by {each} (needs ≥ {limit:.0%} on each)"
    if (gaps >= limit).all():
        return validity(met, why, measured)
    return validity("no", why, measured + ": no drafting method fails there, so there is nothing to discriminate")


@reads_frame
def t_speed_validity(frame: pd.DataFrame, why: str = TINY_WHY, met: str = "partly") -> tuple[str, str]:
    """T-speed's condition: the paper's gain comes from "prioritiz[ing] stronger drafting methods ... even when
    individual methods exhibit scenario-specific performance fluctuations" (Sec. 5), and on Table 10's benchmark
    cells choosing the better of M and T per cell gives exactly its +4.8%. The proxy must leave that room: the
    per-cell better of M and T, priced as the row prices them, at least the row's threshold over their mean."""
    cells = _cell_means(frame[frame.group == "benchmark"])
    if cells.empty:
        return validity("partly", why, f"{NOT_MEASURED}: no benchmark cell run with both M and T")
    table = [np.array([[r.M, r.T, max(r.M, r.T)]]) for r in cells.itertuples()]
    room, limit = gain(table, regime().cost("draft")), paper_gain()[0]
    measured = (
        f"choosing the better of M and T in each of {len(cells)} benchmark cells gives {room:+.1%} over their mean"
        f" (on Table 10 it gives {limit:+.1%}, all of MT*'s gain there; needs ≥ {limit:+.1%})"
    )
    if room >= limit:
        return validity(met, why, measured)
    return validity("no", why, measured + ": the single methods leave less room than the gain the row asks for")


def combined(*checks: tuple[str, str], why: str) -> tuple[str, str]:
    """Several conditions' ``(level, "level: <why>; reasons")``: ``no`` if one is ``no``, else the first's level;
    every reason once, the failing ones first."""
    if not checks:
        raise ValueError("combined needs at least one condition's (level, why)")
    level = "no" if any(c[0] == "no" for c in checks) else checks[0][0]
    order = sorted(checks, key=lambda c: c[0] != "no")
    reasons = [c[1].removeprefix(f"{c[0]}: ").removeprefix(why).removeprefix("; ") for c in order]
    return validity(level, why, *dict.fromkeys(r for r in reasons if r))
