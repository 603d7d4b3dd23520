"""Multilingual tables: Table 1's layout, the per-method table (τ, α, expected and measured speedup, chrF), output
quality against plain decoding, and the scores they use (chrF, a paired bootstrap).

The rows store each output's text, not its reference: ``references`` (``{prompt id: reference}``, from the prompt
sets a notebook ran) is passed to the tables that score corpus chrF.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from specdec import bench, validate
from specdec.results import paper_numbers
from specdec.validate import reads_frame

METHODS = ("ar", "sps-generic", "sps-f", "sps-pf", "pld")
METHOD_LABELS = {
    "ar": "autoregressive",
    "sps-generic": "SpS (generic drafter)",
    "sps-f": "SpS + F drafter",
    "sps-pf": "SpS + P-F drafter (ours)",
    "pld": "PLD (prompt lookup)",
}
NOT_BUILT = {
    "Medusa": "not built: needs extra decoding heads trained on the target and tree attention in the engine",
    "EAGLE": "not built: needs a feature-level autoregressive head on the target's hidden states and tree drafts",
    "Lookahead": "not built: needs Jacobi-iteration n-gram pools (a different decoding loop)",
}


def references(prompts: dict) -> dict[str, str]:
    """``{prompt id: reference}`` of prompt sets ``{pair: rows}`` (rows store the output text, not the reference)."""
    return {r["id"]: r["reference"] for rows in prompts.values() for r in rows}


def corpus_chrf(hypotheses: list[str], references: list[str]) -> float:
    import sacrebleu

    return float(sacrebleu.corpus_chrf(list(hypotheses), [[r.strip() for r in references]]).score)


def paired_bootstrap(a, b, n_boot: int = 2000, seed: int = 0) -> dict:
    """Paired bootstrap of mean(a − b) over items: mean, 95 % interval and a two-sided p-value
    (share of resampled means on the other side of 0, doubled)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or len(a) == 0:
        raise ValueError(
            f"paired_bootstrap needs two equally long, non-empty 1-D samples (item i of a paired with item i of "
            f"b); got shapes {list(a.shape)} and {list(b.shape)}"
        )
    n_boot = validate.integer("n_boot", n_boot, minimum=1)
    d = a - b
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    p = 2 * min((means <= 0).mean(), (means >= 0).mean())
    return {
        "mean_diff": float(d.mean()),
        "ci_low": float(np.quantile(means, 0.025)),
        "ci_high": float(np.quantile(means, 0.975)),
        "p_value": float(min(1.0, p)),
        "n": len(d),
    }


@reads_frame
def method_table(frame: pd.DataFrame, gamma: int, ratios: dict, references: dict) -> pd.DataFrame:
    """One row per (pair, temperature, method): τ (pooled: Σ new tokens / Σ target calls), α, expected
    speedup from τ and ``T_q/T_p``, measured speedup (median over prompts × seeds of the tokens/s ratio to
    plain decoding in the same group), chrF (corpus, over all prompts and seeds, against ``references``) and runs."""
    group = ["pair", "source", "temperature", "seed", "prompt"]
    ar = frame[frame.method == "ar"].set_index(group)
    out = []
    for (pair, temperature, method), g in frame.groupby(["pair", "temperature", "method"], sort=False):
        tau = g.new_tokens.sum() / g.target_calls.sum()
        spec = g.drafter.fillna("").iloc[0] if method != "ar" else ""
        ratio = 0.0 if method == "ar" else ratios.get(spec or method, float("nan"))
        base = ar.reindex(g.set_index(group).index)
        measured = g.tokens_per_second.to_numpy() / base.tokens_per_second.to_numpy()
        drafted = g.drafted.sum()
        out.append(
            {
                "pair": pair,
                "temperature": temperature,
                "method": method,
                "tau": tau,
                "acceptance": g.accepted.sum() / drafted if drafted else float("nan"),
                "latency_ratio": ratio,
                "expected_speedup": 1.0 if method == "ar" else bench.expected_speedup(tau, gamma, ratio),
                "measured_speedup": float(np.nanmedian(measured)),
                "chrf": corpus_chrf(g.text.fillna("").tolist(), [references[p] for p in g.prompt]),
                "runs": len(g),
            }
        )
    return pd.DataFrame(out)


