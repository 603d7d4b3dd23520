"""Time a short slice of training, on this CPU, for the zoo models whose shipped training ran on a GPU only (so no
CPU time is recorded): the CoS zoo, the multilingual target and generic drafter, and the TABED target. Each model
is built from its shipped config with fresh weights and trained by ``specdec.zoo.training.train`` for a few steps
at its shipped batch shape (batch × sequence length; TABED: rows of the TABED data file); the per-step time after
the first steps is extrapolated to the shipped step count. Batches of the language models are random token
windows of the shipped shape: the time of a step does not depend on which tokens it holds.

    OMP_NUM_THREADS=1 .venv/bin/python scripts/time_zoo_training.py        # ~6 min on one thread
    OMP_NUM_THREADS=1 .venv/bin/python scripts/time_zoo_training.py --only cos-amateur --steps 20

Prints one line per model: steps timed, CPU and wall seconds per step, shipped steps, extrapolated CPU minutes.
The machine may be shared: the numbers are what one thread of it gave at the time, with the load beside them.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "data" / "models"
# name -> (shipped steps, batch size, sequence length, timed steps); the shipped settings are the data card's
LM_JOBS = {
    "cos-amateur": (3000, 32, 256, 60),
    "cos-general": (3000, 32, 256, 30),  # cos-code and cos-math have the same config and settings
    "cos-expert": (3000, 32, 256, 20),
    "ml-draft-generic": (2000, 32, 256, 60),
    "ml-target": (3000, 32, 256, 20),
}
LLAVA_JOBS = {"tabed-target": (3000, 64, None, 8)}
WARMUP = 2  # steps not timed (allocation, first-call overheads)


def lm_slice(name: str, batch_size: int, seq_len: int, steps: int) -> tuple[float, float]:
    """``(CPU, wall)`` seconds per step of next-token training of a fresh model of ``name``'s config."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from specdec.zoo.training import next_token_loss

    config = LlamaConfig.from_pretrained(MODELS / name)
    config.dtype = torch.float32
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)

    def batches(g):
        return torch.randint(3, config.vocab_size, (batch_size, seq_len + 1), generator=g)

    return timed(model, batches, next_token_loss, steps)


def llava_slice(name: str, batch_size: int, steps: int, data_path: pathlib.Path) -> tuple[float, float]:
    """``(CPU, wall)`` seconds per TABED training step (``vlm.train.train_model``'s batches and loss) of ``name``."""
    from transformers import LlavaForConditionalGeneration

    from specdec.vlm import train as vt
    from specdec.vlm.batches import batch_inputs

    data = torch.load(data_path, weights_only=True)
    spec = vt.TABED_ZOO[name]
    split, _, images = vt.spec_splits(data, spec, "cpu")
    allowed = torch.nonzero(vt._select(split, spec["max_images"])).squeeze(1)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(vt.llava_config(name, spec))

    def loss_fn(m, rows):
        loss_tok, _, mask = vt._token_losses(m, batch_inputs(split, images, rows))
        return loss_tok[mask].mean()

    return timed(model, lambda g: allowed[torch.randint(len(allowed), (batch_size,), generator=g)], loss_fn, steps)


def timed(model, batches, loss_fn, steps: int) -> tuple[float, float]:
    """``(CPU seconds, wall seconds)`` per step. CPU time (``time.process_time``, one thread) is what the step
    costs; on a shared machine the wall time is longer by the share of the core this process did not get."""
    from specdec.zoo.training import train

    train(model, batches, loss_fn, steps=WARMUP, lr=1e-3, seed=0, progress=False, log_every=WARMUP)
    cpu, wall = time.process_time(), time.perf_counter()
    train(model, batches, loss_fn, steps=steps, lr=1e-3, seed=1, progress=False, log_every=steps)
    return (time.process_time() - cpu) / steps, (time.perf_counter() - wall) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="model names (default: all)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default: per model)")
    parser.add_argument("--data", type=pathlib.Path, default=ROOT / ".cache" / "tabed_data.pt")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"threads 1, load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    for name, (shipped, batch, seq, steps) in {**LM_JOBS, **LLAVA_JOBS}.items():
        if args.only and name not in args.only:
            continue
        steps = args.steps or steps
        if name in LM_JOBS:
            cpu, wall = lm_slice(name, batch, seq, steps)
        else:
            if not args.data.exists():
                print(f"{name}: no {args.data} (python -m specdec.vlm.train data)")
                continue
            cpu, wall = llava_slice(name, batch, steps, args.data)
        print(
            f"{name}: {steps} steps timed, {cpu:.3f} CPU s/step ({wall:.3f} wall), {shipped} shipped steps -> "
            f"{cpu * shipped / 60:.1f} CPU min ({wall * shipped / 60:.1f} wall; load {os.getloadavg()[0]:.2f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
