"""``scripts/reproduce_fresh.py``: the comparison of recomputed with committed tables (hand-built CSVs) and the
``--jobs`` plan (which worker runs which notebooks, in which order, the scoreboard last; no notebook runs)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

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


# --jobs: which notebooks go to which worker, in which order (no notebook runs)
NAMES = [
    "00_quickstart", "01_theory", "02_peer", "10_tabed", "11_tabed", "12_tabed", "20_cos", "21_cos", "30_ml", "31_ml",
    "40_aasd_table1", "41_aasd_ablations", "90_scoreboard",
]  # fmt: skip
SECONDS = {"00_quickstart": 10, "01_theory": 70, "02_peer": 20, "10_tabed": 600, "11_tabed": 500, "12_tabed": 100,
           "20_cos": 230, "21_cos": 170, "30_ml": 900, "31_ml": 800, "40_aasd_table1": 700,
           "41_aasd_ablations": 600, "90_scoreboard": 30}  # fmt: skip


def _plan(jobs: int, names=NAMES) -> list[list[list[str]]]:
    chosen = [pathlib.Path("notebooks") / f"{n}.ipynb" for n in names]
    return [[[nb.stem[:2] for nb in w] for w in wave] for wave in reproduce_fresh.plan(chosen, jobs, SECONDS)]


def test_two_workers_take_the_longest_series_first_and_the_scoreboard_after_all():
    # series totals: 3x 1700, 4x 1300, 1x 1200, 2x 400, 0x 100 s; each goes to the worker with less planned
    first, last = _plan(2)
    assert first == [["30", "31", "20", "21", "00", "01", "02"], ["40", "41", "10", "11", "12"]]
    assert last == [["90"]]


def test_one_worker_runs_every_series_longest_first_then_the_scoreboard():
    assert _plan(1) == [[["30", "31", "40", "41", "10", "11", "12", "20", "21", "00", "01", "02"]], [["90"]]]


def test_no_more_workers_than_series_and_a_series_never_split():
    first, last = _plan(8)
    assert first == [["30", "31"], ["40", "41"], ["10", "11", "12"], ["20", "21"], ["00", "01", "02"]]
    assert last == [["90"]]
    assert _plan(2, ["20_cos", "21_cos"]) == [[["20", "21"]]]
    assert _plan(2, ["90_scoreboard"]) == [[["90"]]]


def test_estimates_measured_shared_and_assumed():
    stems = ["00_quickstart", "20_cos_main", "30_multilingual_main", "40_aasd_table1", "41_aasd_ablations"]
    times = {"00_quickstart": 12, "20_cos_main": 234, "aasd": 2340, "30-de-en-B1": 203}
    got = reproduce_fresh.estimates(stems, times)
    assert got["00_quickstart"] == (12, "measured") and got["20_cos_main"] == (234, "measured")
    assert got["40_aasd_table1"] == got["41_aasd_ablations"] == (1170, "shared")  # recompute-aasd: 40 and 41
    assert got["30_multilingual_main"] == (1170, "assumed")  # untimed: as long as the longest estimate


def test_default_jobs_one_per_core_at_most_one_per_series():
    chosen = [pathlib.Path(f"{n}.ipynb") for n in NAMES]
    assert reproduce_fresh.default_jobs(chosen, 2) == 2
    assert reproduce_fresh.default_jobs(chosen, 16) == 5
    assert reproduce_fresh.default_jobs(chosen, 1) == 1
    assert reproduce_fresh.default_jobs(chosen[:3], 2) == 1  # one series


def test_run_plan_runs_each_worker_in_order_with_its_thread_share_and_the_scoreboard_last(monkeypatch, tmp_path):
    events = []

    def fake_run_one(nb, out, threads):
        events.append(("start", nb.stem[:2], threads))
        events.append(("end", nb.stem[:2], threads))
        return "ok", 1.0

    def fake_conditions(out, threads):
        events.append(("conditions", "pc", threads))
        return "ok", 1.0

    monkeypatch.setattr(reproduce_fresh, "run_one", fake_run_one)
    monkeypatch.setattr(reproduce_fresh, "run_conditions", fake_conditions)
    monkeypatch.delenv("SPECDEC_THREADS", raising=False)
    chosen = [pathlib.Path(f"{n}.ipynb") for n in NAMES]
    waves = reproduce_fresh.plan(chosen, 2, SECONDS)
    times, lines, _ = reproduce_fresh.run_plan(waves, tmp_path, cores=2)
    by_worker = {w: [t[0][:2] for t in times if t[3] == w] for w in lines}
    assert by_worker == {
        "w1.1": ["30", "31", "20", "21", "00", "01", "02"],
        "w1.2": ["40", "41", "10", "11", "12"],
        reproduce_fresh.CONDITIONS: ["pr"],
        "w2.1": ["90"],
    }
    # the proxy conditions on the recomputed rows, then the scoreboard that reads them, after every other notebook
    assert events[-3:] == [("conditions", "pc", 2), ("start", "90", 2), ("end", "90", 2)]
    assert {threads for _, nb, threads in events if nb not in ("90", "pc")} == {1}  # two workers, two cores: one each


def test_an_interrupted_notebook_starts_no_further_one(monkeypatch, tmp_path):
    ran = []

    def fake_run_one(nb, out, threads):
        ran.append(nb.stem[:2])
        return "failed (exit 130): interrupted", 1.0

    monkeypatch.setattr(reproduce_fresh, "run_one", fake_run_one)
    chosen = [pathlib.Path(f"{n}.ipynb") for n in NAMES]
    with pytest.raises(KeyboardInterrupt):
        reproduce_fresh.run_plan(reproduce_fresh.plan(chosen, 1, SECONDS), tmp_path, cores=2)
    assert ran == ["30"]  # neither the rest of the worker's series nor the scoreboard


def test_record_appends_every_time_and_rewrites_the_blocks_once(tmp_path, monkeypatch):
    """``--record``: a measurement per notebook that ran (a failed one is left out) and the whole run's wall time,
    then one rewrite of the generated README and docs blocks."""
    import csv

    import update_readme_numbers as numbers  # on the path: reproduce_fresh puts scripts/ there

    monkeypatch.setattr(numbers, "MEASUREMENTS", tmp_path / "measurements.csv")
    rewrites = []
    monkeypatch.setattr(numbers, "write_blocks", lambda: rewrites.append(1) or 0)
    times = [("00_quickstart", "ok", 11.4, "w0"), ("01_sd", "failed", 3.0, "w1"), ("02_peer", "ok", 20.6, "w1")]
    reproduce_fresh.record(times, 2, {"w0": "w0 (1 thread)", "w1": "w1 (1 thread)"}, 95.2)
    with numbers.MEASUREMENTS.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["target"], r["seconds"]) for r in rows] == [
        ("recompute-00_quickstart", "11"),
        ("recompute-02_peer", "21"),
        ("make-reproduce-fresh", "95"),
    ]
    assert rewrites == [1]
