"""The type check of ``make test``: mypy (pinned in the lock, configured in ``pyproject.toml``) over ``src/specdec``.

The core (the top-level modules), ``harness/``, ``zoo/`` and ``vlm/`` have no error. Each paper's subpackage has at
most its count in ``tests/mypy_baseline.json``, a baseline that only falls: a paper with fewer errors than its
baseline fails too, until the lower count is written there, so a fixed error cannot come back unseen.
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from mypy import api

from specdec.papers import PAPERS
from specdec.zoo import ROOT

BASELINE = Path(__file__).with_name("mypy_baseline.json")
ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):\d+: error: ", re.M)


def mypy(*paths: Path) -> str:
    """mypy's report on ``paths`` under the project's configuration (its cache in ``.cache/mypy``)."""
    out, err, _ = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".cache" / "mypy")]
        + [str(p) for p in paths]
    )
    assert not err.strip(), err
    return out


def errors_by_part(report: str) -> dict[str, int]:
    """``{part: errors}``: a paper's subpackage by its name, everything else under ``src/specdec`` as ``core``."""
    packages = {p.package for p in PAPERS.values()}
    counts: collections.Counter[str] = collections.Counter()
    for match in ERROR.finditer(report):
        parts = Path(match["path"]).parts
        below = parts[parts.index("specdec") + 1 :] if "specdec" in parts else parts
        counts[below[0] if len(below) > 1 and below[0] in packages else "core"] += 1
    return dict(counts)


def test_errors_are_counted_by_part():
    report = (
        "src/specdec/engine.py:3: error: x  [misc]\nsrc/specdec/harness/experiment.py:9: error: y  [misc]\n"
        "src/specdec/tabed/data.py:1: error: z  [misc]\nsrc/specdec/tabed/data.py:1: note: see\n"
        "src/specdec/cos/tasks.py:4: error: w  [misc]\nFound 4 errors in 4 files\n"
    )
    assert errors_by_part(report) == {"core": 2, "tabed": 1, "cos": 1}


def test_the_checker_sees_a_planted_error(tmp_path):
    bad = tmp_path / "specdec" / "planted.py"
    bad.parent.mkdir()
    bad.write_text("def f(x: int) -> str:\n    return x\n")
    assert errors_by_part(mypy(bad)) == {"core": 1}


def test_no_type_error_in_the_core_and_no_new_one_in_a_paper():
    report = mypy(ROOT / "src" / "specdec")
    found = errors_by_part(report)
    baseline = json.loads(BASELINE.read_text())
    core = [
        line
        for line in report.splitlines()
        if ": error: " in line and found.get("core") and not any(f"/{p.package}/" in line for p in PAPERS.values())
    ]
    assert not found.get("core"), "type errors in the core, harness, zoo or vlm:\n" + "\n".join(core)
    grown = {k: (n, baseline.get(k, 0)) for k, n in found.items() if k != "core" and n > baseline.get(k, 0)}
    assert not grown, f"new type errors (found, baseline) in {grown}:\n{report}"
    fallen = {k: (found.get(k, 0), n) for k, n in baseline.items() if found.get(k, 0) < n}
    if fallen:
        pytest.fail(
            f"fewer type errors than the baseline (found, baseline): {fallen}; write the lower counts in {BASELINE}"
        )
