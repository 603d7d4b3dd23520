"""Sweeps on many devices: split a sweep's keys into shards, run each shard where a device is free, merge.

A sweep is a ``ResultStore``, its keys (one dict per row to compute) and a compute function, as in
``ResultStore.run``. ``run_sharded`` splits the keys not stored yet into shards (``shard``), runs every shard
as one task of an executor and merges the rows into the store:

* ``"serial"``: the shards one after another in this process (what a laptop or a test does);
* ``"ray"``: one Ray task per shard (``ray.init()`` joins the cluster of ``RAY_ADDRESS``, or starts a local
  one), with ``num_gpus=1`` when the cluster has GPUs, so each shard owns one GPU (``cuda`` in the shard is
  that GPU); Ray schedules the tasks, retries a task whose node died, and returns the rows.

Each shard first writes its own table ``<table>.shards/<i>-of-<n>.csv`` (a ``ResultStore``, so a shard cut
short resumes from its file on that machine), then returns its rows; the merge appends them to the main table
as each shard finishes. A re-run first harvests rows that shard tables hold already (``harvest``: an
interrupted run's work on a shared filesystem), then splits what is still missing. The main table skips
keys it already holds (its unique key index, in one transaction), so re-running a shard, or the whole sweep, adds
no duplicate rows; its provenance lines name the worker's host and GPU.

Models are not shipped to the workers: ``setup`` is a picklable callable (a module-level function or a
dataclass instance, not a lambda over loaded models) that each shard calls once, in its worker, as
``setup(store) -> compute``; it loads its models there (on the worker's device), may add the model ids to
``store.provenance``, and returns ``compute(**key) -> row | rows`` (Spec-Bench's ``run_eval(forward_func)``).
"""

from __future__ import annotations

import json
import os

from specdec import results
from specdec.results import ResultStore

EXECUTORS = ("serial", "ray")


