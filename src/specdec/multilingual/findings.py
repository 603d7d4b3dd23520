"""The findings of the multilingual-drafter experiments (Yi et al.): verdicts M1–M4, quality, Table 7.

Each ``*_verdict`` takes the tables ``specdec.multilingual.bench`` builds from the runs and returns
``(holds, markdown sentence)``; ``paper_claims`` / ``paper_value`` read the paper's prose numbers. Every name
is importable from ``specdec.multilingual.bench`` too.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd

from specdec.results import paper_numbers


def m1_verdict(table: pd.DataFrame, temperature: float = 0.0) -> tuple[bool, str]:
    """M1: P-F > F > generic (τ) on translation, per pair at ``temperature``."""
    t = table[table.temperature == temperature].pivot_table(index="pair", columns="method", values="tau")
    order = (t["sps-pf"] > t["sps-f"]) & (t["sps-f"] > t["sps-generic"])
    mean = t[["sps-generic", "sps-f", "sps-pf"]].mean()
    holds = bool(order.all())
    text = (
        f"**M1 {'holds' if holds else 'holds only in part' if order.any() else 'does not hold'}** at "
        f"T = {temperature:g}: τ P-F > F > generic in {int(order.sum())}/{len(order)} pairs; mean τ "
        f"generic {mean['sps-generic']:.2f}, F {mean['sps-f']:.2f}, P-F {mean['sps-pf']:.2f}"
    )
    if not holds:
        bad = ", ".join(t.index[~order])
        text += f" (order broken in {bad})"
    return holds, text + "."


def loglinear_fit(frame: pd.DataFrame, x: str = "finetune_tokens", y: str = "tau") -> dict:
    """Least squares ``y = a + b · log10(x)``: slope b, intercept a and R²."""
    lx, yy = np.log10(frame[x].astype(float).to_numpy()), frame[y].astype(float).to_numpy()
    b, a = np.polyfit(lx, yy, 1)
    pred = a + b * lx
    ss = ((yy - yy.mean()) ** 2).sum()
    return {"slope": float(b), "intercept": float(a), "r2": float(1 - ((yy - pred) ** 2).sum() / ss) if ss else 1.0}


def m2_verdict(fits: dict, min_r2: float = 0.8) -> tuple[bool, str]:
    """M2: τ grows roughly linearly in log(tokens): positive slope and R² ≥ ``min_r2`` for every recipe.
    "in part" when τ grows (positive slope) but the log-linear fit is poor for some recipe."""
    ok = {k: f["slope"] > 0 and f["r2"] >= min_r2 for k, f in fits.items()}
    grows = all(f["slope"] > 0 for f in fits.values())
    holds = all(ok.values())
    parts = ", ".join(f"{k}: {f['slope']:+.2f} τ per decade of tokens (R² {f['r2']:.2f})" for k, f in fits.items())
    word = "holds" if holds else "holds only in part" if grows else "does not hold"
    why = (
        ""
        if holds
        else (
            " τ grows with the finetune tokens, but not linearly in log(tokens) for "
            + ", ".join(k for k, v in ok.items() if not v)
            if grows
            else " τ does not grow with the finetune tokens for "
            + ", ".join(k for k, f in fits.items() if f["slope"] <= 0)
        )
    )
    return holds, f"**M2 {word}**: {parts} (criterion: slope > 0 and R² ≥ {min_r2}).{why + '.' if why else ''}"


def ood_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """τ per drafter (rows) and direction ``src-tgt`` (columns), pooled over prompts."""
    g = frame.groupby(["drafter", "pair"]).agg(new=("new_tokens", "sum"), calls=("target_calls", "sum"))
    return (g.new / g.calls).unstack("pair")


def m3_verdict(matrix: pd.DataFrame) -> tuple[bool, str]:
    """M3: for a drafter trained on X → En, directions with the same input language X (X → Z, Z ≠ En) keep
    more τ than directions with the same output language (Y → En, Y ≠ X). Also says how often a drafter is
    the best one on its own pair and how τ splits between English and non-English outputs."""
    inp, outp, wins, own_best = [], [], 0, 0
    for drafter in matrix.index:
        x = drafter.rsplit("-", 1)[-1]
        same_in = [c for c in matrix.columns if c.startswith(f"{x}-") and c != f"{x}-en"]
        same_out = [c for c in matrix.columns if c.endswith("-en") and c != f"{x}-en"]
        a, b = matrix.loc[drafter, same_in].mean(), matrix.loc[drafter, same_out].mean()
        inp.append(a)
        outp.append(b)
        wins += a > b
        own_best += matrix[f"{x}-en"].idxmax() == drafter if f"{x}-en" in matrix else 0
    holds = wins == len(matrix)
    word = "holds" if holds else "holds only in part" if wins else "does not hold"
    to_en = matrix[[c for c in matrix.columns if c.endswith("-en")]].to_numpy().mean()
    other = matrix[[c for c in matrix.columns if not c.endswith("-en")]].to_numpy().mean()
    text = (
        f"**M3 {word}**: input-language match (X→Z) mean τ {statistics.mean(inp):.2f} vs output-language "
        f"match (Y→En) {statistics.mean(outp):.2f}; input > output for {wins}/{len(matrix)} drafters. Each "
        f"drafter is the best one on its own pair X→En for {own_best}/{len(matrix)} pairs; mean τ over all "
        f"drafters is {to_en:.2f} where the output is English and {other:.2f} where it is not"
    )
    if not holds and to_en > other:
        text += (
            ": here the output language decides. Every drafter was finetuned on the target's English "
            "outputs after the same multilingual pretraining, so all of them predict English well and "
            "none predicts the target's (untrained, out-of-distribution) non-English outputs"
        )
    return holds, text + "."


def m4_verdict(sizes: pd.DataFrame, similar: float = 0.2) -> tuple[bool, str]:
    """M4: the large drafter is slower despite similar τ. ``sizes``: rows per drafter ("small" / "large")
    with tau, latency_ratio, expected_speedup, measured_speedup (one temperature)."""
    s, big = sizes.loc["small"], sizes.loc["large"]
    tau_close = abs(big.tau / s.tau - 1) <= similar
    slower = big.expected_speedup < s.expected_speedup and big.measured_speedup < s.measured_speedup
    holds = bool(tau_close and slower)
    word = "holds" if holds else "holds only in part" if slower or tau_close else "does not hold"
    return holds, (
        f"**M4 {word}**: τ large {big.tau:.2f} vs small {s.tau:.2f} ({'within' if tau_close else 'not within'} "
        f"±{similar:.0%}); T_q/T_p {big.latency_ratio:.2f} vs {s.latency_ratio:.2f}; expected speedup "
        f"{big.expected_speedup:.2f} vs {s.expected_speedup:.2f}; measured {big.measured_speedup:.2f} vs "
        f"{s.measured_speedup:.2f}."
    )


def paper_claims() -> pd.DataFrame:
    """The paper's prose numbers (``data/paper/multilingual_claims.csv``), key → value."""
    return paper_numbers("multilingual_claims").set_index("key")


