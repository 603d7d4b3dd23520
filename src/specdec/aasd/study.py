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


# notebooks 40-41's runs (``experiments.KEY``, its one inverse ``experiments.recompute``), and those of the training
# seeds k > 0 (``seeds.SEED_KEY``; the same inverse, a key's ``train_seed`` picks the seed's modules)
TABLES = (
    Table("aasd_runs", "specdec.aasd.experiments", "KEY"),
    Table("aasd_runs_seeds", "specdec.aasd.seeds", "SEED_KEY", seeds_of="aasd_runs"),
)
STUDY = Study("AASD", "aasd", ("40", "41"), "papers/aasd.md", vocabulary, zoo, TABLES)
