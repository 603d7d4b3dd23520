"""Quality gates of the tiny zoo: held-out loss, non-degenerate target text, held-out τ per draft.

``python -m specdec.zoo.quality`` prints the report and writes ``data/models/zoo_quality.csv`` beside the
weights it describes; notebook 00 shows it. Gates: distinct 8-gram fraction of the target's greedy
continuations ≥ 0.5 (greedy loops would inflate τ) and greedy τ at γ = 5 ≥ 2.0 for each draft.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
from tqdm.auto import tqdm

from specdec import zoo
from specdec.bench import acceptance_sweep
from specdec.engine import autoregressive
from specdec.sampling import SamplingConfig
from specdec.zoo import tasks
from specdec.zoo.models import load

DISTINCT_8GRAM_GATE = 0.5
GREEDY_TAU_GATE = 2.0


def zoo_report(n_per_kind: int = 10, gamma: int = 5, max_new_tokens: int = 64, seed: int = 0) -> list[dict]:
    """One row per model with its parameter count, held-out loss (from its training log) and, for drafts,
    held-out τ / α at γ greedy and at temperature 1; for the target the distinct 8-gram fraction."""
    target, tokenizer = load("tiny-target")
    prompts = [tasks.encode(tokenizer, p["prompt"]) for p in tasks.heldout_prompts(n=n_per_kind)]
    rows = []
    n_target = sum(p.numel() for p in target.parameters())
    outs = [
        autoregressive(target, ids, max_new_tokens=max_new_tokens, eos_token_id=[]).output_ids
        for ids in tqdm(prompts, desc="target greedy", leave=False)
    ]
    distinct = statistics.mean(tasks.distinct_ngram_fraction(o, 8) for o in outs)
    rows.append(
        {
            "model": "tiny-target",
            "role": "target",
            "parameters": n_target,
            "heldout_loss": _final_loss("tiny-target"),
            "distinct_8gram": round(distinct, 4),
        }
    )
    for name in [n for n in zoo.TINY_ZOO if n != "tiny-target"]:
        draft, _ = load(name)
        row = {
            "model": name,
            "role": "draft",
            "parameters": sum(p.numel() for p in draft.parameters()),
            "heldout_loss": _final_loss(name),
        }
        row["size_ratio"] = round(n_target / row["parameters"], 2)
        for label, temperature in (("greedy", 0.0), ("t1", 1.0)):
            (sweep,) = acceptance_sweep(
                target, {name: draft}, prompts, [gamma], max_new_tokens, SamplingConfig(temperature), seed
            )
            row[f"tau_{label}"] = round(sweep["block_efficiency"], 4)
            row[f"alpha_{label}"] = round(sweep["acceptance_rate"], 4)
        rows.append(row)
    return rows


def _final_loss(name: str) -> float:
    log = json.loads((zoo.model_dir(name) / "training_log.json").read_text())
    return [r["heldout_loss"] for r in log if "heldout_loss" in r][-1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-per-kind", type=int, default=10)
    parser.add_argument("--gamma", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    import pandas as pd

    df = pd.DataFrame(zoo_report(args.n_per_kind, args.gamma, args.max_new_tokens))
    print(df.to_string(index=False))
    target = df[df.role == "target"].iloc[0]
    print(
        f"gate distinct 8-gram >= {DISTINCT_8GRAM_GATE}: {target.distinct_8gram:.3f} "
        f"{'PASS' if target.distinct_8gram >= DISTINCT_8GRAM_GATE else 'FAIL'}"
    )
    for _, d in df[df.role == "draft"].iterrows():
        print(
            f"gate greedy tau >= {GREEDY_TAU_GATE} ({d.model}): {d.tau_greedy:.3f} "
            f"{'PASS' if d.tau_greedy >= GREEDY_TAU_GATE else 'FAIL'}"
        )
    df.to_csv(zoo.MODELS / "zoo_quality.csv", index=False)


if __name__ == "__main__":
    main()
