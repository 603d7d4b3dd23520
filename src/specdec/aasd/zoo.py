"""AASD's models per profile: the study's ``harness.study.Zoo`` (``zoo_for``), one class per model source.

``ShippedAASD``: the shipped zoo (``data/models/``): the targets ``zoo_specs.TARGETS`` (and A2's
``zoo_specs.P8_TARGET``), their modules, the text and LLaVA baselines of ``zoo_specs``, the budget-matched module and
the training seeds 1 and 2 (gitignored folders; missing ones name the ``aasd.train`` step that trains them).
``HubAASD``: the ``aasd`` section of the profile's yaml, read once: its ``targets`` (hub ids), its ``drafts`` (public
drafts at their pinned revisions, or baselines distilled into ``zoo_specs.zoo_dir()``) and the modules trained there.
"""

from __future__ import annotations

import pathlib

from specdec import zoo
from specdec.aasd import baselines, zoo_specs
from specdec.aasd.algorithm import config_for
from specdec.aasd.tables import ABLATIONS, MATCHED_DRAFT
from specdec.aasd.zoo_specs import draft_name, module_name
from specdec.harness.profile import Profile
from specdec.harness.study import BaseZoo
from specdec.zoo import models


class HubAASD(BaseZoo):
    """AASD's models from the hub and the paper-scale zoo (``zoo_specs.zoo_dir()``); one training run each."""

    study = "AASD"
    proxy = False  # this project's proxy models, whose A2 / A5 conditions are measured (data card)

    def __init__(self, profile: Profile | str, train_seed: int = 0):
        super().__init__(profile, train_seed)
        aasd = self.profile.spec.get("aasd") or {}
        self.drafts: dict = dict(aasd.get("drafts") or {})
        self._targets: list[str] = list(aasd.get("targets") or [])

    # ------------------------------------------------------------------------------------------ targets
    def targets(self) -> list[str]:
        """Notebook 40's targets (``()`` asked)."""
        return list(self._targets)

    def known_targets(self) -> list[str]:
        """Every target a notebook may name."""
        return self.targets()

    def ablation_target(self) -> str:
        """Notebook 41's target."""
        return self.targets()[0]

    def usable(self, drafts) -> list[str]:
        """``drafts`` less those this zoo has no models for (a hub target's module trains on its answers already:
        no budget-matched ``MATCHED_DRAFT``)."""
        return [d for d in drafts if d != MATCHED_DRAFT]

    # ------------------------------------------------------------------------------------------- models
    @property
    def folder(self) -> pathlib.Path:
        """Where its modules (and distilled baselines) are."""
        return zoo_specs.zoo_dir()

    def source(self, name: str, target: str | None = None) -> tuple[str | pathlib.Path, str | None]:
        """``(folder or hub id, revision)`` of a target (``target`` unset) or of the draft ``name`` of ``target``."""
        return self.profile.model_source(name) if target is None else self.draft_source(name, target)

    def draft_source(self, name: str, target: str) -> tuple[str | pathlib.Path, str | None]:
        """A module's folder (``AASD*``), a public draft at its pinned revision or a distilled baseline's folder."""
        if name == MATCHED_DRAFT:
            raise ValueError(f"{MATCHED_DRAFT!r} is the tiny zoo's (a hub target's module trains on its answers)")
        if name.startswith("AASD"):
            return self.folder / module_name(target, ABLATIONS[name][0], self.train_seed), None
        draft = self.drafts[name]
        if "model" in draft:
            return draft["model"], models.revision_of(self.profile.spec, draft["model"])
        return self.folder / draft_name(name, target), None

    def load(self, name: str, **kw):
        """``(target, processor)``: a target on the profile's device and dtype, at its pinned revision."""
        source, revision = self.profile.model_source(name)
        return models.load(
            source, kind="llava", device=self.profile.device, dtype=self.profile.dtype, revision=revision
        )

    def weights(self, *names: str) -> str:
        """The ``weights`` key of a run of the target ``names[0]`` and the drafts ``names[1:]``:
        ``models.weights_digest`` of the target's and (but for ``AR``) the drafts' ``weights_identity``."""
        target, *drafts = names
        parts = [models.weights_identity(*self.profile.model_source(target))]
        parts += [models.weights_identity(*self.draft_source(d, target)) for d in drafts if d != "AR"]
        return models.weights_digest(*parts)

    # ------------------------------------------------------------------------------------------- drafts
    def draft_kind(self, name: str, target: str, source) -> str:
        """``"llava"`` (sees the images) or ``"text"``: the yaml's ``kind``; a distilled baseline must be there."""
        if "model" not in self.drafts[name] and not (pathlib.Path(source) / "config.json").exists():
            raise zoo_specs.missing(pathlib.Path(source), f"distilled baseline ({name})", target)
        return self.drafts[name]["kind"]

    def text_drafter(self, source, revision, target, lm, processor):
        """A text-only draft of another tokenizer whose vocabulary extends the target's (checked), shown the
        target's image placeholders as text."""
        device, dtype = next(target.parameters()).device, target.dtype
        model, tokenizer = models.load(source, device=device, dtype=dtype, revision=revision)
        models.check_vocabulary_prefix(processor.tokenizer, tokenizer)
        return baselines.text_drafter(
            model, tokenizer, lm.vocab_size, target.config.image_token_id, config_for(target).image_tokens
        )


