"""Snapshot the committed results and the verdicts, and compare two snapshots: the check that a refactor changed no
number.

    python scripts/compare_results.py snapshot OUT.json [--profile tiny] [--no-verdicts]
    python scripts/compare_results.py compare BEFORE.json AFTER.json

A snapshot holds the sha256 of every CSV under ``results/`` that git tracks, and every field of every scoreboard
row (``verdict.Verdict.board_row``) recomputed from those tables by the findings code of the checkout, the way
notebook 90 builds the board. ``compare`` prints each CSV whose bytes differ, each verdict row that appeared,
disappeared or changed (field by field), and exits 1 if anything differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def csv_digests(root: pathlib.Path = ROOT) -> dict[str, str]:
    """``{path relative to the checkout: sha256}`` of every git-tracked CSV under ``results/``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "results"], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    paths = sorted(p for p in listed.split("\0") if p.endswith(".csv"))
    return {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in paths}


def board_verdicts(profile: str = "tiny") -> dict[str, dict[str, str]]:
    """``{"section | paper | finding": {field: value}}``: every scoreboard row's fields, recomputed from the
    profile's findings root by the checkout's findings code (as notebook 90 does)."""
    import pandas as pd

    from specdec import engine_findings, peer, results, verdict
    from specdec import papers as registry
    from specdec.harness.profile import Profile
    from specdec.tabed import tables as tabed_tables

    prof = Profile.load(profile)
    root = prof.findings_root
    stored = results.require_tables(profile, root, {"peer_hf_assisted": "02_peer_hf_assisted"})
    peer_rows = peer.scoreboard_rows(pd.read_csv(stored["peer_hf_assisted"]))

    def found(name, compute):
        return verdict.or_not_computed(name, compute, prof.strict)

    engine = [
        tabed_tables.tabed_headline_verdict(),
        *found("engine", lambda: engine_findings.findings_from_results(profile, root=root, strict=prof.strict)),
        *peer.peer_verdicts(peer_rows),
    ]
    rows = [("engine", v) for v in engine]
    for name, module in registry.findings().items():
        rows += [(name, v) for v in found(name, lambda m=module: m.findings_from_results(profile, root=root))]
    out: dict[str, dict[str, str]] = {}
    for paper, v in rows:
        row = {k: str(x) for k, x in {**v.board_row(), "paper": paper, "paper_value": v.paper}.items()}
        key = f"{row.get('section', '')} | {paper} | {row.get('finding', '')}"
        n, unique = 1, key
        while unique in out:  # a finding named twice keeps both rows
            n += 1
            unique = f"{key} #{n}"
        out[unique] = row
    return out


def snapshot(profile: str = "tiny", verdicts: bool = True) -> dict:
    """What ``compare`` compares: the CSV digests, the verdict rows and the commit they were taken at."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout)
    return dict(
        commit=head,
        dirty=dirty,
        profile=profile,
        csv=csv_digests(),
        verdicts=board_verdicts(profile) if verdicts else None,
    )


def compare(before: dict, after: dict) -> list[str]:
    """The differences between two snapshots, one line each (empty: nothing changed)."""
    lines = []
    a, b = before["csv"], after["csv"]
    lines += [f"csv only before: {p}" for p in sorted(set(a) - set(b))]
    lines += [f"csv only after: {p}" for p in sorted(set(b) - set(a))]
    lines += [f"csv bytes differ: {p}" for p in sorted(set(a) & set(b)) if a[p] != b[p]]
    va, vb = before.get("verdicts"), after.get("verdicts")
    if va is None or vb is None:
        if (va is None) != (vb is None):
            lines.append("verdicts: taken in one snapshot only")
        return lines
    lines += [f"verdict row only before: {k}" for k in sorted(set(va) - set(vb))]
    lines += [f"verdict row only after: {k}" for k in sorted(set(vb) - set(va))]
    for key in sorted(set(va) & set(vb)):
        for field in sorted(set(va[key]) | set(vb[key])):
            x, y = va[key].get(field), vb[key].get(field)
            if x != y:
                lines.append(f"verdict field differs: {key} / {field}: {x!r} -> {y!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="write a snapshot of the results and verdicts to OUT (json)")
    snap.add_argument("out", type=pathlib.Path)
    snap.add_argument("--profile", default="tiny")
    snap.add_argument("--no-verdicts", action="store_true", help="the CSV digests only")
    cmp = sub.add_parser("compare", help="compare two snapshots; exit 1 if they differ")
    cmp.add_argument("before", type=pathlib.Path)
    cmp.add_argument("after", type=pathlib.Path)
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        taken = snapshot(args.profile, verdicts=not args.no_verdicts)
        args.out.write_text(json.dumps(taken, indent=1, sort_keys=True) + "\n")
        n = len(taken["verdicts"] or {})
        print(f"{len(taken['csv'])} CSVs, {n} verdict rows at {taken['commit'][:10]} -> {args.out}")
        return 0
    differences = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    print("\n".join(differences) if differences else "identical: every CSV byte-identical, every verdict field equal")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
