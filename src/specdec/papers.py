"""The registry of the four papers: what the scoreboard iterates and what the notebook parameters may name.

``PAPERS``: each paper's name (as the scoreboard prints it), its subpackage and the prefixes of its notebooks;
``findings()`` their findings modules (``findings_from_results``). ``vocabulary(parameter, notebook)``: the values
a paper's notebook parameter may take (TABED's ensembles, CoS's tasks, the multilingual languages, AASD's drafts),
or ``None`` when the parameter is no paper's. This module sits above the papers: it imports them (lazily, so that
reading the registry loads no model code); the core, ``harness``, ``vlm`` and ``zoo`` never import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    name: str  # as the scoreboard and the README name it
    package: str  # the subpackage of specdec
    notebooks: tuple[str, ...]  # file-name prefixes of its notebooks


PAPERS: dict[str, Paper] = {
    p.name: p
    for p in (
        Paper("TABED", "tabed", ("10", "11", "12", "13", "14")),
        Paper("CoS", "cos", ("20", "21", "22")),
        Paper("Multilingual", "multilingual", ("30", "31", "32", "33", "34")),
        Paper("AASD", "aasd", ("40", "41")),
    )
}


def findings() -> dict:
    """``{paper name: its findings module}`` (each has ``findings_from_results(profile, root=...)``), in
    ``PAPERS`` order."""
    from specdec.aasd import findings as aasd
    from specdec.cos import findings as cos
    from specdec.multilingual import findings as multilingual
    from specdec.tabed import findings as tabed

    modules = {"tabed": tabed, "cos": cos, "multilingual": multilingual, "aasd": aasd}
    return {name: modules[paper.package] for name, paper in PAPERS.items()}


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
