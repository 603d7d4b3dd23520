"""The study contract: what the registry (``specdec.papers``) knows of one paper's study.

A study is one subpackage of ``specdec`` (``tabed/``, ``cos/``, ...) whose ``study.py`` declares ``STUDY = Study(...)``;
the registry finds it there, so nothing else lists the papers (the scoreboard, the docs nav, the nbval worker
scopes, the import rules and the notebook parameter check all read the registry). ``docs/reference/architecture.md``
has the template of a new study.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Study:
    """One study. ``name``: as the scoreboard and the README print it; ``package``: its subpackage of ``specdec``
    (``""`` for the engine's study, whose findings are ``specdec.engine_findings``); ``notebooks``: the file-name
    prefixes of its notebooks, which share their first digit (its ``series``); ``page``: its page under ``docs/``;
    ``vocabulary(parameter, notebook)``: the values one of its notebooks' list parameters may take (``None``: not
    one of its parameters); the study's ``findings`` module has ``findings_from_results(profile, root=...)``."""

    name: str
    package: str
    notebooks: tuple[str, ...]
    page: str
    vocabulary: Callable[[str, str], set[str] | None] | None = None

    def __post_init__(self) -> None:
        if not self.notebooks or len({n[:1] for n in self.notebooks}) != 1:
            raise ValueError(f"study {self.name!r}: its notebooks {self.notebooks} must share their first digit")

    @property
    def series(self) -> str:
        """The first digit its notebooks' file names share (``"1"`` for TABED): its docs section and its nbval
        worker scope."""
        return self.notebooks[0][0]
