"""The multilingual study in the registry (``specdec.papers``): notebooks 30-34, its page, its parameter names."""

from __future__ import annotations

from specdec.harness.study import Study, Table


def vocabulary(parameter: str, notebook: str) -> set[str] | None:
    """The languages (``lang``, ``langs``, ``drafter_langs``; notebooks 30 and 34 name language pairs ``pairs``,
    elsewhere ``pairs`` are model pairs). English is a source of the OOD directions (``langs``)."""
    if parameter in ("lang", "langs", "drafter_langs") or (parameter == "pairs" and notebook.startswith(("30", "34"))):
        from specdec.multilingual.parallel import LANGUAGES

        return set(LANGUAGES) | ({"en"} if parameter == "langs" else set())
    return None


def zoo(profile):
    """The multilingual models under ``profile`` (``drafters.Drafters``: the class of its model source)."""
    from specdec.multilingual.drafters import Drafters

    return Drafters(profile)


# notebooks 30-34's runs: one key (``experiments.KEYS``) and one inverse (``experiments.recompute``); three have a
# twin of the training seeds k > 0 (``seeds.SEED_TABLES``, ``seeds.SEED_KEYS``; ``seeds.recompute``: the seed's
# drafters)
TABLES = tuple(
    Table(name, "specdec.multilingual.experiments")
    for name in ("ml_main", "ml_tokens", "ml_ood", "ml_size", "ml_generalization")
) + tuple(
    Table(f"{name}_seeds", "specdec.multilingual.seeds", "SEED_KEYS", seeds_of=name)
    for name in ("ml_tokens", "ml_main", "ml_ood")
)
STUDY = Study(
    "Multilingual", "multilingual", ("30", "31", "32", "33", "34"), "papers/multilingual.md", vocabulary, zoo, TABLES
)
