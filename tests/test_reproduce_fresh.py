"""``scripts/reproduce_fresh.py``'s comparison of recomputed with committed tables, on hand-built CSVs."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("reproduce_fresh", ROOT / "scripts" / "reproduce_fresh.py")
reproduce_fresh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reproduce_fresh)

HEADER = "prompt,gamma,tau,new_tokens,total_time,device\n"


def _write(path: pathlib.Path, rows: list[str]) -> pathlib.Path:
    path.write_text(HEADER + "".join(f"{r}\n" for r in rows))
    return path


def test_equal_rows_ignore_walltime_and_device(tmp_path):
    old = _write(tmp_path / "old.csv", ["a,5,3.2,48,0.11,cpu (2 threads)", "b,5,2.9,48,0.12,cpu (2 threads)"])
    new = _write(tmp_path / "new.csv", ["b,5,2.9,48,0.31,cpu (1 thread)", "a,5,3.2,48,0.29,cuda"])
    report = reproduce_fresh.compare(new, old)
    assert (report["recomputed"], report["committed"], report["equal"], report["differ_in"]) == (2, 2, 2, "-")
    assert report["left_out"] == "total_time device"


def test_a_changed_deterministic_column_is_named(tmp_path):
    old = _write(tmp_path / "old.csv", ["a,5,3.2,48,0.11,cpu", "b,5,2.9,48,0.12,cpu"])
    new = _write(tmp_path / "new.csv", ["a,5,3.2,48,0.11,cpu", "b,5,3.0,48,0.12,cpu"])
    report = reproduce_fresh.compare(new, old)
    assert report["equal"] == 1 and report["differ_in"] == "tau"


def test_duplicates_count_once_each(tmp_path):
    old = _write(tmp_path / "old.csv", ["a,5,3.2,48,0.11,cpu"])
    new = _write(tmp_path / "new.csv", ["a,5,3.2,48,0.11,cpu", "a,5,3.2,48,0.13,cpu"])
    assert reproduce_fresh.compare(new, old)["equal"] == 1
