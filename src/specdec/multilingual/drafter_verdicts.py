"""The multilingual claims about the P-F drafter against its baselines, as ``Verdict``s with 95% intervals over
prompts (``pooled``): notebooks 30 and 34.

- ``m1_verdicts``: M1, the P-F drafter is faster than *every* baseline (generic SpS, F, PLD) — per baseline and
  jointly; ``m1_tau_verdict``: τ P-F > F > generic;
- ``quality_verdicts``: no chrF loss against plain decoding at T = 1 (paired bootstrap), identity at T = 0;
- ``table3_verdict``: Table 3, P-F beats pretraining only and finetuning only (Zh→En);
- ``table7_verdicts``: Table 7, P-F beats the generic (pretrained) drafter on the held-out source's prompts the
  target translates (``experiments.translatable_set``).

``value`` picks the speed: ``tokens_per_second`` (measured) or ``priced_speed`` (``findings.with_priced_speed``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from specdec import validate
from specdec.multilingual.pooled import RUN, geo_verdict, log_speed, pooled_tau, tau_arrays
from specdec.multilingual.tables import paper_value
from specdec.validate import reads_frame
from specdec.verdict import HOLDS, INCONCLUSIVE, MEASURED, Verdict, bootstrap_rows, decide

BASELINES = {"sps-generic": "generic SpS", "sps-f": "F", "pld": "PLD"}


# ------------------------------------------------------------------------------------------------ M1
def _over_plain(f: pd.DataFrame, method: str, value: str) -> str:
    """`` P-F over plain decoding: 1.90x.`` (geometric mean over prompts of the per-run ratio to ``ar``), in the
    paper's unit, where the frame has plain decoding; else empty."""
    if "ar" not in set(f.method) or method not in set(f.method):
        return ""
    return f" Over plain decoding ({method} / ar): {math.exp(log_speed(f, method, 'ar', value).mean()):.2f}x."


@reads_frame
def m1_verdicts(frame: pd.DataFrame, temperature: float = 0.0, value: str = MEASURED) -> list[Verdict]:
    """M1 at ``temperature``: SpS with the P-F drafter is faster than every baseline. One verdict per baseline
    (geometric mean over prompts of the per-prompt speed ratio P-F / baseline, > 1.0) and a joint one,
    "M1 T=…", whose estimate is the smallest of those ratios (same resample for all): it holds only if P-F
    beats every baseline, PLD included. ``frame``: ``ml_main`` rows; ``value``: ``tokens_per_second`` (measured)
    or ``priced_speed`` (``with_priced_speed``: counts in the paper's regime)."""
    f = frame[frame.temperature == temperature]
    base = [b for b in BASELINES if b in set(f.method)]
    logs = pd.concat({b: log_speed(f, "sps-pf", b, value) for b in base}, axis=1).dropna()
    t = f"T={temperature:g}"
    unit = "measured tokens/s" if value == MEASURED else "speed priced in the paper's regime"
    paper_pf = "P-F 1.89x (T=0) / 1.71x (T=1) over plain decoding; no ratio to each baseline printed"
    out = []
    for b in base:
        out.append(
            geo_verdict(
                f"M1 vs {BASELINES[b]} {t}",
                f"SpS with the P-F drafter is faster than {BASELINES[b]} (speed ratio > 1.0, {t})",
                paper_pf,
                logs[b].to_numpy(),
                f"Geometric mean over prompts (seeds averaged in log) of the {unit} ratio P-F / {BASELINES[b]}."
                + _over_plain(f, "sps-pf", value)
                + _over_plain(f, b, value).replace("Over plain", "Baseline over plain"),
            )
        )
    est, low, high = bootstrap_rows(logs.to_numpy(), lambda v: float(np.exp(v.mean(0).min())))
    per = np.exp(logs.mean())
    losers = [BASELINES[b] for b, v in zip(base, out) if v.status != HOLDS]
    out.insert(
        0,
        Verdict(
            f"M1 {t}",
            f"SpS with the P-F drafter is faster than every baseline ({', '.join(BASELINES[b] for b in base)}), {t}",
            est,
            low,
            high,
            len(logs),
            decide(low, high, 1.0),
            "P-F outperforms all competitors (P-F 1.89x at T=0, 1.71x at T=1 over plain decoding)",
            f"Estimate: the smallest geometric-mean {unit} ratio P-F / baseline ("
            + ", ".join(f"{BASELINES[b]} {per[b]:.2f}x" for b in base)
            + ")."
            + _over_plain(f, "sps-pf", value)
            + (f" Not shown to hold against: {', '.join(losers)}." if losers else ""),
        ),
    )
    return out


