"""The registry of the studies: what the scoreboard, the docs nav, the nbval worker scopes, the import rules and the
notebook parameter check iterate, so that nothing else lists the papers.

``PAPERS``: every paper's ``Study`` (``harness.study``), found in the ``study.py`` of each subpackage of ``specdec``
that has one (``discover``), ordered by notebook number; ``ENGINE``: the engine's study (notebooks 00-02);
``STUDIES``: both. ``findings()``: each paper's findings module (``findings_from_results``);
``vocabulary(parameter, notebook)``: the values a paper's notebook parameter may take (TABED's ensembles, CoS's
tasks, the multilingual languages, AASD's drafts), or ``None`` when the parameter is no paper's. This module sits
above the papers; the core, ``vlm`` and ``zoo`` never import it.
"""

from __future__ import annotations

import importlib
import pathlib

import specdec
from specdec.harness.study import Study, Table

Paper = Study  # the name this registry had before studies declared themselves


def discover(paths: list[str] | None = None) -> dict[str, Study]:
    """``{name: Study}`` of every subpackage of ``specdec`` (under ``paths``: ``specdec.__path__``) that has a
    ``study.py``, ordered by notebook number; two studies sharing a name or a notebook series is an error."""
    found: list[Study] = []
    for folder in paths if paths is not None else list(specdec.__path__):
        for declared in sorted(pathlib.Path(folder).glob("*/study.py")):
            if declared.parent.name == "harness":  # the contract itself
                continue
            study = importlib.import_module(f"specdec.{declared.parent.name}.study").STUDY
            if not isinstance(study, Study):
                raise TypeError(f"{declared}: STUDY must be a specdec.harness.study.Study, got {type(study).__name__}")
            found.append(study)
    found.sort(key=lambda s: s.notebooks)
    for kind, values in (("name", [s.name for s in found]), ("series", [s.series for s in found])):
        clash = sorted({v for v in values if values.count(v) > 1})
        if clash:
            raise ValueError(f"two studies share the {kind} {clash}: {[s.package for s in found]}")
    return {s.name: s for s in found}


PAPERS: dict[str, Study] = discover()


# The engine's study (notebooks 00-02: what all four papers share) beside the papers, first.
def _engine_zoo(profile):
    from specdec.harness.engine_zoo import zoo_for

    return zoo_for(profile)


# notebook 01's τ sweep of the shipped drafts and its runs with the drafts of training seeds k > 0
ENGINE_TABLES = (
    Table("tau_vs_gamma", "specdec.harness.engine_experiments", "TAU_KEY", "TAU_EXACT", "recompute_sweep"),
    Table("engine_seeds", "specdec.harness.engine_seeds", "SEED_KEY", "SEED_EXACT", seeds_of="tau_vs_gamma"),
)
ENGINE = Study("engine", "", ("00", "01", "02"), "papers/engine.md", zoo=_engine_zoo, tables=ENGINE_TABLES)
STUDIES: dict[str, Study] = {ENGINE.name: ENGINE, **PAPERS}
SCOREBOARD = ("9", "Scoreboard")  # notebook 90's series and docs section


def notebook_sections(studies: dict[str, Study] | None = None) -> dict[str, str]:
    """``{first digit of a notebook's file name: its study's name}``, the scoreboard's ``"9"`` too: the docs nav
    section and the nbval worker scope a notebook joins."""
    studies = STUDIES if studies is None else studies
    return {**{s.series: s.name for s in studies.values()}, SCOREBOARD[0]: SCOREBOARD[1]}


def findings(papers: dict[str, Study] | None = None) -> dict:
    """``{paper name: its findings module}`` (each has ``findings_from_results(profile, root=...)``), in
    ``PAPERS`` order."""
    papers = PAPERS if papers is None else papers
    return {name: importlib.import_module(f"specdec.{paper.package}.findings") for name, paper in papers.items()}


def vocabulary(parameter: str, notebook: str = "") -> set[str] | None:
    """The values a paper's notebook parameter (a list parameter: its entries) may take; ``None``: no paper's."""
    for study in PAPERS.values():
        found = study.vocabulary(parameter, notebook) if study.vocabulary else None
        if found is not None:
            return found
    return None
