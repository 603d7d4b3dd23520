"""Write the measured numbers (how long the make targets take, how many tests, how many runs per paper) into the
README and the docs, from measurements and results, never typed:

- ``README.md``, block ``numbers-summary``: the latest time of each make target.
- ``docs/reference/new-user.md``, block ``numbers-path``: the same, plus any other measured step.
- ``docs/reference/make-targets.md``, block ``numbers``: every target's latest time with when, where and how, the
  test count and the runs per paper.

- Times come from ``results/measurements.csv`` (one row per measurement: target, seconds, date, machine, note),
  which ``measure`` appends to by running and timing a command, or ``record`` with a time measured elsewhere (the
  note says how). The README shows the latest row of each target.
- The test count is what ``pytest --collect-only`` collects in ``tests/`` (marked slow or not) and the notebooks
  nbval checks (cells of ``notebooks/[0-9]*.ipynb``).
- Run counts are the rows of the committed tables of runs in ``results/tiny/`` (``RUN_TABLES``).

    python scripts/update_readme_numbers.py measure make-install -- make install   # in a fresh clone
    python scripts/update_readme_numbers.py record make-install 207 --note "fresh clone, 2 shared cores"
    python scripts/update_readme_numbers.py            # rewrite the blocks
"""

from __future__ import annotations

import argparse
import csv
import datetime
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_blocks import ROOT, splice  # noqa: E402

# page -> (block, which targets): the README lists the make targets, the new user's path every measured step
SUMMARY_PAGES = {
    ROOT / "README.md": ("numbers-summary", "make-"),
    ROOT / "docs" / "reference" / "new-user.md": ("numbers-path", ""),
}
FULL_PAGE = ROOT / "docs" / "reference" / "make-targets.md"
MEASUREMENTS = ROOT / "results" / "measurements.csv"
FIELDS = ["target", "seconds", "date", "machine", "note"]
# the committed tables of runs, per paper (rows = decoding runs)
RUN_TABLES = {
    "engine (notebooks 00-02)": ["engine_speed_rows", "peer_hf_assisted", "quickstart", "tau_vs_gamma", "engine_seeds"],
    "TABED": ["tabed_runs", "tabed_runs_seeds", "tabed_windows"],
    "CoS": [
        "cos_main",
        "cos_main_seeds",
        "cos_sweeps",
        "cos_sweeps_seeds",
        "cos_theory",
        "cos_theory_seeds",
        "cos_main_gpu",
    ],
    "Multilingual": [
        "ml_main",
        "ml_main_seeds",
        "ml_tokens",
        "ml_tokens_seeds",
        "ml_ood",
        "ml_ood_seeds",
        "ml_size",
        "ml_generalization",
    ],
    "AASD": ["aasd_runs", "aasd_runs_seeds"],
}


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} CPU cores"


def append(target: str, seconds: float, note: str) -> None:
    new = not MEASUREMENTS.exists()
    with MEASUREMENTS.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new:
            writer.writeheader()
        today = datetime.date.today().isoformat()
        writer.writerow(dict(target=target, seconds=round(seconds), date=today, machine=machine(), note=note))


# the order a new user meets the targets in; any other target follows in the order it was first measured
ORDER = ["make-install", "make-reproduce", "make-test", "make-docs", "make-paper-smoke"]


def latest() -> dict[str, dict]:
    """The latest measurement of each target (the last row), in ``ORDER``."""
    if not MEASUREMENTS.exists():
        return {}
    with MEASUREMENTS.open(newline="") as f:
        rows = {row["target"]: row for row in csv.DictReader(f)}
    rank = {t: i for i, t in enumerate(ORDER)}
    return dict(sorted(rows.items(), key=lambda item: rank.get(item[0], len(ORDER))))


def rows_of(table: str) -> int:
    path = ROOT / "results" / "tiny" / f"{table}.csv"
    if not path.exists():
        return 0
    with path.open(newline="") as f:
        return max(sum(1 for _ in csv.reader(f)) - 1, 0)


def test_count() -> tuple[int, int]:
    """(unit tests, notebook cells nbval checks), as pytest collects them."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    found = re.search(r"(\d+) tests? collected", out)
    units = int(found.group(1)) if found else sum(1 for line in out.splitlines() if "::" in line)
    import json

    cells = 0
    for nb in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        cells += sum(1 for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    return units, cells


def minutes(seconds: str) -> str:
    s = int(float(seconds))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def section() -> str:
    lines = ["| measured | value | when, where | how |", "|---|---|---|---|"]
    for target, row in latest().items():
        when = f"{row['date']}, {row['machine']}"
        lines.append(f"| `{target.replace('-', ' ', 1)}` | {minutes(row['seconds'])} | {when} | {row['note']} |")
    units, cells = test_count()
    lines.append(f"| tests | {units} in `tests/` (pytest collects them), plus nbval on {cells} notebook code cells | "
                 "at this commit | `scripts/update_readme_numbers.py` |")  # fmt: skip
    for paper, tables in RUN_TABLES.items():
        counts = {t: rows_of(t) for t in tables}
        parts = ", ".join(f"{t} {n:,}" for t, n in counts.items() if n)
        lines.append(f"| runs, {paper} | {sum(counts.values()):,} | committed `results/tiny/` | {parts} |")
    return "\n".join(lines)


def summary(prefix: str = "") -> str:
    """The latest time of each measured target whose name starts with ``prefix``, one line each (the full table
    says when, where and how)."""
    lines = ["| target | time | measured on |", "|---|---|---|"]
    for target, row in latest().items():
        if not target.startswith(prefix):
            continue
        lines.append(
            f"| `{target.replace('-', ' ', 1)}` | {minutes(row['seconds'])} | {row['date']}, {row['machine']} |"
        )
    return "\n".join(lines)


def write_blocks() -> int:
    try:
        for page, (name, prefix) in SUMMARY_PAGES.items():
            splice(page, name, summary(prefix))
        splice(FULL_PAGE, "numbers", section())
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    print("README.md, docs/reference/{new-user,make-targets}.md: measured numbers rewritten")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command")
    m = sub.add_parser("measure", help="run a command, time it, append the time")
    m.add_argument("target")
    m.add_argument("--note", default="")
    m.add_argument("cmd", nargs=argparse.REMAINDER)
    r = sub.add_parser("record", help="append a time measured elsewhere")
    r.add_argument("target")
    r.add_argument("seconds", type=float)
    r.add_argument("--note", required=True, help="how it was measured")
    args = ap.parse_args(argv)
    if args.command == "measure":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        start = time.perf_counter()
        code = subprocess.run(cmd, cwd=ROOT).returncode
        if code:
            print(f"{' '.join(cmd)} failed ({code}): nothing recorded", file=sys.stderr)
            return code
        append(args.target, time.perf_counter() - start, args.note or f"`{' '.join(cmd)}`")
    elif args.command == "record":
        append(args.target, args.seconds, args.note)
    return write_blocks()


if __name__ == "__main__":
    sys.exit(main())
