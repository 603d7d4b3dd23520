"""Every documented command is offline and writes nothing into the home folder, with or without the Makefile:
``import specdec`` sets the offline flags and the caches (``specdec.environment``). The README's one-notebook
command runs here with none of the Makefile's variables, a fresh home folder and a network-call guard
(``sitecustomize``: every name lookup or connection off this machine is logged and refused, in the runner and in
its kernel), on a notebook that asks transformers for a model that is not here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import nbformat
import pytest

from specdec import environment, zoo

KERNEL_INSTALLED = (zoo.ROOT / ".venv" / "share" / "jupyter" / "kernels" / "specdec").exists()

GUARD = """
import os, socket

LOG = os.environ["NETWORK_GUARD_LOG"]
LOCAL = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "", None}
_getaddrinfo, _connect = socket.getaddrinfo, socket.socket.connect


def _refuse(what):
    with open(LOG, "a") as f:
        f.write(f"{os.getpid()} {what}\\n")
    raise OSError(f"network guard: {what}")


def getaddrinfo(host, *args, **kwargs):
    if host not in LOCAL and not str(host).startswith("127."):
        _refuse(f"lookup {host}")
    return _getaddrinfo(host, *args, **kwargs)


def connect(self, address):
    host = address[0] if self.family in (socket.AF_INET, socket.AF_INET6) else None
    if host not in LOCAL and not str(host).startswith("127."):
        _refuse(f"connect {address}")
    return _connect(self, address)


socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
"""

PROBE = """
import os
import specdec
from transformers import AutoTokenizer
try:
    AutoTokenizer.from_pretrained("openai-community/gpt2")
    print("loaded")
except Exception as err:
    print("refused offline:", type(err).__name__)
print("IPYTHONDIR", os.environ["IPYTHONDIR"])
print("HF_HUB_OFFLINE", os.environ["HF_HUB_OFFLINE"])
"""


def test_defaults_keep_what_is_set(tmp_path):
    env = {"HF_HOME": "/data/hf", "HF_HUB_OFFLINE": "0"}
    added = environment.apply(env)
    assert env["HF_HOME"] == "/data/hf" and env["HF_HUB_OFFLINE"] == "0"  # the caller's values win
    assert env["TRANSFORMERS_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == "1"
    assert added["IPYTHONDIR"] == str(zoo.ROOT / ".cache" / "ipython") and "HF_HOME" not in added
    assert set(environment.defaults(tmp_path)) == set(environment.OFFLINE)  # not a checkout: no cache paths


def test_import_sets_them_without_the_makefile(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in environment.defaults()}
    code = "import os, specdec; print(os.environ['HF_HUB_OFFLINE'], os.environ['MPLCONFIGDIR'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["1", str(zoo.ROOT / ".cache" / "matplotlib")]


@pytest.mark.skipif(not KERNEL_INSTALLED, reason="needs the specdec kernel (make install)")
def test_the_one_notebook_command_makes_no_network_call(tmp_path):
    guard, home, notebooks = tmp_path / "guard", tmp_path / "home", tmp_path / "notebooks"
    for folder in (guard, home, notebooks):
        folder.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('profile: str = "tiny"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(textwrap.dedent(PROBE)),
    ]
    nb.metadata["kernelspec"] = {"name": "specdec", "display_name": "Python (specdec)", "language": "python"}
    nbformat.write(nb, notebooks / "00_probe.ipynb")
    log = tmp_path / "network.log"
    env = {k: v for k, v in os.environ.items() if k not in {*environment.defaults(), "SPECDEC_OUTPUT_DIR"}}
    env.update(HOME=str(home), PYTHONPATH=str(guard), NETWORK_GUARD_LOG=str(log))
    # the README's command, on this folder's notebook (as `--only 00_` on notebooks/)
    command = [sys.executable, "scripts/run_notebooks.py", "--only", "00_", "--notebooks-dir", str(notebooks)]
    subprocess.run(command, cwd=zoo.ROOT, env=env, check=True, timeout=300, capture_output=True)
    text = nbformat.read(notebooks / "00_probe.ipynb", as_version=4).cells[1].outputs[0].text
    assert "refused offline:" in text and "loaded" not in text
    assert f"IPYTHONDIR {zoo.ROOT / '.cache' / 'ipython'}" in text and "HF_HUB_OFFLINE 1" in text
    assert not log.exists(), log.read_text()  # no lookup, no connection off this machine
    assert not list(home.iterdir())  # no IPython history, Jupyter runtime or matplotlib cache in the home folder


def test_the_guard_catches_a_lookup(tmp_path):
    """The guard can fail: a lookup of the hub, as transformers makes online, is logged."""
    (tmp_path / "sitecustomize.py").write_text(GUARD)
    log = tmp_path / "network.log"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NETWORK_GUARD_LOG=str(log))
    code = "import socket\ntry:\n    socket.getaddrinfo('huggingface.co', 443)\nexcept OSError:\n    pass"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert "lookup huggingface.co" in log.read_text()
