"""Recompute time of a slice of notebook 10's TABED runs at B = 1 and batched: same machine, same process, one thread.

The slice is notebook 10's setting (methods AR, M, T, MT, MT*; γ 5, 128 new tokens) on the first ``--requests``
requests of every (scenario, turn) cell of the tiny suite (OOD and second-turn cells too). It is decoded twice into
empty stores (no committed row is read): ``experiments.setting(batch_size=1)``, then ``batch_size=B`` (each method
decodes B missing requests at a time with ``batching.generate_batch``, one drafter per request). Printed: the
seconds of each, their ratio, and how many rows agree on the deterministic columns (``EXACT``: everything but
``seconds``) between the two and with the committed ``tabed_runs`` rows of the same keys. The batched rows'
``seconds`` are empty by design (``experiments.WALLTIME``). The helpers are ``bench_ml_batched.py``'s.

    PYTHONPATH=src python scripts/bench_tabed_batched.py [--requests 4] [--batch-size 8] [--record]
"""

from __future__ import annotations

import argparse
import os
import pathlib

from bench_ml_batched import record, rows_by_key, same, time_batch_sizes

EXACT = [
    "scenario", "turn", "group", "n_images", "new_tokens", "target_calls", "block_efficiency", "acceptance_rate",
    "lossless", "accepted", "output", "active", "weights",
]  # fmt: skip
METHODS = ["M", "T", "MT", "MT*"]  # notebook 10's


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=4, help="the first N requests of every (scenario, turn) cell")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--record", action="store_true", help="append both times to results/measurements.csv")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    from specdec.results import COMMITTED, ResultStore
    from specdec.tabed import experiments as tx

    pair = tx.Pair.load("tiny")  # models, processor and the suite's requests: loaded before either clock starts
    k = args.requests
    rows = pair.suite(k, 0, answer_tokens=128, n_ood=k, n_second=k)
    pair.requests(rows)
    torch.set_num_threads(1)

    def build(root: pathlib.Path, b: int):
        store = ResultStore("tiny", "tabed_runs", tx.KEY, root=root)
        return store, tx.setting(store, pair, rows, METHODS, gamma=5, max_new_tokens=128, batch_size=b)

    seconds, tables = time_batch_sizes(build, (1, args.batch_size), tx.KEY)
    one, batched = tables[1], tables[args.batch_size]
    committed = rows_by_key(COMMITTED / "tiny" / "tabed_runs.csv", tx.KEY)
    n = len(one)
    eq, differ = same(batched, one, EXACT)
    eq_c, differ_c = same(one, committed, EXACT)
    eq_bc, differ_bc = same(batched, committed, EXACT)
    empty = sum(r["seconds"] == "" for r in batched.values())
    print(f"speedup of the recompute: {seconds[1] / seconds[args.batch_size]:.2f}x (B = {args.batch_size} vs B = 1)")
    print(
        f"deterministic columns: batched = B = 1 on {eq}/{n} rows" + (f" (differ: {sorted(differ)})" if differ else "")
    )
    print(
        f"committed tabed_runs rows equal: B = 1 {eq_c}/{n}, batched {eq_bc}/{n}"
        + (f" ({sorted(differ_c | differ_bc)})" if differ_c | differ_bc else "")
    )
    print(f"batched rows with empty seconds: {empty}/{n} (the rest were decoded alone: a method's last batch of 1)")
    if args.record:
        note = (
            f"scripts/bench_tabed_batched.py: notebook 10's setting on the first {k} requests of every (scenario, "
            f"turn) cell ({n} runs: {len(rows)} requests x AR, M, T, MT, MT*, γ 5, 128 new tokens) recomputed into an "
            f"empty store, one thread, B = 1 and B = {args.batch_size} in the same process (B = 1 {seconds[1]:.0f} s, "
            f"B = {args.batch_size} {seconds[args.batch_size]:.0f} s); deterministic columns equal on {eq}/{n} rows, "
            f"to the committed rows on {eq_bc}/{n}; load average {os.getloadavg()[0]:.1f} at the end (cores shared "
            "with other sessions)"
        )
        record({f"recompute-10-tabed-B{b}": seconds[b] for b in (1, args.batch_size)}, note)
    return 0 if eq == n == eq_bc else 1


if __name__ == "__main__":
    raise SystemExit(main())
