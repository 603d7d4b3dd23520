"""Write the scoreboard (``results/<profile>/scoreboard.csv``, made by notebook 90) into the README and the docs.

- ``README.md``, block ``scoreboard-summary``: how many findings each paper has per verdict, the sanity checks'
  count, and a link to the full table.
- ``docs/index.md`` (the docs site's front page), block ``scoreboard``: every finding and sanity check.

Everything outside the marked blocks is left alone (``generated_blocks.splice``). ``make reproduce`` runs this
after the notebooks, so the findings shown are always the ones the committed results give.

    python scripts/update_readme_scoreboard.py [--profile tiny]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated_blocks import ROOT, md_table, splice  # noqa: E402

README = ROOT / "README.md"
BOARD_PAGE = ROOT / "docs" / "index.md"
# the verdict and its numbers first, the long text columns after them: on a screen narrower than the table the
# verdict stays in view (it was the column cut off at 1280 px)
FINDINGS = ["paper", "finding", "verdict", "estimate", "ci95", "n", "paper_value", "claim", "this machine", "regime",
            "validity"]  # fmt: skip
SANITY = ["paper", "finding", "verdict", "estimate", "ci95", "n", "claim"]
VERDICTS = ["holds", "inconclusive", "does not hold", "not testable on this proxy"]


def table(rows: list[dict], columns: list[str]) -> str:
    return md_table(rows, columns)


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


def verdict_counts(findings: list[dict]) -> str:
    """One summary line of the findings' verdicts, e.g. ``59: 39 holds, 9 inconclusive, ...``."""
    counts: dict[str, int] = {}
    for row in findings:
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    return f"{len(findings)}: " + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())


def sanity_line(sanity: list[dict]) -> str:
    failing = [r["finding"] for r in sanity if r["verdict"] != "holds"]
    return (
        f"**Sanity checks** ({len(sanity)}, {len(failing)} failing"
        + (f": {', '.join(failing)}" if failing else "")
        + "): each must hold; a failure is a bug, not a finding."
    )


def block(rows: list[dict]) -> str:
    """The full scoreboard: every finding, then every sanity check."""
    findings, sanity = readme_rows(rows)
    return (
        f"**Findings** ({verdict_counts(findings)}). `estimate` is the paper regime (speed: the runs' counts priced"
        " at the paper's call costs, `regime`), which decides `verdict`; `this machine` is the measured walltime.\n\n"
        + table(findings, FINDINGS)
        + f"\n\n{sanity_line(sanity)}\n\n"
        + table(sanity, SANITY)
    )


def summary(rows: list[dict], full_table: str = "docs/index.md") -> str:
    """Findings per paper and verdict (one row per paper, in board order), with a link to the full table."""
    findings, sanity = readme_rows(rows)
    verdicts = [v for v in VERDICTS if any(r["verdict"] == v for r in findings)]
    verdicts += sorted({r["verdict"] for r in findings} - set(verdicts))
    per_paper: dict[str, dict] = {}
    for row in findings:
        counts = per_paper.setdefault(row["paper"], {"paper": row["paper"], "findings": 0})
        counts["findings"] += 1
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    total = {"paper": "**all**", "findings": len(findings)}
    total |= {v: sum(r.get(v, 0) for r in per_paper.values()) for v in verdicts}
    lines = list(per_paper.values()) + [total]
    for line in lines:
        for v in verdicts:
            line.setdefault(v, 0)
    return (
        md_table(lines, ["paper", "findings", *verdicts])
        + f"\n\n{sanity_line(sanity)} Every finding with its claim, paper value, estimate, 95% interval and"
        f" validity: [the full scoreboard]({full_table})."
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
    try:
        splice(README, "scoreboard-summary", summary(rows))
        splice(BOARD_PAGE, "scoreboard", block(rows))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"README.md, docs/index.md: scoreboard of {len(rows)} rows from {source.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
