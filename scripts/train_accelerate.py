"""Train on many devices with ``accelerate launch`` (the one loop, ``specdec.zoo.training.train``): one zoo model,
or (first argument ``multilingual-paper``) the multilingual drafter recipe at paper scale.

DDP or FSDP as the accelerate config says (``configs/accelerate/ddp.yaml``, ``fsdp.yaml``); every process draws
the same global batch and trains on its slice, so the run follows the single-process loss curve::

    accelerate launch --config_file configs/accelerate/ddp.yaml scripts/train_accelerate.py \\
        --model tiny-target --steps 1100 --out runs/tiny-target           # 8 GPUs, one process each
    accelerate launch --cpu --num_processes 2 scripts/train_accelerate.py --data random --steps 20 --out /tmp/a
    python scripts/train_accelerate.py --plain --data random --steps 20 --out /tmp/b   # no accelerate at all

The multilingual drafter recipe (``specdec.multilingual.hub_run``; the arguments after ``multilingual-paper``
are those of ``python -m specdec.multilingual.train --profile paper``): each process generates its share of the
self-distillation files, then every drafter trains on all processes (DDP, or FSDP for the 1B drafter)::

    accelerate launch --config_file configs/accelerate/ddp.yaml scripts/train_accelerate.py multilingual-paper \
        all --out $SPECDEC_ML_DRAFTERS

``--data corpus`` trains on the embedded corpus (``make models``' data); ``random`` on seeded random tokens
(a smoke test of the launch). The main process writes ``<out>/curve.json`` (the logged train losses, the sum of
every parameter, the number of processes, accelerate's distributed type) and, with ``--save``, the float16
weights (``zoo.training.save_half``). On a machine without GPUs, ``ACCELERATE_USE_CPU=true accelerate launch
--config_file configs/accelerate/ddp.yaml --num_processes 2 ...`` runs DDP on CPU processes (gloo); accelerate
runs FSDP on accelerators only (on CPU the FSDP config falls back to DDP).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import torch

from specdec import zoo
from specdec.zoo import corpus as corpus_lib
from specdec.zoo import training


def streams(data: str, seed: int = 0) -> tuple[dict, dict]:
    """``(train, heldout)`` token streams per kind: the corpus (``token_streams``) or seeded random tokens."""
    if data == "random":
        g = torch.Generator().manual_seed(seed)
        make = lambda: {k: torch.randint(3, zoo.VOCAB_SIZE, (6000,), generator=g) for k in training.KIND_WEIGHTS}  # noqa: E731
        return make(), make()
    from transformers import AutoTokenizer

    docs = corpus_lib.build_corpus()
    tokenizer = AutoTokenizer.from_pretrained(zoo.MODELS / "tokenizer")
    return training.token_streams(docs, tokenizer, "train"), training.token_streams(docs, tokenizer, "heldout")


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["multilingual-paper"]:
        from accelerate import Accelerator

        from specdec.multilingual import hub_run

        hub_run.main(argv[1:], accelerator=Accelerator())
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="tiny-draft-xs", help="a zoo name (zoo.llama_config)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8, help="global batch (split over the processes)")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--log-every", type=int, default=1)
    parser.add_argument("--data", choices=["corpus", "random"], default="corpus")
    parser.add_argument("--plain", action="store_true", help="no accelerate: the single-process loop")
    parser.add_argument("--save", action="store_true", help="write the float16 weights too")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    accelerator = None
    if not args.plain:
        from accelerate import Accelerator

        accelerator = Accelerator()
        if args.batch_size % accelerator.num_processes:
            raise SystemExit(f"--batch-size {args.batch_size} must split evenly over {accelerator.num_processes}")
    train, heldout = streams(args.data)
    model, rows = training.train_model(
        args.model,
        train,
        heldout,
        steps=args.steps,
        batch_size=args.batch_size,
        seq_len=args.seq_len,
        lr=args.lr,
        seed=zoo.list_seed(args.model),
        log_every=args.log_every,
        accelerator=accelerator,
    )
    if accelerator is not None:
        model = accelerator.unwrap_model(model)
        if not accelerator.is_main_process:
            return
    args.out.mkdir(parents=True, exist_ok=True)
    curve = dict(
        model=args.model,
        processes=accelerator.num_processes if accelerator is not None else 1,
        distributed_type=str(accelerator.distributed_type) if accelerator is not None else "none",
        steps=[r["step"] for r in rows],
        train_loss=[r["train_loss"] for r in rows],
        checksum=float(sum(p.detach().double().sum() for p in model.parameters())),
    )
    (args.out / "curve.json").write_text(json.dumps(curve) + "\n")
    if args.save:
        training.save_half(model, args.out / args.model)
        (args.out / args.model / "training_log.json").write_text(json.dumps(rows, indent=0) + "\n")


if __name__ == "__main__":
    main()
