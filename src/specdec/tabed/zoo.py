"""TABED's models per profile and the runs table they key: the study's ``Zoo`` (``zoo_for``: ``ShippedPairs``, the
shipped zoo's LLaVA pair, its training seeds and the long-answer window pair; ``HubPairs``, the profile yaml's
pairs), the pairs loaded (``load_vlm_pair``, ``Pair``); ``store``, the runs table keyed by ``KEY``, whose
``model_weights`` column (``run_weights``) names the weights a run used, so a retrained model never reuses a row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from specdec.harness.experiment import Request
from specdec.harness.profile import Profile
from specdec.results import ResultStore
from specdec.tabed import algorithm, data, tables
from specdec.tabed.captioners import CAPTIONER
from specdec.tabed.sources import TINY_PAIR, ZOOS, HubPairs, ShippedPairs, zoo_for  # noqa: F401 (the study's zoo)
from specdec.vlm.prompts import encode, request_digest
from specdec.zoo import models

# every parameter that changes a stored run (walltime depends on the device, the rest does not)
# ``model_weights`` (``run_weights``: target, draft, captioner) so that a retrained model never reuses old rows; the
# column ``weights`` of a row is something else, the MT* ensemble weights it chose per block. ``request``
# (``request_digest``: prompt text and image pixels) so that a regenerated suite, a new prompt template or another
# dataset revision never reuses the rows of a row id that now names another request.
KEY = [
    "method", "gamma", "window", "criterion", "captioner", "model_weights", "max_new_tokens", "device", "row",
    "request",
]  # fmt: skip
REFERENCE = "AR"  # the target's plain greedy decoding, stored as a method of its own


def load_vlm_pair(profile: str | Profile = "tiny", pair: str | None = None, device=None, dtype=None):
    """``(target, draft, processor)`` of a LLaVA pair: the shipped zoo's ``tabed-target`` / ``tabed-draft`` where no
    pair is named on a shipped profile; else the ``pair`` of the profile's yaml (default ``llava-7b``; ``llava-13b``,
    ``llava-7b-160m``; the LLaVA-NeXT targets of Tables 11-14 ``llava-next-*``). A pair marked ``as_authors`` loads
    its target as the TABED authors did: ``LlavaForConditionalGeneration`` over the checkpoint, fed by the *draft's*
    processor (one base view per image, the draft's image tokens), and returns that processor. Device and dtype
    default to the profile's."""
    profile = Profile.load(profile, device, dtype)
    target_name, draft_name, as_authors = zoo_for(profile).pair_names(pair)
    revision = lambda name: models.revision_of(profile.spec, name)  # noqa: E731
    common = dict(kind="llava", device=profile.device, dtype=profile.dtype)
    target, processor = models.load(
        target_name,
        **common,
        revision=revision(target_name),
        with_tokenizer=not as_authors,
        llava_class="LlavaForConditionalGeneration" if as_authors else None,
    )
    draft, draft_processor = models.load(draft_name, **common, with_tokenizer=as_authors, revision=revision(draft_name))
    return target, draft, draft_processor if as_authors else processor


@dataclass
class Pair:
    """A profile's LLaVA pair, loaded (``load_vlm_pair``): ``name`` (``None``: the profile's default) and the
    paper's ``setting`` it compares with (``tables.pair_setting``; ``None`` where the paper has no table for it)."""

    profile: Profile
    name: str | None
    target: object
    draft: object
    processor: object
    encoded: dict = dataclasses.field(default_factory=dict, repr=False)  # id(row) -> (row, its Request)

    @classmethod
    def load(cls, profile: str | Profile, pair: str | None = None) -> Pair:
        profile = Profile.load(profile)
        profile.use_threads()
        return cls(profile, pair or None, *load_vlm_pair(profile, pair or None))

    @property
    def tokenizer(self):
        return self.processor.tokenizer

    @property
    def setting(self) -> dict | None:
        return tables.pair_setting(self.profile, self.name)

    def requests(self, rows) -> list[Request]:
        """``requests(processor, rows)``, each suite row encoded once per pair (the settings of a suite share their
        rows). Cached by the row object, kept alive here: an edited copy of a row is a new request."""
        new = [r for r in rows if id(r) not in self.encoded]
        self.encoded.update((id(r), (r, q)) for r, q in zip(new, requests(self.processor, new)))
        return [self.encoded[id(r)][1] for r in rows]

    def store(self, table: str = "tabed_runs") -> ResultStore:
        return store(self.profile, table, self.name)

    def suite(self, n_per_scenario: int, seed: int = 0, **kw) -> list[dict]:
        """``data.load_suite`` of this pair's profile (second turns on this pair's target's own first answers)."""
        return data.load_suite(self.profile, n_per_scenario, seed, target=self.target, processor=self.processor, **kw)


def store(profile: str | Profile, table: str = "tabed_runs", pair: str | None = None) -> ResultStore:
    """The runs table; it stands on the committed one (``results.COMMITTED``, read-only), so under ``make test``
    (an empty ``SPECDEC_OUTPUT_DIR``) the notebooks read the committed 20-per-cell runs and compute only keys that
    are not there. ``tests/test_committed_results.py`` recomputes a sample of them. ``pair``: a LLaVA pair of the
    profile other than its default gets its own table ``<table>_<pair>`` (``KEY`` names no model, so two pairs must
    never share one)."""
    return Profile.load(profile).store(f"{table}_{pair}" if pair else table, KEY)


def run_weights(target, draft, method: str, captioner: str = CAPTIONER) -> str:
    """The ``model_weights`` key of a run: ``zoo.models.weights_digest`` of the target's weights, for a speculative
    method also the draft's, and for a caption method (C) the captioner's when it is a model of its own (a zoo
    name or folder; ``"draft"``: the draft; ``"oracle"``: none; ``"blip"``: named)."""
    if method == REFERENCE:
        return models.model_weights(target)
    parts = [models.model_weights(target, draft)]
    if "C" in algorithm.ENSEMBLES[method] and captioner not in ("draft", "oracle"):
        parts.append(captioner if captioner == "blip" else models.weights_identity(captioner))
    return models.weights_digest(*parts) if len(parts) > 1 else parts[0]


def requests(processor, rows) -> list[Request]:
    """The harness requests of suite rows (``data.load_suite``): key columns ``row`` (the row id) and ``request``
    (``request_digest``); the draft also gets the images (the C row captions them)."""
    out = []
    for r in rows:
        ids, inputs = encode(processor, r["prompt"], r["images"])
        draft_inputs = {**inputs, "images": r["images"]} if inputs else {}
        key = dict(row=r["id"], request=request_digest(r))
        out.append(Request(r["id"], ids, key, target_inputs=inputs, draft_inputs=draft_inputs, data=r))
    return out


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["KEY", "REFERENCE", "load_vlm_pair", "store"]