def m1_rules(temperature: float) -> dict:
    """``verdict.over_seeds``'s rules for ``m1_verdicts``: each is a speed ratio, decided at 1.0."""
    t = f"T={validate.number('temperature', temperature, minimum=0.0):g}"
    return {f"M1 {t}": (1.0, True), **{f"M1 vs {name} {t}": (1.0, True) for name in BASELINES.values()}}


DRAFTERS = ("sps-generic", "sps-f", "sps-pf")  # the three SpS drafters of a pair: generic (P), F, P-F


def _smallest_gap(frame: pd.DataFrame, gaps) -> tuple[float, float, float, int, dict]:
    """The smallest of the τ gaps ``τ[a] − τ[b]`` for ``(a, b)`` in ``gaps`` (methods of ``DRAFTERS``), τ pooled over
    the resampled prompts: (estimate, low, high, prompts, full-sample pooled τ by method)."""
    values, cols = tau_arrays(frame[frame.method.isin(list(DRAFTERS))], "method")
    i = {m: cols.index(m) for m in DRAFTERS}

    def smallest(v):
        tau = pooled_tau(v)
        return float(min(tau[i[a]] - tau[i[b]] for a, b in gaps))

    est, low, high = bootstrap_rows(values, smallest)
    tau = pooled_tau(values)
    return est, low, high, len(values), {m: tau[i[m]] for m in DRAFTERS}


M1_TAU_QUOTE = (
    "§2.3 / Fig. 4: \"Our 'P-F' approach outperforms models that are only finetuned (F), and even surpasses the"
    ' speedup rates by Yang et al." (the generic drafter)'
)


@reads_frame
def m1_tau_verdict(frame: pd.DataFrame, temperature: float = 0.0) -> Verdict:
    """M1-τ, the two legs the paper states (§2.3, Fig. 4): τ of P-F exceeds that of F and of the generic drafter
    (the paper orders neither F against the generic drafter). Estimate: min(τ_PF − τ_F, τ_PF − τ_generic), τ pooled
    over the resampled prompts; > 0. τ_F − τ_generic is in ``detail``, not tested."""
    f = frame[frame.temperature == temperature]
    est, low, high, n, tau = _smallest_gap(f, [("sps-pf", "sps-f"), ("sps-pf", "sps-generic")])
    return Verdict(
        f"M1-τ T={temperature:g}",
        f"τ: P-F > F and P-F > generic (T = {temperature:g}; min of the two gaps > 0)",
        est,
        low,
        high,
        n,
        decide(low, high, 0.0),
        M1_TAU_QUOTE + "; De→En τ P-F 3.03 (T=0) / 2.50 (T=1)",
        f"Pooled τ generic {tau['sps-generic']:.2f}, F {tau['sps-f']:.2f}, P-F {tau['sps-pf']:.2f}: P-F − F"
        f" {tau['sps-pf'] - tau['sps-f']:+.2f}, P-F − generic {tau['sps-pf'] - tau['sps-generic']:+.2f}; estimate ="
        f" the smaller of the two. F − generic {tau['sps-f'] - tau['sps-generic']:+.2f} is shown, not tested: the"
        " paper states no order of F and the generic drafter.",
    )


