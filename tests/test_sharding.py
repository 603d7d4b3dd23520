"""Sharded sweeps (``specdec.sharding``): the split, resuming without duplicate rows, and a local Ray cluster on
CPU that gives exactly the serial run's rows for a real sweep (notebook 20's CoS grid, cut down)."""

import dataclasses
import importlib.util
import time

import nbformat
import pandas as pd
import pytest

from specdec import sharding, zoo
from specdec.cos import experiments as cos_experiments
from specdec.results import ResultStore

KEY = ["cell", "prompt", "method"]


def _keys(cells=3, prompts=4, methods=("a", "b")):
    return [dict(cell=c, prompt=p, method=m) for c in range(cells) for p in range(prompts) for m in methods]


def test_shard_keeps_order_groups_and_balance():
    keys = _keys()  # 24 keys, 12 (cell, prompt) groups of 2
    parts = sharding.shard(keys, 5, by=["cell", "prompt"])
    assert [k for part in parts for k in part] == keys  # contiguous, in order, nothing lost or repeated
    assert [len(p) for p in parts] == [6, 4, 6, 4, 4]  # group starts 0, 2, .., 22 -> shard floor(start * 5 / 24)
    for part in parts:  # no (cell, prompt) group is split between shards
        assert len({(k["cell"], k["prompt"]) for k in part}) * 2 == len(part)
    assert sharding.shard(keys, 5, by=["cell", "prompt"]) == parts  # the same split on a re-run
    assert [len(p) for p in sharding.shard(keys, 4, by=["cell"])] == [8, 8, 8]  # 3 groups: 3 shards
    assert [len(p) for p in sharding.shard(keys[:3], 8)] == [1, 1, 1]  # no empty shards
    assert sharding.shard([], 3) == []
    with pytest.raises(ValueError):
        sharding.shard(keys, 0)


@dataclasses.dataclass
class CountingSetup:
    """A ``setup`` whose compute is a pure function of the key and counts its calls (serial executor only)."""

    calls: list = dataclasses.field(default_factory=list)
    setups: int = 0

    def __call__(self, store):
        self.setups += 1
        store.provenance["model"] = "counting"

        def compute(cell, prompt, method):
            self.calls.append((cell, prompt, method))
            return {"value": 10 * cell + prompt + (0.5 if method == "b" else 0.0)}

        return compute


