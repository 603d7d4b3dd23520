"""TABED's model sources: its ``harness.study.Zoo`` classes, one per model source (``ShippedPairs``: the shipped
zoo's LLaVA pair, its draft's training seeds and the long-answer window pair; ``HubPairs``: the profile yaml's LLaVA
pairs, ``llava_pair``), and ``zoo_for``, the one of a profile (``Profile.zoo``). ``tabed.zoo`` re-exports them
beside the pairs loaded; this module reads no other TABED module, so ``tables`` may ask it too.
"""

from __future__ import annotations

from specdec.harness.profile import Profile
from specdec.harness.study import BaseZoo
from specdec.tabed.data import TINY_TARGET
from specdec.vlm.train import TRAIN_SEEDS
from specdec.zoo import models

DEFAULT_PAIR = "llava-7b"  # the paper profile's LLaVA pair where none is named (Table 10's LLaVA-1.5 7B)
TINY_PAIR = (TINY_TARGET, "tabed-draft")  # the shipped zoo's LLaVA pair (it stands in for Table 10's 68M / 7B)


def llava_pair(profile: Profile, pair: str | None = None) -> dict:
    """The yaml entry of one of the profile's LLaVA pairs (default ``DEFAULT_PAIR``): ``target``, ``draft``, its
    paper ``setting``, ``as_authors``; ``ValueError`` naming the LLaVA pairs where it has no such pair."""
    pairs = profile.spec.get("pairs", {})
    pair = pair or DEFAULT_PAIR
    if pair not in pairs or pairs[pair].get("kind") != "llava":
        llava = sorted(k for k, v in pairs.items() if v.get("kind") == "llava")
        raise ValueError(f"profile {profile.name!r} has no LLaVA pair {pair!r}; LLaVA pairs: {llava}")
    return pairs[pair]


class HubPairs(BaseZoo):
    """TABED's ``harness.study.Zoo`` where its LLaVA pairs are the profile yaml's (``llava_pair``; default
    ``llava-7b``), hub ids at their pinned revisions, one training run each."""

    study = "TABED"
    proxy = False  # the shipped proxy pair (and the long-answer window pair, ``windows``)

    def pair_names(self, pair: str | None) -> tuple[str, str, bool]:
        """``(target, draft, as_authors)`` of a pair (``None``: the default)."""
        spec = llava_pair(self.profile, pair)
        return spec["target"], spec["draft"], bool(spec.get("as_authors"))

    def source(self, name: str):
        """``(folder or hub id, revision)`` of a model (``Profile.model_source``)."""
        return self.profile.model_source(name)

    def load(self, name: str, **kw):
        """``(model, processor)`` of a LLaVA model on the profile's device and dtype (``models.load`` keywords)."""
        source, revision = self.source(name)
        common = dict(kind="llava", device=self.profile.device, dtype=self.profile.dtype, revision=revision)
        return models.load(source, **{**common, **kw})


class ShippedPairs(HubPairs):
    """TABED's ``Zoo`` of the shipped zoo: its own pair ``TINY_PAIR`` where no pair is named (it stands in for Table
    10's 68M / 7B), the draft's training seeds 1 and 2 (``seeds``) and the long-answer window pair (``windows``)."""

    train_seeds = TRAIN_SEEDS  # the draft's (seeds) and the window pair's
    proxy = True

    def pair_names(self, pair: str | None) -> tuple[str, str, bool]:
        return (*TINY_PAIR, False) if pair is None else super().pair_names(pair)


ZOOS = {"shipped": ShippedPairs, "hub": HubPairs}


def zoo_for(profile) -> HubPairs:
    """TABED's models under ``profile`` (``Profile.zoo``: the class of the profile's model source)."""
    return Profile.load(profile).zoo(ZOOS, "TABED")
