"""The AASD zoo's configuration: names, where it lives, and the settings of the one recipe (``aasd.recipe``).

``TINY`` is the recipe's configuration for the shipped tiny zoo (``data/models/aasd-*``, trained on the TABED data
file); ``paper_settings(profile)`` builds the same shape from a profile's ``aasd`` section (``paper.yaml``) for a hub
LLaVA target. Every difference between the two is a value here: sizes, steps, which answers a model trains on, how
a baseline starts (a fresh model of given sizes, or a hub checkpoint), its seeds, what stays frozen. Every choice
is the project's: the paper gives no module size, depth, training data, steps or loss.

The shape (``recipe.py`` reads it):

- ``targets``: ``{target: module variants}`` (``""`` is the main module; the others are keys of ``variants``);
- ``variants``: ``{suffix: module settings overriding module's}``;
- ``module``: its sizes (``intermediate_size``, ``projector_k``, ``context``), training (``steps``, ``batch_size``,
  ``lr``, ``weight_decay``, ``depths``, ``max_positions``, ``seed``) and ``answers``: ``"task"`` (the data's
  answers) or ``"target"`` (the target's greedy answers, ``distill``);
- ``distill``: ``rows`` (how many training prompts the target answers, a seeded draw; ``None``: all) and
  ``max_new_tokens``;
- ``drafts``: the baselines the recipe trains, in training order, ``{draft name: kind ("text" / "llava"),
  answers ("corpus": pretrained on the foundation corpus for ``pretrain``; "task"; "target"), seed, and either
  new (the sizes of a fresh model; a LLaVA's language model optionally taken from the text draft named
  ``language_model``) or init (a hub checkpoint, or another draft of this dict trained before it), optional
  freeze (parameter-name parts kept frozen), answer_positions_only (``zoo.training.answer_loss``'s output head
  only at the answer positions), finetune (this draft's overrides of ``finetune``)}``; a draft trained on the
  target's answers is trained once per target, its seed moved by ``target_seed_step`` times the target's index;
- ``finetune``: the baselines' training (``steps``, ``batch_size``, ``lr``, ``weight_decay``).
"""

from __future__ import annotations

import os
import pathlib

from specdec import hub, zoo
from specdec.vlm.train import TABED_TRAIN, VISION

# The second target ("LLaVA-7B" to tabed-target's "13B"): a smaller text model on the same data file, trained by
# the same loop (``vlm.train.train_model``); on CPU, one thread, so fewer and smaller steps than tabed-target.
SECOND_TARGET = "aasd-target-s"
TARGET_SPECS: dict[str, dict] = {
    SECOND_TARGET: dict(
        text=dict(
            hidden_size=96, intermediate_size=256, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=3
        ),
        vision=VISION,
        max_images=5,
        seed=20,
        train=dict(TABED_TRAIN, steps=350, batch_size=32),
    ),
}
# A2's target (docs/papers/aasd.md, "Proxy conditions"): tabed-target's recipe with 8-px patches, i.e. 64 visual
# positions per image (LLaVA-1.5: 576), on the TABED data file widened by ``vlm.data.with_patch_size``; its modules
# keep k = 7 (64 / 7 = 9.1, the paper's 576 / 64 = 9). Notebook 41 runs on it; Table 1 stays on the 16-position pair.
P8_TARGET = "aasd-target-p8"
P8_PATCH = 8
TARGET_SPECS[P8_TARGET] = dict(
    text=zoo.TINY_ZOO["tiny-target"], vision=dict(VISION, patch_size=P8_PATCH), max_images=5, seed=0,
    train=dict(TABED_TRAIN, steps=3000),
)  # fmt: skip
TARGETS = ("tabed-target", SECOND_TARGET)
# ablation variants of the module (tiny: trained on tabed-target): name suffix -> module settings. The tiny "own"
# module keeps its projector (it reads no image slot, so the projector gets no gradient and stays as initialised).
MODULE_VARIANTS = {
    "noproj": dict(projector_k=None),
    "k1": dict(projector_k=1),
    "own": dict(context="own"),
}
ALL_VARIANTS = ("", *MODULE_VARIANTS)
# one LM size for the four tiny baselines: tabed-draft's text model
BASELINE_TEXT = dict(
    hidden_size=48, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4
)
BASELINE_LLAVA = dict(text=BASELINE_TEXT, vision=VISION, max_images=5)  # shaped like a vlm.train.TABED_ZOO entry
# The baselines in the paper's order (Gagrani et al. 2024, as AASD's Sec. 4 cites it): a small LLaMA pretrained on
# a general corpus (the foundation drafts' recipe: 900 steps x 32 windows x 128 tokens, prose / code / translation
# 0.45 / 0.35 / 0.20, lr 3e-3), finetuned on the task answers in text-only form (FT-LLaMA); FT-LLaVA is FT-LLaMA's
# language model with a fresh CLIP tower and projector, trained on the image rows for tabed-draft's budget; each DT
# baseline is its FT baseline further trained on the target's greedy answers to 2,000 training prompts.
BASELINE_PRETRAIN = dict(steps=900, batch_size=32, seq_len=128, lr=3e-3)
BASELINE_LLAVA_TRAIN = dict(steps=1500, batch_size=64, lr=2e-3, weight_decay=0.3)  # vlm.train.TABED_ZOO["tabed-draft"]

