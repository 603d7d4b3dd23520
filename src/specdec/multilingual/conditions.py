"""Measured proxy conditions of the multilingual findings whose validity was a sentence (issue 44): M1 (four rows per
temperature), M4-τ, Table 3 zh-en and Table 7's three rows (docs/papers/multilingual.md, *Proxy conditions*;
data/DATA_CARD.md). Each threshold was fixed from the paper's words before the verdicts were recomputed:

- **M1, M1 vs generic SpS, M1 vs PLD** (``specialized_check``): the paper's P-F drafters are "specialized":
  "pretrain-and-finetune significantly improves the alignment of drafter models" (Sec. 1). On every language the P-F
  drafter's held-out top-1 agreement with the target on its own X→En pages exceeds P's (the generic drafter it
  starts from), on every training seed (``training_summary``).
- **M1 vs F** (``trained_f_check``): the paper's F is a trained drafter (~1.3B tokens × 5 epochs, App. F). F's pooled
  τ over the Table 1 rows of every training seed at the row's T is past the onset of learning, ``F_ONSET`` (the onset
  M2-linear uses: an untrained drafter's τ ≈ 1).
- **Table 3 zh-en** (``stages_check``): each stage before P-F learned something: P's held-out prose loss below a
  uniform guess (ln |V|) and F-zh's τ on Zh→En (T = 0, every training seed) past ``F_ONSET``.
- **M4-τ** (``size_check``): "similar τ" despite a much larger drafter: Tiny-Vicuna 1B is 16x Vicuna 68M; the large
  drafter must have at least ``M4_MIN_RATIO`` (half of 16) times the small one's parameters.
- **Table 7, Table 7 all prompts, Table 7-τ** (``translatable_check``): the paper's held-out set (IWSLT14 De-En) is
  one its target translates: at least ``T7_MIN_TRANSLATABLE`` of the held-out prompts are translatable
  (``experiments.translatable_set``).

A condition that holds gives ``met`` (``partly`` on the tiny proxies, ``yes`` on the paper's models); one that fails
gives ``no`` ("not testable on this proxy"); one the profile cannot measure says ``NOT_MEASURED``.
"""

from __future__ import annotations

import math

import pandas as pd

from specdec.validate import reads_frame
from specdec.verdict import validity

F_ONSET = 1.10  # = scaling_verdicts.M2_ONSET_F: an untrained drafter accepts almost nothing (τ ≈ 1.0)
M4_PAPER_RATIO = 16.0  # Tiny-Vicuna 1B / Vicuna 68M (Table 6)
M4_MIN_RATIO = M4_PAPER_RATIO / 2
T7_MIN_TRANSLATABLE = 0.5  # share of Table 7's held-out prompts the target translates
VOCAB = 4096  # the tiny zoo's tokenizer: a uniform guess scores ln 4096
NOT_MEASURED = "not measured on this profile"


def _dict_of_frames(name: str, value) -> None:
    """One ``TypeError`` for anything but ``{train seed: DataFrame}``."""
    if not isinstance(value, dict) or not all(isinstance(f, pd.DataFrame) for f in value.values()):
        raise TypeError(f"{name} needs {{train seed: DataFrame}}, got {type(value).__name__}")


def _agreement(row: pd.Series, lang: str) -> float:
    """Mean held-out top-1 agreement of a training summary row on the ``<page>-<lang>`` X→En columns."""
    cols = [c for c in row.index if c.startswith("agree_") and c.endswith(f"-{lang}")]
    return float(pd.to_numeric(row[cols]).mean()) if cols else float("nan")


def specialized_check(summaries: dict, langs, why: str, met: str) -> tuple[str, str]:
    """M1's condition on ``summaries`` (``{train seed: training summary frame}``, ``Drafters.training_summary``;
    P, ``ml-draft-generic``, read from seed 0's): per seed and language, agreement(P-F) − agreement(P) > 0."""
    _dict_of_frames("specialized_check", summaries)
    if not summaries:
        return validity("partly", why, f"{NOT_MEASURED}: no drafter training summary")
    base = summaries[min(summaries)].set_index("model")
    if "ml-draft-generic" not in base.index:
        return validity("partly", why, f"{NOT_MEASURED}: no generic drafter in the training summary")
    gaps = {}
    for k, summary in sorted(summaries.items()):
        rows = summary.set_index("model")
        for lang in langs:
            name = f"ml-draft-pf-{lang}"
            if name in rows.index:
                gaps[(k, lang)] = _agreement(rows.loc[name], lang) - _agreement(base.loc["ml-draft-generic"], lang)
    if not gaps:
        return validity("partly", why, f"{NOT_MEASURED}: no P-F drafter in the training summary")
    worst = min(gaps, key=lambda k: gaps[k])
    measured = (
        f"the P-F drafters' held-out top-1 agreement on their own X→En pages exceeds P's by {min(gaps.values()):+.2f}"
        f" to {max(gaps.values()):+.2f} over {len(gaps)} (seed, language) pairs (smallest: seed {worst[0]}"
        f" {worst[1]}; needs > 0 in each, training summaries)"
    )
    if all(g > 0 for g in gaps.values()):
        return validity(met, why, measured)
    return validity("no", why, measured + ": a finetune that did not specialize the drafter is not the paper's P-F")


