"""Recompute the tiny profile's committed rows from nothing, time it per notebook, and compare with the committed rows.

``make reproduce`` stands on the committed rows in ``results/tiny/`` and computes only keys that are missing. This
script runs the same notebooks (``scripts/run_notebooks.py``) with ``SPECDEC_OUTPUT_DIR`` pointed at an empty folder
and that folder's ``results/`` as the base layer too, so no committed row is read: every table is recomputed, and
the scoreboard reads the recomputed rows. The committed notebooks, results and figures are left alone.

Afterwards each recomputed table is compared with the committed one on its deterministic columns (τ, α, tokens,
texts, counts; every column whose name says time, seconds, speed, latency, device, threads or date is walltime or
provenance and is left out): how many rows match exactly, and which columns differ where they do not.

    python scripts/reproduce_fresh.py                    # every notebook, into .cache/fresh
    python scripts/reproduce_fresh.py --only 2           # notebooks whose name contains "2" (glob allowed)
    python scripts/reproduce_fresh.py --compare-only     # compare what an earlier run left in --out
    python scripts/reproduce_fresh.py --record           # also append the times to results/measurements.csv

Exit status: 0 when every notebook ran, 1 if one failed (the others still run).
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Columns that hold walltime or where and when a row ran: they differ between two runs by design.
VOLATILE = re.compile(r"time|second|speed|latency|per_s|device|thread|date|machine|host|load|_s$", re.IGNORECASE)
# Tables whose values are themselves timings (per-call costs, measured cost ratios, a step's parts in ms): their
# rows are counted, not compared.
TIMED_TABLES = {"cos_call_costs", "engine_efficiency", "engine_step_profile", "latency_ratio"}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / ".cache" / "fresh", help="the empty output folder")
    ap.add_argument("--only", metavar="PATTERN", help="only notebooks whose file name contains PATTERN")
    ap.add_argument("--compare-only", action="store_true", help="compare an earlier run's tables; run nothing")
    ap.add_argument("--record", action="store_true", help="append each notebook's time to results/measurements.csv")
    return ap.parse_args(argv)


def notebooks(only: str | None) -> list[pathlib.Path]:
    """The notebooks ``make reproduce`` runs, as ``run_notebooks.py --only`` selects them."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from run_notebooks import select_notebooks

    return select_notebooks(ROOT / "notebooks", only)


def run_one(nb: pathlib.Path, out: pathlib.Path) -> tuple[str, float]:
    """Execute one notebook on the empty output folder; ``(status, seconds)``."""
    env = dict(os.environ, SPECDEC_OUTPUT_DIR=str(out), SPECDEC_BASE_DIR=str(out / "results"))
    cmd = [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), "--only", nb.name]
    cmd += ["--output-dir", str(out / "notebooks")]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode}): {done.stdout[-400:]}"
    return status, seconds


def read_rows(path: pathlib.Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def compare(fresh: pathlib.Path, committed: pathlib.Path) -> dict:
    """One table: rows recomputed, rows committed, recomputed rows equal to a committed one on the deterministic
    columns, and the deterministic columns that differ on the rows that are not."""
    header, rows = read_rows(fresh)
    old_header, old_rows = read_rows(committed)
    stable = [c for c in header if c in old_header and not VOLATILE.search(c)]
    seen: dict[tuple, int] = {}
    for row in old_rows:
        key = tuple(row[c] for c in stable)
        seen[key] = seen.get(key, 0) + 1
    equal, differing = 0, set()
    for row in rows:
        key = tuple(row[c] for c in stable)
        if seen.get(key, 0):
            seen[key] -= 1
            equal += 1
            continue
        # the committed row closest to this one (most equal columns) names the columns that differ
        best = max(old_rows, key=lambda o: sum(o[c] == row[c] for c in stable), default=None)
        differing |= {c for c in stable if best is not None and best[c] != row[c]}
    return dict(
        table=fresh.stem,
        recomputed=len(rows),
        committed=len(old_rows),
        equal=equal,
        differ_in=" ".join(sorted(differing)) or "-",
        left_out=" ".join(c for c in header if VOLATILE.search(c)) or "-",
    )


def compare_all(out: pathlib.Path) -> list[dict]:
    reports = []
    for fresh in sorted((out / "results" / "tiny").glob("*.csv")):
        committed = ROOT / "results" / "tiny" / fresh.name
        if committed.exists():
            report = compare(fresh, committed)
            if fresh.stem in TIMED_TABLES:
                report.update(equal="-", differ_in="(timings: not compared)")
            reports.append(report)
    return reports


def record(times: list[tuple[str, str, float]]) -> None:
    """One ``recompute-<notebook>`` measurement per notebook that ran, through ``update_readme_numbers.py record``
    (``results/measurements.csv``, the generated tables of the README and the docs)."""
    load = os.getloadavg()[0]
    for name, status, seconds in times:
        if status == "ok":
            note = f"scripts/reproduce_fresh.py: every row recomputed, none read; load average {load:.1f} at the end"
            cmd = [sys.executable, str(ROOT / "scripts" / "update_readme_numbers.py"), "record"]
            subprocess.run([*cmd, f"recompute-{name}", str(round(seconds)), "--note", note], cwd=ROOT, check=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    times = []
    if not args.compare_only:
        if out.exists():
            shutil.rmtree(out)
        (out / "results").mkdir(parents=True)
        chosen = notebooks(args.only)
        total = 0.0
        for k, nb in enumerate(chosen, 1):
            print(f"[{k}/{len(chosen)}] {nb.stem} ...", end=" ", flush=True)
            status, seconds = run_one(nb, out)
            total += seconds
            times.append((nb.stem, status, seconds))
            print(f"{seconds / 60:.1f} min ({seconds:.0f} s) {status}", flush=True)
        print(f"total {total / 60:.1f} min for {len(chosen)} notebooks (2 cores: {os.cpu_count()} here)")
    reports = compare_all(out)
    if reports:
        width = max(len(r["table"]) for r in reports)
        print(f"\n{'table':{width}}  recomputed  committed  equal  deterministic columns that differ")
        for r in reports:
            print(f"{r['table']:{width}}  {r['recomputed']:10}  {r['committed']:9}  {r['equal']:>5}  {r['differ_in']}")
    if args.record and times:
        record(times)
    return 0 if all(status == "ok" for _, status, _ in times) else 1


if __name__ == "__main__":
    raise SystemExit(main())