TINY: dict = dict(
    targets={"tabed-target": ALL_VARIANTS, SECOND_TARGET: ("",)},
    variants=MODULE_VARIANTS,
    module=dict(
        intermediate_size=256,
        projector_k=4,
        context="target",
        answers="task",
        seed=0,
        steps=100,
        batch_size=16,
        lr=2e-3,
        weight_decay=0.0,
        depths=(0, 1, 2, 3, 4),
        max_positions=384,
    ),  # fmt: skip
    distill=dict(rows=2000, max_new_tokens=64),  # a seeded 10 % of the 20,000 training prompts per target
    drafts={
        # answer_positions_only: the LLaVA baselines train as the tiny LLaVA zoo trains (vlm.train), with the
        # output head at the answer positions only (the same loss in other float arithmetic)
        "PT-LLaMA": dict(kind="text", new=BASELINE_TEXT, answers="corpus", seed=31, pretrain=BASELINE_PRETRAIN),
        "FT-LLaMA": dict(kind="text", init="PT-LLaMA", answers="task", seed=31),
        "FT-LLaVA": dict(
            kind="llava",
            new=BASELINE_LLAVA,
            language_model="FT-LLaMA",
            answers="task",
            seed=30,
            answer_positions_only=True,
            finetune=BASELINE_LLAVA_TRAIN,
        ),  # fmt: skip
        "DT-LLaVA": dict(kind="llava", init="FT-LLaVA", answers="target", seed=32, answer_positions_only=True),
        "DT-LLaMA": dict(kind="text", init="FT-LLaMA", answers="target", seed=33),
    },
    target_seed_step=2,  # DT seeds of the second target: 34, 35
    finetune=dict(steps=200, batch_size=32, lr=2e-3, weight_decay=0.1),
)


# Training randomness (issue 26): the modules retrain in seconds to minutes, so each trains with two more seeds. Seed
# k moves the module's seeds (initialisation, batch order, sampled positions) by SEED_STEP * k; the targets, the data
# and every other setting stay. TRAIN_SEEDS trains the main module of every target and the ablation target's variants.
SEED_STEP = 1000
TRAIN_SEEDS = (1, 2)
# The baselines above the pretrained PT-LLaMA (FT-LLaMA, FT-LLaVA on it, the DT baselines on those) retrain in about
# 20 CPU minutes, so they take the same seeds: seed k moves each one's seed by SEED_STEP * k and trains it on seed k's
# parents (PT-LLaMA, 16 CPU minutes of pretraining, the data, the target answers and the settings stay). Their
# weights (5.4 MiB a seed) do not fit data/models/'s 80 MiB, so they go to the gitignored zoo.seed_dir and their rows
# are committed (``python -m specdec.aasd.train baseline-seeds`` rebuilds them).
SEEDED_BASELINES = ("FT-LLaMA", "DT-LLaMA", "FT-LLaVA", "DT-LLaVA")
# A1 at the baselines' budget (docs/papers/aasd.md, A1): the main module of each Table 1 target trained as the DT
# baselines' last stage is, 200 x 32 rows of the target's greedy answers to the same 2,000 training prompts, its
# other settings unchanged; seed 0 in data/models, seeds k > 0 (gitignored) in zoo.seed_dir.
MATCHED_VARIANT = "matched"
MATCHED = dict(
    TINY,
    targets={t: (MATCHED_VARIANT,) for t in TARGETS},
    variants={MATCHED_VARIANT: {}},
    module=dict(TINY["module"], answers="target", steps=200, batch_size=32),
    drafts={},
)
# the modules of A2's target: the same settings and variants as tabed-target's, at the paper's compression ratio
P8 = dict(TINY, targets={P8_TARGET: ALL_VARIANTS}, module=dict(TINY["module"], projector_k=7), drafts={})