# ------------------------------------------------------------------------------------------------ quality
@reads_frame
def quality_verdicts(frame: pd.DataFrame, margin: float = 2.0) -> list[Verdict]:
    """Output quality. T = 0 ("Quality T=0"): the share of SD runs token-identical to plain decoding (must be
    1; deterministic, the interval is the point). T = 1, per SD method: the mean paired difference of sentence
    chrF to plain decoding (seeds averaged per prompt, bootstrap over prompts) is above −``margin`` chrF
    points (non-inferiority: sampling the target's distribution must not cost quality)."""
    out = []
    greedy = frame[(frame.temperature == 0) & (frame.method != "ar")]
    if len(greedy):
        share = float(greedy.same_as_ar.astype(str).eq("True").mean())
        out.append(
            Verdict(
                "Quality T=0",
                "every SD output is token-identical to plain decoding at T = 0 (share of runs = 1)",
                share,
                share,
                share,
                int(greedy.prompt.nunique()),
                decide(share, share, 1 - 1e-12),
                "lossless",
                f"{len(greedy)} SD runs over {greedy.prompt.nunique()} prompts.",
            )
        )
    sampled = frame[frame.temperature != 0]
    chrf = sampled.pivot_table(index=RUN, columns="method", values="chrf")
    for m in [m for m in ("sps-generic", "sps-f", "sps-pf", "pld") if m in chrf]:
        d = (chrf[m] - chrf["ar"]).dropna().groupby(level=["pair", "prompt"]).mean().to_numpy()
        est, low, high = bootstrap_rows(d, lambda v: float(np.mean(v)))
        out.append(
            Verdict(
                f"Quality {m} T=1",
                f"{m} loses no chrF against plain decoding at T = 1 (mean difference > −{margin:g} points)",
                est,
                low,
                high,
                len(d),
                decide(low, high, -margin),
                "SD is lossless: same output distribution",
                "Paired by (prompt, seed); sentence chrF difference, seeds averaged per prompt.",
            )
        )
    return out


# ------------------------------------------------------------------------------------------------ Table 3
@reads_frame
def table3_verdict(frame: pd.DataFrame, pair: str = "zh-en", temperature: float = 0.0) -> Verdict:
    """Table 3 (training stages on Zh→En): pretrain-and-finetune beats each stage alone — pretrain only (the generic
    drafter, the SpS baseline) and finetune only (F). Estimate: min(τ_PF − τ_P, τ_PF − τ_F), τ pooled over the
    resampled prompts of ``pair``; > 0. ``frame``: ``ml_main`` rows."""
    f = frame[(frame.pair == pair) & (frame.temperature == temperature)]
    stages = {"sps-generic": "P", "sps-f": "F", "sps-pf": "P-F"}
    name = f"Table 3 {pair} T={temperature:g}"
    claim = f"{pair}: the P-F drafter has a higher τ than pretraining only (P) and finetuning only (F)"
    paper = "speedup grows as the training stages continue (Table 3, WMT19 Zh→En)"
    missing = [m for m in stages if m not in set(f.method)]
    if missing:  # a run of other pairs (notebook 30's ``pairs``) or temperatures: nothing to compare
        detail = f"no rows of {missing} on {pair} at T={temperature:g} in this run (its pairs or temperatures)"
        return Verdict(name, claim, math.nan, math.nan, math.nan, 0, INCONCLUSIVE, paper, detail)
    est, low, high, n, tau = _smallest_gap(f, [("sps-pf", "sps-generic"), ("sps-pf", "sps-f")])
    return Verdict(
        name,
        claim,
        est,
        low,
        high,
        n,
        decide(low, high, 0.0),
        paper,
        ", ".join(f"τ {label} {tau[m]:.2f}" for m, label in stages.items())
        + "; estimate = the smaller of P-F's two gaps.",
    )


