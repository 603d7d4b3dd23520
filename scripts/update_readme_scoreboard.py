"""Write the scoreboard (``results/<profile>/scoreboard.csv``, made by notebook 90) into README.md.

The table goes between the markers ``<!-- scoreboard:start -->`` and ``<!-- scoreboard:end -->``; everything
else in the README is left alone. ``make reproduce`` runs this after the notebooks, so the README's findings
are always the ones the committed results give.

    python scripts/update_readme_scoreboard.py [--profile tiny]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- scoreboard:start -->", "<!-- scoreboard:end -->"
COLUMNS = ["paper", "finding", "claim", "paper_value", "estimate", "ci95", "n", "verdict"]


def table(rows: list[dict]) -> str:
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="tiny")
    args = ap.parse_args(argv)
    source = ROOT / "results" / args.profile / "scoreboard.csv"
    if not source.exists():
        print(f"{source} does not exist: run notebooks/90_scoreboard.ipynb first", file=sys.stderr)
        return 1
    with source.open(newline="") as f:
        rows = list(csv.DictReader(f))
    readme = ROOT / "README.md"
    text = readme.read_text()
    if START not in text or END not in text:
        print(f"README.md has no {START} ... {END} block", file=sys.stderr)
        return 1
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{table(rows)}\n{END}{tail}")
    print(f"README.md: scoreboard of {len(rows)} findings from {source.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
