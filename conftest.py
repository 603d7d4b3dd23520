"""Repository-wide pytest hooks for running the notebooks under nbval with pytest-xdist.

``make test`` checks the notebooks with ``pytest -n 2 --dist loadgroup --nbval-lax notebooks``. Two rules keep
that parallel run identical to a serial one:

- every notebook's cells stay together on one worker (nbval runs them in one kernel, in order), and
  notebooks that share a result table (a paper's numbered series: 0x, 1x, 2x, 3x) run on the same worker, one
  after another, so no two processes append to one CSV at once;
- each worker writes into its own ``$SPECDEC_OUTPUT_DIR/<worker>`` folder, which starts empty: every checked
  number is recomputed, none is read back from the committed ``results/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NOTEBOOK_GROUPS = {"0": "foundation", "1": "tabed", "2": "cos", "3": "multilingual"}


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    base = os.environ.get("SPECDEC_OUTPUT_DIR")
    if worker and base:  # the kernels nbval starts inherit this process's environment
        os.environ["SPECDEC_OUTPUT_DIR"] = str(Path(base) / worker)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb":
            group = NOTEBOOK_GROUPS.get(path.name[:1], path.stem)
            item.add_marker(pytest.mark.xdist_group(group))
