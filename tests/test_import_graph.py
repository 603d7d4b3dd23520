"""The house rules on imports, checked on the source (``ast``, nothing is imported):

- a paper subpackage (``specdec.tabed``, ``cos``, ``multilingual``, ``aasd``) never imports another paper; the
  one exception: ``specdec.aasd`` may import public names of ``specdec.tabed`` (AASD is built on the TABED proxy);
- no module imports another module's ``_private`` names, or a ``_private`` module (``from specdec.x import _y``,
  ``import specdec._x``, or ``module._name`` on an imported specdec module); dunders are public;
- the specdec modules import one another without cycles (imports inside functions count too: a lazy import is
  still a dependency).

Each rule is also run on a small planted package that breaks it, so the checker is known to catch it.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap

import pytest

from specdec.zoo import ROOT

SRC = ROOT / "src"
PAPERS = ("tabed", "cos", "multilingual", "aasd")
ALLOWED_PAPER_IMPORTS = {("aasd", "tabed")}  # (importer, imported): public names only


def module_files(src: pathlib.Path, top: str = "specdec") -> dict[str, pathlib.Path]:
    """``{dotted module name: file}`` of every module under ``src/top`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted((src / top).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imports_of(name: str, path: pathlib.Path, modules: dict) -> list[tuple[str, str | None, int]]:
    """``(module, imported name or None, line)`` for every import of a module under ``modules``' top package,
    relative imports resolved; ``from P import n`` names the submodule ``P.n`` when that is a module."""
    top = name.split(".")[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == top]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != top:
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                out.append((sub, None, node.lineno) if sub in modules else (source, alias.name, node.lineno))
    return out


def violations(src: pathlib.Path, top: str = "specdec") -> list[str]:
    """Every broken rule under ``src/top``, one line each (empty: none)."""
    modules = module_files(src, top)
    found, graph = [], {m: set() for m in modules}

    def paper_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in PAPERS else None

    for name, path in modules.items():
        where = f"{path.relative_to(src)}"
        bound = {}  # local name -> imported specdec module (for module._private attribute access)
        for module, imported, line in imports_of(name, path, modules):
            target = module if module in modules else None
            if target and target != name and not name.startswith(target + "."):  # a package's own parent: no edge
                graph[name].add(target)
            mine, theirs = paper_of(name), paper_of(module)
            if mine and theirs and mine != theirs:
                if (mine, theirs) not in ALLOWED_PAPER_IMPORTS:
                    found.append(f"{where}:{line}: paper {mine} imports paper {theirs} ({module})")
                elif any(_private(p) for p in module.split(".")) or (imported and _private(imported)):
                    found.append(f"{where}:{line}: {mine} may import only public names of {theirs} ({module})")
            if module != name and any(_private(p) for p in module.split(".")):
                found.append(f"{where}:{line}: imports the private module {module}")
            if imported and _private(imported) and module != name:
                found.append(f"{where}:{line}: imports {module}'s private name {imported}")
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    if sub in modules:
                        bound[alias.asname or alias.name] = sub
            elif isinstance(node, ast.ImportFrom) and node.level:
                for module, _, _ in imports_of(name, path, modules):
                    if module in modules:
                        bound.setdefault(module.rsplit(".", 1)[-1], module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == top and alias.asname:
                        bound[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and bound[node.value.id] != name
                and _private(node.attr)
            ):
                found.append(f"{where}:{node.lineno}: uses {bound[node.value.id]}'s private name {node.attr}")
    found += [f"import cycle: {' -> '.join(c)}" for c in cycles(graph)]
    return sorted(set(found))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first node repeated at the end) per strongly connected component with more than one module
    or a self-loop (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                out.append(_one_cycle(graph, sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _one_cycle(graph, component):
    """A path from the component's first module back to itself inside the component (breadth first)."""
    start, inside = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & inside):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return component + [start]


def test_specdec_keeps_the_import_rules():
    assert violations(SRC) == []


def test_the_checker_sees_every_specdec_module():
    modules = module_files(SRC)
    assert {"specdec.engine", "specdec.tabed.bench", "specdec.aasd.drafter", "specdec.cos"} <= set(modules)
    imports = {m for m, _, _ in imports_of("specdec.aasd.drafter", modules["specdec.aasd.drafter"], modules)}
    assert "specdec.cache" in imports  # absolute imports are read


def _plant(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    for rel, text in {"specdec/__init__.py": "", **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


CLEAN = {
    "specdec/core.py": "def helper():\n    return 1\n\n\ndef _hidden():\n    return 2\n",
    "specdec/tabed/__init__.py": "from specdec.tabed.bench import run\n",
    "specdec/tabed/bench.py": "from specdec import core\n\n\ndef run():\n    return core.helper()\n",
    "specdec/aasd/__init__.py": "",
    "specdec/aasd/bench.py": "from specdec.tabed import bench as tb\nfrom . import module\n\nX = tb.run()\n",
    "specdec/aasd/module.py": "from specdec.core import helper\n",
    "specdec/cos/__init__.py": "",
    "specdec/cos/bench.py": "import specdec.core\n",
}


def test_a_planted_clean_package_passes(tmp_path):
    assert violations(_plant(tmp_path, CLEAN)) == []


@pytest.mark.parametrize(
    "rel, text, expected",
    [
        ("specdec/cos/bench.py", "from specdec.tabed import bench\n", "paper cos imports paper tabed"),
        ("specdec/tabed/bench.py", "from specdec.aasd.module import helper\n", "paper tabed imports paper aasd"),
        ("specdec/cos/bench.py", "from ..tabed.bench import run\n", "paper cos imports paper tabed"),
        ("specdec/aasd/module.py", "from specdec.tabed.bench import _x\n", "may import only public names"),
        ("specdec/cos/bench.py", "from specdec.core import _hidden\n", "private name _hidden"),
        ("specdec/cos/bench.py", "from specdec import core\n\nY = core._hidden()\n", "private name _hidden"),
        ("specdec/cos/bench.py", "import specdec.core as c\n\nY = c._hidden()\n", "private name _hidden"),
        ("specdec/cos/bench.py", "from specdec import _impl\n", "private name _impl"),
        ("specdec/core.py", "from specdec.tabed import bench\n", "import cycle"),
        ("specdec/core.py", "def f():\n    from specdec.cos import bench\n", "import cycle"),
    ],
)
def test_a_planted_violation_fails(tmp_path, rel, text, expected):
    found = violations(_plant(tmp_path, {**CLEAN, rel: text}))
    assert any(expected in line for line in found), found
