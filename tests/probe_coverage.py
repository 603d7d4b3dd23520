"""Which public callables the bad-input probe suite reaches: the public API and the probes' references to it.

The public API (``public_api``): every public function and class defined in the core modules (``specdec/*.py``), in
every module of each paper's package (``specdec.papers.STUDIES``) and in every ``python -m`` command line
(``specdec`` modules with a ``__main__`` block: their ``main``). Public is declared (``declared_public``): a module's
``__all__`` when it has one, else every name without a leading underscore; what the notebooks call
(``notebook_references``) must be declared public. A callable is probed when a probe file
(``PROBE_FILES``) refers to it (``probed``): an import, an attribute of an imported module, a ``"specdec.x.y"``
string handed to ``importlib``; each is resolved to the object it names, so re-exports count once.
``tests/test_probe_coverage.py`` checks every callable is probed or excluded (``EXCLUDED``, with its reason)."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pathlib
import pkgutil

import specdec
from specdec import papers

TESTS = pathlib.Path(__file__).parent
PROBE_FILES = sorted(TESTS.glob("test_probes_*.py")) + [TESTS / "test_bad_inputs.py"]
SRC = pathlib.Path(specdec.__file__).parent


def api_modules() -> list[str]:
    """The core modules, each study's modules and every module with a command line."""
    core = [f"specdec.{p.stem}" for p in sorted(SRC.glob("*.py")) if p.stem != "__init__"]
    studies = []
    for study in papers.STUDIES.values():
        if study.package:
            package = importlib.import_module(f"specdec.{study.package}")
            studies += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    clis = [
        "specdec." + ".".join(p.relative_to(SRC).with_suffix("").parts)
        for p in sorted(SRC.rglob("*.py"))
        if 'if __name__ == "__main__"' in p.read_text()
    ]
    return sorted(set(core + studies + clis))


def public_api() -> dict[str, object]:
    """``{qualified name: callable}``: the public functions and classes the API modules define (for a command
    line module outside the core and the studies: its ``main``)."""
    core_or_study = set(api_modules()) - {m for m in api_modules() if _cli_only(m)}
    out = {}
    for name in api_modules():
        module = importlib.import_module(name)
        for attr, obj in vars(module).items():
            if not declared_public(module, attr) or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) != name or (name not in core_or_study and attr != "main"):
                continue
            out[f"{name}.{attr}"] = obj
    return out


def declared_public(module, attr: str) -> bool:
    """Whether ``attr`` is part of ``module``'s declared API: listed in its ``__all__`` when it has one (the names
    it leaves out are the package's internals, shared between its modules but not meant for users), else any name
    without a leading underscore; a command line's ``main`` always is."""
    if attr.startswith("_"):
        return False
    if attr == "main" and 'if __name__ == "__main__"' in pathlib.Path(module.__file__).read_text():
        return True
    names = getattr(module, "__all__", None)
    return names is None or attr in names


def notebook_references() -> set[str]:
    """The dotted ``specdec`` names the committed notebooks' code cells refer to (as ``references`` reads a file;
    IPython's ``%`` and ``!`` lines left out)."""
    found: set[str] = set()
    for path in sorted((TESTS.parent / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        lines = [ln for cell in code for ln in cell.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        found |= references(path, "\n".join(lines))
    return found


def _cli_only(module: str) -> bool:
    parts = module.split(".")
    packages = {s.package for s in papers.STUDIES.values() if s.package}
    return len(parts) > 2 and parts[1] not in packages


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def resolve(dotted: str):
    """The object a dotted name names (``None``: none), importing modules along the way."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


def references(path: pathlib.Path, source: str | None = None) -> set[str]:
    """The dotted ``specdec`` names a probe file (``source``: its text, default read from ``path``) refers to
    (aliases of its imports expanded; every prefix)."""
    tree = ast.parse(path.read_text() if source is None else source, filename=str(path))
    alias = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
    found = set()
    for node in ast.walk(tree):
        dotted = None
        if isinstance(node, ast.Attribute | ast.Name):
            dotted = _dotted(node)
            if dotted:
                head, _, rest = dotted.partition(".")
                dotted = alias.get(head, head) + (f".{rest}" if rest else "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("specdec."):
            dotted = node.value.split()[0]
        if dotted and dotted.startswith("specdec"):
            parts = dotted.split(".")
            found.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
    for node in ast.walk(tree):  # __import__("specdec.a.b").a.b.f: the chain after the call
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute | ast.Call):
            chain, inner = [], node
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "__import__" and inner.args:
                found.add("specdec." + ".".join(reversed(chain)))
    return found


def probed(files: list[pathlib.Path] | None = None) -> set[int]:
    """The ids of the objects the probe files refer to."""
    names = set().union(*(references(p) for p in (files or PROBE_FILES)))
    return {id(obj) for obj in map(resolve, sorted(names)) if obj is not None}


if __name__ == "__main__":  # the uncovered callables, one per line
    covered = probed()
    for qualified, obj in sorted(public_api().items()):
        if id(obj) not in covered:
            print(qualified)