class ShippedAASD(HubAASD):
    """AASD's models of the shipped zoo, with training seeds 1 and 2."""

    train_seeds = zoo_specs.TRAIN_SEEDS
    proxy = True

    def targets(self) -> list[str]:
        return list(zoo_specs.TARGETS)

    def known_targets(self) -> list[str]:
        return [*zoo_specs.TARGETS, zoo_specs.P8_TARGET]

    def ablation_target(self) -> str:
        """A2's ``aasd-target-p8`` (64 visual positions per image, a projector at the paper's ratio:
        docs/papers/aasd.md, Proxy conditions)."""
        return zoo_specs.P8_TARGET

    def usable(self, drafts) -> list[str]:
        return list(drafts)

    @property
    def folder(self) -> pathlib.Path:
        return zoo.MODELS

    def draft_source(self, name: str, target: str) -> tuple[str | pathlib.Path, str | None]:
        """The module's folder, the budget-matched module, a baseline of the zoo (of a training seed k > 0:
        ``zoo_specs.baseline_seed_dir``, gitignored; missing: the error names ``baseline-seeds``)."""
        k = self.train_seed
        if name == MATCHED_DRAFT:
            return trained(zoo_specs.matched_dir(target, k), "module.safetensors", name, target, k, "matched", 8), None
        if name.startswith("AASD"):
            return self.folder / module_name(target, ABLATIONS[name][0], k), None
        if k and name in zoo_specs.SEEDED_BASELINES:
            folder = zoo_specs.baseline_seed_dir(name, target, k)
            return trained(folder, "config.json", name, target, k, "baseline-seeds", 20), None
        return draft_name(name, target if name.startswith("DT") else None), None

    def draft_kind(self, name: str, target: str, source) -> str:
        """The zoo's FT-/DT-LLaMA are text-only, FT-/DT-LLaVA see the images."""
        return "text" if name.endswith("LLaMA") else "llava"

    def text_drafter(self, source, revision, target, lm, processor):
        """The zoo's text drafts share the target's tokenizer and image token."""
        device, dtype = next(target.parameters()).device, target.dtype
        model, _ = models.load(source, device=device, dtype=dtype, with_tokenizer=False)
        return baselines.text_drafter(model, processor.tokenizer)


def trained(
    folder: pathlib.Path, marker: str, name: str, target_name: str, train_seed: int, step: str, minutes: int
) -> pathlib.Path:
    """``folder`` if it holds ``marker`` (a model of the tiny zoo whose seeds k > 0 are gitignored: ``data/models/``
    is full), else the one error naming ``python -m specdec.aasd.train <step>``, which trains it."""
    if not (folder / marker).exists():
        raise FileNotFoundError(
            f"no {name} of training seed {train_seed} for {target_name} at {folder} (seeds 1 and 2 are not "
            f"committed: data/models/ is full). Train it with `python -m specdec.aasd.train {step} --train-seeds "
            f"{train_seed}` (about {minutes} CPU minutes a seed), or set SPECDEC_SEED_MODELS to a folder holding it"
        )
    return folder


ZOOS = {"shipped": ShippedAASD, "hub": HubAASD}


def zoo_for(profile, train_seed: int = 0) -> HubAASD:
    """AASD's models under ``profile`` at ``train_seed`` (``Profile.zoo``: the class of its model source)."""
    return Profile.load(profile).zoo(ZOOS, "AASD").at_seed(train_seed)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["HubAASD", "ShippedAASD", "ZOOS", "zoo_for"]
