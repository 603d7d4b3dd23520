"""The multilingual zoo under a profile: ``Drafters(profile)`` says which model each ``ml-*`` name stands for (tiny: the
shipped zoo; paper: Vicuna-7B v1.3, vicuna-68m and the drafters the paper-scale recipe trained) and loads each once;
``table1_drafters`` names Table 1's drafter per method and pair; ``prompt_set`` draws the held-out translation
prompts a notebook decodes. ``specdec.multilingual.experiments`` builds the notebook tables on them.
"""

from __future__ import annotations

import functools
import os
import pathlib
import random
from typing import Any

import pandas as pd

from specdec import validate, zoo
from specdec.drafters import PromptLookupDrafter
from specdec.harness.profile import Profile
from specdec.harness.study import BaseZoo
from specdec.hub import ModelNotAvailableError
from specdec.multilingual import parallel
from specdec.multilingual.hubdata import load_paper_prompts
from specdec.multilingual.tables import METHODS
from specdec.zoo.models import load, load_tokenizer, revision_of, seed_weights, weights_identity
from specdec.zoo.models import weights_digest as combine_weights
from specdec.zoo.tasks import encode

TRAIN_COMMAND = "python -m specdec.multilingual.train --profile paper all --out $SPECDEC_ML_DRAFTERS"
# training seeds k > 0 of the shipped zoo (``seeds``): the drafters they retrain and the command that does
SHARED_BY_SEEDS = ("ml-target", "ml-draft-generic")  # one run each, the same for every training seed
GRID = ["ml-draft-f-de", "ml-draft-pf-de"] + [f"ml-draft-{k}-de-b{n}" for n in (44, 168, 612) for k in ("f", "pf")]
PAIRS = ("de", "fr", "ru", "ja", "zh")  # Table 1's pairs X -> En
PAIR_DRAFTERS = [f"ml-draft-{k}-{x}" for x in PAIRS[1:] for k in ("f", "pf")]  # De's are in GRID
SEED_TRAIN_COMMAND = (
    "python -m specdec.multilingual.train drafters --out data/models-seeds --only "
    + " ".join(GRID + PAIR_DRAFTERS)
    + " --train-seed"
)


def drafter_name(method: str, lang: str) -> str | None:
    """The zoo model behind a method for a pair X → En (``None`` for ``ar`` and ``pld``)."""
    validate.choice("multilingual method", method, METHODS)
    return {"sps-generic": "ml-draft-generic", "sps-f": f"ml-draft-f-{lang}", "sps-pf": f"ml-draft-pf-{lang}"}.get(
        method
    )


def table1_drafters(pair: str) -> dict:
    """``{method: spec}`` of Table 1 for a pair ``"x-en"``: plain decoding first, then every SD method."""
    x = pair.split("-")[0]
    return {m: ("pld" if m == "pld" else drafter_name(m, x)) for m in METHODS}


def drafters_dir() -> pathlib.Path:
    """Where the paper profile looks for its trained ``ml-*`` drafters: ``$SPECDEC_ML_DRAFTERS``, else
    ``$HF_HOME/specdec-ml-drafters``."""
    default = pathlib.Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "specdec-ml-drafters"
    return pathlib.Path(os.environ.get("SPECDEC_ML_DRAFTERS", default))


