"""CoS's generated doc block (``scripts/update_docs_tables.py`` splices it into ``docs/papers/cos.md``): C1 and C4
decided over the CoS zoo's training seeds (``seeds_block``), read from the committed results as the scoreboard
reads them."""

from __future__ import annotations

import pathlib

import pandas as pd

from specdec import results
from specdec.cos import findings, seeds
from specdec.markdown import md_table, verdict_seeds_block


def seeds_block(root: pathlib.Path | None = None) -> str:
    """C1 and C4 per training seed of the CoS zoo and pooled, as ``findings.findings_from_results`` reads them, and
    each seed's models: training device and seconds, held-out loss per kind (``seeds.TRAINING_SUMMARY``)."""
    lines = verdict_seeds_block(findings.findings_from_results("tiny", root=root or results.COMMITTED))
    trained = pd.read_csv(seeds.TRAINING_SUMMARY)
    kinds = [c for c in trained.columns if c.startswith("heldout_")]
    rows = [
        {
            "model": f"`{r.model}`",
            "training seed": r.train_seed,
            "model seed": r.seed,
            "device": r.device,
            "seconds": f"{r.seconds:.0f}",
            **{k.removeprefix("heldout_"): f"{getattr(r, k):.3f}" for k in kinds},
        }
        for r in trained.itertuples()
    ]
    return (
        lines
        + "\n\nEach seed's models (the training device and seconds from their training logs; the held-out loss per"
        " kind, in nats, measured on this CPU for every seed on today's held-out split):\n\n"
        + md_table(rows, list(rows[0]), align=3)
    )


# the blocks of the study's page (``Study.doc_blocks``): block name -> its text from the committed results
BLOCKS = {"cos-seeds": seeds_block}
