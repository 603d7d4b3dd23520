"""Results are data: tidy rows of ``results/<profile>/<table>.csv``, keyed for resuming.

A ``ResultStore`` knows which key columns identify a row. ``done(key)`` tells a rerun to skip finished
work; ``append`` stores each batch at once, so an interrupted run loses at most the batch it was computing.
Reading back gives a pandas DataFrame (or rows of the CSV's cell texts).

The store is a SQLite database per table (``<table>.sqlite``, git-ignored), the CSV its export (committed for
``results/tiny/``, read by people and by git). Why SQLite: it is in the standard library, so no new dependency,
and its transactions, ``UNIQUE`` key index and WAL mode give what a hand-written CSV append and repair could only
imitate: an append is all or nothing (a kill leaves no half row), several processes (xdist workers, Ray shards)
write one table without duplicate rows while others read, and cells are typed (``None`` stays ``NULL``, floats
exact, text of any length). The database is built from the committed CSV on first open and after the CSV changed
(a checkout); after a write the CSV is rewritten from it, deterministically (``specdec.tabledb``). Each append also
writes one line of provenance (git commit, package versions, CPU vector width, host, and whatever the caller put in
``store.provenance``: device, dtype, model ids) to the sidecar ``<table>.provenance.jsonl``, naming the keys it
wrote, in one step with its rows (a journal the next open completes: a kill leaves no stored row without its line).
Profile and table names are checked (``validate.name_part``): nothing is written outside ``<root>/<profile>``.

A read-only base layer (``base=COMMITTED``): a store may stand on the committed tables. Keys stored there count
as done and their rows are read back from there (``get``, ``frame``), new keys are computed and written to the
store's own folder only. ``make test`` points ``SPECDEC_OUTPUT_DIR`` at an empty folder, so a store without a
base recomputes everything; with one, a notebook whose full sweep is too slow for nbval (TABED: 20 requests per
cell) reads the committed rows and computes only what they lack. What keeps those rows honest is a recompute of
a seeded sample (``stratified_sample``) compared cell by cell (``stale_rows``): ``tests/test_committed_results.py``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import functools
import hashlib
import io
import math
import os
import pathlib
import platform
import subprocess
from typing import Any

from specdec import tabledb, validate, zoo
from specdec.tabledb import complete_prefix  # noqa: F401 (part of this module's interface)

# SPECDEC_OUTPUT_DIR redirects results/ and figures/ (``make test`` uses it so that nbval recomputes every
# number from scratch instead of reading the committed results, and leaves the committed files alone).
_OUTPUT = pathlib.Path(os.environ.get("SPECDEC_OUTPUT_DIR", zoo.ROOT))
RESULTS = _OUTPUT / "results"
FIGURES = _OUTPUT / "figures"
COMMITTED = zoo.ROOT / "results"  # the tables in git, whatever SPECDEC_OUTPUT_DIR says (the scoreboard reads them)
# SPECDEC_BASE_DIR replaces it (``make paper-smoke``: an empty folder, so a run never stands on the checkout's
# git-ignored results/paper/ of an earlier, perhaps older, paper run)
COMMITTED = pathlib.Path(os.environ.get("SPECDEC_BASE_DIR", COMMITTED))


class ResultStore:
    """Rows of ``<root>/<profile>/<table>.csv`` keyed by ``key``; ``base``: a folder of read-only tables under
    this one (e.g. ``COMMITTED``; ignored when it is ``root`` itself) whose keys count as done.

    The rows live in a SQLite database beside the CSV (``specdec.tabledb``: why, and how the two stay one);
    values read back are the CSV's cell texts, as they always were."""

    def __init__(
        self,
        profile: str,
        table: str,
        key: list[str],
        root: pathlib.Path | None = None,
        base: pathlib.Path | None = None,
    ):
        self.profile = validate.name_part("profile", profile)
        self.table = validate.name_part("table", table)  # "<table>.shards/<i>-of-<n>" (sharding) is allowed
        self.root = pathlib.Path(root or RESULTS)
        self.path = self.root / profile / f"{table}.csv"
        if not self.path.resolve().is_relative_to((self.root / profile).resolve()):  # e.g. through a symbolic link
            raise ValueError(f"table {table!r} of profile {profile!r} must stay inside {self.root / profile}")
        self.key = check_key(key)
        self.provenance: dict = {}  # the caller's part of each provenance line (device, dtype, model ids, ...)
        self._db = tabledb.Table(self.path, self.key)
        self._requested: dict[tuple, None] = {}  # the keys this run asked for (``want``), in order
        base_path = pathlib.Path(base) / profile / f"{table}.csv" if base is not None else None
        same = base_path is not None and base_path.resolve() == self.path.resolve()
        self.base_path = None if same or base_path is None or not base_path.exists() else base_path
        self._base_header, self._base_rows = self._read_base()
        self._base_done = {self.key_of(row) for row in self._base_rows}
        self._done = set(self._db.keys())

    @property
    def provenance_path(self) -> pathlib.Path:
        return self._db.provenance

    def _read_base(self) -> tuple[list[str], list[dict]]:
        """The base layer's header and rows, read from its CSV (read-only: no database is made beside it)."""
        if self.base_path is None:
            return [], []
        header, records = tabledb.parse_csv(self.base_path.read_bytes())
        header = header or []
        return header, [dict(zip(header, r)) for r in records]

    def key_of(self, row: dict) -> tuple:
        """The key of ``row`` as stored: its key columns' values formatted as written, as strings."""
        missing = [k for k in self.key if k not in row]
        if missing:
            raise KeyError(f"row lacks key columns {missing} of {self.path.name}")
        return tuple(key_text(row[k]) for k in self.key)  # formatted as written, so 0.0 matches "0"

    def done(self, **key) -> bool:
        wanted = self.key_of(key)
        return wanted in self._done or wanted in self._base_done

    def get(self, **key) -> dict:
        """The stored row of ``key`` (values as strings, as read from the CSV; own rows before the base's)."""
        wanted = self.key_of(key)
        row = self._db.find(wanted)
        if row is not None:
            return dict(zip(self._db.header or [], row))
        for base_row in self._base_rows:
            if self.key_of(base_row) == wanted:
                return base_row
        raise KeyError(f"no row {key} in {self.path}" + (f" or {self.base_path}" if self.base_path else ""))

    def rows(self, keys: list[dict] | None = None) -> list[dict]:
        """The stored rows (values as strings, in file order), only those of ``keys`` if given."""
        stored = [dict(zip(self._db.header or [], r)) for r in self._db.rows()]
        if keys is None:
            return stored
        wanted = {self.key_of(k) for k in keys}
        return [row for row in stored if self.key_of(row) in wanted]

    def append(self, rows: list[dict], provenance: dict | None = None) -> None:
        """Store rows (all with the same columns as the table) and rewrite its CSV: one transaction.

        Rows whose key is already stored (by this or another process, or in the base) are skipped. ``provenance``:
        the provenance line's fields when the rows were computed elsewhere (a merged shard: its worker's
        environment); default this process's ``environment()`` and ``self.provenance``."""
        rows = [r for r in rows if self.key_of(r) not in self._base_done]
        if not rows:
            return
        keys = [self.key_of(r) for r in rows]

        def cell(column, row):
            return key_text(row[column]) if column in self.key else str(format_value(row.get(column, "")))

        self._db.insert(rows, cell, lambda new: self._provenance_line([keys[i] for i in new], provenance))
        self._done = set(self._db.keys())

    def _provenance_line(self, keys: list[tuple], provenance: dict | None = None) -> dict:
        """The provenance line of ``keys`` (``tabledb`` writes it in one step with their rows)."""
        line: dict[str, Any] = {"written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        line.update({**environment(), **self.provenance} if provenance is None else provenance)
        line["key_columns"] = self.key
        line["keys"] = [list(k) for k in keys]
        return line

    def want(self, keys: list[dict]) -> None:
        """Record ``keys`` as asked for by this run (``run`` does it for its keys): ``frame(requested=True)`` is then
        their rows only, whatever else the table holds."""
        self._requested.update(dict.fromkeys(self.key_of(k) for k in keys))

    def run(self, keys: list[dict], compute, desc: str = "") -> None:
        """Compute and append the rows of every key not done yet, one key at a time (resumable); every key counts
        as asked for (``want``).

        ``compute(**key)`` returns a row dict or a list of rows; the key columns are added to each row."""
        from tqdm.auto import tqdm

        self.want(keys)
        missing = [k for k in keys if not self.done(**k)]
        for key in tqdm(missing, desc=desc or self.path.stem, disable=not missing):
            if self.done(**key):  # another worker finished it meanwhile
                continue
            rows = compute(**key)
            rows = [rows] if isinstance(rows, dict) else rows
            self.append([{**key, **row} for row in rows])

    def frame(self, requested: bool = False):
        """Every row as a DataFrame: the base layer's rows whose key this store does not hold, then its own.

        ``requested``: only the rows of the keys this run asked for (``want``, ``run``), so that a table of this
        run's settings never mixes in rows stored beside them under another key: another model's weights, an
        older version of a request, another ``max_new_tokens``."""
        import pandas as pd

        if not self.base_path and not requested:  # the export itself (it holds exactly the database's rows)
            data = self._db.csv_bytes()
            if data is None:
                return pd.DataFrame(columns=self.key)
            return pd.read_csv(io.BytesIO(data), dtype=DIGEST_DTYPES)
        own = self.rows()
        header = (self._db.header or []) if own else self._base_header if self._base_rows else self.key
        own_keys = {self.key_of(r) for r in own}
        rows = [r for r in self._base_rows if self.key_of(r) not in own_keys] + own
        if requested:
            rows = [r for r in rows if self.key_of(r) in self._requested]
        if own and self._base_rows and self._base_header != header:
            raise ValueError(
                f"{self.path} and its base {self.base_path} have different columns: rerun the table from scratch"
            )
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)  # one parse, so the dtypes are those of the committed table
        text.seek(0)
        return pd.read_csv(text, dtype=DIGEST_DTYPES)