@reads_frame
def pooled_tau(rows: pd.DataFrame, method: str) -> tuple[float, int]:
    """``(new tokens / target calls, rows)`` of ``method``'s rows."""
    g = rows[rows.method == method]
    calls = float(g.target_calls.sum())
    return (float(g.new_tokens.sum()) / calls if calls else float("nan")), len(g)


def trained_f_check(frames: dict, temperature: float, why: str, met: str) -> tuple[str, str]:
    """M1 vs F's condition: F's pooled τ over the ``ml_main`` rows of every training seed (``frames``) at
    ``temperature`` at least ``F_ONSET``."""
    _dict_of_frames("trained_f_check", frames)
    if not frames:
        return validity("partly", why, f"{NOT_MEASURED}: no Table 1 rows")
    rows = pd.concat([f[f.temperature == temperature] for f in frames.values()], ignore_index=True)
    tau, n = pooled_tau(rows, "sps-f")
    if not n:
        return validity("partly", why, f"{NOT_MEASURED}: no F rows")
    measured = (
        f"F drafts at pooled τ {tau:.2f} over {n} Table 1 rows of every training seed (needs ≥ {F_ONSET:.2f}, past"
        " the onset of learning; the paper's F trains on ~1.3B tokens × 5 epochs)"
    )
    if tau >= F_ONSET:
        return validity(met, why, measured)
    return validity("no", why, measured + ": an F below the onset has not learned its task, so P-F's lead is given")


def stages_check(frames: dict, summaries: dict, why: str, met: str, pair: str = "zh-en") -> tuple[str, str]:
    """Table 3's condition: P's held-out prose loss (seed 0's summary) below ln ``VOCAB`` and F's pooled τ on
    ``pair`` at T = 0 over every training seed's ``ml_main`` rows at least ``F_ONSET``."""
    _dict_of_frames("stages_check", frames)
    _dict_of_frames("stages_check", summaries)
    if not frames:
        return validity("partly", why, f"{NOT_MEASURED}: no Table 1 rows")
    rows = pd.concat([f[(f.temperature == 0) & (f.pair == pair)] for f in frames.values()], ignore_index=True)
    tau, n = pooled_tau(rows, "sps-f")
    base = summaries[min(summaries)].set_index("model") if summaries else pd.DataFrame()
    if not n or "ml-draft-generic" not in base.index or "loss_prose" not in base.columns:
        return validity("partly", why, f"{NOT_MEASURED}: no F rows on {pair} or no training summary of P")
    loss, uniform = float(base.loc["ml-draft-generic", "loss_prose"]), math.log(VOCAB)
    measured = (
        f"P's held-out prose loss is {loss:.2f} (needs below a uniform guess, {uniform:.2f}) and F drafts {pair} at"
        f" pooled τ {tau:.2f} over {n} rows of every training seed (needs ≥ {F_ONSET:.2f})"
    )
    if loss < uniform and tau >= F_ONSET:
        return validity(met, why, measured)
    return validity("no", why, measured + ": a stage that learned nothing makes 'P-F beats each stage' given")


def size_check(small: int, large: int, why: str, met: str) -> tuple[str, str]:
    """M4-τ's condition: the large drafter has at least ``M4_MIN_RATIO`` times the small one's parameters."""
    if not all(isinstance(n, int | float) and n >= 0 for n in (small, large)):
        raise ValueError(f"size_check needs two parameter counts ≥ 0, got {small!r} and {large!r}")
    if not small or not large:
        return validity("partly", why, f"{NOT_MEASURED}: the drafters' parameter counts")
    ratio = large / small
    measured = (
        f"the large drafter has {ratio:.1f}x the small one's parameters ({large:,} / {small:,}; needs ≥"
        f" {M4_MIN_RATIO:g}x, half the paper's {M4_PAPER_RATIO:g}x)"
    )
    if ratio >= M4_MIN_RATIO:
        return validity(met, why, measured)
    return validity("no", why, measured + ": drafters this close in size draft alike whatever the claim")


def translatable_check(translatable: pd.DataFrame | None, why: str, met: str) -> tuple[str, str]:
    """Table 7's condition: the share of held-out prompts the target translates (``translatable_set``) at least
    ``T7_MIN_TRANSLATABLE``."""
    if translatable is not None and not isinstance(translatable, pd.DataFrame):
        raise TypeError(f"translatable_check needs translatable_set's frame or None, got {type(translatable).__name__}")
    if translatable is None or not len(translatable):
        return validity("partly", why, f"{NOT_MEASURED}: no plain-decoding rows of the held-out set")
    share = float(translatable.translatable.astype(bool).mean())
    measured = (
        f"the target translates {share:.0%} of the {len(translatable)} held-out prompts (needs ≥"
        f" {T7_MIN_TRANSLATABLE:.0%}; the paper's target translates IWSLT14)"
    )
    if share >= T7_MIN_TRANSLATABLE:
        return validity(met, why, measured)
    return validity("no", why, measured + ": a held-out set the target does not translate tests no drafter")