def test_serial_shards_resume_without_duplicates(tmp_path):
    keys = _keys()
    store = ResultStore("tiny", "sweep", KEY, root=tmp_path)
    setup = CountingSetup()
    assert sharding.run_sharded(store, keys, setup, shards=3, by=["cell", "prompt"]) == 3
    assert len(setup.calls) == len(keys) and setup.setups == 3
    frame = store.frame()
    assert len(frame) == len(keys) and not frame.duplicated(KEY).any()
    assert frame.set_index(KEY).value.to_dict() == {
        (k["cell"], k["prompt"], k["method"]): 10 * k["cell"] + k["prompt"] + (k["method"] == "b") / 2 for k in keys
    }
    shard_files = sorted(p.name for p in (tmp_path / "tiny" / "sweep.shards").glob("*.csv"))
    assert shard_files == ["000-of-003.csv", "001-of-003.csv", "002-of-003.csv"]
    # every merged row keeps its shard's provenance: the worker's environment, the model, the shard
    lines = pd.read_json(store.provenance_path, lines=True)
    assert set(lines["shard"]) == {f"sweep.shards/00{i}-of-003" for i in range(3)}
    assert (lines["model"] == "counting").all() and lines["keys"].map(len).sum() == len(keys)

    # a finished sweep: nothing runs
    assert sharding.run_sharded(store, keys, setup, shards=3, by=["cell", "prompt"]) == 0
    # a shard re-run and merged again: no duplicates, nothing recomputed (its file holds the rows)
    rows, lines = sharding.run_shard(sharding.shard_store(store, 1, 3), keys[8:16], setup, {})
    sharding.merge(store, rows, lines, "again")
    assert len(store.frame()) == len(keys) and len(setup.calls) == len(keys)
    # the driver died before merging: the main table is lost, the shard files are not -> harvested, no shard runs
    store.path.unlink()
    store = ResultStore("tiny", "sweep", KEY, root=tmp_path)
    assert sharding.run_sharded(store, keys, setup, shards=3, by=["cell", "prompt"]) == 0
    assert len(setup.calls) == len(keys) and setup.setups == 3  # setup (model loading) skipped too
    assert store.frame().set_index(KEY).equals(frame.set_index(KEY))
    # ... and with another split (resumed with 2 shards): harvested from the 3 shard files, nothing recomputed
    store.path.unlink()
    store = ResultStore("tiny", "sweep", KEY, root=tmp_path)
    assert sharding.run_sharded(store, keys, setup, shards=2) == 0
    assert len(setup.calls) == len(keys) and store.frame().set_index(KEY).equals(frame.set_index(KEY))
    # a new key on a re-run: only it is computed, in one shard
    more = keys + [dict(cell=9, prompt=0, method="a")]
    assert sharding.run_sharded(store, more, setup, shards=3) == 1
    assert setup.calls[-1] == (9, 0, "a") and len(setup.calls) == len(keys) + 1 and len(store.frame()) == len(more)
    with pytest.raises(ValueError, match="executor"):
        sharding.run_sharded(store, [dict(cell=10, prompt=0, method="a")], setup, executor="slurm")


WALLTIME = ["prefill_time", "total_time", "tokens_per_second"]
GRID = dict(
    profile="tiny",
    configs=[{"set": "we", "temperature": 1.0}, {"set": "cd", "temperature": 0.0}],
    tasks=["gsm8k"],
    n_prompts=2,
    gammas=[2],
    max_new_tokens=8,
)


def _grid(root, **kw):
    store = ResultStore("tiny", "cos_main", cos_experiments.ROW_KEY, root=root)
    costs = ResultStore("tiny", "cos_call_costs", ["set", "device"], root=root)
    cos_experiments.main_grid(store, costs, **GRID, **kw)
    return store


# Marked slow (make test-all): a multi-process launch (a local Ray cluster) costs about 40 s of make test's
# 15 minutes on two cores, mostly process start-up; the single-process path it distributes is tested in make test.
@pytest.mark.slow
def test_ray_executors(tmp_path):
    """One local Ray cluster on CPU (started once: ~15 s) for both Ray executors."""
    ray = pytest.importorskip("ray")  # in requirements.txt; skipped only where someone removed it
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _check_ray_shards_give_the_serial_rows(tmp_path / "grid", ray)
        _check_run_notebooks_ray_executor(tmp_path / "notebooks")
    finally:
        ray.shutdown()


