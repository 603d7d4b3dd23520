"""Recompute the tiny profile's committed rows from nothing, time it per notebook, and compare with the committed rows.

``make reproduce`` stands on the committed rows in ``results/tiny/`` and computes only keys that are missing. This
script runs the same notebooks (``scripts/run_notebooks.py``) with ``SPECDEC_OUTPUT_DIR`` pointed at an empty folder
and that folder's ``results/`` as the base layer too, so no committed row is read: every table is recomputed, and
the scoreboard reads the recomputed rows. The committed notebooks, results and figures are left alone.

The notebook series (00-09, 10-19, ...: a series shares its tables, so its notebooks run in order) run in ``--jobs``
parallel workers, the 9x series (the scoreboard) after all the others, as ``run_notebooks.py --executor ray``
orders them (``run_notebooks.series_waves``); before the scoreboard, ``scripts/proxy_conditions.py`` measures
the proxy conditions its validity reads on the recomputed rows (``run_conditions``). The longest series go first,
each to the worker with the least work planned so far (``plan``), by the committed ``recompute-*`` times of
``results/measurements.csv`` (``estimates``). Each worker's kernels get ``cores // workers`` intra-op threads
(``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``; torch reads the first), the share ``make
test``'s nbval workers get (``conftest.worker_threads``): so the notebooks that time at the process's thread count
(00, 01 (b)-(d)) run, and label their rows ``cpu (..., 1 threads)``, at one thread when two workers share two cores.

Afterwards each recomputed table is compared with the committed one on its deterministic columns (τ, α, tokens,
texts, counts; every column whose name says time, seconds, speed, latency, device, threads or date is walltime or
provenance and is left out): how many rows match exactly, and which columns differ where they do not.

    python scripts/reproduce_fresh.py                    # every notebook, into .cache/fresh
    python scripts/reproduce_fresh.py --jobs 1           # one worker with every core: one notebook at a time
    python scripts/reproduce_fresh.py --plan             # which worker would run which notebooks; run nothing
    python scripts/reproduce_fresh.py --only 2           # notebooks whose name contains "2" (glob allowed)
    python scripts/reproduce_fresh.py --compare-only     # compare what an earlier run left in --out
    python scripts/reproduce_fresh.py --record           # also append the times to results/measurements.csv

Exit status: 0 when every notebook ran, 1 if one failed (the others still run), 130 on Ctrl-C (the running
notebooks are interrupted, as by ``run_notebooks.py``, and no further one starts).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from run_notebooks import select_notebooks, series_waves  # noqa: E402


def _root_conftest():
    """The repository's ``conftest.py`` (by path: under pytest the name ``conftest`` may be ``tests/conftest.py``),
    for the thread share ``make test``'s nbval workers get: one rule for both."""
    spec = importlib.util.spec_from_file_location("specdec_root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_conftest = _root_conftest()
THREAD_VARIABLES, available_cores, worker_threads = (
    _conftest.THREAD_VARIABLES,
    _conftest.available_cores,
    _conftest.worker_threads,
)

MEASUREMENTS = ROOT / "results" / "measurements.csv"
STOP = threading.Event()  # set on Ctrl-C: workers start no further notebook
# Columns that hold walltime or where and when a row ran: they differ between two runs by design.
VOLATILE = re.compile(r"time|second|speed|latency|per_s|device|thread|date|machine|host|load|_s$", re.IGNORECASE)
# Tables whose values are themselves timings (per-call costs, measured cost ratios, a step's parts in ms): their
# rows are counted, not compared.
TIMED_TABLES = {"cos_call_costs", "engine_efficiency", "engine_step_profile", "latency_ratio"}


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of workers, 1 or more")
    return int(text)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / ".cache" / "fresh", help="the empty output folder")
    ap.add_argument("--only", metavar="PATTERN", help="only notebooks whose file name contains PATTERN")
    ap.add_argument("--compare-only", action="store_true", help="compare an earlier run's tables; run nothing")
    ap.add_argument("--record", action="store_true", help="append each notebook's time to results/measurements.csv")
    ap.add_argument("--plan", action="store_true", help="print which worker runs which notebooks; run nothing")
    ap.add_argument(
        "--jobs",
        type=positive,
        metavar="N",
        help="parallel workers, one notebook series each at a time (default: one per core, at most one per series: "
        "2 on 2 cores)",
    )
    return ap.parse_args(argv)


