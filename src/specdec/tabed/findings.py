"""TABED's findings T1-T5 as ``specdec.verdict.Verdict``s (the scoreboard, notebook 90, imports this module)."""

from specdec.tabed.bench import (  # noqa: F401
    findings,
    findings_from_results,
    verdict_t1,
    verdict_t1_parts,
    verdict_t2,
    verdict_t3,
    verdict_t3_parts,
    verdict_t4,
    verdict_t5,
)
