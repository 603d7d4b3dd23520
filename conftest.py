"""Repository-wide pytest hooks for running the notebooks under nbval with pytest-xdist.

``make test`` checks the notebooks with ``pytest -n 2 --dist loadscope --nbval-lax notebooks``. Two rules keep
that parallel run identical to a serial one:

- a notebook series (0x foundation, 1x TABED, 2x CoS, 3x multilingual) runs on one worker, in order: nbval
  runs a notebook's cells in one kernel, and later notebooks of a series read the result tables the earlier
  ones wrote (e.g. notebook 14 reads notebook 10's runs), exactly as in a serial run;
- each worker writes into its own ``$SPECDEC_OUTPUT_DIR/<worker>`` folder, which starts empty: every checked
  number is recomputed, none is read back from the committed ``results/`` (except the TABED runs, whose store
  reads the committed table as a read-only base layer; ``tests/test_committed_results.py`` recomputes a sample of
  it), and no two processes append to one table.

Each worker, and every kernel it starts, uses ``cores / workers`` intra-op threads (``worker_threads``): the
OpenMP runtime spins its threads while it waits, so two workers of two threads each on two cores, with anything
else running beside them, made one notebook cell 33x slower than at one thread per worker.

The series scope is set by a scheduler (``pytest_xdist_make_scheduler``, xdist's public hook), not by
``xdist_group`` marks: xdist 3.8 tags grouped node ids through a private attribute that pytest 9 no longer reads.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

from specdec.papers import notebook_sections

# first digit of a notebook file name -> its study (the registry specdec.papers): one worker scope per study
NOTEBOOK_SERIES = notebook_sections()


def notebook_series(nodeid: str) -> str | None:
    """The series of a notebook cell's node id (``notebooks/13_tabed_weights.ipynb::Cell 4`` -> ``tabed``)."""
    path = nodeid.split("::", 1)[0]
    if not path.endswith(".ipynb"):
        return None
    name = Path(path).name
    return NOTEBOOK_SERIES.get(name[:1], name)


class NotebookSeriesScheduling(LoadScopeScheduling):
    """``--dist loadscope`` with one scope per notebook series (and xdist's usual scopes for test modules)."""

    def _split_scope(self, nodeid: str) -> str:
        return notebook_series(nodeid) or super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadscope":
        return NotebookSeriesScheduling(config, log)
    return None


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, which a container's CPU set narrows)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def worker_threads(cores: int, workers: int) -> int:
    """Intra-op threads per worker so that ``workers`` processes never oversubscribe ``cores``: at least one."""
    return max(1, cores // max(1, workers))


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Set before any test imports torch, and inherited by the kernels nbval starts (torch reads
        # OMP_NUM_THREADS for its intra-op pool); SPECDEC_THREADS overrides the share.
        threads = os.environ.get("SPECDEC_THREADS") or str(
            worker_threads(available_cores(), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
        )
        for name in THREAD_VARIABLES:
            os.environ[name] = threads
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    base = os.environ.get("SPECDEC_OUTPUT_DIR")
    if worker and base:  # the kernels nbval starts inherit this process's environment
        os.environ["SPECDEC_OUTPUT_DIR"] = str(Path(base) / worker)
