"""Every public callable has a bad-input probe (issue 45), or is listed here with the reason it has none.

The public API and what the probe files reach are computed (``tests/probe_coverage.py``: the core modules, each
study's modules, every ``python -m`` command line; the probe files' references, resolved to objects, and the names
``tests/test_probes_api.py`` probes generically). What is neither probed nor excluded for a reason of its own kind
(``EXCLUDED``) is a gap listed in ``tests/probe_gaps.txt``: the list may only shrink. A new public callable without
a probe fails here, and so does a listed gap that is probed now (take it off the list)."""

import importlib
import inspect
import pathlib

import pytest
import test_probes_api
from probe_coverage import declared_public, notebook_references, probed, public_api, resolve

GAPS = pathlib.Path(__file__).with_name("probe_gaps.txt")

# Exclusions by kind, in one place: {qualified name or module prefix ending in ".": why it has no probe of its own}.
EXCLUDED = {
    "specdec.engine.check_": "generate's and generate_batch's entry checks: probed through them (test_probes_decoding)",
    "specdec.engine.now": "a clock (time.perf_counter), no argument",
    "specdec.tabed.study.": "a study's vocabulary: called by specdec.papers with notebook parameter names only",
    "specdec.cos.study.": "a study's vocabulary: called by specdec.papers with notebook parameter names only",
    "specdec.multilingual.study.": "a study's vocabulary: called by specdec.papers with notebook parameter names only",
    "specdec.aasd.study.": "a study's vocabulary: called by specdec.papers with notebook parameter names only",
    "specdec.tabed.docs.": "a study's doc blocks: called by scripts/update_docs_tables.py on committed results",
    "specdec.cos.docs.": "a study's doc blocks: called by scripts/update_docs_tables.py on committed results",
    "specdec.multilingual.docs.": "a study's doc blocks: called by scripts/update_docs_tables.py on committed results",
    "specdec.aasd.docs.": "a study's doc blocks: called by scripts/update_docs_tables.py on committed results",
    "specdec.markdown.": "the doc blocks' Markdown: text of the rows a study's doc block builds, no user input",
}


def _reason(name: str, obj) -> str | None:
    """Why ``name`` needs no probe of its own (``None``: it needs one)."""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "an exception type: raised, never called with user input"
    if inspect.isfunction(obj) and not inspect.signature(obj).parameters:
        return "takes no argument: there is no input to get wrong"
    for prefix, reason in EXCLUDED.items():
        if name == prefix or (prefix.endswith((".", "_")) and name.startswith(prefix)):
            return reason
    return None


def uncovered() -> dict[str, str | None]:
    """``{name: reason or None}`` of the public callables no probe reaches."""
    api, reached = public_api(), probed()
    return {
        name: _reason(name, obj)
        for name, obj in sorted(api.items())
        if id(obj) not in reached and name not in test_probes_api.PROBED
    }


def gaps() -> set[str]:
    return {line.strip() for line in GAPS.read_text().splitlines() if line.strip() and not line.startswith("#")}


@pytest.fixture(scope="module")
def found():
    return uncovered()


def test_every_public_callable_has_a_probe_or_a_listed_reason(found):
    new = sorted(name for name, reason in found.items() if reason is None and name not in gaps())
    assert not new, f"public callables without a bad-input probe (add one, as tests/test_probes_*.py do): {new}"


def test_the_gap_list_only_shrinks(found):
    closed = sorted(gaps() - {name for name, reason in found.items() if reason is None})
    assert not closed, f"probed now, or gone: take them off {GAPS.name}: {closed}"


def test_every_exclusion_names_something():
    api = public_api()
    unused = [p for p in EXCLUDED if not any(n == p or (p.endswith((".", "_")) and n.startswith(p)) for n in api)]
    assert not unused, f"exclusions naming no public callable: {unused}"


def test_the_probe_counts_read_each_outcome():
    """``scripts/probe_counts.py``'s tally: a pass is clear, an expected failure of ``test_known_wrong`` wrong, any
    other expected failure unclear, a failure neither (listed)."""
    import sys
    from types import SimpleNamespace

    sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "scripts"))
    from probe_counts import Outcomes

    def report(nodeid, outcome, when="call", **extra):
        passed, failed = outcome == "passed", outcome == "failed"
        return SimpleNamespace(nodeid=nodeid, when=when, passed=passed, failed=failed, **extra)

    tally = Outcomes()
    for r in [
        report("a.py::test_x[1]", "passed"),
        report("a.py::test_x[1]", "passed", when="setup"),  # a setup that passed: not counted
        report("a.py::test_known_wrong[n]", "skipped", wasxfail="known wrong"),
        report("a.py::test_known_unclear[n]", "skipped", wasxfail="known unclear"),
        report("a.py::test_y", "failed"),
        report("a.py::test_z", "failed", when="setup"),
    ]:
        tally.pytest_runtest_logreport(r)
    assert dict(tally.counts) == {"clear": 1, "wrong": 1, "unclear": 1}
    assert tally.failed == ["a.py::test_y", "a.py::test_z"]


def test_what_the_notebooks_and_the_package_export_is_declared_public():
    """A module's ``__all__`` may leave out its internals, never what a user calls: every ``specdec`` function or
    class a committed notebook refers to, and every name ``specdec.__all__`` exports, is in its module's API."""
    import specdec

    names = notebook_references() | {f"specdec.{n}" for n in specdec.__all__}
    hidden = []
    for name in sorted(names):
        obj = resolve(name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not obj.__module__.startswith("specdec"):
            continue
        module = importlib.import_module(obj.__module__)
        if vars(module).get(obj.__name__) is obj and not declared_public(module, obj.__name__):
            hidden.append(f"{obj.__module__}.{obj.__name__}")
    assert not hidden, f"called by a notebook or exported by specdec, yet left out of its module's __all__: {hidden}"
