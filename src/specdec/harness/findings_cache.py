"""A paper's findings on a results folder, computed once per state of their inputs (``cached``).

Every ``findings_from_results`` reads committed tables and decides dozens of findings with bootstrap intervals, and
several readers ask for the same ones: the scoreboard (notebook 90), the paper pages' generated tables, the
findings' tests. ``cached`` keeps each answer under ``CACHE`` keyed by the function, its arguments and a stamp of
everything it can read: every file (path, size, modification time) of the profile's results folder, of ``data/``
and of the ``specdec`` sources, and the numeric libraries' versions. A changed row, parameter, weight file or line
of code is another key, so an answer never outlives its inputs; a second process asking for a key being computed
waits for it (a file lock) instead of computing it again. Only the shipped profile is cached (another profile's
verdicts depend on the machine's hub); ``SPECDEC_FINDINGS_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import pathlib
import pickle

from specdec import zoo
from specdec.harness.profile import Profile, ships

CACHE = zoo.ROOT / ".cache" / "findings"
SOURCES = pathlib.Path(__file__).resolve().parent.parent  # the specdec package


def _versions() -> str:
    """Python's and the numeric libraries' versions: another numpy or pandas may round a statistic otherwise."""
    import sys
    from importlib.metadata import version

    return " ".join([sys.version.split()[0], *(f"{p} {version(p)}" for p in ("numpy", "pandas", "scipy"))])


_VERSIONS = _versions()


# Files a reader creates beside the tables it reads, derived from them: a store's SQLite index of its CSV (rebuilt
# from the CSV, gitignored) and lock files. They change whenever any store is opened, the tables they mirror do not.
DERIVED = (".sqlite", ".sqlite-journal", ".sqlite-wal", ".sqlite-shm", ".lock", ".pyc")


def _stamp(digest, folder: pathlib.Path) -> None:
    """Every file under ``folder`` but the derived ones (``DERIVED``): relative path, size and modification time in
    ns, into ``digest``."""
    if not folder.exists():
        digest.update(f"{folder}: none\n".encode())
        return
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(DERIVED)):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())


def _plain(value):
    """An argument as it enters the key: a ``Profile`` by its name, a path resolved, anything else by ``repr``."""
    if isinstance(value, Profile):
        return f"profile:{value.name}"
    if isinstance(value, pathlib.PurePath):
        return str(pathlib.Path(value).resolve())
    return repr(value)


def key(function, profile: str, results_root: pathlib.Path, arguments: dict) -> str:
    """The cache key of ``function(**arguments)`` on ``results_root/profile``: the function, its arguments and the
    stamp of its inputs (the results folder, ``data/``, the sources)."""
    digest = hashlib.sha256(f"{function.__module__}.{function.__qualname__}\n{_VERSIONS}\n".encode())
    digest.update(repr(sorted((k, _plain(v)) for k, v in arguments.items())).encode())
    for folder in (results_root.resolve() / profile, zoo.DATA, SOURCES):
        _stamp(digest, folder)
    return digest.hexdigest()[:24]


def cached(function):
    """``function(profile, ..., root=None, ...)`` (a ``findings_from_results``) computed once per key (``key``):
    its answer is pickled under ``CACHE``; a reader of the same key waits for a computation under way."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        profile = bound.arguments.get("profile", "tiny")
        name = getattr(profile, "name", profile)
        if os.environ.get("SPECDEC_FINDINGS_CACHE", "1") == "0" or not ships(name):
            return function(*args, **kwargs)
        from filelock import FileLock

        from specdec.results import RESULTS

        root = pathlib.Path(bound.arguments.get("root") or RESULTS)
        arguments = {**bound.arguments, "profile": str(name)}
        if "root" in arguments:  # root=None reads RESULTS: the same answer as naming that folder
            arguments["root"] = root
        path = CACHE / f"{function.__module__}.{key(function, str(name), root, arguments)}.pkl"
        CACHE.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            if path.exists():
                return pickle.loads(path.read_bytes())
            answer = function(*args, **kwargs)
            partial = path.with_suffix(".part")
            partial.write_bytes(pickle.dumps(answer))
            partial.replace(path)  # whole or absent: an interrupted write leaves no answer behind
        return answer

    wrapper.uncached = function
    return wrapper