def notebooks(only: str | None) -> list[pathlib.Path]:
    """The notebooks ``make reproduce`` runs, as ``run_notebooks.py --only`` selects them."""
    return select_notebooks(ROOT / "notebooks", only)


def default_jobs(chosen: list[pathlib.Path], cores: int) -> int:
    """One worker per core, but no more than there are series to share out (2 on 2 cores; 5 on 8: 0x-4x)."""
    return max(1, min(cores, max((len(wave) for wave in series_waves(chosen)), default=1)))


def committed_times(path: pathlib.Path = MEASUREMENTS) -> dict[str, float]:
    """``<what> -> seconds`` of the latest ``recompute-<what>`` row of ``results/measurements.csv``."""
    times = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["target"].startswith("recompute-"):
                times[row["target"].removeprefix("recompute-")] = float(row["seconds"])
    return times


def estimates(stems: list[str], times: dict[str, float]) -> dict[str, tuple[float, str]]:
    """Each notebook's expected seconds and where the number comes from, for every notebook of ``stems``:

    - ``measured``: its own ``recompute-<stem>`` row;
    - ``shared``: a row named by a word of the notebook names (``recompute-aasd``: notebooks 40 and 41 timed
      together), split evenly among the notebooks whose names hold that word;
    - ``assumed``: a notebook never timed alone (the TABED and multilingual sweeps, the scoreboard when this was
      written) is assumed to take as long as the longest notebook estimated above: the untimed ones are the big
      sweeps, and a guess on the long side schedules them early, where a late long series would keep a worker busy
      after the others are done."""
    words = {stem: set(stem.split("_")[1:]) for stem in stems}
    out = {}
    for stem in stems:
        if stem in times:
            out[stem] = (times[stem], "measured")
        elif shared := sorted(w for w in times if w in words[stem]):
            holders = sum(shared[0] in w for w in words.values())
            out[stem] = (times[shared[0]] / holders, "shared")
    longest = max((seconds for seconds, _ in out.values()), default=600.0)
    return {stem: out.get(stem, (longest, "assumed")) for stem in stems}


def plan(chosen: list[pathlib.Path], jobs: int, seconds: dict[str, float]) -> list[list[list[pathlib.Path]]]:
    """Waves (``series_waves``: every series but 9x, then 9x), each a list of workers, each the notebooks it runs
    in order. In a wave the series go longest first (by ``seconds`` of their notebooks; ties in series order), each
    to the worker with the least planned so far (the first such): the greedy longest-processing-time rule. A wave
    has ``min(jobs, its series)`` workers."""
    waves = []
    for wave in series_waves(chosen):
        workers: list[list[pathlib.Path]] = [[] for _ in range(min(jobs, len(wave)))]
        load = [0.0] * len(workers)
        for series in sorted(wave, key=lambda s: -sum(seconds[nb.stem] for nb in s)):
            k = load.index(min(load))
            workers[k] += series
            load[k] += sum(seconds[nb.stem] for nb in series)
        waves.append(workers)
    return waves


def span(notebooks: list[pathlib.Path]) -> str:
    """``00-02, 20-22`` for a worker's notebooks: each series by its first and last number."""
    parts = []
    for wave in series_waves(notebooks):
        for series in wave:
            first, last = series[0].name[:2], series[-1].name[:2]
            parts.append(first if first == last else f"{first}-{last}")
    return ", ".join(parts)