def shard(keys: list[dict], n: int, by: list[str] | None = None) -> list[list[dict]]:
    """Split ``keys`` into at most ``n`` non-empty shards of near-equal size, each a contiguous run of ``keys``.

    ``by``: columns whose values keep keys together (e.g. every method of one prompt, so that their walltime
    ratio is measured on one device); keys sharing those values land in one shard, at the place of their
    first occurrence. Without ``by`` every key is its own group. The split depends only on ``keys``, ``n`` and
    ``by``, so a re-run builds the same shards."""
    _keys(keys)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"need at least one shard, got {n!r}")
    groups: dict[tuple, list[dict]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(tuple(key[c] for c in by) if by else (i,), []).append(key)
    shards: list[list[dict]] = [[] for _ in range(n)]
    placed = 0
    for group in groups.values():
        shards[placed * n // max(1, len(keys))].extend(group)  # the shard where the group starts
        placed += len(group)
    return [s for s in shards if s]


def shard_store(store: ResultStore, index: int, count: int) -> ResultStore:
    """The table of shard ``index`` of ``count``: ``<table>.shards/<index>-of-<count>.csv`` beside ``store``."""
    _store(store)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1 or index not in range(count):
        raise ValueError(f"shard index must be an integer in [0, count) and count >= 1, got {index!r} of {count!r}")
    name = f"{store.table}.shards/{index:03d}-of-{count:03d}"
    return ResultStore(store.profile, name, store.key, root=store.root)


def run_shard(store: ResultStore, keys: list[dict], setup, provenance: dict) -> tuple[list[dict], list[dict]]:
    """Compute the keys of one shard into its own table (``store``; keys it holds already are skipped) and
    return ``(rows, lines)``: its stored rows of ``keys`` and its provenance lines (this worker's environment,
    ``provenance`` and what ``setup`` added). ``setup(store)`` is called only if a key is missing."""
    _store(store)
    _keys(keys)
    store = ResultStore(store.profile, store.table, store.key, root=store.root)  # re-read here, on the worker
    store.provenance.update(provenance, cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    missing = [k for k in keys if not store.done(**k)]
    if missing:
        store.run(missing, setup(store), desc=store.table)
    return store.rows(keys), provenance_lines(store)


def provenance_lines(store: ResultStore) -> list[dict]:
    """The provenance lines of ``store`` (``[]`` when it has none)."""
    if not _store(store).provenance_path.exists():
        return []
    return [json.loads(line) for line in store.provenance_path.read_text().splitlines() if line.strip()]


def harvest(store: ResultStore, keys: list[dict]) -> None:
    """Merge the rows of ``keys`` that shard tables beside ``store`` hold already: the work of an interrupted
    run, whatever its split was (a resumed sweep splits only what is still missing, so the shards change)."""
    _store(store)
    _keys(keys)
    for path in sorted(store.path.parent.glob(f"{store.table}.shards/*.csv")):
        part = ResultStore(store.profile, f"{store.table}.shards/{path.stem}", store.key, root=store.root)
        rows = part.rows(keys)
        if rows:
            merge(store, rows, provenance_lines(part), part.table)


def merge(store: ResultStore, rows: list[dict], lines: list[dict], shard_name: str = "") -> None:
    """Append a shard's ``rows`` to ``store`` with the shard's provenance: the rows of each provenance line
    (the keys it names) under that line's fields plus ``shard``. Keys already in ``store`` are skipped."""
    _store(store)
    by_key: dict[tuple, list[dict]] = {}
    for row in rows:  # a key's computation may give several rows: all are kept, in order
        by_key.setdefault(store.key_of(row), []).append(row)
    for line in lines:
        batch = [r for k in line.get("keys", []) if tuple(k) in by_key for r in by_key.pop(tuple(k))]
        fields = {k: v for k, v in line.items() if k not in ("written", "key_columns", "keys")}
        store.append(batch, provenance={**fields, "computed": line.get("written", ""), "shard": shard_name})
    if by_key:  # rows without a provenance line (a shard file written by hand): this process's environment
        store.append(
            [r for group in by_key.values() for r in group], provenance={**results.environment(), "shard": shard_name}
        )


def run_sharded(
    store: ResultStore,
    keys: list[dict],
    setup,
    *,
    shards: int = 2,
    executor: str = "serial",
    by: list[str] | None = None,
) -> int:
    """Compute every key of ``keys`` not in ``store`` yet, split into ``shards`` shards (``shard``), each run
    as one task of ``executor`` (``"serial"`` or ``"ray"``), and merge the rows into ``store``.

    ``setup``: ``setup(store) -> compute``, called once per shard in its worker (see the module docstring).
    Rows are the same as ``store.run(keys, setup(store))`` would write, in another order. Returns the number of
    shards run (0 when nothing was missing)."""
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}: use one of {EXECUTORS}")
    harvest(store, [k for k in keys if not store.done(**k)])
    missing = [k for k in keys if not store.done(**k)]
    if not missing:
        return 0
    parts = shard(missing, shards, by)
    tasks = [(shard_store(store, i, len(parts)), part, setup, dict(store.provenance)) for i, part in enumerate(parts)]
    outputs = _run_serial(tasks) if executor == "serial" else _run_ray(tasks)
    for (rows, lines), part in outputs:
        merge(store, rows, lines, part)  # as each shard finishes
    return len(parts)


def _store(store) -> ResultStore:
    if not isinstance(store, ResultStore):
        raise TypeError(f"store must be a specdec.results.ResultStore, got {type(store).__name__} {store!r}")
    return store


def _keys(keys) -> None:
    if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
        raise TypeError(f"keys must be a list of dicts (each row's key columns), got {type(keys).__name__} {keys!r}")


def _run_serial(tasks):
    for task in tasks:
        yield run_shard(*task), task[0].table


def _run_ray(tasks):
    """Each task as a Ray task (one GPU each when the cluster has GPUs), yielded in order of completion."""
    import ray

    if not ray.is_initialized():
        ray.init()  # RAY_ADDRESS (or a running local cluster), else a new local one
    gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
    remote = ray.remote(num_gpus=gpus, max_retries=2)(run_shard)
    names = {remote.remote(*task): task[0].table for task in tasks}
    pending = list(names)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0]), names[done[0]]