# Hex digests in keys (model weights, prompt texts, requests) stay strings: "123456789012" or "12e456789012" would
# parse as numbers and no longer match the key they were written with.
DIGEST_DTYPES = {"weights": str, "model_weights": str, "prompts": str, "request": str}


def stratified_sample(frame, by: list[str], n: int = 1, seed: int = 0):
    """A seeded random sample of ``n`` rows (all if fewer) of every group of ``by`` (e.g. method x scenario), for
    recomputing committed rows: every group is checked, and the seed decides which of its rows."""
    missing = [c for c in by if c not in frame.columns]
    if missing:
        raise ValueError(f"stratified_sample by {missing}: the frame has no such column (it has {list(frame.columns)})")
    groups = frame.groupby(by, sort=True, dropna=False)
    return groups.sample(frac=1.0, random_state=seed).groupby(by, sort=True, dropna=False).head(n)


def stale_rows(committed, fresh, key: list[str], columns: list[str], tolerance: dict | None = None) -> list[str]:
    """The differences between committed rows and their recomputation, one line each (empty: none is stale).

    ``committed`` / ``fresh``: DataFrames with the ``key`` columns (``fresh`` may lack rows: a missing one is a
    difference). ``columns``: the cells to compare, as strings after ``format_value`` (exact: outputs, token
    lists, counts) unless ``tolerance[column]`` gives an absolute tolerance (numbers from float arithmetic)."""
    tolerance = tolerance or {}
    for name, frame in (("committed", committed), ("fresh", fresh)):
        missing = [k for k in key if k not in frame.columns]
        if missing:
            raise ValueError(f"the {name} rows lack the key columns {missing} (they have {list(frame.columns)})")

    def key_of(row):
        return tuple(str(row[k]) for k in key)

    fresh_by_key = {key_of(r): r for r in fresh.to_dict("records")}
    out = []
    for row in committed.to_dict("records"):
        other = fresh_by_key.get(key_of(row))
        if other is None:
            out.append(f"{dict(zip(key, key_of(row)))}: not recomputed")
            continue
        for col in columns:
            old, new = row.get(col), other.get(col)
            if col in tolerance:
                same = _close(old, new, tolerance[col])
            else:
                same = _cell(old) == _cell(new)
            if not same:
                out.append(f"{dict(zip(key, key_of(row)))}: {col} committed {old!r}, recomputed {new!r}")
    return out


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(format_value(value))


