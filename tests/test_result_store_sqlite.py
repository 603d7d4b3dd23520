"""The result store on SQLite (``specdec.tabledb``): typed keys, concurrent writers, a kill mid-write, names that
would leave ``results/``, and the committed CSVs migrated byte for byte."""

import json
import multiprocessing
import os
import pathlib
import shutil
import signal
import sqlite3
import time

import pandas as pd
import pytest

from specdec import results, tabledb
from specdec.results import ResultStore

COMMITTED = pathlib.Path(results.zoo.ROOT) / "results" / "tiny"


def _cells(store: ResultStore) -> list[tuple]:
    """The database's rows with SQLite's type of every cell."""
    con = sqlite3.connect(store._db.db)
    try:
        width = len(store._db.header)
        cells = ", ".join(f"c{i}, typeof(c{i})" for i in range(width))
        return con.execute(f"SELECT {cells} FROM rows ORDER BY seq").fetchall()
    finally:
        con.close()


def test_keys_are_typed_none_stays_null_and_floats_are_exact_reals(tmp_path):
    store = ResultStore("tiny", "t", ["a", "b"], root=tmp_path)
    store.append([{"a": None, "b": 0.1234567, "v": 1}, {"a": None, "b": 0.1234568, "v": 2}, {"a": 3, "b": 0.5, "v": 3}])
    again = ResultStore("tiny", "t", ["a", "b"], root=tmp_path)
    assert again.done(a=None, b=0.1234567) and again.done(a=None, b=0.1234568) and not again.done(a=None, b=0.123457)
    assert again.get(a=None, b=0.1234568)["v"] == "2" and again.get(a=3, b=0.5)["v"] == "3"
    again.append([{"a": None, "b": 0.1234567, "v": 9}])  # stored: no second row
    assert len(again.rows()) == 3
    rows = _cells(again)
    assert rows[0][:4] == (None, "null", 0.1234567, "real") and rows[1][2] == 0.1234568  # exact, not 6 digits
    assert rows[2][:4] == (3, "integer", 0.5, "real")
    frame = again.frame()
    assert frame.b.tolist() == [0.1234567, 0.1234568, 0.5] and frame.a.isna().tolist() == [True, True, False]


def test_a_200000_character_cell_and_key_round_trip(tmp_path):
    text = "".join(chr(0x41 + i % 26) + ("\n" if i % 997 == 0 else "") for i in range(200_000))[:200_000]
    store = ResultStore("tiny", "long", ["k"], root=tmp_path)
    store.append([{"k": text, "out": text, "n": 1}])
    again = ResultStore("tiny", "long", ["k"], root=tmp_path)
    assert again.done(k=text) and again.get(k=text)["out"] == text
    assert pd.read_csv(again.path).out[0] == text  # the export is a CSV pandas reads


def _write_keys(root: str, worker: int) -> None:
    store = ResultStore("tiny", "shared", ["item"], root=pathlib.Path(root))
    for item in range(40):  # every worker writes every key, two rows each; each key's rows must land once
        store.append([{"item": item, "part": p, "worker": worker} for p in range(2)])


def test_three_writer_processes_of_the_same_40_keys_store_40_results(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_keys, args=(str(tmp_path), w)) for w in range(3)]
    for w in workers:
        w.start()
    readers = []
    while any(w.is_alive() for w in workers):  # a reader beside the writers always sees whole results
        frame = ResultStore("tiny", "shared", ["item"], root=tmp_path).frame()
        readers.append(len(frame))
        assert len(frame) % 2 == 0 and not frame.duplicated(["item", "part"]).any()
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    frame = ResultStore("tiny", "shared", ["item"], root=tmp_path).frame()
    assert sorted(frame["item"].tolist()) == sorted(list(range(40)) * 2)
    assert frame.groupby("item").worker.nunique().eq(1).all()  # both parts of a key come from one writer
    csv_frame = pd.read_csv(tmp_path / "tiny" / "shared.csv")
    assert csv_frame.equals(frame) and (tmp_path / "tiny" / "shared.csv").read_text().count("item,part") == 1


def _append_forever(root: str) -> None:
    store = ResultStore("tiny", "killed", ["k"], root=pathlib.Path(root))
    for k in range(10_000):
        store.append([{"k": k, "text": f"row {k}\n" + "x" * 300_000}])


@pytest.mark.parametrize("after", [0.6, 1.1, 1.7])
def test_a_writer_killed_mid_write_leaves_whole_rows_and_a_store_that_resumes(tmp_path, after):
    ctx = multiprocessing.get_context("spawn")
    writer = ctx.Process(target=_append_forever, args=(str(tmp_path),))
    writer.start()
    deadline = time.monotonic() + 60
    while not (tmp_path / "tiny" / "killed.csv").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(after)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    store = ResultStore("tiny", "killed", ["k"], root=tmp_path)
    rows = store.rows()
    assert rows and [int(r["k"]) for r in rows] == list(range(len(rows)))  # whole rows, in order, none lost
    assert all(r["text"] == f"row {r['k']}\n" + "x" * 300_000 for r in rows)
    store.append([{"k": len(rows), "text": "next"}])  # resumes where the writer stopped
    exported = pd.read_csv(store.path, dtype=str, keep_default_na=False)
    assert exported.to_dict("records") == store.rows() and len(exported) == len(rows) + 1
    assert not list((tmp_path / "tiny").glob(".*.tmp"))  # a temporary export the kill left is cleared
    assert _provenance_keys(store) == [r["k"] for r in store.rows()]  # every row with its line, no line without