def paper_settings(spec: dict, variants=ALL_VARIANTS) -> dict:
    """The recipe's settings for the hub targets of a profile's ``aasd`` section (``spec``: the profile's yaml):
    modules and distilled baselines on the target's own answers to every training prompt; the distilled baselines
    start from the profile's ``init`` drafts with the vision encoder frozen (as in LLaVA's finetuning). The "own"
    variant has no projector: it would get no gradient, and DDP refuses unused parameters."""
    aasd = spec["aasd"]
    drafts = {
        name: dict(kind=draft["kind"], init=draft["init"], answers="target", seed=0, freeze=("vision_tower",))
        for name, draft in aasd["drafts"].items()
        if "init" in draft  # the FT baselines are public drafts (``model``), used as they are
    }
    return dict(
        targets={target: tuple(variants) for target in aasd["targets"]},
        variants={**MODULE_VARIANTS, "own": dict(context="own", projector_k=None)},
        module=dict(aasd["module"], answers="target", seed=0, weight_decay=0.0),
        distill=dict(rows=None, max_new_tokens=aasd["distill_max_new_tokens"]),
        drafts=drafts,
        target_seed_step=0,
        finetune=dict(aasd["distilled"], weight_decay=0.0),
    )


# ----------------------------------------------------------------------------------------------- names
def module_name(target: str, variant: str = "", train_seed: int = 0) -> str:
    """The zoo folder of a target's module (``target``: a zoo name or a hub id); ``train_seed`` k > 0: the same
    module trained with the k-th other seed (``-seed<k>``)."""
    return (
        f"aasd-module-{target.split('/')[-1]}"
        + (f"-{variant}" if variant else "")
        + (f"-seed{train_seed}" if train_seed else "")
    )


def draft_name(draft: str, target: str | None = None) -> str:
    """The zoo folder of a baseline: ``FT-LLaVA`` -> ``aasd-ft-llava``; one trained on a target's answers carries
    the target's name (``DT-LLaMA``, ``llava-hf/llava-1.5-7b-hf`` -> ``aasd-dt-llama-llava-1.5-7b-hf``)."""
    kind, family = draft.split("-")
    return f"aasd-{kind.lower()}-{family.lower()}" + (f"-{target.split('/')[-1]}" if target else "")


def baseline_seed_dir(draft: str, target: str | None, train_seed: int) -> pathlib.Path:
    """Where training seed ``train_seed`` > 0 of a tiny baseline is (``zoo.seed_dir``); ``target`` names a DT
    baseline's target (the FT baselines have none)."""
    distilled = TINY["drafts"][draft]["answers"] == "target"
    return zoo.seed_dir(draft_name(draft, target if distilled else None), train_seed)


def matched_dir(target: str, train_seed: int = 0) -> pathlib.Path:
    """Where the budget-matched module (``MATCHED``) of ``target`` and training seed ``train_seed`` is: seed 0 in
    ``data/models``, seeds k > 0 in the gitignored ``zoo.seed_dir``."""
    name = module_name(target, MATCHED_VARIANT)
    return zoo.seed_dir(name, train_seed) if train_seed else zoo.MODELS / name


def zoo_dir() -> pathlib.Path:
    """Where the paper-scale AASD models live: ``$SPECDEC_AASD_ZOO``, else ``$HF_HOME/specdec-aasd-zoo``."""
    if os.environ.get("SPECDEC_AASD_ZOO"):
        return pathlib.Path(os.environ["SPECDEC_AASD_ZOO"])
    return pathlib.Path(os.environ.get("HF_HOME", pathlib.Path.home() / ".cache" / "huggingface")) / "specdec-aasd-zoo"


def missing(path: pathlib.Path, what: str, target: str) -> hub.ModelNotAvailableError:
    """The error for a paper-scale model not trained yet, naming the command that trains it."""
    return hub.ModelNotAvailableError(
        f"no {what} for {target} at {path} (the AASD authors published none). Train it with "
        f"`python -m specdec.aasd.train paper --target {target}` (or under `accelerate launch`), or point "
        "SPECDEC_AASD_ZOO at a folder holding one"
    )


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ALL_VARIANTS",
    "BASELINE_LLAVA",
    "BASELINE_LLAVA_TRAIN",
    "BASELINE_PRETRAIN",
    "BASELINE_TEXT",
    "MATCHED",
    "MATCHED_VARIANT",
    "MODULE_VARIANTS",
    "P8",
    "P8_PATCH",
    "P8_TARGET",
    "SECOND_TARGET",
    "SEEDED_BASELINES",
    "SEED_STEP",
    "TARGETS",
    "TARGET_SPECS",
    "TINY",
    "TRAIN_SEEDS",
]