def _close(old, new, tol: float) -> bool:
    try:
        return abs(float(old) - float(new)) <= tol
    except (TypeError, ValueError):
        return _cell(old) == _cell(new)


def model_provenance(**models) -> dict:
    """``{"device", "dtype", "<role>_model"}`` of transformers models (``role=model`` keyword arguments)."""
    out: dict[str, str] = {}
    for role, model in models.items():
        if not callable(getattr(model, "parameters", None)):
            raise TypeError(f"{role} must be a model (a torch module), got {type(model).__name__} {model!r}")
        param = next(model.parameters())
        out.setdefault("device", str(param.device))
        out.setdefault("dtype", str(param.dtype).removeprefix("torch."))
        name = getattr(model.config, "_name_or_path", "") or type(model).__name__
        if pathlib.Path(name).is_dir():  # a folder (a hub id stays as it is, whatever the working directory)
            with contextlib.suppress(ValueError):  # a zoo folder: relative to the checkout, not this machine's path
                name = str(pathlib.Path(name).resolve().relative_to(zoo.ROOT))
        out[f"{role}_model"] = name
    return out


def model_fingerprint(model) -> str:
    """``<name>@<12 hex digits of a SHA-256 over the parameters>``: a result key that changes when a model is
    retrained under the same name (a name alone let timings of old weights pass as the new ones')."""
    if not callable(getattr(model, "state_dict", None)):
        raise TypeError(f"model must be a model (a torch module), got {type(model).__name__} {model!r}")
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().float().contiguous().numpy().tobytes())
    return f"{model_provenance(model=model)['model_model']}@{digest.hexdigest()[:12]}"


