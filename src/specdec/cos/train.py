"""Training the CoS zoo (``COS_ZOO``): WE specialists and a CD amateur / expert pair.

Two steps, so the training can run on a machine without the corpus sources (e.g. a GPU box):

    python -m specdec.cos.train streams --streams .gpu/cos_streams.pt   # tokenise corpus + task documents
    python -m specdec.cos.train train --streams .gpu/cos_streams.pt --device cuda --out data/models

``python -m specdec.cos.train`` (what ``make models-cos`` runs, with ``--out data/models``) does both on this machine;
without ``--out`` the weights go to ``.cache/trained`` (``specdec.zoo.cli``: never the committed zoo unless named).
All models use the
foundation tokenizer; each draws training windows by its own mixture of kinds, with a fixed seed. Weights
are stored as float16 (the config stays float32, so they load as float32): shipped tiny weights are data.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from typing import Any

import torch

from specdec import validate, zoo
from specdec.cos import tasks as cos_tasks
from specdec.zoo import cli
from specdec.zoo import corpus as corpus_lib
from specdec.zoo.cli import scaled_steps
from specdec.zoo.training import device_name, heldout_loss, save_half, train_model

# The CoS zoo (collaborative decoding): WE members of one size with different specialities (general text,
# Python code, arithmetic; like Qwen2.5 / -Coder / -Math) and a CD pair (small amateur, large expert) trained
# on the same mixture. ``mix`` weights the kinds of training windows: the embedded corpus (prose, code,
# translation) and the task-format documents of ``specdec.cos.tasks`` (gsm8k, mmlu, cnndm; train split).
WE_SIZE = dict(
    hidden_size=128, intermediate_size=384, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4
)
GENERAL_MIX = {"prose": 0.30, "translation": 0.10, "code": 0.15, "gsm8k": 0.18, "mmlu": 0.17, "cnndm": 0.10}
COS_ZOO: dict[str, dict] = {
    "cos-general": dict(config=WE_SIZE, mix=GENERAL_MIX),
    "cos-code": dict(config=WE_SIZE, mix={"code": 0.60, "prose": 0.10, "gsm8k": 0.10, "mmlu": 0.10, "cnndm": 0.10}),
    "cos-math": dict(config=WE_SIZE, mix={"gsm8k": 0.55, "prose": 0.15, "code": 0.10, "mmlu": 0.10, "cnndm": 0.10}),
    "cos-amateur": dict(config=zoo.TINY_ZOO["tiny-draft-s"], mix=GENERAL_MIX),
    "cos-expert": dict(config=zoo.TINY_ZOO["tiny-target"], mix=GENERAL_MIX),
}
COS_TRAIN: dict[str, Any] = dict(steps=3000, batch_size=32, seq_len=256, lr=3e-3)


SEED_STEP = 1000  # training seed k of a model: its seed + SEED_STEP * k, saved under zoo.seed_dir(name, k)


def model_seed(name: str, train_seed: int = 0) -> int:
    """The training seed of a CoS model: its position in ``COS_ZOO`` after the foundation zoo's models (the seeds
    the shipped weights were trained with), moved by ``SEED_STEP * train_seed`` for training seed k > 0."""
    validate.choice("CoS model", name, list(COS_ZOO))
    validate.integer("train_seed", train_seed, minimum=0)
    return len(zoo.TINY_ZOO) + list(COS_ZOO).index(name) + SEED_STEP * train_seed


def heldout_by_kind(model, heldout: dict) -> dict[str, float]:
    """``{kind: held-out loss}`` of ``model`` on each held-out stream alone (nats, 4 decimals)."""
    return {k: round(heldout_loss(model, {k: v}, mix={k: 1.0}), 4) for k, v in heldout.items()}


TASK_DOCS = {"gsm8k": 8000, "mmlu": 4000, "cnndm": None}  # documents per task (None: all of the split)


def build_streams(tokenizer) -> dict:
    """``{"train": {kind: LongTensor}, "heldout": {kind: LongTensor}}`` for every kind any mixture uses."""

    def stream(texts):
        ids: list[int] = []
        for text in texts:
            ids += [
                tokenizer.bos_token_id,
                *tokenizer(text, add_special_tokens=False)["input_ids"],
                tokenizer.eos_token_id,
            ]
        return torch.tensor(ids, dtype=torch.int16)  # vocabulary 4096 fits

    docs = corpus_lib.build_corpus(split="name")  # the split the shipped CoS zoo was trained on (see its data card)
    out = {"train": {}, "heldout": {}}
    for split in out:
        for kind in ("prose", "code", "translation"):
            out[split][kind] = stream(d["text"] for d in docs if d["split"] == split and d["kind"] == kind)
    loaders = {"gsm8k": cos_tasks.arithmetic, "mmlu": cos_tasks.multiple_choice}
    for task, n in TASK_DOCS.items():
        for split, task_split, count in (("train", "train", n), ("heldout", "test", 300)):
            if task == "cnndm":
                rows = cos_tasks.summaries(None, split=task_split)
            else:
                rows = loaders[task](count, split=task_split)
            out[split][task] = stream(r["prompt"] + r["reference"] for r in rows)
    return out


def train_all(
    streams: dict,
    names,
    out_dir: pathlib.Path,
    device: str = "cpu",
    steps_scale: float = 1.0,
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR,
    train_seed: int = 0,
) -> list[dict]:
    """Train ``names`` of ``COS_ZOO`` with training seed ``train_seed`` (initialisation and window draws) and save
    each under ``out_dir/<name>``; returns summary rows."""
    from transformers import AutoTokenizer

    scaled_steps(COS_TRAIN["steps"], steps_scale)  # a bad scale fails before anything is loaded or written
    unknown = sorted(set(names) - set(COS_ZOO))
    if unknown:
        raise ValueError(f"unknown models {unknown}: COS_ZOO has {sorted(COS_ZOO)}")
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    train = {k: v.long() for k, v in streams["train"].items()}
    heldout = {k: v.long() for k, v in streams["heldout"].items()}
    rows = []
    for name in names:
        spec = COS_ZOO[name]
        steps = scaled_steps(COS_TRAIN["steps"], steps_scale)
        t0 = time.perf_counter()
        model, log = train_model(
            name,
            train,
            heldout,
            steps=steps,
            batch_size=COS_TRAIN["batch_size"],
            seq_len=COS_TRAIN["seq_len"],
            lr=COS_TRAIN["lr"],
            seed=model_seed(name, train_seed),
            config=spec["config"],
            mix=spec["mix"],
            device=device,
            log_every=max(1, steps // 10),
        )
        seconds = time.perf_counter() - t0
        per_kind = heldout_by_kind(model, heldout)
        save_half(model.cpu(), out_dir / name)
        tokenizer.save_pretrained(out_dir / name)
        info = {
            "model": name,
            "parameters": sum(p.numel() for p in model.parameters()),
            "steps": steps,
            "train_seed": train_seed,
            "device": device_name(device),
            "seconds": round(seconds, 1),
            "heldout_loss": per_kind,
        }
        (out_dir / name / "training_log.json").write_text(json.dumps({"summary": info, "log": log}, indent=0) + "\n")
        rows.append(info)
        print(json.dumps(info), flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="?", choices=["streams", "train", "all"], default="all")
    parser.add_argument("--streams", type=pathlib.Path, default=pathlib.Path(".cache/cos_streams.pt"))
    parser.add_argument("--out", type=pathlib.Path, default=None, help=f"default {cli.TRAINED} (data/models: say so)")
    parser.add_argument("--models", nargs="*", default=list(COS_ZOO))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps-scale", type=cli.POS_NUMBER, default=1.0, help="multiply the steps (> 0)")
    parser.add_argument(
        "--train-seed",
        type=int,
        default=0,
        help="training seed k > 0: each model's seed + 1000 k, into data/models-seeds/seed<k> unless --out is given",
    )
    args = parser.parse_args(argv)
    if args.train_seed < 0:
        parser.error(f"--train-seed must be 0 (the shipped zoo) or a seed k > 0, got {args.train_seed}")
    unknown = sorted(set(args.models) - set(COS_ZOO))
    if unknown:
        parser.error(f"unknown models {unknown}: COS_ZOO has {sorted(COS_ZOO)}")
    if args.train_seed and (args.out is None or args.out.resolve() == zoo.MODELS):
        args.out = zoo.SEED_MODELS / f"seed{args.train_seed}"
    args.out = cli.output_dir(args.out)
    if args.step in ("streams", "all"):
        from transformers import AutoTokenizer

        streams = build_streams(AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR))
        args.streams.parent.mkdir(parents=True, exist_ok=True)
        torch.save(streams, args.streams)
        print({split: {k: len(v) for k, v in s.items()} for split, s in streams.items()})
    if args.step in ("train", "all"):
        streams = torch.load(args.streams, weights_only=True)
        train_all(
            streams, args.models, args.out, device=args.device, steps_scale=args.steps_scale, train_seed=args.train_seed
        )


if __name__ == "__main__":
    main()

# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "COS_TRAIN",
    "COS_ZOO",
    "GENERAL_MIX",
    "SEED_STEP",
    "TASK_DOCS",
    "WE_SIZE",
    "main",
    "model_seed",
    "train_all",
]