class Drafters(BaseZoo):
    """The ``ml-*`` zoo names of a profile (the study's ``harness.study.Zoo``): which model each stands for, each
    loaded once (drafters are shared by many cells), the target's tokenizer and the ``weights`` key of every method.
    ``Drafters(profile)`` is the class of the profile's model source (``Profile.zoo`` over ``ZOOS``):

    ``ShippedDrafters``: the shipped ``ml-*`` zoo on the CPU (float32), with training seeds 1 and 2 (``at_seed``).
    ``HubDrafters``: ``ml-target`` is the target of the yaml's ``multilingual`` pair (Vicuna-7B v1.3),
    ``ml-draft-generic`` its draft (vicuna-68m), and every other ``ml-*`` drafter a ``save_pretrained`` directory of
    that name in ``drafters_dir()`` (F / P-F drafters trained for the Vicuna tokenizer; none is published), on the
    profile's device and dtype."""

    study = "Multilingual"
    proxy = False  # this project's proxy models, whose proxy conditions (M3) are measured

    def __new__(cls, profile, *args, **kw):
        if cls is Drafters:  # the class of the profile's model source
            return Profile.load(profile).zoo(ZOOS, "Multilingual")
        return super().__new__(cls)

    def __init__(self, profile, train_seed: int = 0):
        super().__init__(profile, train_seed)  # train_seed: its finetuned drafters' (0: the shipped or trained ones)
        self._models: dict = {}
        self._digests: dict = {}

    def where(self, name: str) -> str:
        """The id or directory a zoo name stands for."""
        raise NotImplementedError

    def source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        """``(id or directory, revision)`` of a zoo name."""
        where = self.where(name)
        return where, revision_of(self.profile.spec, where)

    def load(self, name: str, **kw):
        """The model a zoo name stands for, in eval mode, loaded once."""
        if name not in self._models:
            self._models[name] = self._load(self.where(name))
        return self._models[name]

    def _load(self, source: str):
        raise NotImplementedError

    def identity(self, name: str) -> str:
        """``zoo.models.weights_identity`` of a zoo name's model."""
        raise NotImplementedError

    def weights(self, *names: str) -> str:
        """The ``weights`` key of a row of the drafter ``names[0]`` (``weights_digest``)."""
        return self.weights_digest(names[0] if names else None)

    def weights_digest(self, spec) -> str:
        """The ``weights`` key of a row: 12 hex digits of the sha256 of the target's weights and, for a drafter model
        ``spec``, the drafter's (plain decoding and PLD: the target's only)."""
        if spec not in self._digests:
            parts = [self.identity("ml-target")]
            if spec not in (None, "", "pld"):
                parts.append(self.identity(spec))
            self._digests[spec] = combine_weights(*parts)
        return self._digests[spec]

    def make_drafter(self, spec):
        """``None`` (plain decoding), ``"pld"`` (a fresh ``PromptLookupDrafter``) or a zoo model name."""
        if spec is None:
            return None
        if spec == "pld":
            return PromptLookupDrafter(max_ngram=3, min_ngram=1)
        return self.load(spec)

    def decode_text(self, output_ids: list[int]) -> str:
        """Output ids → text, without ``</s>`` and surrounding space."""
        eos = self.tokenizer.eos_token_id
        return self.tokenizer.decode([t for t in output_ids if t != eos], skip_special_tokens=True).strip()

    def architecture(self, name: str) -> str:
        """A label for a zoo model's shape ("llama h64 L2 mlp192 heads4"): models of one shape cost the same."""
        c = self.load(name).config
        return (
            f"llama h{c.hidden_size} L{c.num_hidden_layers} mlp{c.intermediate_size} heads{c.num_attention_heads}"
            f" V{c.vocab_size}"
        )

    tokenizer: Any  # the target's tokenizer (a subclass's cached property)

    def training_summary(self) -> pd.DataFrame:
        """One row per trained model (parameters, device, seconds, …)."""
        raise NotImplementedError

    def budget_grid(self, lang: str = "de") -> pd.DataFrame:
        """The finetune-budget grid of F and P-F drafters for ``lang``: recipe, budget, finetune_tokens and the
        model to load (the largest budget is the main drafter, ``same_as``)."""
        df = self.training_summary()
        df = df[(df.lang == lang) & df.model.str.contains(r"-b\d+$", regex=True) & df.recipe.isin(["F", "P-F"])]
        out = df.assign(load=df.same_as.fillna(df.model))
        return (
            out[["model", "load", "recipe", "finetune_budget", "finetune_tokens"]]
            .sort_values(["recipe", "finetune_budget"])
            .reset_index(drop=True)
        )


class ShippedDrafters(Drafters):
    """The shipped ``ml-*`` zoo (``data/models/``) on the CPU as saved (float32); its training seeds k > 0 are
    ``seeds.SeedDrafters`` (``at_seed``)."""

    train_seeds = (1, 2)
    proxy = True

    def where(self, name: str) -> str:
        if not self.train_seed or name in SHARED_BY_SEEDS:
            return name
        return str(seed_weights(name, self.train_seed, f"{SEED_TRAIN_COMMAND} <k>"))

    def source(self, name: str) -> tuple[str | pathlib.Path, str | None]:
        return self.where(name), None

    def _load(self, source: str):
        return load(source, with_tokenizer=False)[0]

    @functools.cached_property
    def tokenizer(self):
        """The zoo's shared tokenizer."""
        return load_tokenizer(zoo.TOKENIZER_DIR)

    def identity(self, name: str) -> str:
        """Of the shipped folder (or a training seed's)."""
        return weights_identity(zoo.model_dir(self.where(name)))

    def training_summary(self) -> pd.DataFrame:
        """``data/multilingual/ml_training.csv`` (a training seed k > 0: its rows of ``ml_training_seeds.csv``)."""
        if not self.train_seed:
            return pd.read_csv(zoo.DATA / "multilingual" / "ml_training.csv")
        rows = pd.read_csv(zoo.DATA / "multilingual" / "ml_training_seeds.csv")
        return rows[rows.train_seed == self.train_seed].reset_index(drop=True)

    def at_seed(self, k: int) -> ShippedDrafters:
        return ShippedDrafters(self.profile, self.checked_seed(k))  # not ``type(self)``: seeds.SeedDrafters refuses 0


