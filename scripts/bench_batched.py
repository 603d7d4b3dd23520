"""Tokens/s of batched speculative decoding (``batching.generate_batch``) at B = 1, 4, 8, 16 on the tiny pair of
notebook 01, greedy, γ 5, 64 new tokens, one thread; rounds interleave the batch sizes (and ``engine.generate``
one prompt at a time); medians. Optionally (``--profile``) the per-step breakdown of ``speed.step_profile``.
With ``--old-rev REV`` every round also times that revision's engine (``speed.batched_throughput`` of ``src/specdec``
at ``REV``, imported as ``specdec_old`` as ``scripts/compare_engines.py`` does), the two alternating, the order
reversed every other round: before / after in one process, with the per-round ratio new / old per method and B.

    PYTHONPATH=src python scripts/bench_batched.py --prompts 16 --repeats 5 [--profile] [--csv out.csv] [--old-rev REV]
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
    parser.add_argument("--old-rev", help="also time this git revision's engine, alternating with this one's")
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
    kw = dict(gamma=args.gamma, max_new_tokens=args.max_new_tokens)
    if args.old_rev:
        rows = old_and_new(args.old_rev, target, draft, prompts, args.batch_sizes, args.repeats, **kw)
    else:
        rows = speed.batched_throughput(target, draft, prompts, args.batch_sizes, repeats=args.repeats, **kw)
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


def old_and_new(rev, target, draft, prompts, batch_sizes, repeats, **kw) -> list[dict]:
    """``repeats`` rounds of ``speed.batched_throughput`` (one round each) of this checkout and of revision ``rev``,
    alternating; prints each engine's summary and the medians of the per-round ratios new / old. Rows carry
    ``engine`` (``new`` / ``old``)."""
    import pandas as pd
    from compare_engines import import_old

    from specdec import speed

    engines = {"new": speed, "old": import_old(rev, "speed")}
    rows = []
    for rep in range(repeats):
        for name in list(engines) if rep % 2 == 0 else list(engines)[::-1]:
            for row in engines[name].batched_throughput(target, draft, prompts, batch_sizes, repeats=1, **kw):
                rows.append(dict(row, repeat=rep, engine=name))
    for name in ("old", "new"):
        print(f"{name} ({rev if name == 'old' else 'this checkout'}):")
        mine = [r for r in rows if r["engine"] == name]
        print(speed.summarize_throughput(mine).round(3).to_string(index=False))
    wide = pd.DataFrame(rows).pivot_table(
        index=["method", "batch_size"], columns=["engine", "repeat"], values="tokens_per_second"
    )
    ratio = (wide["new"] / wide["old"]).median(axis=1).round(3)
    print("tokens/s new / old, medians of the per-round ratios:")
    print(ratio.to_string())
    return rows


if __name__ == "__main__":
    main()
