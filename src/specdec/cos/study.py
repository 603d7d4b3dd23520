"""CoS in the registry (``specdec.papers``): notebooks 20-22, its page, its notebooks' parameter names."""

from __future__ import annotations

from specdec.harness.study import Study, Table


def vocabulary(parameter: str, notebook: str) -> set[str] | None:
    """CoS's task suites (``tasks``, ``tradeoff_tasks``)."""
    if parameter in ("tasks", "tradeoff_tasks"):
        from specdec.cos.tasks import TASKS

        return set(TASKS)
    return None


def zoo(profile):
    """CoS's models under ``profile`` (``cos.zoo.zoo_for``)."""
    from specdec.cos.zoo import zoo_for

    return zoo_for(profile)


# notebooks 20-22's runs: one key (``zoo.ROW_KEY``) and one inverse (``experiments.recompute``); each beside its twin
# of the training seeds k > 0 (``seeds.TABLES``, ``seeds.SEED_KEY``; the same inverse)
NAMES = ("cos_main", "cos_sweeps", "cos_theory")
TABLES = tuple(Table(name, "specdec.cos.experiments", "ROW_KEY") for name in NAMES) + tuple(
    Table(f"{name}_seeds", "specdec.cos.seeds", "SEED_KEY", seeds_of=name) for name in NAMES
)
STUDY = Study("CoS", "cos", ("20", "21", "22"), "papers/cos.md", vocabulary, zoo, TABLES)
