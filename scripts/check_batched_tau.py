"""Recompute every committed row of results/tiny/tau_vs_gamma.csv with the batched ``bench.acceptance_rows`` (as
notebook 01 cell 8 calls it: 20 held-out prompts per kind, both drafts, γ 1-8, 48 tokens) and compare them.

    PYTHONPATH=src OMP_NUM_THREADS=1 python scripts/check_batched_tau.py [--batch-size 16]
"""

import argparse
import time

import pandas as pd
import torch

from specdec import bench
from specdec.zoo import tasks
from specdec.zoo.models import load_pair, load_profile

COLUMNS = ["draft", "gamma", "prompt", "new_tokens", "target_calls", "accepted", "drafted"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    spec = load_profile("tiny")["pairs"]
    models = {n: load_pair("tiny", n) for n in ["default", "xs"]}
    target, _, tokenizer = models["default"]
    prompts = [tasks.encode(tokenizer, p["prompt"]) for p in tasks.heldout_prompts(n=20)]
    t0 = time.perf_counter()
    rows = []
    for n in ["default", "xs"]:
        for g in [1, 2, 3, 4, 6, 8]:
            rows += bench.acceptance_rows(
                target, {spec[n]["draft"]: models[n][1]}, prompts, [g], 48, batch_size=args.batch_size
            )
    seconds = time.perf_counter() - t0
    key = ["draft", "gamma", "prompt"]
    new = pd.DataFrame(rows)[COLUMNS].sort_values(key).reset_index(drop=True)
    old = pd.read_csv("results/tiny/tau_vs_gamma.csv")[COLUMNS].sort_values(key).reset_index(drop=True)
    print(
        f"{len(new)} rows recomputed in {seconds:.0f} s (batch size {args.batch_size}); identical to the committed "
        f"{len(old)}: {new.equals(old)}"
    )
    if not new.equals(old):
        diff = (new != old).any(axis=1)
        print(pd.concat([old[diff], new[diff]], axis=1).head(20).to_string())


if __name__ == "__main__":
    main()
