"""Offline, and nothing in the home folder, for every entry point: set on ``import specdec``, not only by the Makefile.

``apply()`` (run by ``specdec/__init__`` before anything imports transformers, datasets or huggingface_hub, which
read these variables once, at their import) sets, where the environment does not already:

- ``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE``, ``HF_DATASETS_OFFLINE`` to 1: no lookup of the hub, a missing model
  fails at once naming ``make download`` (``specdec.hub``); ``scripts/download.py``, the one online command, sets
  them to 0 before it imports this package;
- ``TOKENIZERS_PARALLELISM=false``;
- in a checkout (the editable install: ``pyproject.toml`` beside ``src/``), the caches the Makefile points into it:
  ``HF_HOME``, ``MPLCONFIGDIR``, ``IPYTHONDIR``, ``JUPYTER_RUNTIME_DIR``, ``JUPYTER_CONFIG_DIR`` under ``.cache/``
  and ``JUPYTER_DATA_DIR`` in the environment's own ``share/jupyter``. A kernel that a script importing specdec
  starts (``scripts/run_notebooks.py``) inherits them, so its IPython history lands in ``.cache/ipython``.

A value set before (``HF_HOME=/data/hf``, the Makefile's exports) is kept.
"""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
CACHES = {
    "HF_HOME": "huggingface",
    "MPLCONFIGDIR": "matplotlib",
    "IPYTHONDIR": "ipython",
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "JUPYTER_CONFIG_DIR": "jupyter-config",
}


def defaults(root: pathlib.Path = ROOT, prefix: str = sys.prefix) -> dict[str, str]:
    """The variables ``apply`` sets where they are unset: the offline flags, and the caches when ``root`` is a
    checkout."""
    out = dict(OFFLINE)
    if (root / "pyproject.toml").exists() and (root / "src" / "specdec").is_dir():
        out.update((name, str(root / ".cache" / sub)) for name, sub in CACHES.items())
        out["JUPYTER_DATA_DIR"] = str(pathlib.Path(prefix) / "share" / "jupyter")
    return out


def apply(environ=os.environ) -> dict[str, str]:
    """Set each of ``defaults()`` that ``environ`` lacks; returns the ones it set."""
    added = {k: v for k, v in defaults().items() if k not in environ}
    environ.update(added)
    return added


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["CACHES", "OFFLINE", "ROOT"]
