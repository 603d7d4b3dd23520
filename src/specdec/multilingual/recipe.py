"""The one training recipe of *Towards Fast Multilingual LLM Inference: Speculative Decoding and Specialized Drafters*
(Yi et al.), as configuration: the stages are ``specdec.multilingual.algorithm`` (pretraining, self-distillation,
loading the distilled conversations, the F / P-F finetune, saving), and this module says with which settings each
profile runs them (tiny: ``TRAIN``, ``SIZES``, ``MIXES``, the shipped ``ml-*`` zoo; paper: ``paper_settings``, from
``paper.yaml``), the names of the models they train and each model's seed (``model_seed``).

The drivers put the stages in order: ``specdec.multilingual.zoo_run`` (tiny: data from
``specdec.multilingual.data``, every model trained here, held-out metrics, ``ml_training.csv``) and
``specdec.multilingual.hub_run`` (paper: hub datasets, resumable distillation files, ``accelerate launch``). The
command line is ``python -m specdec.multilingual.train [--profile paper] ...`` (``specdec.multilingual.train``).
"""

from __future__ import annotations

import zlib

from specdec import zoo
from specdec.zoo import cli
from specdec.zoo.models import load_profile
from specdec.zoo.training import KIND_WEIGHTS

# ----------------------------------------------------------------------------------------------- tiny config
TARGET = "ml-target"
GENERIC = "ml-draft-generic"
LARGE = "ml-draft-large-pf-de"
BUDGET_LANG = "de"
DISTIL_DIRECTION = "xx-en"

SIZES = {
    "target": zoo.TINY_ZOO["tiny-target"],
    "draft": zoo.TINY_ZOO["tiny-draft-s"],
    # Table 6's Tiny-Vicuna 1B stands to Vicuna 7B at ~0.15x of its non-embedding parameters (0.97B / 6.5B) and
    # 22 / 32 of its layers; this drafter stands to ml-target at 0.15x (0.26M / 1.77M) and 3 / 4.
    "large": dict(
        hidden_size=80, intermediate_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4
    ),
}
# Weights of the kinds of training windows (``instruct``: the translation instruction documents).
# ``general``: the drafters' pretraining P, the foundation zoo's standing corpus mix (``KIND_WEIGHTS``,
# its translation kind the Django phrasebook pages without the held-out strings). The paper's P (C4 + ShareGPT,
# Vicuna 68M's data) holds some non-English conversations but gives no share: the proxy takes the corpus' mix rather
# than a share picked for a finding (issue 26, M3; docs/papers/multilingual.md).
MIXES = {
    "target": {"prose": 0.25, "code": 0.15, "translation": 0.15, "instruct": 0.45},
    "general": dict(KIND_WEIGHTS),
}
TRAIN = dict(
    target_steps=3000,
    pretrain_steps=2000,
    large_pretrain_steps=2000,  # window (pre)training steps
    batch_size=32,
    seq_len=256,
    lr=3e-3,
    ft_batch_size=64,
    ft_lr=2e-3,
    # App. F.3: P-F trains 3 epochs and F 5 over a pair's distilled conversations (cosine, 3 % warm-up); every
    # finetune set of Fig. 4's grid gets the same passes. Batch and lr stay the project's tiny finetune settings.
    ft_passes={"P-F": 3, "F": 5},
    ft_warmup=0.03,
    budget_factor=4,
    n_budgets=4,  # Fig. 4: nested quarters of a pair's distilled prompts, each trained for the same passes
    temperatures=(0.0, 0.3, 0.7, 1.0),
    max_new_tokens=48,
    gen_batch_size=1024,  # self-distillation
    max_prompt_tokens=160,  # longer prompts (a few long Sphinx messages) are left out of distillation / eval
    eval_windows=64,
    eval_batch_size=256,
    min_prompts=8,
)
# CI smoke runs (``steps_scale < SMOKE_SCALE``) also use these smaller batches, windows and answers.
SMOKE_SCALE = 0.01
# Fig. 4's grid shrinks to 2 nested sets: a smoke run distils a handful of prompts per pair (8 at --steps-scale
# 0.0005), too few for 4 distinct quarters.
SMOKE = dict(
    batch_size=8, seq_len=128, ft_batch_size=16, eval_windows=8, max_new_tokens=16, gen_batch_size=64, n_budgets=2
)

