"""Results are data: tidy rows appended to ``results/<profile>/<table>.csv``, keyed for resuming.

A ``ResultStore`` knows which key columns identify a row. ``done(key)`` tells a rerun to skip finished
work; ``append`` writes and flushes each batch at once, so an interrupted run loses at most the batch it
was computing. Reading back gives a pandas DataFrame.
"""

from __future__ import annotations

import csv
import os
import pathlib

from specdec import zoo

# SPECDEC_OUTPUT_DIR redirects results/ and figures/ (``make test`` uses it so that nbval recomputes every
# number from scratch instead of reading the committed results, and leaves the committed files alone).
_OUTPUT = pathlib.Path(os.environ.get("SPECDEC_OUTPUT_DIR", zoo.ROOT))
RESULTS = _OUTPUT / "results"
FIGURES = _OUTPUT / "figures"


class ResultStore:
    def __init__(self, profile: str, table: str, key: list[str], root: pathlib.Path | None = None):
        self.path = pathlib.Path(root or RESULTS) / profile / f"{table}.csv"
        self.key = list(key)
        self._done = {self._key_of(row) for row in self._read()}

    def _read(self) -> list[dict]:
        if not self.path.exists():
            return []
        with self.path.open(newline="") as f:
            return list(csv.DictReader(f))

    def _key_of(self, row: dict) -> tuple:
        missing = [k for k in self.key if k not in row]
        if missing:
            raise KeyError(f"row lacks key columns {missing} of {self.path.name}")
        return tuple(str(format_value(row[k])) for k in self.key)  # formatted as written, so 0.0 matches "0"

    def done(self, **key) -> bool:
        return self._key_of(key) in self._done

    def get(self, **key) -> dict:
        """The stored row of ``key`` (values as strings, as read from the CSV)."""
        wanted = self._key_of(key)
        for row in self._read():
            if self._key_of(row) == wanted:
                return row
        raise KeyError(f"no row {key} in {self.path}")

    def append(self, rows: list[dict]) -> None:
        """Append rows (all with the same columns as the file) and flush them to disk."""
        rows = [r for r in rows if self._key_of(r) not in self._done]
        if not rows:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new_file = not self.path.exists()
        fields = list(rows[0]) if new_file else self._header()
        extra = set().union(*rows) - set(fields)
        if extra:
            raise ValueError(
                f"{self.path.name} has columns {fields}; rows bring new ones {sorted(extra)}: "
                "use a new table name or delete the old file"
            )
        with self.path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            if new_file:
                writer.writeheader()
            for row in rows:
                writer.writerow({k: format_value(row.get(k, "")) for k in fields})
        self._done.update(self._key_of(r) for r in rows)

    def run(self, keys: list[dict], compute, desc: str = "") -> None:
        """Compute and append the rows of every key not done yet, one key at a time (resumable).

        ``compute(**key)`` returns a row dict or a list of rows; the key columns are added to each row."""
        from tqdm.auto import tqdm

        missing = [k for k in keys if not self.done(**k)]
        for key in tqdm(missing, desc=desc or self.path.stem, disable=not missing):
            rows = compute(**key)
            rows = [rows] if isinstance(rows, dict) else rows
            self.append([{**key, **row} for row in rows])

    def _header(self) -> list[str]:
        with self.path.open(newline="") as f:
            return next(csv.reader(f))

    def frame(self):
        import pandas as pd

        return pd.read_csv(self.path) if self.path.exists() else pd.DataFrame(columns=self.key)


def format_value(value):
    """A cell as the CSV stores it (floats to 6 significant digits): the form keys are compared in."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def figure_path(profile: str, name: str) -> pathlib.Path:
    """``figures/<profile>/<name>.png`` (directories created)."""
    path = FIGURES / profile / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def paper_numbers(name: str):
    """A CSV of the papers' reported numbers (``data/paper/<name>.csv``) as a DataFrame of strings."""
    import pandas as pd

    return pd.read_csv(zoo.DATA / "paper" / f"{name}.csv", dtype=str)
