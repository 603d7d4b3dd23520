"""The registry of the four papers: what the scoreboard iterates and what the notebook parameters may name.

``PAPERS``: each paper's name (as the scoreboard prints it), its subpackage and the prefixes of its notebooks;
``findings()`` their findings modules (``findings_from_results``). ``vocabulary(parameter, notebook)``: the values
a paper's notebook parameter may take (TABED's ensembles, CoS's tasks, the multilingual languages, AASD's drafts),
or ``None`` when the parameter is no paper's. This module sits above the papers: it imports them (lazily, so that
reading the registry loads no model code); the core, ``harness``, ``vlm`` and ``zoo`` never import it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    name: str  # as the scoreboard and the README name it
    package: str  # the subpackage of specdec ("" for the engine's study, whose findings are ``engine_findings``)
    notebooks: tuple[str, ...]  # file-name prefixes of its notebooks
    page: str  # its page under docs/

    @property
    def series(self) -> str:
        """The first digit its notebooks' file names share (``"1"`` for TABED): its docs section and its nbval
        worker scope."""
        return self.notebooks[0][0]


PAPERS: dict[str, Paper] = {
    p.name: p
    for p in (
        Paper("TABED", "tabed", ("10", "11", "12", "13", "14"), "papers/tabed.md"),
        Paper("CoS", "cos", ("20", "21", "22"), "papers/cos.md"),
        Paper("Multilingual", "multilingual", ("30", "31", "32", "33", "34"), "papers/multilingual.md"),
        Paper("AASD", "aasd", ("40", "41"), "papers/aasd.md"),
    )
}
# The engine's study (notebooks 00-02: what all four papers share) beside the papers, first.
ENGINE = Paper("engine", "", ("00", "01", "02"), "papers/engine.md")
STUDIES: dict[str, Paper] = {ENGINE.name: ENGINE, **PAPERS}
SCOREBOARD = ("9", "Scoreboard")  # notebook 90's series and docs section


def notebook_sections() -> dict[str, str]:
    """``{first digit of a notebook's file name: its study's name}``, the scoreboard's ``"9"`` too: the docs nav
    section and the nbval worker scope a notebook joins."""
    return {**{s.series: s.name for s in STUDIES.values()}, SCOREBOARD[0]: SCOREBOARD[1]}


def findings() -> dict:
    """``{paper name: its findings module}`` (each has ``findings_from_results(profile, root=...)``), in
    ``PAPERS`` order."""
    return {name: importlib.import_module(f"specdec.{paper.package}.findings") for name, paper in PAPERS.items()}


def vocabulary(parameter: str, notebook: str = "") -> set[str] | None:
    """The values a paper's notebook parameter (a list parameter: its entries) may take; ``None``: no paper's."""
    if parameter in ("methods", "gamma_methods"):
        from specdec.tabed.algorithm import ENSEMBLES

        return set(ENSEMBLES)
    if parameter == "criteria":  # the MT* grid policy's criteria (``tabed.algorithm.grid_weights``)
        return {"hard", "kl", "tvd", "hard+kl"}
    if parameter == "divergences":  # the MTCP* softmax policy's divergences
        return {"kl", "tvd"}
    if parameter in ("tasks", "tradeoff_tasks"):
        from specdec.cos.tasks import TASKS

        return set(TASKS)
    # notebooks 30 and 34 name language pairs "pairs"; elsewhere "pairs" are model pairs
    if parameter in ("lang", "langs", "drafter_langs") or (parameter == "pairs" and notebook.startswith(("30", "34"))):
        from specdec.multilingual.parallel import LANGUAGES

        return set(LANGUAGES) | ({"en"} if parameter == "langs" else set())  # English: a source of the OOD directions
    if parameter == "drafts":
        from specdec.aasd.tables import ABLATIONS, MAIN_DRAFTS, MATCHED_DRAFT

        return set(MAIN_DRAFTS) | set(ABLATIONS) | {MATCHED_DRAFT}
    return None
