"""Tokens/s of batched speculative decoding (``batching.generate_batch``) at B = 1, 4, 8, 16 on the tiny pair of
notebook 01, greedy, γ 5, 64 new tokens, one thread; rounds interleave the batch sizes (and ``engine.generate``
one prompt at a time); medians. Optionally (``--profile``) the per-step breakdown of ``speed.step_profile``.

    PYTHONPATH=src python scripts/bench_batched.py --prompts 16 --repeats 5 [--profile] [--csv out.csv]
"""

from __future__ import annotations

import argparse

import torch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile-name", default="tiny")
    parser.add_argument("--pair", default="default")
    parser.add_argument("--prompts", type=int, default=16, help="held-out prompts decoded at every batch size")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--gamma", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also print the per-step time breakdown")
    parser.add_argument("--csv", help="write the per-round rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from specdec import bench, speed
    from specdec.zoo import tasks
    from specdec.zoo.models import load_pair

    target, draft, tokenizer = load_pair(args.profile_name, args.pair)
    per_kind = -(-args.prompts // 3)  # three kinds of held-out prompts
    prompts = [tasks.encode(tokenizer, p["prompt"]) for p in tasks.heldout_prompts(n=per_kind)][: args.prompts]
    print(
        f"device: {bench.describe_device('cpu')}; {len(prompts)} prompts, γ {args.gamma}, "
        f"{args.max_new_tokens} new tokens, {args.repeats} interleaved rounds"
    )
    rows = speed.batched_throughput(
        target,
        draft,
        prompts,
        args.batch_sizes,
        gamma=args.gamma,
        max_new_tokens=args.max_new_tokens,
        repeats=args.repeats,
    )
    print(speed.summarize_throughput(rows).round(3).to_string(index=False))
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).assign(device=bench.describe_device("cpu")).to_csv(args.csv, index=False)
    if args.profile:
        profile = speed.step_profile(
            target, draft, prompts[:6], gamma=args.gamma, max_new_tokens=args.max_new_tokens, repeats=args.repeats
        )
        print("ms per decode step (medians over rounds):")
        print(speed.summarize_profile(profile).round(3).T.to_string())


if __name__ == "__main__":
    main()
