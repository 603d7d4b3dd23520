"""Write the paper pages' tables that come from committed results into their marked blocks
(``generated_blocks.splice``):

- ``docs/papers/multilingual.md``, blocks ``m2-seeds`` (M2 and M2-linear per training seed and pooled, Fig. 4's
  grid), ``ml-pair-seeds`` (M1 in the paper regime, M1-τ and M3 per training seed and pooled) and
  ``m2-seed-training`` (each seed's drafters' minutes): ``specdec.multilingual.docs``;
- ``docs/papers/engine.md``, block ``engine-seeds``: notebook 01's findings per training seed of the drafts and pooled
  (``tau_vs_gamma``, ``engine_speed_rows`` and ``engine_seeds``), and the seeds' training rows;
- ``docs/papers/cos.md``, block ``cos-seeds``: C1 and C4 per training seed of the CoS zoo and pooled
  (``specdec.cos.docs``); ``docs/papers/tabed.md``, block ``tabed-seeds``: TABED's findings per training seed
  (``specdec.tabed.docs``);
- ``docs/papers/aasd.md``, blocks ``aasd-seeds`` (A1-A5 per training seed and pooled, each baseline seed's
  training), ``a2-measured`` (A2 on both ablation targets) and ``a5-measured`` (the A5 proxy condition):
  ``specdec.aasd.docs``;
- the *Proxy conditions* blocks of ``docs/papers/multilingual.md`` (``m3-measured``, ``m-pf-measured``:
  ``specdec.multilingual.docs``) and ``docs/papers/tabed.md`` (``t1b-measured``, ``t2-measured``, ``t5-measured``),
  and the TABED proxy's second-turn losses (``tabed-second-turn-images``): ``proxy_condition_blocks``;
- ``data/DATA_CARD.md``, block ``card-real-draft``, and ``docs/reference/profiles.md``, block ``real-speed``: the
  real profile's draft and measured speed (``real_blocks``);
- ``data/DATA_CARD.md``, blocks ``card-*`` (and ``tabed-second-turn-images``): the zoos' sizes, budgets, times and
  held-out losses from the committed model files, and the proxy conditions table: ``data_card_blocks``.

``make reproduce`` runs this after the notebooks; ``tests/test_docs.py`` fails when a block differs from what the
committed results give. Usage::

    python scripts/update_docs_tables.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_card_blocks import (  # noqa: E402
    CARD,
    aasd_block,
    corpus_block,
    cos_block,
    cos_prose_block,
    cos_training_block,
    foundation_block,
    ml_passes_block,
    multilingual_block,
    proxy_conditions_block,
    tabed_block,
)
from generated_blocks import ROOT, md_table, splice  # noqa: E402
from proxy_condition_blocks import (  # noqa: E402
    NoHistory,
    second_turn_images_block,
    t1b_block,
    t2_block,
    t5_block,
)
from real_blocks import agreement_block, real_draft_block, real_speed_block  # noqa: E402

from specdec import results  # noqa: E402
from specdec.markdown import verdict_seeds_block  # noqa: E402
from specdec.papers import STUDIES  # noqa: E402

PAPERS = ROOT / "docs" / "papers"


def engine_seeds_block(root: Path | None = None) -> str:
    """Notebook 01's findings per training seed of the drafts and pooled (``engine_findings.findings_from_results``),
    and what each seed's drafts took to train and reached (``data/zoo_training_seeds.csv``)."""
    import pandas as pd

    from specdec import engine_findings

    found = engine_findings.findings_from_results("tiny", root=root or results.COMMITTED, projection=True)
    lines = verdict_seeds_block(found)
    trained = pd.read_csv(ROOT / "data" / "zoo_training_seeds.csv")
    rows = [
        {
            "model": r.model,
            "training seed": r.train_seed,
            "model seed": r.seed,
            "steps": r.steps,
            "minutes": f"{r.seconds / 60:.1f}" if r.seconds == r.seconds else "",
            "held-out loss": f"{r.heldout_loss:.3f}",
        }
        for r in trained.itertuples()
    ]
    table = md_table(rows, list(rows[0]), align=2)
    return lines + "\n\nThe drafts of each seed (seed 0: the shipped ones; minutes: training wall time on this " \
        "repository's CPU, seeds 1 and 2 at one thread each, side by side):\n\n" + table  # fmt: skip


# every study's own blocks (its docs.py's, ``Study.doc_blocks``), then those that read the zoo files or no one study
STUDY_BLOCKS = {(ROOT / "docs" / s.page, n): make for s in STUDIES.values() for n, make in s.doc_blocks().items()}
BLOCKS: dict[tuple[Path, str], Callable[[], str]] = {
    **STUDY_BLOCKS,
    (PAPERS / "tabed.md", "t1b-measured"): t1b_block,
    (PAPERS / "tabed.md", "t2-measured"): t2_block,
    (PAPERS / "tabed.md", "t5-measured"): t5_block,
    (PAPERS / "engine.md", "engine-seeds"): engine_seeds_block,
    (PAPERS / "tabed.md", "tabed-second-turn-images"): second_turn_images_block,
    (CARD, "card-corpus"): corpus_block,
    (CARD, "card-foundation"): foundation_block,
    (CARD, "card-cos-training"): cos_training_block,
    (CARD, "card-cos"): cos_block,
    (CARD, "card-cos-prose"): cos_prose_block,
    (CARD, "card-multilingual"): multilingual_block,
    (CARD, "card-ml-passes"): ml_passes_block,
    (CARD, "card-tabed"): tabed_block,
    (CARD, "tabed-second-turn-images"): second_turn_images_block,
    (CARD, "card-aasd"): aasd_block,
    (CARD, "card-proxy-conditions"): proxy_conditions_block,
    (CARD, "card-real-draft"): real_draft_block,
    (ROOT / "docs" / "reference" / "profiles.md", "real-speed"): real_speed_block,
    (ROOT / "docs" / "reference" / "agreement.md", "agreement"): agreement_block,
}


def main() -> int:
    for (page, name), make in BLOCKS.items():
        try:
            body = make()
        except NoHistory as error:  # a shallow clone: the block stays as committed
            print(f"kept {page.relative_to(ROOT)} ({name}): {error}")
            continue
        if splice(page, name, body):
            print(f"updated {page.relative_to(ROOT)} ({name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
