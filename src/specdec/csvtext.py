"""A result table's CSV text: how a stored cell is written (``render``, ``float_text``) and read back (``cell_value``),
and how the bytes of a CSV file split into a header and rows (``parse_csv``), a last row cut mid-write left out
(``csv_body``). ``specdec.tabledb`` keeps the table on disk; this is its text, apart."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import math
import sys

# A cell may hold a whole generated text: lift the csv module's 131,072-character field limit (pandas has none), so
# that one long output does not make every later open of the table raise ``_csv.Error``.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

_INT64 = 2**63


def render(value) -> str:
    """The CSV text of a stored cell (the inverse of ``cell_value``)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return float_text(value)
    return str(value)


def float_text(value: float) -> str:
    """A float as written: 6 significant digits when those are exact (as committed tables were written), else
    ``repr`` (exact)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"float_text takes a number, got {type(value).__name__} {value!r}")
    short = f"{value:.6g}"
    return short if math.isnan(value) or float(short) == value else repr(value)


def cell_value(text: str):
    """The SQLite value of a cell's text: ``None`` for the empty cell, an int or a float when it prints back as
    exactly ``text`` (``render``), else the text itself."""
    if not isinstance(text, str):
        raise TypeError(f"cell_value reads a cell's CSV text, got {type(text).__name__} {text!r}")
    if text == "":
        return None
    if text[0] not in "-+.0123456789":
        return text
    with contextlib.suppress(ValueError):
        number = int(text)
        return number if str(number) == text and -_INT64 <= number < _INT64 else text
    with contextlib.suppress(ValueError):
        real = float(text)
        # -0.0 and non-finite numbers stay text: SQLite does not keep them apart from 0 / NULL
        if math.isfinite(real) and real != 0.0 and float_text(real) == text:
            return real
    return text


def complete_prefix(data: bytes) -> int:
    """Length of ``data``'s complete CSV rows: up to the last line end outside a quoted cell.

    The csv writer quotes every cell holding a quote or a line break (doubling its quotes), so a position is inside a
    quoted cell exactly when an odd number of quote characters precede it."""
    end, quotes = len(data), data.count(b'"')
    if data.endswith(b"\n") and quotes % 2 == 0:
        return end
    while True:
        nl = data.rfind(b"\n", 0, end)
        if nl < 0:
            return 0
        quotes -= data.count(b'"', nl, end)  # quote characters before the candidate line end
        end = nl
        if quotes % 2 == 0:
            return nl + 1


def csv_body(data: bytes) -> bytes:
    """``data``'s complete rows, ending in a line end: a last row without its final line end counts when its quotes
    are closed and it has as many cells as the header (it is completed with ``\\r\\n``: what pandas and a person read
    is what the table holds); a last row cut mid-write (an open quoted cell, another number of cells) is left out, as
    is a header without its line end. The writer replaces the file whole (``insert``), so only an older writer or a
    hand edit leaves such a tail."""
    end = complete_prefix(data)
    tail = data[end:]
    if not tail or tail.count(b'"') % 2:
        return data[:end]
    head = next(csv.reader(io.StringIO(data[:end].decode("utf-8"), newline="")), None)
    cells = next(csv.reader(io.StringIO(tail.decode("utf-8"), newline="")), [])
    if head is None or len(cells) != len(head):  # a header needs its line end (no row is lost without it)
        return data[:end]
    return data + b"\r\n"


def parse_csv(data: bytes) -> tuple[list[str] | None, list[list[str]]]:
    """Header and rows of CSV bytes (``csv_body``: a last row cut mid-write left out); ``None`` header: no complete
    header."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"parse_csv takes the file's bytes (path.read_bytes()), got {type(data).__name__}")
    data = csv_body(data)
    if not data:
        return None, []
    records = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    if not records:
        return None, []
    return records[0], records[1:]


def csv_lines(rows: list[list[str]]) -> bytes:
    """CSV bytes of rows of cell texts (the csv module's default dialect: quoted when needed, ``\\r\\n``)."""
    text = io.StringIO(newline="")
    csv.writer(text).writerows(rows)
    return text.getvalue().encode("utf-8")


def digest(data: bytes | None) -> str:
    return "" if data is None else hashlib.sha256(data).hexdigest()


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["cell_value", "complete_prefix", "csv_lines", "float_text", "parse_csv", "render"]