@functools.cache
def environment() -> dict:
    """Where a result was computed: git commit (``+dirty`` if the tree had changes), package versions, host,
    the CPU vector width torch used (float rounding, hence tie-breaks, can depend on it), and how busy the machine
    was when the rows were written (the 1-minute load average over its core count: walltime rows of a shared
    machine mix in other jobs)."""
    import torch
    import transformers

    def git(*args):
        try:
            out = subprocess.run(["git", *args], cwd=zoo.ROOT, capture_output=True, text=True, timeout=10)
            return out.stdout.strip() if out.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no", "--", "src"):
        commit += "+dirty"
    return {
        "commit": commit,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "host": platform.node(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpu_cores": os.cpu_count(),
    }


def format_value(value):
    """A cell as the CSV stores it (floats to 6 significant digits; ``None`` as the empty cell it is written as)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def key_text(value) -> str:
    """A key cell as written and compared, one text per value: floats exactly (6 significant digits when those are
    exact, as committed tables were written, otherwise ``repr``: 0.1234567 and 0.1234568 stay two keys; -0.0 is 0.0,
    as ``==`` says), ``None`` as the empty cell, which is also the text of ``""``: a CSV cell cannot tell them apart,
    so they are one key. Booleans are ``True`` / ``False``; an integer-valued float is its integer (1.0 is ``1``)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return tabledb.float_text(value + 0.0)  # -0.0 + 0.0 is 0.0
    return str(value)


def check_key(key) -> list[str]:
    """Key columns as a list of distinct names; one name as a ``str`` is one column (never its letters)."""
    columns = [key] if isinstance(key, str) else list(key)
    if not columns:
        raise ValueError("a ResultStore needs at least one key column (key=[] would keep one row only)")
    bad = [k for k in columns if not isinstance(k, str) or not k]
    if bad or len(set(columns)) != len(columns):
        raise ValueError(f"key must be distinct, non-empty column names, got {columns!r}")
    return columns


class MissingResults(FileNotFoundError):
    """A notebook that reads stored tables (the scoreboard) found none, or not the ones it needs."""


def require_tables(profile: str, root: pathlib.Path, needed: dict[str, str]) -> dict[str, pathlib.Path]:
    """The paths of the tables ``needed`` (table name -> the notebook that writes it) under ``<root>/<profile>/``,
    or one ``MissingResults`` naming the notebooks to run: ``make reproduce`` when the profile has no table at all
    (a fresh clone's paper profile), the notebooks of the missing tables otherwise."""
    folder = pathlib.Path(root) / validate.name_part("profile", profile)
    paths = {table: folder / f"{table}.csv" for table in needed}
    missing = {table: needed[table] for table, path in paths.items() if not path.exists()}
    if not missing:
        return paths
    run = f".venv/bin/python scripts/run_notebooks.py --profile {profile}"
    if not any(folder.glob("*.csv")):
        tables = [f"{t}.csv" for t in needed]
        wanted = ", ".join(tables) if len(tables) <= 3 else f"{len(tables)} tables, {tables[0]} first"
        raise MissingResults(
            f"profile {profile!r} has no result tables yet ({folder} holds none; this needs {wanted}): "
            "run its notebooks first, "
            f"`make reproduce PROFILE={profile}` (every notebook, this one last) or `{run}`"
        )
    commands = "; ".join(f"`{run} --only {nb.split('_')[0]}_` ({nb})" for nb in sorted(set(missing.values())))
    raise MissingResults(
        f"profile {profile!r} lacks {', '.join(f'{t}.csv' for t in missing)} in {folder}: run {commands} first, "
        f"or every notebook with `make reproduce PROFILE={profile}`"
    )


def proxy_conditions(name: str, root: pathlib.Path | None = None):
    """The ``name`` rows (one condition, e.g. ``"M3"``) of ``<root>/tiny/proxy_conditions.csv`` (default root
    ``COMMITTED``; ``scripts/proxy_conditions.py`` writes it), indexed by (quantity, subset); ``ValueError`` naming the
    file's conditions when it has no ``name`` rows."""
    import pandas as pd

    path = pathlib.Path(root or COMMITTED) / "tiny" / "proxy_conditions.csv"
    rows = pd.read_csv(path, dtype={"n": "Int64"})
    if name not in set(rows.condition):
        raise ValueError(f"no {name!r} rows in {path}; its conditions: {sorted(set(rows.condition))}")
    return rows[rows.condition == name].set_index(["quantity", "subset"])


def figure_path(profile: str, name: str) -> pathlib.Path:
    """``figures/<profile>/<name>.png`` (directories created); both are plain names (nothing outside ``figures/``)."""
    path = FIGURES / validate.plain_name("profile", profile) / f"{validate.plain_name('figure name', name)}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def paper_numbers(name: str):
    """A CSV of the papers' reported numbers (``data/paper/<name>.csv``) as a DataFrame of strings."""
    import pandas as pd

    validate.plain_name("paper table", name)
    return pd.read_csv(zoo.DATA / "paper" / f"{name}.csv", dtype=str)
