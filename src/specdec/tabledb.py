"""One result table on disk: a SQLite database (the store) and its CSV export (what a person and git read).

Why SQLite: it is in the standard library (no new dependency), and it gives what a hand-written CSV append had to
imitate: transactions (a killed writer leaves the last committed state, never half a row), a ``UNIQUE`` index on
the row key (two processes writing the same key store its rows once; the index is on (key, ``part``), as one key's
computation may give several rows, numbered 0, 1, ...), one writer at a time with readers alongside (WAL mode), and
typed cells (``NULL``, ``INTEGER``, ``REAL``, ``TEXT`` of any length).

Files, for the table ``<dir>/<name>``:

- ``<name>.csv``: the export, committed for ``results/tiny/``. It is the authority whenever the database does not
  know it (a fresh clone, ``git checkout``, an edit, a file cut by an older writer): the database records the
  SHA-256 of the CSV it last wrote or read, and a CSV with another digest is read back into a new database.
- ``<name>.sqlite`` (``-wal``, ``-shm``): the database, git-ignored, built from the CSV on first open.

A write (``insert``) is one ``BEGIN IMMEDIATE`` transaction: check the CSV against the database, insert the rows
that are new, write a journal (``.<name>.csv.journal``, git-ignored: the new CSV's digest and the provenance line of
those rows, which ``ResultStore`` makes), write the CSV (the bytes it had plus the new rows, so a rerun on unchanged
inputs changes nothing) to a temporary file and move it over the old one (``os.replace``: a reader sees the old file
or the new one), append the provenance line to ``<name>.provenance.jsonl``, delete the journal, record the CSV's
digest, commit. The rows and their provenance line are one step: whoever next opens the table (under the write
lock, before anything else) completes a journal a killed writer left, appending its line when the CSV is the one
it names (the move happened) and dropping it when not (no row of it is stored). So a kill at any point leaves every
stored row with its provenance line and no line naming rows that are not stored; a kill between the move and the
commit leaves a CSV the database does not know, read back on the next open: no row is half written or lost.

Reading never writes the CSV. A key whose rows lie apart in the file (one computation's rows are written together,
so this is a duplicate from a git or hand merge) is an error naming it, and so is opening a table with other key
columns than it was written with (re-keying would silently re-index it).

Cells are stored as the text the CSV holds, typed when the text reads back unchanged (``cell_value``): the empty cell
is ``NULL`` (``None``), ``"4"`` an ``INTEGER``, ``"0.1234567"`` the ``REAL`` 0.1234567 (exact: 0.1234568 is another
value), any other text ``TEXT``. So a database rebuilt from its CSV equals the one that wrote it, and the CSV
written from it is byte-identical.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pathlib
import sqlite3
import time

from specdec.csvtext import (  # noqa: F401 (the table module's interface, as before)
    cell_value,
    complete_prefix,
    csv_body,
    csv_lines,
    digest,
    float_text,
    parse_csv,
    render,
)

SCHEMA = "1"


def _wal(con: sqlite3.Connection, patience: float = 120.0) -> None:
    """Put the database in WAL mode (it stays so: later connections only read the mode). Switching the mode needs
    the database to itself, and SQLite answers "database is locked" at once, without its busy timeout, while another
    process holds it, as when two workers create one new table together: so wait here, up to ``patience`` s."""
    deadline = time.monotonic() + patience
    while True:
        try:
            if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Table:
    """The database and CSV export of one table, keyed by the columns ``key``."""

    def __init__(self, csv_path: pathlib.Path, key: list[str]):
        self.csv = csv_path
        self.db = csv_path.with_name(csv_path.name.removesuffix(".csv") + ".sqlite")
        self.provenance = provenance_path(csv_path)
        self.journal = csv_path.with_name(f".{csv_path.name}.journal")  # a write in progress (or a killed one's)
        self.key = key
        self.header: list[str] | None = None

    # -------------------------------------------------------------------------------------------- connections
    def _open(self) -> sqlite3.Connection:
        """A connection (autocommit: transactions are explicit); an unreadable database file is rebuilt."""
        for attempt in range(2):
            con = sqlite3.connect(self.db, timeout=120, isolation_level=None)
            try:
                _wal(con)  # readers never block the writer, nor it them
                con.execute("PRAGMA synchronous=FULL")
                con.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
                return con
            except sqlite3.DatabaseError as error:
                con.close()
                if attempt or not _corrupt(error):
                    raise
                for suffix in ("", "-wal", "-shm"):  # not a database (a cut copy, a stray file): rebuilt from the CSV
                    self.db.with_name(self.db.name + suffix).unlink(missing_ok=True)
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _session(self, write: bool):
        """``(connection, CSV bytes or None)`` inside one transaction in which the database agrees with the CSV
        (rebuilt from it if not); ``write``: holding the write lock. Committed at the end, rolled back on an error."""
        con = self._open()
        try:
            con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            if self.journal.exists():  # a killed writer's step to complete (or a live writer's: wait for its lock)
                if not write:
                    con.execute("COMMIT")
                    con.execute("BEGIN IMMEDIATE")
                self._recover()
            meta, data = self._meta(con), self._read_csv()  # the snapshot first: a CSV newer than it is re-checked
            if not self._in_sync(meta, data):
                if not write:  # take the write lock, then look again: another process may be rebuilding
                    con.execute("COMMIT")
                    con.execute("BEGIN IMMEDIATE")
                    meta, data = self._meta(con), self._read_csv()
                if not self._in_sync(meta, data):
                    data = self._rebuild(con, data)
                    meta = self._meta(con)
            self.header = json.loads(meta["header"]) if "header" in meta else None
            yield con, data
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    def _meta(self, con) -> dict:
        return dict(con.execute("SELECT name, value FROM meta"))

    def _in_sync(self, meta: dict, data: bytes | None) -> bool:
        return (
            meta.get("schema") == SCHEMA
            and meta.get("key") == json.dumps(self.key)
            and meta.get("csv") == digest(data)
            and (data is None or "header" in meta or not csv_body(data))
        )

    def _read_csv(self) -> bytes | None:
        try:
            return self.csv.read_bytes()
        except FileNotFoundError:
            return None

    # -------------------------------------------------------------------------------------------------- rebuild
    def _rebuild(self, con, data: bytes | None) -> bytes | None:
        """Replace the database's rows with the CSV's (under the write lock). The file itself is left as it is (a
        read never rewrites it): a last row cut mid-write is left out of the database, and the next write drops it
        from the file (``insert``). Returns ``data``. A key whose rows are apart in the file (a duplicate from a git
        or hand merge) is an error naming it; so is a table opened with other key columns than it was written with."""
        header, records = parse_csv(data) if data is not None else (None, [])
        self._check_key(con, data)
        con.execute("DROP TABLE IF EXISTS rows")
        con.execute("DELETE FROM meta")
        if header is not None:
            missing = [k for k in self.key if k not in header]
            if missing:
                raise KeyError(f"{self.csv} has columns {header}, not the key columns {missing}")
            self._create(con, header)
            typed = [[cell_value(c) for c in r] for r in records]
            duplicates = _apart(header, self.key, typed)
            if duplicates:
                raise ValueError(
                    f"{self.csv} holds the rows of a key in places apart (a duplicate from a merge?): "
                    + "; ".join(f"{dict(zip(self.key, map(render, k)))} in rows {lines}" for k, lines in duplicates)
                    + ": keep one copy of each"
                )
            self._insert(con, header, typed)
            con.execute("INSERT INTO meta VALUES ('header', ?)", (json.dumps(header),))
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)", [("schema", SCHEMA), ("key", json.dumps(self.key)), ("csv", digest(data))]
        )
        return data

    def _check_key(self, con, data: bytes | None) -> None:
        """Refuse to re-key a table: the key columns it was written with (the database's record while it holds this
        very CSV, else the last provenance line's: a checkout may bring a CSV of another key) must be this opener's,
        in any order. A finer key is no re-key when the rows already carry its new columns (a column that was
        constant while it was not a key, such as notebook 14's ``image_counts``): the rows keep their order and stay
        one per key, as the duplicate check of the load then verifies."""
        meta = self._meta(con)
        stored = meta.get("key") if data is not None and meta.get("csv") == digest(data) else None
        known = json.loads(stored) if stored else _provenance_key(self.csv)
        header = (parse_csv(data)[0] or []) if data is not None else []
        finer = known is not None and set(known) <= set(self.key) and set(self.key) <= set(header)
        if known is not None and sorted(known) != sorted(self.key) and not finer:
            raise ValueError(
                f"{self.csv} was written with the key columns {known}, opened with {self.key}: use its key, "
                "or a new table name for another one"
            )

    def _create(self, con, header: list[str]) -> None:
        cells = ", ".join(f"c{i}" for i in range(len(header)))  # no declared type: each cell keeps its own
        con.execute(f"CREATE TABLE rows (seq INTEGER PRIMARY KEY, part INTEGER NOT NULL, {cells})")
        # NULL is never equal to NULL in a UNIQUE index: an empty key cell is indexed as the empty blob, a value no
        # cell holds (cells are NULL, integers, reals or text)
        index = ", ".join(f"coalesce(c{header.index(k)}, x'')" for k in self.key)
        con.execute(f"CREATE UNIQUE INDEX row_key ON rows ({index}, part)")

    def _insert(self, con, header: list[str], rows: list[list]) -> list[int]:
        """Insert typed rows in order; returns the indices of those that went in.

        The rows of one key are one result (a computation may give several rows: its ``part`` 0, 1, ...): a key
        stored already, by this or another process, is skipped whole, as the unique index on (key, part) says."""
        width, positions = len(header), [header.index(k) for k in self.key]
        cells = ", ".join(f"c{i}" for i in range(width))
        sql = f"INSERT OR IGNORE INTO rows (part, {cells}) VALUES (?{', ?' * width})"
        parts: dict[tuple, int | None] = {}
        new = []
        for i, row in enumerate(rows):
            row = (row + [None] * width)[:width]
            key = tuple(row[p] for p in positions)
            part = parts.get(key, 0)
            if part is None:
                continue
            if con.execute(sql, (part, *row)).rowcount == 0:  # part 0 of a stored key
                parts[key] = None
                continue
            parts[key] = part + 1
            new.append(i)
        return new

    # ----------------------------------------------------------------------------------------------------- reads
    def _stored(self) -> bool:
        return self.db.exists() or self.csv.exists()

    def rows(self) -> list[list[str]]:
        """Every stored row as cell texts, in the order written (that of the CSV); sets ``header``."""
        if not self._stored():
            self.header = None
            return []
        with self._session(write=False) as (con, _):
            if self.header is None:
                return []
            return [[render(v) for v in r[2:]] for r in con.execute("SELECT * FROM rows ORDER BY seq")]

    def csv_bytes(self) -> bytes | None:
        """The CSV export as it agrees with the database (``None``: no table yet); sets ``header``."""
        if not self._stored():
            self.header = None
            return None
        with self._session(write=False) as (_, data):
            return csv_body(data) if self.header is not None else None  # an empty or headless file: no table yet

    def keys(self) -> list[tuple[str, ...]]:
        """The stored rows' key cells as texts, in the order written; sets ``header``."""
        if not self._stored():
            self.header = None
            return []
        with self._session(write=False) as (con, _):
            if self.header is None:
                return []
            cells = ", ".join(f"c{self.header.index(k)}" for k in self.key)
            query = f"SELECT {cells} FROM rows WHERE part = 0 ORDER BY seq"
            return [tuple(map(render, r)) for r in con.execute(query)]

    def find(self, key: tuple[str, ...]) -> list[str] | None:
        """The row of ``key`` (its key cells as texts, in the order of ``self.key``), or ``None``."""
        if not self._stored():
            return None
        with self._session(write=False) as (con, _):
            if self.header is None:
                return None
            where = " AND ".join(f"coalesce(c{self.header.index(k)}, x'') = ?" for k in self.key)
            params = [b"" if (v := cell_value(t)) is None else v for t in key]
            row = con.execute(f"SELECT * FROM rows WHERE {where} AND part = 0", params).fetchone()
            return None if row is None else [render(v) for v in row[2:]]

    # ---------------------------------------------------------------------------------------------------- writes
    def insert(self, rows: list[dict], cell, provenance=None) -> tuple[list[int], list[str]]:
        """Store ``rows``, rewrite the CSV and append the provenance line of the new rows: one step (the module's
        docstring); a row whose key is stored is skipped.

        ``cell(column, row)``: the text of a row's cell. The first rows of a table set its columns (those of
        ``rows[0]``); later rows may lack columns (empty cells) but bring no new ones. ``provenance(new)``: the
        provenance line (a JSON-able dict) of the rows of indices ``new``, called under the write lock (``None``: no
        line). Returns the indices of the rows that went in and the table's columns."""
        self.csv.parent.mkdir(parents=True, exist_ok=True)
        with self._session(write=True) as (con, data):
            for stale in self.csv.parent.glob(f".{glob.escape(self.csv.name)}.*.tmp"):  # a killed writer's export
                stale.unlink(missing_ok=True)
            header = self.header or list(rows[0])
            extra = set().union(*rows) - set(header)
            if extra:
                raise ValueError(
                    f"{self.csv.name} has columns {header}; rows bring new ones {sorted(extra)}: "
                    "use a new table name or delete the old file"
                )
            if self.header is None:
                self._create(con, header)
                con.execute("INSERT OR REPLACE INTO meta VALUES ('header', ?)", (json.dumps(header),))
                self.header = header
            texts = [[cell(k, row) for k in header] for row in rows]
            new = self._insert(con, header, [[cell_value(c) for c in t] for t in texts])
            if new:
                body = csv_body(data) if data is not None else b""  # a last row without its line end completed
                data = (body or csv_lines([header])) + csv_lines([texts[i] for i in new])
                line = provenance(new) if provenance is not None else None
                if line is not None:
                    self._write_journal(digest(data), json.dumps(line, default=str))
                try:
                    self._replace_csv(data)
                finally:  # also on an error after the move: its line is due (a kill is completed by the next open)
                    self._recover()
                con.execute("INSERT OR REPLACE INTO meta VALUES ('csv', ?)", (digest(data),))
            return new, header

    # ----------------------------------------------------------------------------------------- the journal
    def _write_journal(self, csv_digest: str, line: str) -> None:
        """Record the step about to be taken: the CSV that will hold the new rows (its digest), and their
        provenance line with the size of the provenance file before it (where the line goes)."""
        size = self.provenance.stat().st_size if self.provenance.exists() else 0
        entry = json.dumps({"csv": csv_digest, "provenance_size": size, "line": line})
        _write_file(self.csv.with_name(f".{self.csv.name}.{os.getpid()}.journal.tmp"), entry.encode(), self.journal)

    def _recover(self) -> None:
        """Complete the journal's step (under the write lock): when the CSV is the one it names, its rows are stored
        and its provenance line is appended (a partial or whole earlier attempt is not repeated); when not, the move
        never happened and nothing is due. The journal is deleted either way."""
        try:
            entry = json.loads(self.journal.read_text(encoding="utf-8"))
            due = digest(self._read_csv()) == entry["csv"]
            line, size = (entry["line"] + "\n").encode("utf-8"), int(entry["provenance_size"])
        except FileNotFoundError:
            return
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):  # written whole (moved into place): a hand edit
            due = False
        if due:
            _append_once(self.provenance, line, size)
        self.journal.unlink(missing_ok=True)

    def _replace_csv(self, data: bytes) -> None:
        _write_file(self.csv.with_name(f".{self.csv.name}.{os.getpid()}.tmp"), data, self.csv)


def _write_file(tmp: pathlib.Path, data: bytes, path: pathlib.Path) -> None:
    """Write ``data`` to ``path`` whole or not at all: to ``tmp`` first (synced), then moved over ``path``."""
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _append_once(path: pathlib.Path, line: bytes, size: int) -> None:
    """Append ``line`` to the file ``path`` that was ``size`` bytes long before it, once: a whole earlier append of
    it is kept, a partial one (a kill mid-write) is cut and written again."""
    with open(path, "a+b") as f:
        end = f.seek(0, os.SEEK_END)
        f.seek(size if end >= size else max(end - 1, 0))
        tail = f.read()  # what was appended since (a file cut shorter, by hand: its last byte)
        if end >= size and tail == line:
            return
        if end >= size and line.startswith(tail):
            f.truncate(size)
        elif tail[-1:] not in (b"", b"\n"):  # the line goes on a line of its own
            line = b"\n" + line
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def provenance_path(csv_path: pathlib.Path) -> pathlib.Path:
    """The table's provenance sidecar: ``<name>.provenance.jsonl`` beside ``<name>.csv``."""
    if not isinstance(csv_path, pathlib.PurePath):
        raise TypeError(f"provenance_path takes the table's CSV as a pathlib.Path, got {type(csv_path).__name__}")
    return csv_path.with_name(csv_path.name.removesuffix(".csv") + ".provenance.jsonl")


def _apart(header: list[str], key: list[str], rows: list[list]) -> list[tuple[tuple, list[int]]]:
    """The keys whose rows are not one run of consecutive rows (one computation's rows are written together), with
    their row numbers (1 = the first row under the header)."""
    positions = [header.index(k) for k in key]
    seen: dict[tuple, list[int]] = {}
    previous = None
    for number, row in enumerate(rows, 1):
        k = tuple(row[p] if p < len(row) else None for p in positions)
        if k != previous and k in seen:
            seen[k].append(-number)  # a new run of a key seen before
        else:
            seen.setdefault(k, []).append(number)
        previous = k
    return [(k, [abs(n) for n in lines]) for k, lines in seen.items() if any(n < 0 for n in lines)]


def _provenance_key(csv_path: pathlib.Path) -> list[str] | None:
    """The key columns named by the last line of the table's provenance sidecar (``None``: no such line)."""
    try:
        lines = provenance_path(csv_path).read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    for line in reversed(lines):
        with contextlib.suppress(ValueError, AttributeError):
            columns = json.loads(line).get("key_columns")
            if isinstance(columns, list):
                return columns
    return None


def _corrupt(error: sqlite3.DatabaseError) -> bool:
    text = str(error).lower()
    return "malformed" in text or "not a database" in text or "file is encrypted" in text
