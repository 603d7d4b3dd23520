"""A fifth study from the template of ``docs/reference/architecture.md``: its files written as the page gives them
(one folder, one notebook, one page), and nothing else edited, the registry finds it, the docs navigation and the
nbval worker scopes place its notebook, the notebook check reads its parameters, its experiment runs on the harness
and the scoreboard's reading of the registry decides its finding."""

from __future__ import annotations

import json
import re
import sys

import jupytext
import pytest
import yaml

import specdec
from specdec import notebook_params, papers, results, verdict
from specdec.zoo import ROOT

PAGE = ROOT / "docs" / "reference" / "architecture.md"
BLOCK = re.compile(r"```(?:python|markdown)\n(?:# |<!-- )(?P<path>[\w./-]+)(?: -->)?\n(?P<body>.*?)```", re.S)


def template() -> dict[str, str]:
    """``{path: text}`` of every file of the page's template (a fenced block whose first line names its path)."""
    return {m["path"]: m["body"] for m in BLOCK.finditer(PAGE.read_text())}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The template written under ``tmp_path`` (``src/specdec/toy`` on ``specdec.__path__``, the notebook as an
    ``.ipynb``); results go to ``tmp_path/results``."""
    files = template()
    for path, text in files.items():
        out = tmp_path / path
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".py") and path.startswith("notebooks/"):
            out = out.with_suffix(".ipynb")
            jupytext.write(jupytext.reads(text, fmt="py:percent"), out)
        else:
            out.write_text(text)
    monkeypatch.setattr(specdec, "__path__", [*specdec.__path__, str(tmp_path / "src" / "specdec")])
    monkeypatch.setattr(results, "RESULTS", tmp_path / "results")
    yield tmp_path
    for name in [m for m in sys.modules if m == "specdec.toy" or m.startswith("specdec.toy.")]:
        del sys.modules[name]


def test_the_page_has_a_whole_study():
    assert {
        "src/specdec/toy/__init__.py",
        "src/specdec/toy/study.py",
        "src/specdec/toy/zoo.py",
        "src/specdec/toy/experiments.py",
        "src/specdec/toy/findings.py",
        "notebooks/50_toy.py",
        "docs/papers/toy.md",
    } <= set(template())


def test_a_new_study_is_found_placed_checked_run_and_decided(toy, monkeypatch):
    studies = papers.discover(list(specdec.__path__))
    assert list(studies) == [*papers.PAPERS, "Toy"]  # after the four papers: ordered by notebook number
    study = studies["Toy"]
    assert study.series == "5" and study.page == "papers/toy.md"
    assert papers.notebook_sections({**papers.STUDIES, **studies})["5"] == "Toy"
    # its zoo: the registry hands it out per profile, a Zoo for every source the template maps
    from specdec.harness.study import Zoo

    assert all(isinstance(s.zoo("tiny"), Zoo) for s in [*studies.values(), papers.ENGINE] if s.zoo)
    assert isinstance(study.zoo("paper"), Zoo) and study.zoo("tiny").weights("tabed-draft")

    # the docs navigation: its page, then its notebook, after the papers
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_docs

    sys.path.pop(0)
    monkeypatch.setattr(build_docs, "STUDIES", {**papers.STUDIES, **studies})
    monkeypatch.setattr(build_docs, "NOTEBOOK_SECTIONS", papers.notebook_sections({**papers.STUDIES, **studies}))
    monkeypatch.setattr(build_docs, "notebooks", lambda: [toy / "notebooks" / "50_toy.ipynb"])
    nav = build_docs.nav_with_notebooks([{"Scoreboard": "index.md"}])
    assert nav[-1] == {"Toy": ["papers/toy.md", {"50_toy": "notebooks/50_toy.ipynb"}]}

    # the probe coverage lists its modules (as it does every registered study's)
    import probe_coverage

    monkeypatch.setattr(papers, "STUDIES", {**papers.STUDIES, **studies})
    assert {"specdec.toy.findings", "specdec.toy.zoo"} <= set(probe_coverage.api_modules())

    # the notebook check reads its parameters cell
    notebook = toy / "notebooks" / "50_toy.ipynb"
    spec = notebook_params.declared(notebook)
    assert spec == {"profile": "str", "gamma": "int"}
    assert notebook_params.check({"gamma": 3}, spec, notebook.name) == {"gamma": 3}
    with pytest.raises(ValueError, match="gamma"):
        notebook_params.check({"gamma": 0}, spec, notebook.name)

    # its experiment on the harness, then its finding as the scoreboard reads it (papers.findings)
    from specdec.toy import experiments

    frame = experiments.experiment("tiny", max_new_tokens=12).run()
    assert len(frame) == 2 * len(experiments.PROMPTS) and frame.lossless.astype(bool).all()
    (found,) = papers.findings(studies)["Toy"].findings_from_results("tiny", root=toy / "results")
    row = found.board_row()
    assert row["finding"] == "toy-tau" and row["verdict"] in (verdict.HOLDS, verdict.FAILS, verdict.INCONCLUSIVE)
    assert found.validity == "yes"


def test_mkdocs_yml_names_no_study():
    """mkdocs.yml stays static: ``build_docs`` adds every study of the registry (its page, then its notebooks), so a
    study page or notebook listed there by hand would be listed twice, or missed for the next study."""
    nav = json.dumps(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    for study in papers.STUDIES.values():
        assert study.page not in nav, f"mkdocs.yml lists {study.page} by hand; build_docs adds it from the registry"
    assert "notebooks/" not in nav, "mkdocs.yml lists a notebook by hand; build_docs adds each from the registry"


@pytest.mark.slow
def test_a_new_study_runs_end_to_end_with_no_edit_elsewhere(tmp_path):
    """The template in a copy of the checkout (its tracked files, nothing else edited): its notebook through the
    notebook runner, the scoreboard (notebook 90) and the docs build."""
    import os
    import shutil
    import subprocess

    copy = tmp_path / "checkout"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (ROOT / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    for path, text in template().items():
        out = copy / path
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.startswith("notebooks/"):
            jupytext.write(jupytext.reads(text, fmt="py:percent"), out.with_suffix(".ipynb"))
        else:
            out.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "MPLBACKEND": "agg"}
    env.pop("SPECDEC_OUTPUT_DIR", None)
    env.pop("SPECDEC_BASE_DIR", None)
    run = lambda *args: subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True)  # noqa: E731
    for only in ("50_", "90_"):
        done = run("scripts/run_notebooks.py", "--only", only)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    board = (copy / "results" / "tiny" / "scoreboard.csv").read_text()
    assert "Toy,toy-tau," in board or ",Toy,toy-tau," in board, board[-2000:]
    done = run("scripts/build_docs.py", "--site", str(tmp_path / "site"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "notebooks" / "50_toy.html").exists()
    assert (tmp_path / "site" / "papers" / "toy.html").exists()
    assert "notebooks/50_toy.html" in (tmp_path / "site" / "index.html").read_text()  # in the nav
