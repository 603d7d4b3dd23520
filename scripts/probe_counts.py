"""Print the bad-input probe suite's counts (issue 45): clear / unclear / wrong and the share that is clear.

Runs the probe files (``tests/probe_coverage.PROBE_FILES``: ``tests/test_probes_*.py`` and ``tests/test_bad_inputs.py``)
in this process, one worker, and reads each test's outcome: a pass is a clear probe, an expected failure of
``test_known_wrong`` a wrong one, any other expected failure (``KNOWN_UNCLEAR``, ``KNOWN_UNCLEAR_FRAMES``) an unclear
one. A failing test is neither: it is printed and the exit status is 1. Usage::

    .venv/bin/python scripts/probe_counts.py [extra pytest arguments]
"""

from __future__ import annotations

import collections
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Outcomes:
    """A pytest plugin that tallies each probe's outcome (the call phase; a setup error counts as failed)."""

    def __init__(self):
        self.counts: collections.Counter = collections.Counter()
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if hasattr(report, "wasxfail"):
                self.counts["wrong" if "::test_known_wrong[" in report.nodeid else "unclear"] += 1
            elif report.passed:
                self.counts["clear"] += 1
            elif report.failed:
                self.failed.append(report.nodeid)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from probe_coverage import PROBE_FILES

    tally = Outcomes()
    files = [str(p.relative_to(ROOT)) for p in PROBE_FILES]
    pytest.main(["-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-rN", *files, *argv], plugins=[tally])
    clear, unclear, wrong = (tally.counts[k] for k in ("clear", "unclear", "wrong"))
    total = clear + unclear + wrong
    print(f"probes: {total} over {len(files)} files")
    print(f"clear {clear} / unclear {unclear} / wrong {wrong} = {100 * clear / max(total, 1):.1f}% clear")
    for nodeid in tally.failed:
        print(f"FAILED (neither clear nor listed): {nodeid}")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
