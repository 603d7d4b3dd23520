"""The engine study's models per profile (notebooks 00-02): its ``harness.study.Zoo`` (``zoo_for``), one class per
model source. ``EnginePairs``: a profile's pairs (``pairs`` of its yaml: hub ids at pinned revisions, or an
installed package's files), one training run each; ``ShippedEnginePairs``: the shipped ``tiny-*`` zoo, whose drafts
have training seeds 1 and 2 (``engine_seeds``, gitignored weights, committed rows)."""

from __future__ import annotations

import pathlib

from specdec.harness.profile import Profile
from specdec.harness.study import BaseZoo
from specdec.zoo import models

SEED_DRAFTS = ("tiny-draft-s", "tiny-draft-xs")  # the drafts a training seed retrains (the target is shared)
SEED_TRAIN_COMMAND = "python -m specdec.zoo.training --models " + " ".join(SEED_DRAFTS) + " --train-seed"


class EnginePairs(BaseZoo):
    """The engine's models under a profile without training seeds k > 0."""

    study = "engine"

    def source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        """``(folder or hub id, revision)`` of a model (a draft of training seed k > 0: its seed folder)."""
        where, revision = self.profile.model_source(name)
        if self.train_seed and name in SEED_DRAFTS:
            return models.seed_weights(name, self.train_seed, f"{SEED_TRAIN_COMMAND} <k>"), revision
        return where, revision

    def load(self, name: str, **kw):
        """The model ``name`` on the profile's device and dtype (``models.load`` keywords)."""
        where, revision = self.source(name)
        return models.load(where, **{"device": self.profile.device, "dtype": self.profile.dtype, **kw})[0]


class ShippedEnginePairs(EnginePairs):
    """The shipped zoo's pairs; the drafts ``SEED_DRAFTS`` have training seeds 1 and 2."""

    train_seeds = (1, 2)
    proxy = True


ZOOS = {"shipped": ShippedEnginePairs, "hub": EnginePairs, "package": EnginePairs}


def zoo_for(profile) -> EnginePairs:
    """The engine's models under ``profile`` (``Profile.zoo``: the class of its model source)."""
    return Profile.load(profile).zoo(ZOOS, "engine")