def fresh_env(out: pathlib.Path, threads: int) -> dict:
    """The environment of a step of the run: ``out`` as the output folder and the base layer, ``threads`` threads."""
    env = dict(os.environ, SPECDEC_OUTPUT_DIR=str(out), SPECDEC_BASE_DIR=str(out / "results"))
    env.update((name, str(threads)) for name in THREAD_VARIABLES)
    return env


def run_one(nb: pathlib.Path, out: pathlib.Path, threads: int) -> tuple[str, float]:
    """Execute one notebook on the empty output folder, its kernel at ``threads`` intra-op threads;
    ``(status, seconds)``."""
    env = fresh_env(out, threads)
    cmd = [sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), "--only", nb.name]
    cmd += ["--output-dir", str(out / "notebooks")]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode}): {done.stdout[-400:]}"
    return status, seconds


CONDITIONS = "proxy_conditions"  # a step, not a notebook: scripts/proxy_conditions.py on the recomputed rows


def run_conditions(out: pathlib.Path, threads: int) -> tuple[str, float]:
    """``scripts/proxy_conditions.py`` on the recomputed rows (its base layer is ``out``'s): the conditions the
    scoreboard's proxy validity reads (``results/tiny/proxy_conditions.csv``), measured before the scoreboard runs,
    its two live conditions decoded again; ``(status, seconds)``."""
    start = time.perf_counter()
    cmd = [sys.executable, str(ROOT / "scripts" / "proxy_conditions.py")]
    done = subprocess.run(cmd, cwd=ROOT, env=fresh_env(out, threads), capture_output=True, text=True)
    status = "ok" if done.returncode == 0 else f"failed (exit {done.returncode}): {done.stderr[-400:]}"
    return status, time.perf_counter() - start