def paper_value(key: str) -> float:
    value = paper_claims().loc[key, "value"]
    try:
        return float(value)
    except ValueError:
        return math.nan


def quality_verdict(quality: pd.DataFrame, alpha: float = 0.05) -> tuple[bool, str]:
    """Lossless at T = 0 (every SD output identical to plain decoding) and no detectable chrF difference at
    T > 0 (paired bootstrap p ≥ ``alpha`` for every method)."""
    greedy = quality[(quality.temperature == 0) & (quality.method != "ar")]
    sampled = quality[(quality.temperature != 0) & (quality.method != "ar")]
    identical = bool(greedy.identical_to_ar.astype(bool).all()) if len(greedy) else True
    equal = bool((sampled.vs_ar_p_value >= alpha).all()) if len(sampled) else True
    text = (
        f"**Quality {'holds' if identical and equal else 'does not hold'}**: at T = 0 "
        f"{'every' if identical else 'NOT every'} SD method's output is token-identical to plain decoding "
        f"(chrF {greedy.chrf.iloc[0]:.1f} for all)"
        if len(greedy)
        else "**Quality**: no T = 0 runs"
    )
    if len(sampled):
        worst = sampled.loc[sampled.vs_ar_p_value.idxmin()]
        text += (
            f"; at T = 1, paired bootstrap over (prompt, seed) of sentence chrF vs plain decoding: smallest "
            f"p = {worst.vs_ar_p_value:.2f} ({worst.method}, mean difference {worst.vs_ar_mean_diff:+.1f}), "
            + (
                "no method differs at the 5 % level (statistically equal)."
                if equal
                else f"a difference at the {alpha:.0%} level."
            )
        )
    return identical and equal, text


def generalization_verdict(table: pd.DataFrame, temperature: float = 0.0) -> tuple[bool, str]:
    """Table 7: on the held-out second source, the P-F drafter beats SpS with the generic drafter (τ and
    expected speedup) in every pair."""
    t = table[table.temperature == temperature].pivot_table(
        index="pair", columns="method", values=["tau", "expected_speedup", "measured_speedup"]
    )
    wins = (t["tau"]["sps-pf"] > t["tau"]["sps-generic"]) & (
        t["expected_speedup"]["sps-pf"] > t["expected_speedup"]["sps-generic"]
    )
    holds = bool(wins.all())
    word = "holds" if holds else "holds only in part" if wins.any() else "does not hold"
    return holds, (
        f"**Table 7 finding {word}** on the held-out source: P-F beats generic SpS in τ and expected "
        f"speedup in {int(wins.sum())}/{len(wins)} pairs (mean τ {t['tau']['sps-pf'].mean():.2f} vs "
        f"{t['tau']['sps-generic'].mean():.2f}; expected speedup {t['expected_speedup']['sps-pf'].mean():.2f} "
        f"vs {t['expected_speedup']['sps-generic'].mean():.2f}; measured {t['measured_speedup']['sps-pf'].mean():.2f} "
        f"vs {t['measured_speedup']['sps-generic'].mean():.2f})."
    )
