"""Recompute time of a slice of notebook 30's rows at B = 1 and batched: same machine, same process, one thread.

The slice is notebook 30's cells of one pair (default de-en): every held-out prompt, γ 4, 48 new tokens, T = 0 and
T = 1 with seeds 0-2, the five methods of Table 1. It is decoded twice into empty stores (no committed row is read):
``experiments.grid(batch_size=1)``, then ``batch_size=B`` (each method of a cell decodes B missing prompts at a
time with ``batching.generate_batch``). Printed: the seconds of each, their ratio, and how many rows agree on the
deterministic columns (``experiments.EXACT_COLUMNS``) between the two and with the committed ``ml_main`` rows of the
same keys. The batched rows' walltime columns are empty by design (``experiments.WALLTIME``).

    PYTHONPATH=src python scripts/bench_ml_batched.py [--pair de] [--batch-size 8] [--prompts N] [--record]
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="de", help="X of the pair X-en (notebook 30: de fr ru ja zh)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=None, help="a seeded sample of N prompts (default: every one)")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the T > 0 cells")
    ap.add_argument("--record", action="store_true", help="append both times to results/measurements.csv")
    return ap.parse_args(argv)


def rows_by_key(path: pathlib.Path, keys: list[str]) -> dict[tuple, dict]:
    """A table's rows as the CSV stores them (text), by key."""
    with path.open(newline="") as f:
        return {tuple(r[k] for k in keys): r for r in csv.DictReader(f)}


def same(a: dict, b: dict, columns: list[str]) -> tuple[int, set]:
    """Rows of ``a`` equal to ``b``'s row of the same key on ``columns``; the columns that differ elsewhere."""
    equal, differ = 0, set()
    for key, row in a.items():
        bad = {c for c in columns if key not in b or row[c] != b[key][c]}
        equal += not bad
        differ |= bad
    return equal, differ


def time_batch_sizes(build, batch_sizes, keys: list[str]) -> tuple[dict[int, float], dict[int, dict]]:
    """``({B: seconds}, {B: rows by key})``: for each batch size B, ``build(empty results folder, B) -> (store,
    experiment or suite)`` recomputed into its own temporary folder, timed from ``run()`` to its end."""
    seconds, tables = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for b in batch_sizes:
            store, experiment = build(pathlib.Path(tmp) / f"b{b}", b)
            start = time.perf_counter()
            experiment.run()
            seconds[b] = time.perf_counter() - start
            tables[b] = rows_by_key(store.path, keys)
            print(f"B = {b}: {len(tables[b])} runs in {seconds[b]:.1f} s", flush=True)
    return seconds, tables


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from specdec.multilingual import experiments as mx
    from specdec.results import COMMITTED, ResultStore

    ml = mx.Drafters("tiny")
    pair = f"{args.pair}-en"
    prompts = {pair: mx.prompt_set(ml, "django", args.pair, "en", args.prompts)}
    for spec in ["ml-target", *mx.table1_drafters(pair).values()]:  # loaded before either clock starts
        ml.make_drafter(spec)

    def build(root: pathlib.Path, b: int):
        store = ResultStore("tiny", "ml_main", mx.KEYS, root=root)
        return store, mx.grid(ml, store, prompts, mx.table1_drafters, gamma=4, temperatures=args.temperatures,
                              seeds=args.seeds, max_new_tokens=48, batch_size=b)  # fmt: skip

    seconds, tables = time_batch_sizes(build, (1, args.batch_size), mx.KEYS)
    one, batched = tables[1], tables[args.batch_size]
    committed = rows_by_key(COMMITTED / "tiny" / "ml_main.csv", mx.KEYS)
    n = len(one)
    eq, differ = same(batched, one, mx.EXACT_COLUMNS)
    eq_c, differ_c = same(one, committed, mx.EXACT_COLUMNS)
    eq_bc, _ = same(batched, committed, mx.EXACT_COLUMNS)
    empty = sum(all(r[c] == "" for c in mx.WALLTIME) for r in batched.values())
    print(f"speedup of the recompute: {seconds[1] / seconds[args.batch_size]:.2f}x (B = {args.batch_size} vs B = 1)")
    print(
        f"deterministic columns: batched = B = 1 on {eq}/{n} rows" + (f" (differ: {sorted(differ)})" if differ else "")
    )
    print(
        f"committed ml_main rows equal: B = 1 {eq_c}/{n}, batched {eq_bc}/{n}"
        + (f" ({sorted(differ_c)})" if differ_c else "")
    )
    print(
        f"batched rows with empty walltime columns: {empty}/{n} (the rest were decoded alone: a cell's last batch of 1)"
    )
    if args.record:
        cells = (
            f"T = {' and '.join(f'{t:g}' for t in args.temperatures)}, seeds {' '.join(map(str, args.seeds))} at T > 0"
        )
        note = (
            f"scripts/bench_ml_batched.py: notebook 30's {pair} cells ({n} runs: {len(prompts[pair])} prompts x 5 "
            f"methods, {cells}, γ 4, 48 new tokens) recomputed into an empty store, one thread, B = 1 and "
            f"B = {args.batch_size} in the same process (B = 1 {seconds[1]:.0f} s, B = {args.batch_size} "
            f"{seconds[args.batch_size]:.0f} s); deterministic columns equal on {eq}/{n} rows, to the committed rows "
            f"on {eq_bc}/{n}; load average {os.getloadavg()[0]:.1f} at the end (cores shared with other sessions)"
        )
        record({f"recompute-30-{pair}-B{b}": seconds[b] for b in (1, args.batch_size)}, note)
    return 0 if eq == n else 1


def record(times: dict[str, float], note: str) -> None:
    """Append ``{target: seconds}`` to ``results/measurements.csv`` (``update_readme_numbers.py record``)."""
    cmd = [sys.executable, str(ROOT / "scripts" / "update_readme_numbers.py"), "record"]
    for target, seconds in times.items():
        subprocess.run([*cmd, target, str(round(seconds)), "--note", note], cwd=ROOT, check=True)


if __name__ == "__main__":
    raise SystemExit(main())
