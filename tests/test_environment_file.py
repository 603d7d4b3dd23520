"""``environment.yml`` is generated from the locks (``scripts/make_environment.py``) and builds what ``make install``
builds: it fails here when it drifts from them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("make_environment", ROOT / "scripts" / "make_environment.py")
make_environment = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_environment)


def test_environment_yml_is_what_the_locks_give():
    assert (ROOT / "environment.yml").read_text() == make_environment.render(), (
        "environment.yml drifted from requirements.lock / requirements-nodeps.lock: "
        "run python scripts/make_environment.py (make lock does)"
    )


@pytest.mark.parametrize("lock", make_environment.LOCKS)
def test_a_changed_lock_changes_the_file(tmp_path, lock):
    """The drift check can fail: one pin changed in either lock gives another environment.yml."""
    for name in make_environment.LOCKS:
        shutil.copy(ROOT / name, tmp_path / name)
    before = make_environment.render(tmp_path)
    path = tmp_path / lock
    first = make_environment.pinned(path.read_text())[0]
    path.write_text(path.read_text().replace(first, first + "1", 1))
    assert make_environment.render(tmp_path) != before


def test_python_is_the_locks():
    text = (ROOT / "environment.yml").read_text()
    python = make_environment.lock_python((ROOT / "requirements.lock").read_text())
    assert f"  - python={python}\n" in text and "  - pip\n" in text
    with pytest.raises(ValueError):
        make_environment.lock_python("# no header\nsix==1.0\n")


def test_make_install_into_a_conda_prefix(tmp_path):
    """``make install VENV=$CONDA_PREFIX``, the file's second step: the same three pip installs (torch apart, the
    lock hash-checked, the no-deps lock hash-checked without dependencies), the editable package and the kernel,
    the bytecode pass, all with that prefix's pip and python, and no venv made over an existing interpreter."""
    prefix = tmp_path / "env"
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", "install", f"VENV={prefix}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pip = f"{prefix}/bin/pip install --no-compile"  # bytecode in one parallel pass after the installs
    assert f"[ -x {prefix}/bin/python ] || " in out
    assert f"{pip} --no-deps torch==" in out
    assert f"{pip} --require-hashes -r requirements.lock" in out
    assert f"{pip} --no-deps --require-hashes -r requirements-nodeps.lock" in out
    assert f"{pip} --no-deps -e ." in out
    assert f"{prefix}/bin/python -m compileall -qq -j 0 {prefix}/lib src" in out
    assert f"{prefix}/bin/python -m ipykernel install --sys-prefix --name specdec" in out
    assert ".venv" not in out
    assert "make install VENV=$CONDA_PREFIX" in (ROOT / "environment.yml").read_text()
