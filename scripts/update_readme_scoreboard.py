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
FINDINGS = ["paper", "finding", "claim", "paper_value", "estimate", "ci95", "n", "verdict", "this machine", "regime",
            "validity"]  # fmt: skip
SANITY = ["paper", "finding", "claim", "estimate", "ci95", "n", "verdict"]


def table(rows: list[dict], columns: list[str]) -> str:
    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def readme_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(findings, sanity checks) of the board (``section``; a board without one is all findings), a speed
    finding's measured estimate in one cell ``this machine`` (estimate, interval, verdict, device and c) and its
    validity with why."""
    findings, sanity = [], []
    for row in rows:
        row = dict(row)
        if row.get("machine_estimate"):
            row["this machine"] = (
                f"{row['machine_estimate']} {row['machine_ci95']} {row['machine_verdict']} ({row['machine_regime']})"
            )
        if row.get("validity_why"):
            row["validity"] = row["validity_why"]
        (sanity if row.get("section") == "sanity" else findings).append(row)
    return findings, sanity


def block(rows: list[dict]) -> str:
    findings, sanity = readme_rows(rows)
    counts = {}
    for row in findings:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    failing = [r["finding"] for r in sanity if r["verdict"] != "holds"]
    return (
        f"**Findings** ({len(findings)}: {summary}). `estimate` is the paper regime (speed: the runs' counts priced"
        " at the paper's call costs, `regime`), which decides `verdict`; `this machine` is the measured walltime.\n\n"
        + table(findings, FINDINGS)
        + f"\n\n**Sanity checks** ({len(sanity)}, {len(failing)} failing"
        + (f": {', '.join(failing)}" if failing else "")
        + "): each must hold; a failure is a bug, not a finding.\n\n"
        + table(sanity, SANITY)
    )


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
    readme.write_text(f"{head}{START}\n{block(rows)}\n{END}{tail}")
    print(f"README.md: scoreboard of {len(rows)} rows from {source.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
