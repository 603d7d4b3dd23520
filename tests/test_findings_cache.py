"""The findings cache (``harness.findings_cache.cached``): one computation per state of the inputs, a new one as soon
as a results file changes, none for a profile that does not ship its models, and off on request."""

from __future__ import annotations

import os

import pytest

from specdec import results
from specdec.harness import findings_cache


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A cached toy ``findings_from_results`` that counts its computations, on a results folder under ``tmp_path``."""
    monkeypatch.setattr(findings_cache, "CACHE", tmp_path / "cache")
    monkeypatch.delenv("SPECDEC_FINDINGS_CACHE", raising=False)
    calls = []

    @findings_cache.cached
    def findings_from_results(profile="tiny", root=None, scale=1):
        calls.append((profile, scale))
        return [len(calls) * scale]

    (tmp_path / "results" / "tiny").mkdir(parents=True)
    (tmp_path / "results" / "tiny" / "runs.csv").write_text("a\n1\n")
    return findings_from_results, calls, tmp_path / "results"


def test_the_same_inputs_are_computed_once(counted, monkeypatch):
    findings, calls, root = counted
    assert findings("tiny", root=root) == [1]
    assert findings("tiny", root=root) == [1] and findings(root=root) == [1]  # the defaults are the same key
    monkeypatch.setattr(results, "RESULTS", root)
    assert findings("tiny") == [1]  # root=None reads RESULTS: the same key as naming it
    assert len(calls) == 1
    assert findings("tiny", root=root, scale=2) == [4] and len(calls) == 2  # another argument: another key


def test_a_changed_results_file_is_computed_again(counted):
    findings, calls, root = counted
    findings("tiny", root=root)
    table = root / "tiny" / "runs.csv"
    table.write_text("a\n1\n2\n")
    assert findings("tiny", root=root) == [2]
    stat = table.stat()
    os.utime(table, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # same size, rewritten later
    assert findings("tiny", root=root) == [3] and len(calls) == 3
    (root / "tiny" / "runs.sqlite").write_bytes(b"index")  # a store's index of the CSV: not an input of its own
    assert findings("tiny", root=root) == [3] and len(calls) == 3


def test_other_profiles_and_the_switch_bypass_the_cache(counted, monkeypatch):
    findings, calls, root = counted
    findings("paper", root=root)
    findings("paper", root=root)
    assert len(calls) == 2  # another profile's verdicts depend on the machine's hub: never cached
    monkeypatch.setenv("SPECDEC_FINDINGS_CACHE", "0")
    findings("tiny", root=root)
    findings("tiny", root=root)
    assert len(calls) == 4
