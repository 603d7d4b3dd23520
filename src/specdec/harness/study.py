"""The study contract: what the registry (``specdec.papers``) knows of one paper's study.

A study is one subpackage of ``specdec`` (``tabed/``, ``cos/``, ...) whose ``study.py`` declares ``STUDY = Study(...)``;
the registry finds it there, so nothing else lists the papers (the scoreboard, the docs nav, the nbval worker
scopes, the import rules and the notebook parameter check all read the registry). ``docs/reference/architecture.md``
has the template of a new study.
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

from specdec.harness.profile import Profile
from specdec.zoo import models


@runtime_checkable
class Zoo(Protocol):
    """One study's models under one profile and one training seed: the only place a study tells its model sources
    apart. A study's ``zoo.py`` has one class per model source (a shipped folder, an installed package, a hub id)
    and ``Profile.zoo`` picks the one of the profile's ``source``, so nothing else in the study branches on the
    profile. ``train_seeds``: the training seeds k > 0 whose models (and committed rows) this zoo has; ``proxy``:
    its models are this project's small proxies, whose proxy conditions are measured and written in the data
    card. ``BaseZoo`` holds the code the classes share."""

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


class BaseZoo:
    """What every study's ``Zoo`` class shares: the profile and training seed it is built on, the ``weights`` key of
    its models' ``source`` and ``at_seed``, which refuses a training seed the class lacks with one message naming the
    ``study``. A subclass sets ``study``, ``train_seeds`` and ``proxy`` and defines ``source`` and ``load``."""

    study: ClassVar[str] = "?"  # the study's name, as the scoreboard prints it
    train_seeds: tuple[int, ...] = ()
    proxy = False

    def __init__(self, profile: Profile | str, train_seed: int = 0):
        self.profile = Profile.load(profile)
        self.train_seed = int(train_seed)

    def source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        """``(folder or hub id, revision)`` of the model ``name``."""
        raise NotImplementedError

    def load(self, name: str, **kw: Any) -> Any:
        """The model ``name``, loaded."""
        raise NotImplementedError

    def weights(self, *names: str) -> str:
        """``models.weights_digest`` of the ``weights_identity`` of the models ``names`` (their ``source``)."""
        return models.weights_digest(*(models.weights_identity(*self.source(n)) for n in names))

    def checked_seed(self, k: int) -> int:
        """``k`` as an int: 0 or one of ``train_seeds``, else the one error naming the study and its seeds."""
        if int(k) and int(k) not in self.train_seeds:
            raise ValueError(
                f"{self.study} training seed {k} is not one of this zoo's {self.train_seeds} (profile "
                f"{self.profile.name!r})"
            )
        return int(k)

    def at_seed(self, k: int) -> Self:
        """The same zoo with the models of training seed ``k`` (``checked_seed``)."""
        return type(self)(self.profile, self.checked_seed(k))


@dataclass(frozen=True)
class Table:
    """One committed results table of a study (``results/<profile>/<name>.csv``) and its one inverse, named by the
    study module that holds them (imported when asked, so the registry stays light): ``module.<key_name>``, the
    columns that key a row; ``module.<exact_name>``, the columns a recomputation gives back exactly;
    ``module.<recompute_name>``, the inverse, ``recompute(keys: list[dict], *, profile="tiny") -> DataFrame``: the
    rows of ``keys`` (each a row's key columns, plus what the module documents) decoded again, one row per key.
    ``seeds_of``: the table whose rows of training seeds k > 0 this one holds, keyed by ``train_seed`` too (``""``: a
    table of training seed 0, or of no trained model)."""

    name: str
    module: str
    key_name: str = "KEYS"
    exact_name: str = "EXACT_COLUMNS"
    recompute_name: str = "recompute"
    seeds_of: str = ""

    def attribute(self, name: str) -> Any:
        """``module.<name>``, the module imported."""
        return getattr(importlib.import_module(self.module), name)

    @property
    def key(self) -> list[str]:
        """The columns that key a row."""
        return list(self.attribute(self.key_name))

    @property
    def exact(self) -> list[str]:
        """The columns a recomputation gives back exactly (the rest, walltimes, depend on the machine)."""
        return list(self.attribute(self.exact_name))

    def recompute(self, keys: list[dict], **kw: Any) -> Any:
        """The rows of ``keys`` decoded again (a ``pandas.DataFrame``), by the table's inverse."""
        return self.attribute(self.recompute_name)(keys, **kw)


@dataclass(frozen=True)
class Study:
    """One study. ``name``: as the scoreboard and the README print it; ``package``: its subpackage of ``specdec``
    (``""`` for the engine's study, whose findings are ``specdec.engine_findings``); ``notebooks``: the file-name
    prefixes of its notebooks, which share their first digit (its ``series``); ``page``: its page under ``docs/``;
    ``vocabulary(parameter, notebook)``: the values one of its notebooks' list parameters may take (``None``: not
    one of its parameters); ``zoo(profile)``: its models under a profile (a ``Zoo``; ``None``: a study without
    models of its own); ``tables``: its committed results tables, each with its one inverse (``Table``,
    ``recompute``); the study's ``findings`` module has ``findings_from_results(profile, root=...)``."""

    name: str
    package: str
    notebooks: tuple[str, ...]
    page: str
    vocabulary: Callable[[str, str], set[str] | None] | None = None
    zoo: Callable[[Profile], Zoo] | None = None
    tables: tuple[Table, ...] = ()

    def __post_init__(self) -> None:
        if not self.notebooks or len({n[:1] for n in self.notebooks}) != 1:
            raise ValueError(f"study {self.name!r}: its notebooks {self.notebooks} must share their first digit")

    def table(self, name: str) -> Table:
        """Its table ``name``; ``KeyError`` naming the study's tables."""
        found = {t.name: t for t in self.tables}
        if name not in found:
            raise KeyError(f"study {self.name} has no table {name!r}; its tables: {sorted(found)}")
        return found[name]

    def recompute(self, table: str, keys: list[dict], **kw: Any) -> Any:
        """The rows of ``keys`` of its table ``table`` decoded again (``Table.recompute``): the one recompute that
        the committed-results test calls for every declared table."""
        return self.table(table).recompute(keys, **kw)

    def doc_blocks(self) -> dict[str, Callable[[], str]]:
        """``{block name: function}``: the generated blocks of its page (``page``), its ``docs.py``'s ``BLOCKS``
        (``scripts/update_docs_tables.py`` splices them); none for a study without a ``docs.py``."""
        name = f"specdec.{self.package}.docs"
        if not self.package or importlib.util.find_spec(name) is None:
            return {}
        return dict(importlib.import_module(name).BLOCKS)

    @property
    def series(self) -> str:
        """The first digit its notebooks' file names share (``"1"`` for TABED): its docs section and its nbval
        worker scope."""
        return self.notebooks[0][0]
