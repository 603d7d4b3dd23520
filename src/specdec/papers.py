"""The registry of the studies: what the scoreboard, the docs nav, the nbval worker scopes, the import rules and the
notebook parameter check iterate, so that nothing else lists the papers.

``PAPERS``: every paper's ``Study`` (``harness.study``), found in the ``study.py`` of each subpackage of ``specdec``
that has one (``discover``), ordered by notebook number; ``ENGINE``: the engine's study (notebooks 00-02);
``STUDIES``: both. ``findings()``: each paper's findings module (``findings_from_results``);
``vocabulary(parameter, notebook)``: the values a paper's notebook parameter may take (TABED's ensembles, CoS's
tasks, the multilingual languages, AASD's drafts), or ``None`` when a declared parameter takes any value (an
unknown name is an error). This module sits above the papers; the core, ``vlm`` and ``zoo`` never import it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import pathlib

import specdec
from specdec import validate
from specdec.harness.study import Study, Table

Paper = Study  # the name this registry had before studies declared themselves


def discover(paths: list[str] | None = None) -> dict[str, Study]:
    """``{name: Study}`` of every subpackage of ``specdec`` (under ``paths``: ``specdec.__path__``) that has a
    ``study.py``, ordered by notebook number; two studies sharing a name or a notebook series is an error."""
    found: list[Study] = []
    for folder in paths if paths is not None else list(specdec.__path__):
        for declared in sorted(pathlib.Path(folder).glob("*/study.py")):
            if declared.parent.name == "harness":  # the contract itself
                continue
            study = importlib.import_module(f"specdec.{declared.parent.name}.study").STUDY
            if not isinstance(study, Study):
                raise TypeError(f"{declared}: STUDY must be a specdec.harness.study.Study, got {type(study).__name__}")
            found.append(study)
    found.sort(key=lambda s: s.notebooks)
    for kind, values in (("name", [s.name for s in found]), ("series", [s.series for s in found])):
        clash = sorted({v for v in values if values.count(v) > 1})
        if clash:
            raise ValueError(f"two studies share the {kind} {clash}: {[s.package for s in found]}")
    return {s.name: s for s in found}


PAPERS: dict[str, Study] = discover()


# The engine's study (notebooks 00-02: what all four papers share) beside the papers, first.
def _engine_zoo(profile):
    from specdec.harness.engine_zoo import zoo_for

    return zoo_for(profile)


# notebook 01's τ sweep of the shipped drafts and its runs with the drafts of training seeds k > 0
ENGINE_TABLES = (
    Table("tau_vs_gamma", "specdec.harness.engine_experiments", "TAU_KEY", "TAU_EXACT", "recompute_sweep"),
    Table("engine_seeds", "specdec.harness.engine_seeds", "SEED_KEY", "SEED_EXACT", seeds_of="tau_vs_gamma"),
)
ENGINE = Study("engine", "", ("00", "01", "02"), "papers/engine.md", zoo=_engine_zoo, tables=ENGINE_TABLES)
STUDIES: dict[str, Study] = {ENGINE.name: ENGINE, **PAPERS}
SCOREBOARD = ("9", "Scoreboard")  # notebook 90's series and docs section


def notebook_sections(studies: dict[str, Study] | None = None) -> dict[str, str]:
    """``{first digit of a notebook's file name: its study's name}``, the scoreboard's ``"9"`` too: the docs nav
    section and the nbval worker scope a notebook joins."""
    studies = STUDIES if studies is None else studies
    return {**{s.series: s.name for s in studies.values()}, SCOREBOARD[0]: SCOREBOARD[1]}


def findings(papers: dict[str, Study] | None = None) -> dict:
    """``{paper name: its findings module}`` (each has ``findings_from_results(profile, root=...)``), in
    ``PAPERS`` order."""
    papers = PAPERS if papers is None else papers
    return {name: importlib.import_module(f"specdec.{paper.package}.findings") for name, paper in papers.items()}


def vocabulary(parameter: str, notebook: str = "", *, names: list[str] | None = None) -> set[str] | None:
    """The values a paper's notebook parameter may take (a list parameter: its entries); ``None``: the parameter
    is declared but takes any value (no paper names its values). ``parameter`` must be one of ``names`` (default:
    the parameters of ``notebook``, or of every committed notebook: ``parameter_names``); an
    unknown name is an error that lists them."""
    names = parameter_names(notebook) if names is None else names
    if parameter not in names:
        validate.choice(f"parameter of {notebook or 'the notebooks'}", parameter, names, hint="see its parameters cell")
    for study in PAPERS.values():
        found = study.vocabulary(parameter, notebook) if study.vocabulary else None
        if found is not None:
            return found
    return None


def declared(notebook: str | pathlib.Path) -> dict[str, str]:
    """``{name: annotation text}`` of the cell tagged ``parameters`` (``"any"`` when a name has no annotation)."""
    nb = json.loads(pathlib.Path(notebook).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            return _declared_in(source)
    return {}


def _declared_in(source: str) -> dict[str, str]:
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign):
            out.update({t.id: "any" for t in node.targets if isinstance(t, ast.Name)})
    return out


def parameter_names(notebook: str = "") -> list[str]:
    """The parameter names a committed notebook declares (``notebook``: its file name, ``10_tabed_benchmark.ipynb``;
    any text not ending in ``.ipynb``, such as ``"this notebook"``: the names of every committed notebook)."""
    from specdec.environment import ROOT

    folder = ROOT / "notebooks"
    committed = sorted(folder.glob("*.ipynb"))
    if notebook.endswith(".ipynb"):
        validate.choice("notebook", notebook, [p.name for p in committed], hint=f"the notebooks in {folder}")
        committed = [folder / notebook]
    return sorted({name for path in committed for name in _declared_cached(path, path.stat().st_mtime_ns)})


@functools.lru_cache(maxsize=64)
def _declared_cached(path: pathlib.Path, mtime_ns: int) -> tuple[str, ...]:
    return tuple(declared(path))  # keyed by the file's time: an edited notebook is read again


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ENGINE",
    "PAPERS",
    "Paper",
    "SCOREBOARD",
    "STUDIES",
    "declared",
    "findings",
    "parameter_names",
    "vocabulary",
]
