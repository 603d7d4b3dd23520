"""The tiny model zoo: names, configurations and where the shipped weights live.

Every model is a transformers ``LlamaForCausalLM`` built from a config and trained by
``specdec.zoo.training`` on the embedded corpus; all share one BPE tokenizer (``data/models/tokenizer``).
"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "data"
MODELS = DATA / "models"
TOKENIZER_DIR = MODELS / "tokenizer"
PROMPTS = DATA / "prompts" / "heldout.jsonl"

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


# The CoS zoo (collaborative decoding): WE members of one size with different specialities (general text,
# Python code, arithmetic; like Qwen2.5 / -Coder / -Math) and a CD pair (small amateur, large expert) trained
# on the same mixture. ``mix`` weights the kinds of training windows: the embedded corpus (prose, code,
# translation) and the task-format documents of ``specdec.cos.tasks`` (gsm8k, mmlu, cnndm; train split).
_WE_SIZE = dict(
    hidden_size=128, intermediate_size=384, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4
)
_GENERAL_MIX = {"prose": 0.30, "translation": 0.10, "code": 0.15, "gsm8k": 0.18, "mmlu": 0.17, "cnndm": 0.10}
COS_ZOO: dict[str, dict] = {
    "cos-general": dict(config=_WE_SIZE, mix=_GENERAL_MIX),
    "cos-code": dict(config=_WE_SIZE, mix={"code": 0.60, "prose": 0.10, "gsm8k": 0.10, "mmlu": 0.10, "cnndm": 0.10}),
    "cos-math": dict(config=_WE_SIZE, mix={"gsm8k": 0.55, "prose": 0.15, "code": 0.10, "mmlu": 0.10, "cnndm": 0.10}),
    "cos-amateur": dict(config=TINY_ZOO["tiny-draft-s"], mix=_GENERAL_MIX),
    "cos-expert": dict(config=TINY_ZOO["tiny-target"], mix=_GENERAL_MIX),
}
COS_TRAIN = dict(steps=3000, batch_size=32, seq_len=256, lr=3e-3)


def llama_config(name_or_size: str | dict):
    """The ``LlamaConfig`` every zoo language model shares (the zoo tokenizer's vocabulary and special ids, tied
    embeddings), sized by a zoo name (``TINY_ZOO``, ``COS_ZOO``) or a dict of size fields."""
    from transformers import LlamaConfig

    if isinstance(name_or_size, dict):
        size = name_or_size
    else:
        size = TINY_ZOO[name_or_size] if name_or_size in TINY_ZOO else COS_ZOO[name_or_size]["config"]
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
    """A fixed training seed per model (its position in the zoo)."""
    return (list(TINY_ZOO) + list(COS_ZOO)).index(name)