class HubDrafters(Drafters):
    """Hub ids at their pinned revisions and the drafters the paper-scale recipe trained (``drafters_dir()``), on
    the profile's device and dtype."""

    def where(self, name: str) -> str:
        pair = self.profile.spec["pairs"]["multilingual"]
        if name in ("ml-target", "ml-draft-generic"):
            return pair["target" if name == "ml-target" else "draft"]
        path = drafters_dir() / name
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(
                f"paper profile: no drafter {name!r} at {path}. The F / P-F drafters are trained per language pair "
                f"by the paper-scale recipe ({TRAIN_COMMAND}, README 'Paper profile'), which saves them there; or set "
                "SPECDEC_ML_DRAFTERS to the folder that holds them."
            )
        return str(path)

    def _load(self, source: str):
        revision = revision_of(self.profile.spec, source)
        device, dtype = self.profile.device, self.profile.dtype
        return load(source, device=device, dtype=dtype, with_tokenizer=False, revision=revision)[0]

    @functools.cached_property
    def tokenizer(self):
        """Vicuna's."""
        source = self.where("ml-target")
        return load_tokenizer(source, revision=revision_of(self.profile.spec, source))

    def identity(self, name: str) -> str:
        """Of the trained drafters' folder, or ``hub id@pinned revision`` (a folder is hashed, an id is not)."""
        source = self.where(name)
        return weights_identity(source, revision_of(self.profile.spec, source))

    def training_summary(self) -> pd.DataFrame:
        """The ``ml_training.csv`` the paper-scale recipe wrote into ``drafters_dir()``."""
        path = drafters_dir() / "ml_training.csv"
        if not path.exists():
            raise ModelNotAvailableError(f"paper profile: no {path}; train the drafters first ({TRAIN_COMMAND})")
        return pd.read_csv(path)


ZOOS = {"shipped": ShippedDrafters, "hub": HubDrafters}


# --------------------------------------------------------------------------------------------- prompts
def prompt_set(
    drafters: Drafters, source: str, src: str, tgt: str, n: int | None, *, max_prompt_tokens: int = 96, seed: int = 0
) -> list[dict]:
    """``n`` held-out translation prompts ``src`` → ``tgt`` (seeded sample, prompts ≤ ``max_prompt_tokens``; ``None``:
    all, in file order): ``parallel.direction_prompt`` rows plus ``ids`` (``LongTensor[L]``: ``<s>`` + prompt ids). A
    profile whose data come from the hub loads the paper's WMT / IWSLT sets (``load_paper_prompts``)."""
    if n is not None:
        n = validate.integer("n", n, minimum=1, hint="prompts per direction; None = every held-out pair")
    validate.choice("source", source, parallel.SOURCES)
    if drafters.profile.data_source == "hub":
        rows = load_paper_prompts(src, tgt, n, generalization=source == "sphinx")
        return [{**r, "ids": encode(drafters.tokenizer, r["prompt"])} for r in rows]
    rows = [parallel.direction_prompt(r) for r in parallel.joined_pairs(source, src, tgt, "heldout")]
    rows = [{**r, "ids": encode(drafters.tokenizer, r["prompt"])} for r in rows]
    rows = [r for r in rows if len(r["ids"]) <= max_prompt_tokens]
    if n is None:
        return rows
    if len(rows) < n:
        raise ValueError(
            f"only {len(rows)} held-out {source} prompts {src}->{tgt} of <= {max_prompt_tokens} tokens; asked for {n}"
        )
    return random.Random(f"{seed}:{source}:{src}-{tgt}").sample(rows, n)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "Drafters",
    "GRID",
    "HubDrafters",
    "PAIRS",
    "PAIR_DRAFTERS",
    "SEED_TRAIN_COMMAND",
    "SHARED_BY_SEEDS",
    "ShippedDrafters",
    "TRAIN_COMMAND",
    "ZOOS",
    "drafter_name",
    "prompt_set",
]
