"""AASD in the registry (``specdec.papers``): notebooks 40-41, its page, its notebooks' parameter names."""

from __future__ import annotations

from specdec.harness.study import Study, Table


def vocabulary(parameter: str, notebook: str) -> set[str] | None:
    """AASD's drafts (Table 1's, the ablations' and the budget-matched module)."""
    if parameter == "drafts":
        from specdec.aasd.tables import ABLATIONS, MAIN_DRAFTS, MATCHED_DRAFT

        return set(MAIN_DRAFTS) | set(ABLATIONS) | {MATCHED_DRAFT}
    return None


def zoo(profile):
    """AASD's models under ``profile`` (``aasd.zoo.zoo_for``)."""
    from specdec.aasd.zoo import zoo_for

    return zoo_for(profile)


# notebooks 40-41's runs (``experiments.KEY``, its one inverse ``experiments.recompute``)
TABLES = (Table("aasd_runs", "specdec.aasd.experiments", "KEY"),)
STUDY = Study("AASD", "aasd", ("40", "41"), "papers/aasd.md", vocabulary, zoo, TABLES)
