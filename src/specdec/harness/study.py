"""The study contract: what the registry (``specdec.papers``) knows of one paper's study.

A study is one subpackage of ``specdec`` (``tabed/``, ``cos/``, ...) whose ``study.py`` declares ``STUDY = Study(...)``;
the registry finds it there, so nothing else lists the papers (the scoreboard, the docs nav, the nbval worker
scopes, the import rules and the notebook parameter check all read the registry). ``docs/reference/architecture.md``
has the template of a new study.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from specdec.harness.profile import Profile


@runtime_checkable
class Zoo(Protocol):
    """One study's models under one profile and one training seed: the only place a study tells its model sources
    apart. A study's ``zoo.py`` has one class per model source (a shipped folder, an installed package, a hub id)
    and ``Profile.zoo`` picks the one of the profile's ``source``, so nothing else in the study branches on the
    profile. ``train_seeds``: the training seeds k > 0 whose models (and committed rows) this zoo has; ``proxy``:
    its models are this project's small proxies, whose proxy conditions are measured and written in the data
    card."""

    profile: Profile
    train_seed: int
    train_seeds: tuple[int, ...]
    proxy: bool

    def source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        """``(folder or hub id, revision)`` of the model ``name``."""
        ...

    def load(self, name: str, **kw: Any) -> Any:
        """The model ``name``, loaded (keywords: the study's, e.g. a device)."""
        ...

    def weights(self, *names: str) -> str:
        """The ``weights`` key of a row that used the models ``names``."""
        ...

    def at_seed(self, k: int) -> Zoo:
        """The same zoo with the models of training seed ``k`` (0: the shipped or published ones)."""
        ...


@dataclass(frozen=True)
class Study:
    """One study. ``name``: as the scoreboard and the README print it; ``package``: its subpackage of ``specdec``
    (``""`` for the engine's study, whose findings are ``specdec.engine_findings``); ``notebooks``: the file-name
    prefixes of its notebooks, which share their first digit (its ``series``); ``page``: its page under ``docs/``;
    ``vocabulary(parameter, notebook)``: the values one of its notebooks' list parameters may take (``None``: not
    one of its parameters); ``zoo(profile)``: its models under a profile (a ``Zoo``; ``None``: a study without
    models of its own); the study's ``findings`` module has ``findings_from_results(profile, root=...)``."""

    name: str
    package: str
    notebooks: tuple[str, ...]
    page: str
    vocabulary: Callable[[str, str], set[str] | None] | None = None
    zoo: Callable[[Profile], Zoo] | None = None

    def __post_init__(self) -> None:
        if not self.notebooks or len({n[:1] for n in self.notebooks}) != 1:
            raise ValueError(f"study {self.name!r}: its notebooks {self.notebooks} must share their first digit")

    @property
    def series(self) -> str:
        """The first digit its notebooks' file names share (``"1"`` for TABED): its docs section and its nbval
        worker scope."""
        return self.notebooks[0][0]
