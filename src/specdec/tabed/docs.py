"""TABED's generated doc block (``scripts/update_docs_tables.py`` splices it into ``docs/papers/tabed.md``): its
findings decided over training seeds (``seeds_block``), read from the committed results as the scoreboard reads
them."""

from __future__ import annotations

import pathlib

from specdec import results
from specdec.markdown import verdict_seeds_block
from specdec.tabed import findings


def seeds_block(root: pathlib.Path | None = None) -> str:
    """TABED's findings per training seed and pooled, as ``findings.findings_from_results`` reads them (T1-T4: the
    draft's seeds on the shipped target; T5: Table 3's pair)."""
    return verdict_seeds_block(findings.findings_from_results("tiny", root=root or results.COMMITTED))


# the blocks of the study's page (``Study.doc_blocks``): block name -> its text from the committed results
BLOCKS = {"tabed-seeds": seeds_block}