def _provenance_keys(store: ResultStore) -> list[str]:
    """The keys the provenance lines name (one-column keys), in order; no journal may be left."""
    assert not store._db.journal.exists()
    lines = [json.loads(line) for line in store.provenance_path.read_text().splitlines()]
    return [key[0] for line in lines for key in line["keys"]]


def _killed_at(root: str, point: str) -> None:
    """Append rows 0 and 1, then row 2 dying (``os._exit``: no ``finally`` runs, as under ``kill -9``) at ``point``
    of its write: after the journal, after the CSV move, halfway through the provenance line, after the line, after
    the journal is gone (before the commit)."""
    store = ResultStore("tiny", "steps", ["k"], root=pathlib.Path(root))
    store.append([{"k": 0, "v": "a"}, {"k": 1, "v": "b"}], provenance={"host": "h"})
    table, replaced = tabledb.Table, []

    def die_after(original, when=lambda: True):
        def step(*args, **kwargs):
            if point == "half line" and original is tabledb._append_once:
                path, line, size = args
                with open(path, "ab") as f:
                    f.write(line[: len(line) // 2])
                os._exit(9)
            out = original(*args, **kwargs)
            if when():
                os._exit(9)
            return out

        return step

    if point == "journal":
        table._write_journal = die_after(table._write_journal)
    elif point == "csv":
        table._replace_csv = die_after(table._replace_csv)
    elif point in ("half line", "line"):
        tabledb._append_once = die_after(tabledb._append_once)
    else:  # the journal deleted, the database not committed
        original = table._replace_csv
        table._replace_csv = lambda self, data: replaced.append(original(self, data))
        table._recover = die_after(table._recover, when=lambda: bool(replaced))
    store.append([{"k": 2, "v": "c"}], provenance={"host": "h"})
    os._exit(0)


@pytest.mark.parametrize("point", ["journal", "csv", "half line", "line", "journal gone"])
def test_a_writer_killed_between_its_rows_and_their_provenance_leaves_each_row_with_its_line(tmp_path, point):
    writer = multiprocessing.get_context("fork").Process(target=_killed_at, args=(str(tmp_path), point))
    writer.start()
    writer.join(60)
    assert writer.exitcode == 9  # it died at that point
    store = ResultStore("tiny", "steps", ["k"], root=tmp_path)
    stored = [r["k"] for r in store.rows()]
    assert stored == (["0", "1"] if point == "journal" else ["0", "1", "2"])
    assert _provenance_keys(store) == stored  # the next open completed (or dropped) the killed writer's step
    store.append([{"k": 3, "v": "d"}], provenance={"host": "h"})
    assert _provenance_keys(store) == [*stored, "3"] and [r["k"] for r in store.rows()] == [*stored, "3"]


@pytest.mark.parametrize(
    "profile, table",
    [("..", "t"), ("tiny/..", "t"), ("../tiny", "t"), ("tiny", ".."), ("tiny", "../t"), ("tiny", "a/../../t")],
)
def test_a_name_with_dot_dot_writes_nothing_outside_results(tmp_path, profile, table):
    root = tmp_path / "results"
    with pytest.raises(ValueError, match="must be a non-empty name|must stay inside"):
        ResultStore(profile, table, ["k"], root=root).append([{"k": 1}])
    assert not any(p for p in tmp_path.rglob("*") if p != root)


def test_a_folder_linked_outside_is_refused(tmp_path):
    (tmp_path / "results" / "tiny").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "results" / "tiny" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="must stay inside"):
        ResultStore("tiny", "link/t", ["k"], root=tmp_path / "results")


def test_the_csv_wins_when_it_changed_and_a_deleted_csv_empties_the_table(tmp_path):
    store = ResultStore("tiny", "t", ["k"], root=tmp_path)
    store.append([{"k": 1, "v": "old"}, {"k": 2, "v": "b"}])
    store.path.write_text(store.path.read_text().replace("old", "new"))  # e.g. a git checkout of another version
    again = ResultStore("tiny", "t", ["k"], root=tmp_path)
    assert again.get(k=1)["v"] == "new" and len(again.rows()) == 2
    again.path.unlink()  # the documented way to rerun a table from scratch
    assert not ResultStore("tiny", "t", ["k"], root=tmp_path).done(k=1)


def test_an_unreadable_database_is_rebuilt_from_the_csv(tmp_path):
    store = ResultStore("tiny", "t", ["k"], root=tmp_path)
    store.append([{"k": 1, "v": 2.5}])
    for suffix in ("-wal", "-shm"):
        store._db.db.with_name(store._db.db.name + suffix).unlink(missing_ok=True)
    store._db.db.write_bytes(b"not a database" * 100)
    again = ResultStore("tiny", "t", ["k"], root=tmp_path)
    assert again.get(k=1)["v"] == "2.5"


def test_a_rerun_on_the_same_inputs_leaves_the_csv_byte_identical(tmp_path):
    def sweep(root):
        store = ResultStore("tiny", "t", ["g", "temperature"], root=root)
        keys = [{"g": g, "temperature": t} for g in (1, 2) for t in (0.0, 0.7, None)]
        store.run(keys, lambda g, temperature: [{"tau": g / 3, "text": 'a "quoted"\nline'}, {"tau": 0.1, "text": ""}])
        return store

    first = sweep(tmp_path / "a")
    data = first.path.read_bytes()
    assert sweep(tmp_path / "a").path.read_bytes() == data and len(first.rows()) == 12
    assert sweep(tmp_path / "b").path.read_bytes() == data  # another folder, the same bytes
    shutil.rmtree(tmp_path / "b")
    (tmp_path / "b" / "tiny").mkdir(parents=True)
    shutil.copy(first.path, tmp_path / "b" / "tiny")  # a fresh clone: the CSV alone
    assert sweep(tmp_path / "b").path.read_bytes() == data


def _committed_tables():
    for path in sorted(COMMITTED.glob("*.provenance.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        yield path.name.removesuffix(".provenance.jsonl"), lines[-1]["key_columns"]


@pytest.mark.parametrize("table, key", list(_committed_tables()))
def test_every_committed_table_migrates_with_its_values_unchanged(tmp_path, table, key):
    (tmp_path / "tiny").mkdir()
    shutil.copy(COMMITTED / f"{table}.csv", tmp_path / "tiny")
    original = (COMMITTED / f"{table}.csv").read_bytes()
    store = ResultStore("tiny", table, key, root=tmp_path)
    header, records = tabledb.parse_csv(original)
    assert [list(r.values()) for r in store.rows()] == records and store._db.header == header
    assert tabledb.csv_lines([header] + records) == original  # the export of the database is the committed file
    assert store.path.read_bytes() == original
    assert pd.read_csv(store.path, dtype=results.DIGEST_DTYPES).equals(store.frame())


@pytest.mark.parametrize(
    "text",
    ["", "0", "-0", "00", "1.0", "1e-05", "1e+06", "0.1234567", "nan", "inf", "1_000", " 5", "True", "2" * 30, "[1]"],
)
def test_a_cell_reads_back_as_the_text_it_was(text):
    assert tabledb.render(tabledb.cell_value(text)) == text


def test_an_append_writes_the_bytes_the_csv_append_wrote():
    """The export is byte for byte what the hand-written CSV append wrote (these bytes are its output for these
    rows): the csv module's dialect, floats to 6 digits in cells and exactly in keys, ``None`` as the empty cell."""
    import tempfile

    import numpy as np

    rows = [
        {"m": "A", "g": 1, "t": 0.0, "x": 1 / 3, "txt": 'a "q"\nb\r\nc', "l": [1, 2], "b": True, "n": None},
        {"m": "B", "g": 2, "t": 0.1234567, "x": 1e-9, "txt": "", "l": [], "b": False, "n": np.float32(0.1)},
        {
            "m": "C",
            "g": None,
            "t": float("nan"),
            "x": -0.0,
            "txt": "é 日本",
            "l": "x,y",
            "b": 0,
            "n": np.float64(2 / 3),
        },
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore("tiny", "t", ["m", "g", "t"], root=pathlib.Path(tmp))
        store.append(rows[:1])
        store.append(rows)
        store.run([{"m": "D", "g": 3, "t": 0.5}], lambda **k: [{"x": 1.0}, {"x": 2.0}])
        data = store.path.read_bytes()
    assert data == (
        b'm,g,t,x,txt,l,b,n\r\nA,1,0,0.333333,"a ""q""\nb\r\nc","[1, 2]",True,\r\n'
        b'B,2,0.1234567,1e-09,,[],False,0.1\r\nC,,nan,-0,\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac,"x,y",0,0.666667\r\n'
        b"D,3,0.5,1,,,,\r\nD,3,0.5,2,,,,\r\n"
    )


def test_a_new_table_waits_while_another_process_holds_its_database(tmp_path):
    """Two workers creating one new table together: SQLite answers the second one's switch to WAL with "database is
    locked" at once, without its busy timeout, while the first holds the database (seen as a crash of one of two
    seed workers); the second waits instead and then writes."""
    import threading

    store = ResultStore("tiny", "fresh", ["k"], root=tmp_path)
    store._db.db.parent.mkdir(parents=True, exist_ok=True)
    holder = sqlite3.connect(store._db.db, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (a)")  # a database still in rollback-journal mode, a write open in it
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO other VALUES (1)")
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        store.append([{"k": 1, "v": "x"}])
    finally:
        release.join()
        holder.close()
    assert ResultStore("tiny", "fresh", ["k"], root=tmp_path).get(k=1)["v"] == "x"