# ------------------------------------------------------------------------------------------------ Table 7
@reads_frame
def table7_verdicts(
    frame: pd.DataFrame, temperature: float = 0.0, translatable: pd.DataFrame | None = None, value: str = MEASURED
) -> list[Verdict]:
    """Table 7 on the held-out source: SpS with the P-F drafter beats SpS with the generic pretrained drafter
    (the paper's baseline, SpS of Yang et al.): speed (geometric-mean per-prompt tokens/s ratio > 1.0) and τ
    (pooled τ_PF − τ_generic > 0). ``frame``: ``ml_generalization`` rows; ``translatable``:
    ``experiments.translatable_set``'s frame: only its translatable prompts count (the paper's set is one its target
    translates)."""
    f = frame[frame.temperature == temperature]
    every = f
    if translatable is not None:
        keep = translatable[translatable.translatable.astype(bool)]
        f = f.merge(keep[["pair", "prompt"]].astype({"prompt": str}), on=["pair", "prompt"])
        if f.empty:  # e.g. random-weight stand-ins: nothing to test the claim on
            nan, why = (
                float("nan"),
                "No prompt of the set is one the target translates: the claim is not testable here.",
            )
            return [
                Verdict(name, "on a held-out dataset the target translates, P-F beats the generic drafter", nan, nan,
                        nan, 0, INCONCLUSIVE, "2.51x vs 1.23x (IWSLT14 De-En)", why)
                for name in ("Table 7", "Table 7 all prompts", "Table 7-τ")
            ]  # fmt: skip
    rule = (
        "Filter (experiments.translatable_set): a prompt counts when plain decoding's chrF to its own reference"
        " exceeds the 95th percentile of its pair's chrF to other prompts' references (the target translates it)"
    )
    filtered = f"{f.prompt.nunique()} of {every.prompt.nunique()} prompts" if translatable is not None else "all"
    paper7 = "2.51x vs 1.23x over plain decoding (IWSLT14 De-En): ratio " + (
        f"{paper_value('speedup_ours_IWSLT14_DeEn') / paper_value('speedup_SpS_Yang_IWSLT14_DeEn'):.2f}"
    )

    def speed_on(name: str, rows: pd.DataFrame, where: str, detail: str) -> Verdict:
        """The speed half of Table 7 on ``rows``: P-F over the generic drafter, geometric mean of per-prompt ratios."""
        return geo_verdict(
            name,
            f"{where}, P-F is faster than SpS with the generic drafter (speed ratio > 1.0)",
            paper7,
            log_speed(rows, "sps-pf", "sps-generic", value).to_numpy(),
            detail,
        )

    speed_all = speed_on(
        "Table 7 all prompts",
        every,
        "on every prompt of the held-out dataset (no filter)",
        f"Geometric mean over all {every.prompt.nunique()} prompts of the per-prompt speed ratio P-F / generic;"
        " the row 'Table 7' counts only the prompts the target translates.",
    )
    speed = speed_on(
        "Table 7",
        f,
        "on a held-out dataset the target translates",
        f"Geometric mean over prompts of the per-prompt speed ratio P-F / generic on {filtered}. {rule}; the row"
        " 'Table 7 all prompts' has every prompt.",
    )
    values, cols = tau_arrays(f[f.method.isin(["sps-pf", "sps-generic"])], "method")
    ip, ig = cols.index("sps-pf"), cols.index("sps-generic")
    est, low, high = bootstrap_rows(values, lambda v: float(pooled_tau(v)[ip] - pooled_tau(v)[ig]))
    tau = pooled_tau(values)
    return [
        speed,
        speed_all,
        Verdict(
            "Table 7-τ",
            "on a held-out dataset the target translates, P-F has a higher τ than the generic drafter"
            " (τ_PF − τ_generic > 0)",
            est,
            low,
            high,
            len(values),
            decide(low, high, 0.0),
            "2.51x vs 1.23x speedup (IWSLT14 De-En; no τ printed)",
            f"Pooled τ P-F {tau[ip]:.2f}, generic {tau[ig]:.2f}.",
        ),
    ]
