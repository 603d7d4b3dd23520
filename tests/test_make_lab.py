"""``make lab``: starts as root (``--allow-root`` only then), passes LAB_PORT / LAB_IP / ARGS on, answers on
localhost with the project's kernel, and writes nothing into the home folder."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / ".venv" / ".installed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_lab(*variables: str) -> list[str]:
    # -o: take the installed .venv as it is (never reinstall from a test)
    return ["make", "--no-print-directory", "-o", str(STAMP.relative_to(ROOT)), "lab", *variables]


def test_make_lab_command_line():
    """LAB_PORT / LAB_IP become --port / --ip, ARGS go on as they are, --allow-root exactly when root."""
    out = subprocess.run(
        [*make_lab("LAB_PORT=8899", "LAB_IP=0.0.0.0", "ARGS=--no-browser --ServerApp.base_url=/x/"), "-n"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "--port=8899" in out and "--ip=0.0.0.0" in out and "--notebook-dir=notebooks" in out
    assert out[-2:] == ["--no-browser", "--ServerApp.base_url=/x/"]
    assert ("--allow-root" in out) == (os.geteuid() == 0)
    # no news pop-up (and no news fetch), no update check
    assert "--LabApp.news_url=None" in out and "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate" in out
    plain = subprocess.run(make_lab() + ["-n"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--port" not in plain and "--ip" not in plain


def api(port: int, token: str, path: str, method: str = "GET", body: dict | None = None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"token {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
        return response.status, json.loads(text) if text else None


@pytest.mark.skipif(not STAMP.exists(), reason="needs the installed .venv (make install)")
def test_make_lab_answers_on_localhost_and_leaves_home_alone(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    port, token = free_port(), "specdec-test-token"
    log = (tmp_path / "lab.log").open("w")
    lab = subprocess.Popen(
        make_lab(f"LAB_PORT={port}", "LAB_IP=127.0.0.1", f"ARGS=--no-browser --IdentityProvider.token={token}"),
        cwd=ROOT,
        env={**os.environ, "HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # make and jupyter in one process group, stopped together below
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert lab.poll() is None, f"make lab exited ({lab.returncode}):\n{(tmp_path / 'lab.log').read_text()}"
            try:
                status, _ = api(port, token, "/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline, "no answer on localhost within 90 s"
                time.sleep(0.5)
        assert status == 200
        _, specs = api(port, token, "/api/kernelspecs")
        assert specs["kernelspecs"]["specdec"]["spec"]["display_name"] == "Python (specdec)"
        # the project's kernel starts (the server reports "starting" until a client connects: no wait for "idle")
        status, kernel = api(port, token, "/api/kernels", "POST", {"name": "specdec"})
        assert status == 201 and kernel["name"] == "specdec"
        time.sleep(2)
        _, kernel = api(port, token, f"/api/kernels/{kernel['id']}")
        assert kernel["execution_state"] != "dead"
        assert api(port, token, f"/api/kernels/{kernel['id']}", "DELETE")[0] == 204
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=60)
        log.close()
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_clean_results_keeps_the_committed_tiny_tables():
    """make clean-results on the tiny profile removes only what git does not track (databases, runs' own folders)."""
    tiny = subprocess.run(["make", "-n", "clean-results"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "git clean -fdX results/tiny results/runs" in tiny
    assert subprocess.run(["git", "ls-files", "results/tiny"], cwd=ROOT, capture_output=True, text=True).stdout


def test_docs_serve_serves_the_site_on_this_machine_only():
    out = subprocess.run(
        ["make", "-n", "-o", "docs", "docs-serve", "DOCS_PORT=8123"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m http.server --bind 127.0.0.1 --directory site 8123" in out