@reads_frame
def table1(table: pd.DataFrame, value: str = "measured_speedup") -> pd.DataFrame:
    """Table 1 layout: rows method (+ the methods not built), columns (T, pair) and their mean."""
    wide = table.pivot_table(index="method", columns=["temperature", "pair"], values=value)
    for t in sorted(table.temperature.unique()):
        wide[(t, "mean")] = wide[t].mean(axis=1)
    wide = wide.reindex(columns=sorted(wide.columns, key=lambda c: (c[0], c[1] == "mean", c[1])))
    wide = wide.reindex([m for m in METHODS if m in wide.index])
    wide.index = [METHOD_LABELS[m] for m in wide.index]
    for name in NOT_BUILT:
        wide.loc[name] = np.nan
    return wide


def not_built_note() -> str:
    return "; ".join(f"{k}: {v}" for k, v in NOT_BUILT.items())


@reads_frame
def quality_table(frame: pd.DataFrame, references: dict) -> pd.DataFrame:
    """Output quality per temperature and method: corpus chrF; at T = 0 whether every output equals plain
    decoding's; at T > 0 a paired bootstrap over (prompt, seed) of sentence chrF against plain decoding. ``references``:
    ``{prompt id: reference}`` of the corpus chrF."""
    group = ["pair", "source", "temperature", "seed", "prompt"]
    rows = []
    for t, ft in frame.groupby("temperature"):
        ar = ft[ft.method == "ar"].set_index(group)
        for method in [m for m in METHODS if m in set(ft.method)]:
            g = ft[ft.method == method].set_index(group)
            row = {
                "temperature": t,
                "method": method,
                "chrf": corpus_chrf(g.text.fillna("").tolist(), [references[p] for p in g.reset_index().prompt]),
                "mean_sentence_chrf": float(g.chrf.mean()),
                "runs": len(g),
            }
            if method != "ar":
                if t == 0:
                    row["identical_to_ar"] = bool(
                        (g.text.fillna("") == ar.reindex(g.index).text.fillna("")).all()
                        and g.same_as_ar.astype(str).eq("True").all()
                    )
                else:
                    test = paired_bootstrap(g.chrf.to_numpy(), ar.reindex(g.index).chrf.to_numpy())
                    row.update({f"vs_ar_{k}": v for k, v in test.items() if k != "n"})
            rows.append(row)
    return pd.DataFrame(rows)


@reads_frame
def select(frame: pd.DataFrame, prompts: dict, gamma: int, temperatures, seeds, max_new_tokens: int) -> pd.DataFrame:
    """The rows of this run's configuration (a results file may hold other runs' rows too)."""
    ids = {r["id"] for rows in prompts.values() for r in rows}
    keep = (
        frame.pair.isin(list(prompts))
        & frame.prompt.isin(ids)
        & (frame.gamma == gamma)
        & (frame.max_new_tokens == max_new_tokens)
        & frame.temperature.isin(list(temperatures))
        & ((frame.temperature == 0) | frame.seed.isin(list(seeds)))
    )
    return frame[keep].reset_index(drop=True)


def show(frame: pd.DataFrame, digits: int = 2) -> str:
    """A table as text, numbers rounded, missing cells (methods not built) as "—"."""
    rounded = frame.round(digits).astype(object)
    return rounded.where(frame.notna(), "—").to_string()


def paper_claims() -> pd.DataFrame:
    """The paper's prose numbers (``data/paper/multilingual_claims.csv``), key → value."""
    return paper_numbers("multilingual_claims").set_index("key")


def paper_value(key: str) -> float:
    claims = paper_claims()
    validate.choice("paper claim", key, list(claims.index), hint="the keys of data/paper/multilingual_claims.csv")
    value = claims.loc[key, "value"]
    try:
        return float(value)
    except ValueError:
        return math.nan


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "METHODS",
    "METHOD_LABELS",
    "NOT_BUILT",
    "method_table",
    "not_built_note",
    "paired_bootstrap",
    "paper_value",
    "quality_table",
    "select",
    "show",
    "table1",
]
