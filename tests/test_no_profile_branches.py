"""No study branches on the profile: the tiny / real / paper switch lives in the Profile and in each study's zoo
classes (``harness.study.Zoo``, picked by ``Profile.zoo``), never in experiments, findings or notebooks (issue 42).

``PENDING`` lists the modules not yet moved behind a zoo, with their count of ``.shipped`` lines; a count may only
fall (lower it, or drop the entry, when a module moves), and no other file may gain one."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHIPPED = re.compile(r"\.shipped\b")
# where the profile kinds may be told apart: the Profile itself and the studies' zoo classes
ALLOWED = {
    "src/specdec/harness/profile.py",
    "src/specdec/multilingual/drafters.py",
    "src/specdec/harness/engine_zoo.py",
}
ALLOWED_NAMES = {"zoo.py"}
# not yet behind a zoo: {file: its .shipped lines}; only falls
PENDING = {}


def shipped_lines() -> dict[str, int]:
    """``{file: lines naming .shipped}`` over ``src/`` and ``notebooks/`` (the files a study's code lives in)."""
    found: dict[str, int] = {}
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "notebooks").glob("*.ipynb")]:
        n = sum(bool(SHIPPED.search(line)) for line in path.read_text(encoding="utf-8").splitlines())
        if n:
            found[path.relative_to(ROOT).as_posix()] = n
    return found


def test_no_shipped_branch_outside_the_profile_and_the_zoos():
    found = shipped_lines()
    outside = {f: n for f, n in found.items() if f not in ALLOWED and pathlib.Path(f).name not in ALLOWED_NAMES}
    grown = {f: n for f, n in outside.items() if n > PENDING.get(f, 0)}
    assert not grown, f"profile.shipped branches outside the Profile and the zoo classes (ask the study's Zoo): {grown}"


def test_pending_counts_only_fall():
    """A PENDING entry whose module moved (fewer lines now) must be lowered, so the list never hides a new one."""
    found = shipped_lines()
    stale = {f: (n, found.get(f, 0)) for f, n in PENDING.items() if found.get(f, 0) < n}
    assert not stale, f"lower PENDING to the counts now found (listed, found): {stale}"


def test_the_check_can_fail(tmp_path):
    """The pattern finds a branch written the way the studies wrote them."""
    assert SHIPPED.search("    if Profile.load(profile).shipped:")
    assert not SHIPPED.search("    shipped_zoo = 1")