# ----------------------------------------------------------------------------------------------- paper config
DISTIL_DIR = "self-distillation"
# --smoke: the recipe end to end in seconds on tiny stand-ins (scripts/paper_smoke.py, tests)
PAPER_SMOKE = dict(
    prompts_per_pair=3,
    max_new_tokens=6,
    max_length=512,  # the stand-in tokenizer spends ~2 tokens a word: Vicuna's system prompt is ~200
    epochs={"P-F": 1, "F": 1},
    batch_size=2,
    budgets=[2],
    gen_batch_size=8,
    chunk_size=2,
)


def budget_name(kind: str, n_examples: int) -> str:
    """The name of a Fig. 4 drafter (``kind`` f or pf) finetuned on ``n_examples`` distilled examples."""
    return f"ml-draft-{kind}-{BUDGET_LANG}-b{n_examples}"


def subset_fractions(cfg: dict) -> list[float]:
    """The Fig. 4 grid: fractions of a pair's distilled prompts, smallest first; the last (1) is the main drafter."""
    return [1 / cfg["budget_factor"] ** k for k in range(cfg["n_budgets"] - 1, -1, -1)]


def model_names(langs=None, cfg: dict | None = None) -> list[str]:
    """Every model directory ``train_all`` saves, in training order (the Fig. 4 grid's points are named after their
    example counts, known only once the data are distilled: see ``Run.grid``)."""
    langs = list(langs or ["de", "fr", "ru", "ja", "zh"])
    names = [TARGET, GENERIC]
    for lang in langs:
        names += [f"ml-draft-f-{lang}", f"ml-draft-pf-{lang}"]
    return names + ([LARGE] if BUDGET_LANG in langs else [])


def tiny_settings(steps_scale: float = 1.0, prompts_per_set: int | None = None, **overrides) -> dict:
    """``TRAIN`` (with ``SMOKE`` below ``SMOKE_SCALE``), then ``overrides`` (names of ``TRAIN`` only); a step scale
    that is not a finite number > 0 or a ``prompts_per_set`` below 1 is an error (``zoo.cli.check_budget``)."""
    cli.check_budget(steps_scale, prompts_per_set)
    unknown = set(overrides) - set(TRAIN)
    if unknown:
        raise ValueError(f"unknown training settings {sorted(unknown)}; known: {sorted(TRAIN)}")
    return {**TRAIN, **(SMOKE if steps_scale < SMOKE_SCALE else {}), **overrides}


def paper_settings(smoke: bool = False, **overrides) -> dict:
    """``paper.yaml``'s ``multilingual.recipe`` (``PAPER_SMOKE`` on top with ``smoke``, then ``overrides``), with
    the target id, the prompt and the chat template."""
    spec = load_profile("paper")
    ml = spec["multilingual"]
    cfg = dict(ml["recipe"])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown recipe settings {sorted(unknown)}; known: {sorted(cfg)}")
    cfg.update(PAPER_SMOKE if smoke else {})
    cfg.update(overrides)
    cfg.update(
        target=spec["pairs"]["multilingual"]["target"],
        prompt=ml["prompt"],
        chat_template=ml["chat_template"],
        revisions=spec.get("revisions") or {},
    )
    return cfg


# ----------------------------------------------------------------------------------------------- models
def model_seed(name: str, train_seed: int = 0) -> int:
    """A fixed seed per model name (stable across runs and machines). ``train_seed`` k > 0 is the k-th other training
    seed of the same model (issue 26's training randomness: the initialisation of an F drafter and the data order
    of every finetune); 0 is the seed the shipped zoo was trained with."""
    if train_seed < 0:
        raise ValueError(f"train_seed must be >= 0, got {train_seed}")
    key = name if train_seed == 0 else f"{name}#train_seed={train_seed}"
    return zlib.crc32(key.encode()) % 100_000


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "BUDGET_LANG",
    "DISTIL_DIR",
    "DISTIL_DIRECTION",
    "GENERIC",
    "LARGE",
    "MIXES",
    "PAPER_SMOKE",
    "SIZES",
    "SMOKE",
    "SMOKE_SCALE",
    "TARGET",
    "TRAIN",
    "model_seed",
]
