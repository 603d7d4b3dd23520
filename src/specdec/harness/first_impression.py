"""Notebook 00's first impression: the quickstart decode of every profile whose rows git holds, side by side.

A newcomer's first output is one decode on the tiny pair, whose draft costs about half a target call on a CPU, so its
walltime says little about speculative decoding. ``beside`` puts the committed quickstart row of each profile in
``PROFILES`` (the same prompt, pair and sampling) in one table, and ``real_speed_text`` the real pair's speed as
``harness.real_speed`` measured it (interleaved rounds, medians, the machine's load named). Both read the committed
tables only, so the cell prints the same under every profile and under nbval.
"""

from __future__ import annotations

import pandas as pd

from specdec import results, tabledb
from specdec.zoo.models import load_profile, pair_weights

# the profiles whose result rows are committed (.gitignore leaves out results/paper/: rows of another machine)
PROFILES = ("tiny", "real")


def beside(prompt_id: str = "prose-003", pair: str = "default", temperature: float = 0.0, root=None) -> pd.DataFrame:
    """One row per profile of ``PROFILES`` with a committed quickstart row of ``prompt_id`` on ``pair`` at
    ``temperature`` and the pair's current weights (its first measurement: a rerun keeps it): the models, γ, new
    tokens, τ, α, whether the text equals plain greedy decoding, and the walltime speedup of that one decode."""
    root = root or results.COMMITTED
    rows = []
    for name in PROFILES:
        path = root / name / "quickstart.csv"
        if not path.exists() or pair not in load_profile(name)["pairs"]:
            continue
        frame = pd.read_csv(path, dtype=results.DIGEST_DTYPES)
        frame = frame[
            (frame.pair == pair)
            & (frame.prompt_id == prompt_id)
            & (frame.temperature == temperature)
            & (frame.weights == pair_weights(name, pair))
        ]
        if frame.empty:
            continue
        r, models = frame.iloc[0], load_profile(name)["pairs"][pair]
        rows.append(
            {
                "profile": name,
                "target / draft": f"{models['target']} / {models['draft']}",
                "γ": int(r.gamma),
                "new tokens": int(r.new_tokens),
                "τ": round(float(r.block_efficiency), 3),
                "α": round(float(r.acceptance_rate), 3),
                "same text": r.lossless,
                "walltime speedup": round(float(r.autoregressive_seconds) / float(r.total_seconds), 2),
                "device": r.device,
            }
        )
    return pd.DataFrame(rows)


def real_speed_text(root=None) -> str:
    """The real pair's last measured run (``real_speed.report``: SD / plain, τ, c, the engine against transformers'
    assisted generation, batched SD) with the device and load it ran under, from the committed rows."""
    from specdec.harness import real_speed

    path = (root or results.COMMITTED) / "real" / f"{real_speed.TABLE}.csv"
    if not path.exists():
        return "the real pair's speed is not measured yet (python -m specdec.harness.real_speed)"
    frame = pd.read_csv(path, dtype=results.DIGEST_DTYPES)
    run = frame.run.max()
    return real_speed.report(frame, *real_speed.run_note(tabledb.provenance_path(path), run))
