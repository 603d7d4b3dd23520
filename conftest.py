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

The series scope is set by a scheduler (``pytest_xdist_make_scheduler``, xdist's public hook), not by
``xdist_group`` marks: xdist 3.8 tags grouped node ids through a private attribute that pytest 9 no longer reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

NOTEBOOK_SERIES = {"0": "foundation", "1": "tabed", "2": "cos", "3": "multilingual"}


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


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    base = os.environ.get("SPECDEC_OUTPUT_DIR")
    if worker and base:  # the kernels nbval starts inherit this process's environment
        os.environ["SPECDEC_OUTPUT_DIR"] = str(Path(base) / worker)
