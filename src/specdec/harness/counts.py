"""Per-model counts of a decode: calls, tokens fed and seconds, as the harness stores them in every row.

Calls and tokens fed do not depend on the machine: ``specdec.costs`` prices them at a regime's per-call costs
(``priced_speedup``); seconds are this machine's measurement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

COUNT_NAMES = ("calls", "tokens_fed", "seconds")


def model_counts(result) -> dict[str, dict[str, float]]:
    """Per model of one decode: ``{model: {"calls", "tokens_fed", "seconds"}}``.

    Engine results: ``target`` (decode calls, the prefill excluded; tokens fed, the prompt included; the
    verification time) and ``draft`` (its forward calls, tokens fed and drafting time; ``None`` without a drafter, so
    every row of a table has the same columns). A result with per-model lists (CoS: ``calls[i]``, ``tokens_fed[i]``):
    ``model_<i>``, seconds unknown (``nan``): the models' calls interleave."""
    if isinstance(getattr(result, "calls", None), list):
        return {
            f"model_{i}": dict(calls=c, tokens_fed=f, seconds=math.nan)
            for i, (c, f) in enumerate(zip(result.calls, result.tokens_fed))
        }
    out = {"target": dict(calls=result.target_calls, tokens_fed=result.target_tokens_fed, seconds=result.verify_time)}
    drafted = dict(calls=result.draft_calls, tokens_fed=result.draft_tokens_fed, seconds=result.draft_time)
    out["draft"] = drafted if result.gamma else dict.fromkeys(drafted)  # empty cells: plain decoding has no draft
    return out


def counts(frame, by: Sequence[str] = ("method",)):
    """Per group of ``by`` and model: summed ``calls``, ``tokens_fed`` and ``seconds`` (the columns ``default_row``
    writes, ``calls_<model>`` ...; CoS rows' ``calls_<i>`` read as model ``<i>``), one row per (group, model)."""
    import pandas as pd

    models = sorted({c[len("calls_") :] for c in frame.columns if c.startswith("calls_")})
    out = []
    for key, group in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        for model in models:
            row = dict(zip(by, key), model=model)
            for name in COUNT_NAMES:
                col = f"{name}_{model}"
                row[name] = pd.to_numeric(group[col], errors="coerce").sum(min_count=1) if col in group else math.nan
            out.append(row)
    return pd.DataFrame(out)


def priced_speedup(frame, regime, *, baseline: str = "plain", by: Sequence[str] = ("method",), method_column="method"):
    """Per group of ``by``: the speedup over ``baseline`` that ``specdec.costs`` prices from the rows' counts per
    model (``counts``) at ``regime``'s per-call costs. A target call of a row that drafted verifies a block and is
    charged ``regime.verify``; the baseline's target calls are single steps. The rows of a group and the baseline's
    should cover the same requests (the same tokens, when lossless). Returns ``by`` + ``priced_speedup``."""
    import pandas as pd

    from specdec import costs

    def priced(rows) -> float:
        calls = counts(rows.assign(_all=0), by=["_all"]).set_index("model").calls.fillna(0)
        drafted = _numbers(rows, "calls_draft") > 0  # a row that drafted: its target calls verify blocks
        verify = {costs.TARGET: _numbers(rows, "calls_target")[drafted].sum()}
        return costs.priced_time({m: n for m, n in calls.items() if n}, regime, verify)

    base = priced(frame[frame[method_column] == baseline])
    out = []
    for key, group in frame.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        out.append({**dict(zip(by, key)), "priced_speedup": base / priced(group)})
    return pd.DataFrame(out)


def _numbers(rows, column: str):
    """``rows[column]`` as numbers (missing and empty cells 0; a missing column all 0)."""
    import pandas as pd

    if column not in rows:
        return pd.Series(0.0, index=rows.index)
    return pd.to_numeric(rows[column], errors="coerce").fillna(0)