def _check_ray_shards_give_the_serial_rows(tmp_path, local_ray):
    """CoS grid (2 sets, 2 prompts, 4 methods: 16 rows) serial vs 2 Ray shards: same keys, same values except
    walltime columns; then a resumed run and a re-run shard add no rows."""
    t0 = time.perf_counter()
    serial = _grid(tmp_path / "serial").frame()
    store = _grid(tmp_path / "ray", executor="ray", shards=2)
    sharded = store.frame()
    key = cos_experiments.ROW_KEY
    assert len(serial) == 16 and list(sharded.columns) == list(serial.columns)
    assert not sharded.duplicated(key).any()
    a = serial.drop(columns=WALLTIME).sort_values(key).reset_index(drop=True)
    b = sharded.drop(columns=WALLTIME).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert (sharded.method == "cos").sum() == 4 and sharded.accepted_0.sum() > 0  # a real grid, not empty rows

    shards = sorted((tmp_path / "ray" / "tiny" / "cos_main.shards").glob("*.csv"))
    assert len(shards) == 2  # 4 (set, prompt) groups over 2 workers
    lines = pd.read_json(store.provenance_path, lines=True)
    assert set(lines.shard) == {"cos_main.shards/000-of-002", "cos_main.shards/001-of-002"}
    assert set(lines.model_0_model) == {"data/models/cos-general", "data/models/cos-amateur"}

    _grid(tmp_path / "ray", executor="ray", shards=2)  # resumed: nothing missing, nothing added
    rows, shard_lines = local_ray.get(
        local_ray.remote(sharding.run_shard).remote(
            sharding.shard_store(store, 0, 2), [k for k in _all_keys(sharded) if k["set"] == "we"], None, {}
        )
    )  # shard 0 re-run on a worker: its file holds every row, so setup (None) is never called
    sharding.merge(store, rows, shard_lines, "again")
    after = store.frame()
    assert len(after) == 16 and not after.duplicated(key).any()
    print(f"serial + 2 Ray shards + resume: {time.perf_counter() - t0:.1f} s")


def _all_keys(frame):
    return frame[cos_experiments.ROW_KEY].to_dict("records")


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _notebooks(tmp_path):
    """Five notebooks in series 0, 1 and 9; each writes the pid of the process that ran its kernel to ``log/``.
    01_b needs 00_a's output (order inside a series); 90_d needs the other three (9x last); 11_e fails."""
    spec = importlib.util.spec_from_file_location("run_notebooks", zoo.ROOT / "scripts" / "run_notebooks.py")
    run_notebooks = importlib.util.module_from_spec(spec)  # not in sys.modules: Ray ships its functions by value
    spec.loader.exec_module(run_notebooks)
    log = tmp_path / "log"
    log.mkdir(parents=True)
    write = "import os, pathlib, time; time.sleep({}); pathlib.Path({!r}, {!r}).write_text(str(os.getppid()))"
    _notebook(tmp_path / "00_a.ipynb", write.format(0.2, str(log), "00"))
    _notebook(
        tmp_path / "01_b.ipynb",
        f"import pathlib; assert pathlib.Path({str(log)!r}, '00').exists()",
        write.format(4, str(log), "01"),  # series 0 ends last
    )
    _notebook(tmp_path / "10_c.ipynb", write.format(0.2, str(log), "10"))
    _notebook(tmp_path / "90_d.ipynb", f"import pathlib; assert len(list(pathlib.Path({str(log)!r}).iterdir())) == 3")
    _notebook(tmp_path / "11_e.ipynb", "raise RuntimeError('expected')")
    argv = ["--notebooks-dir", str(tmp_path), "--output-dir", str(tmp_path / "out"), "--kernel", "python3"]
    return run_notebooks, argv, log


DONE = ["00_a.ipynb", "01_b.ipynb", "10_c.ipynb", "11_e.failed.ipynb", "90_d.ipynb"]


def _check_run_notebooks_ray_executor(tmp_path):
    """``scripts/run_notebooks.py --executor ray``: one task per series, in order inside a series, 9x last."""
    run_notebooks, argv, log = _notebooks(tmp_path)
    assert run_notebooks.main([*argv, "--executor", "ray"]) == 1  # 11_e fails, the others run
    assert sorted(p.name for p in (tmp_path / "out").glob("*.ipynb")) == DONE
    pids = {p.name: p.read_text() for p in log.iterdir()}
    assert pids["00"] == pids["01"] != pids["10"]  # a series in one Ray worker, the series in different ones


def test_run_notebooks_serial_executor(tmp_path):
    run_notebooks, argv, log = _notebooks(tmp_path)
    assert run_notebooks.main(argv) == 1  # the default executor
    assert sorted(p.name for p in (tmp_path / "out").glob("*.ipynb")) == DONE
    assert len({p.read_text() for p in log.iterdir()}) == 1  # every notebook run from this process
