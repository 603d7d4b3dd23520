"""The tiny model zoo: names, configurations and where the shipped weights live.

Every model is a transformers ``LlamaForCausalLM`` built from a config and trained by
``specdec.zoo.training`` on the embedded corpus; all share one BPE tokenizer (``data/models/tokenizer``).
"""

from __future__ import annotations

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "data"
MODELS = DATA / "models"
TOKENIZER_DIR = MODELS / "tokenizer"
PROMPTS = DATA / "prompts" / "heldout.jsonl"
# training seeds k > 0 of retrained models (gitignored, ``seed<k>/<name>``); SPECDEC_SEED_MODELS: another folder
SEED_MODELS = pathlib.Path(os.environ.get("SPECDEC_SEED_MODELS") or DATA / "models-seeds")
SEED_STEP = 1000  # a model's seed of training seed k: its seed 0's + SEED_STEP * k (the papers' zoos do the same)

VOCAB_SIZE = 4096
MAX_POSITIONS = 1024

# name -> LlamaConfig overrides. The target has ~2.6 M parameters; the drafts are ~7x and ~17x smaller
# (most draft parameters are the tied embedding of the shared 4096-token vocabulary).
TINY_ZOO: dict[str, dict] = {
    "tiny-target": dict(
        hidden_size=192, intermediate_size=512, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=6
    ),
    "tiny-draft-s": dict(
        hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4
    ),
    "tiny-draft-xs": dict(
        hidden_size=32, intermediate_size=96, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2
    ),
}

# How long each model trains (optimizer steps of batch x seq_len tokens); fixed for determinism.
TRAIN_STEPS = {"tiny-target": 1100, "tiny-draft-s": 900, "tiny-draft-xs": 900}


def llama_config(name_or_size: str | dict):
    """The ``LlamaConfig`` every zoo language model shares (the zoo tokenizer's vocabulary and special ids, tied
    embeddings), sized by a foundation zoo name (``TINY_ZOO``) or a dict of size fields (a paper's own zoo)."""
    from transformers import LlamaConfig

    if isinstance(name_or_size, dict):
        size = name_or_size
    else:
        size = TINY_ZOO[name_or_size]
    return LlamaConfig(
        vocab_size=VOCAB_SIZE,
        max_position_embeddings=MAX_POSITIONS,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        **size,
    )


def model_dir(name: str) -> pathlib.Path:
    return MODELS / name


def list_seed(name: str) -> int:
    """A fixed training seed per foundation model (its position in the zoo; a paper's zoo numbers on after it)."""
    return list(TINY_ZOO).index(name)


def seed_dir(name: str, train_seed: int) -> pathlib.Path:
    """Where training seed ``train_seed`` > 0 of a zoo model is (``SEED_MODELS/seed<k>/<name>``)."""
    return SEED_MODELS / f"seed{int(train_seed)}" / name
