"""Splice generated text into marked blocks of Markdown files: the one helper behind every number the README and
``docs/`` show from results (``update_readme_scoreboard.py``, ``update_readme_numbers.py``,
``update_docs_tables.py``).

A block is the text between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``; everything outside it is left
alone, so the prose around a generated table is written by hand and the table never is.
"""

from __future__ import annotations

from pathlib import Path

from specdec.markdown import md_table as md_table  # the tables of every generated block (re-exported)

ROOT = Path(__file__).resolve().parent.parent


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def splice_text(text: str, name: str, body: str) -> str:
    """``text`` with the block ``name`` replaced by ``body`` (every occurrence); ValueError if it has none."""
    start, end = markers(name)
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} block")
    out, rest = [], text
    while start in rest:
        head, rest = rest.split(start, 1)
        _, rest = rest.split(end, 1)
        out.append(f"{head}{start}\n{body.strip()}\n{end}")
    return "".join(out) + rest


def block_of(text: str, name: str) -> str:
    """The current content of the first block ``name`` in ``text`` (stripped)."""
    start, end = markers(name)
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def splice(path: Path, name: str, body: str) -> bool:
    """Rewrite the block ``name`` of ``path``; True when the file changed."""
    text = path.read_text()
    try:
        new = splice_text(text, name, body)
    except ValueError as error:
        raise ValueError(f"{path.relative_to(ROOT)}: {error}") from None
    if new != text:
        path.write_text(new)
    return new != text