def read_rows(path: pathlib.Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def compare(fresh: pathlib.Path, committed: pathlib.Path) -> dict:
    """One table: rows recomputed, rows committed, recomputed rows equal to a committed one on the deterministic
    columns, and the deterministic columns that differ on the rows that are not."""
    header, rows = read_rows(fresh)
    old_header, old_rows = read_rows(committed)
    stable = [c for c in header if c in old_header and not VOLATILE.search(c)]
    seen: dict[tuple, int] = {}
    for row in old_rows:
        key = tuple(row[c] for c in stable)
        seen[key] = seen.get(key, 0) + 1
    equal, differing = 0, set()
    for row in rows:
        key = tuple(row[c] for c in stable)
        if seen.get(key, 0):
            seen[key] -= 1
            equal += 1
            continue
        # the committed row closest to this one (most equal columns) names the columns that differ
        best = max(old_rows, key=lambda o: sum(o[c] == row[c] for c in stable), default=None)
        differing |= {c for c in stable if best is not None and best[c] != row[c]}
    return dict(
        table=fresh.stem,
        recomputed=len(rows),
        committed=len(old_rows),
        equal=equal,
        differ_in=" ".join(sorted(differing)) or "-",
        left_out=" ".join(c for c in header if VOLATILE.search(c)) or "-",
    )


def compare_all(out: pathlib.Path) -> list[dict]:
    reports = []
    for fresh in sorted((out / "results" / "tiny").glob("*.csv")):
        committed = ROOT / "results" / "tiny" / fresh.name
        if committed.exists():
            report = compare(fresh, committed)
            if fresh.stem in TIMED_TABLES:
                report.update(equal="-", differ_in="(timings: not compared)")
            reports.append(report)
    return reports


class Progress:
    """Progress lines from several workers, one line at a time: ``[done/total] worker notebook time status``."""

    def __init__(self, total: int):
        self.total, self.done, self.start, self.lock = total, 0, time.perf_counter(), threading.Lock()

    def say(self, text: str) -> None:
        with self.lock:
            print(f"{(time.perf_counter() - self.start) / 60:6.1f} min  {text}", flush=True)

    def finished(self, worker: str, stem: str, status: str, seconds: float) -> None:
        with self.lock:
            self.done += 1
            done = f"[{self.done}/{self.total}]"
        self.say(f"{done} {worker} {stem}: {seconds / 60:.1f} min ({seconds:.0f} s) {status}")


def run_worker(worker: str, chosen: list[pathlib.Path], out: pathlib.Path, threads: int, progress: Progress, into):
    """One worker: its notebooks in order, each in its own ``run_notebooks.py`` process; appends
    ``(stem, status, seconds, worker)`` to ``into``."""
    for nb in chosen:
        if STOP.is_set():  # Ctrl-C: the running notebooks were interrupted, no further one starts
            return
        progress.say(f"{worker} {nb.stem} ...")
        status, seconds = run_one(nb, out, threads)
        into.append((nb.stem, status, seconds, worker))
        progress.finished(worker, nb.stem, status, seconds)
        if status.startswith("failed (exit 130)"):  # run_notebooks.py was interrupted
            STOP.set()


def worker_names(waves) -> list[list[str]]:
    """``w1, w2, ...`` per wave's workers, or ``w<wave>.<worker>`` when there are several waves."""
    return [
        [f"w{k}" if len(waves) == 1 else f"w{n}.{k}" for k in range(1, len(wave) + 1)]
        for n, wave in enumerate(waves, 1)
    ]


def threads_of(cores: int, workers: int) -> int:
    """Intra-op threads of each of a wave's ``workers``: ``cores // workers``, at least one (``SPECDEC_THREADS``
    overrides, as for ``make test``)."""
    return int(os.environ.get("SPECDEC_THREADS") or worker_threads(cores, workers))


def plan_lines(waves, cores: int, seconds: dict[str, float]) -> list[str]:
    """One line per worker: its threads, its series in order, and the estimated minutes."""
    lines = []
    for names, wave in zip(worker_names(waves), waves):
        threads = threads_of(cores, len(wave))
        for name, chosen in zip(names, wave):
            guess = sum(seconds[nb.stem] for nb in chosen) / 60
            lines.append(f"{name} ({threads} thread{'s' * (threads > 1)}): {span(chosen)}, estimate {guess:.0f} min")
    return lines


def run_plan(waves, out: pathlib.Path, cores: int) -> tuple[list[tuple], dict, float]:
    """Run ``plan``'s waves one after the other, each wave's workers as threads (each starting its notebooks'
    processes) at ``threads_of(cores, workers)`` intra-op threads each; returns ``(per-notebook times, worker -> a
    line with its threads, series and time, wall seconds)``. ``KeyboardInterrupt`` after Ctrl-C (here or in a
    notebook's runner), once the running notebooks have stopped."""
    progress = Progress(sum(len(w) for wave in waves for w in wave))
    times: list[tuple] = []
    lines = {}
    STOP.clear()
    for n, (names, wave) in enumerate(zip(worker_names(waves), waves), 1):
        if any(nb.name.startswith("9") for w in wave for nb in w) and not STOP.is_set():  # the scoreboard's wave
            progress.say(f"{CONDITIONS} ...")
            status, seconds = run_conditions(out, cores)
            times.append((CONDITIONS, status, seconds, CONDITIONS))
            lines[CONDITIONS] = f"{CONDITIONS} (1 thread) {seconds / 60:.1f} min"
            progress.say(f"{CONDITIONS}: {seconds / 60:.1f} min ({seconds:.0f} s) {status}")
        threads, start = threads_of(cores, len(wave)), time.perf_counter()
        workers = [
            threading.Thread(target=run_worker, args=(name, chosen, out, threads, progress, times))
            for name, chosen in zip(names, wave)
        ]
        for worker in workers:
            worker.start()
        try:
            for worker in workers:
                worker.join()
        except KeyboardInterrupt:
            STOP.set()
            raise
        if STOP.is_set():
            raise KeyboardInterrupt
        for name, chosen in zip(names, wave):
            spent = sum(t[2] for t in times if t[3] == name)
            lines[name] = f"{name} ({threads} thread{'s' * (threads > 1)}; {span(chosen)}) {spent / 60:.1f} min"
        progress.say(f"wave {n} of {len(waves)} done in {(time.perf_counter() - start) / 60:.1f} min")
    return times, lines, time.perf_counter() - progress.start


def record(times: list[tuple], jobs: int, workers: dict[str, str], wall: float | None) -> None:
    """One ``recompute-<notebook>`` measurement per notebook that ran, and ``make-reproduce-fresh`` (the whole run's
    wall time, with each worker's time in its note: the README lists it with the other make targets) when ``wall`` is
    given, appended to ``results/measurements.csv`` (``update_readme_numbers.append``); then the generated tables of
    the README and the docs are rewritten once."""
    import update_readme_numbers as numbers

    load = os.getloadavg()[0]
    how = f"scripts/reproduce_fresh.py --jobs {jobs}: every row recomputed, none read"
    for name, status, seconds, worker in times:
        if status == "ok":
            numbers.append(
                f"recompute-{name}", seconds, f"{how}; worker {workers[worker]}; load average {load:.1f} at the end"
            )
    if wall is not None:
        note = (
            f"{how}; {len(times)} notebooks; workers {'; '.join(workers.values())}; load average {load:.1f} at the end"
        )
        numbers.append("make-reproduce-fresh", wall, note)
    if numbers.write_blocks():
        raise SystemExit("the measured numbers were appended, but the README and docs blocks could not be rewritten")


def recompute(args: argparse.Namespace, out: pathlib.Path) -> tuple[list[tuple], dict[str, str], float, int]:
    """Plan, print the plan, run it (``--plan``: only print it); ``(per-notebook times, worker -> a line, wall
    seconds, jobs)``."""
    chosen = notebooks(args.only)
    cores = available_cores()
    jobs = args.jobs or default_jobs(chosen, cores)
    guess = estimates([nb.stem for nb in notebooks(None)], committed_times())
    assumed = [nb.stem[:2] for nb in chosen if guess[nb.stem][1] == "assumed"]
    untimed = f"; untimed, so assumed as long as the longest: {' '.join(assumed)}" if assumed else ""
    print(f"{len(chosen)} notebooks, {jobs} worker(s) on {cores} core(s); estimates: recompute-* rows{untimed}")
    seconds = {stem: value for stem, (value, _) in guess.items()}
    waves = plan(chosen, jobs, seconds)
    print("\n".join(plan_lines(waves, cores, seconds)), flush=True)
    if args.plan:
        return [], {}, 0.0, jobs
    if out.exists():
        shutil.rmtree(out)
    (out / "results").mkdir(parents=True)
    times, lines, wall = run_plan(waves, out, cores)
    print("\n".join(lines.values()))
    busy = sum(t[2] for t in times)
    print(f"total {wall / 60:.1f} min wall for {len(chosen)} notebooks ({busy / 60:.1f} min of notebook time)")
    return times, lines, wall, jobs


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    times = []
    if not args.compare_only:
        try:
            times, workers, wall, jobs = recompute(args, out)
        except KeyboardInterrupt:
            print("interrupted: the running notebooks were stopped and no further one was started", file=sys.stderr)
            return 130
        if args.plan:
            return 0
    reports = compare_all(out)
    if reports:
        width = max(len(r["table"]) for r in reports)
        print(f"\n{'table':{width}}  recomputed  committed  equal  deterministic columns that differ")
        for r in reports:
            print(f"{r['table']:{width}}  {r['recomputed']:10}  {r['committed']:9}  {r['equal']:>5}  {r['differ_in']}")
    ok = all(t[1] == "ok" for t in times)
    if args.record and times:
        record(times, jobs, workers, wall if ok and not args.only else None)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
