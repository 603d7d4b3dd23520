"""Everything that touches the Hugging Face hub or ``datasets``: model id / path resolution, dataset loading, and
the errors that say what to fetch when something is not here.

This project runs offline: ``resolve`` maps zoo names to the shipped directories and leaves hub ids as they are;
``load_dataset`` reads the local cache only when an offline flag is set or the hub is unreachable, so a missing
model or dataset fails at once (``ModelNotAvailableError``, ``DatasetNotAvailableError``) with instructions naming
the ``hf`` command. ``profile_models`` / ``profile_datasets`` list every id a profile needs; ``download`` (``make
download``, the one online step) fetches them; ``snapshot_dir`` writes the hub's cache layout (the stand-in hub of
``scripts/standin_hub.py``).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys

from specdec import zoo

HF_CLI = "hf"  # the command huggingface_hub >= 1.0 installs (the pinned environment has no huggingface-cli)


class ModelNotAvailableError(RuntimeError):
    """The model is neither shipped, nor a local directory, nor in the local Hugging Face cache."""


# The way to run the paper profile offline at all: every error about a missing paper model or dataset names it.
STANDIN_HINT = (
    "; for a smoke run without the real weights, `make standin-hub` builds a tiny random-weight stand-in of every "
    "paper id"
)


def resolve(name_or_path: str | os.PathLike) -> str:
    """Map a zoo name to its shipped directory; leave hub ids and paths as they are."""
    if not isinstance(name_or_path, str | os.PathLike):
        raise TypeError(f"a model is named by a zoo name, a hub id or a path, got {type(name_or_path).__name__}")
    name = str(name_or_path)
    if name in zoo.TINY_ZOO or (zoo.MODELS / name / "config.json").exists():
        return str(zoo.model_dir(name))
    return name


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub endpoint accepts a connection within ``timeout`` seconds."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


class DatasetNotAvailableError(RuntimeError):
    """A paper dataset is neither reachable on the hub nor in the local Hugging Face datasets cache."""


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0") not in ("0", "", "false", "False")


@contextlib.contextmanager
def datasets_offline_if_unreachable():
    """Put ``datasets`` in offline mode (local cache only) while an offline flag is set or the hub is
    unreachable, so a missing dataset fails at once instead of after half a minute of retries. (``datasets``
    reads the flags when it is imported; setting them later has no effect without this.) Restores them after."""
    import datasets.config
    import huggingface_hub.constants

    if not any(_env_flag(v) for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")) and hub_reachable():
        yield
        return
    targets = [
        (datasets.config, "HF_HUB_OFFLINE"),
        (datasets.config, "HF_DATASETS_OFFLINE"),
        (huggingface_hub.constants, "HF_HUB_OFFLINE"),
    ]
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr in targets if hasattr(obj, attr)]
    for obj, attr, _ in saved:
        setattr(obj, attr, True)
    try:
        yield
    finally:
        for obj, attr, value in saved:
            setattr(obj, attr, value)


def load_dataset(dataset_id: str, config: str | None, split: str, n: int | None = None, revision: str | None = None):
    """``datasets.load_dataset(dataset_id, config, split=split, revision=revision)`` (its first ``n`` rows) from the
    hub or the local cache; anything that keeps it from loading raises one ``DatasetNotAvailableError`` naming the
    fix. ``revision``: the hub commit to read (``paper_revision(dataset_id)`` on the paper path; None: main).
    Offline, ``datasets`` 5.2 reads the prepared cache whatever the revision: ``make download`` prepares it at the
    pinned one."""
    try:
        import datasets
    except ImportError:
        raise DatasetNotAvailableError(
            f"loading {dataset_id} needs the datasets package: `pip install datasets`, or use profile='tiny'"
        ) from None
    try:
        with datasets_offline_if_unreachable():
            data = datasets.load_dataset(dataset_id, config, split=split, revision=revision)
    except Exception as err:  # ConnectionError, FileNotFoundError, DatasetNotFoundError, ... all mean "not here"
        cache = os.environ.get("HF_HOME", "~/.cache/huggingface")
        raise DatasetNotAvailableError(
            f"cannot load dataset {dataset_id!r} (config {config!r}, split {split!r}): "
            f"{type(err).__name__}: {str(err)[:200]}. This machine does not download from the Hugging Face hub. "
            f"On a machine with internet run `make download PROFILE=paper` (or `{HF_CLI} download --repo-type "
            f"dataset {dataset_id}{f' --revision {revision}' if revision else ''}` and load it once with "
            "datasets.load_dataset), then copy the cache "
            f"(HF_HOME={cache}) here; or use profile='tiny'{STANDIN_HINT}."
        ) from err
    if n is not None:
        data = data.select(range(min(n, len(data))))
    return data


# ------------------------------------------------------------------------------------------ the ids of a profile
def profile_models(spec: dict) -> list[str]:
    """Every model id a profile names (pairs, collaborative sets, pinned revisions), sorted, each once; the names of
    its ``models`` table are no hub ids (an installed package's file, this project's drafts: ``realmodel``)."""
    spec = _spec(spec)
    ids = {m for p in (spec.get("pairs") or {}).values() for m in (p["target"], p["draft"])}
    ids |= {m for c in (spec.get("collab") or {}).values() for m in c["models"]}
    datasets = set(profile_dataset_ids(spec))
    ids |= {k for k in (spec.get("revisions") or {}) if k not in datasets}
    return sorted(ids - set(spec.get("models") or {}))


def profile_datasets(spec: dict) -> list[dict]:
    """Every dataset a profile reads: ``{"id", "config", "split", "paper"}`` rows of its ``datasets`` list."""
    return [dict(d) for d in _datasets(_spec(spec))]


def profile_dataset_ids(spec: dict) -> list[str]:
    """Every hub dataset id a profile names, sorted, each once: its ``datasets`` list, the multilingual sets, the
    AASD tasks and the AASD baselines' training data (``aasd.baseline_training``, named but never loaded). Names
    that are not hub ids (no ``org/``: JParaCrawl) are left out."""
    ids = {d["id"] for d in _datasets(_spec(spec))}
    multilingual = spec.get("multilingual") or {}
    sets = list((multilingual.get("datasets") or {}).values()) + [multilingual.get("generalization") or [None]]
    ids |= {entry[0] for entry in sets if entry and entry[0]}
    aasd = spec.get("aasd") or {}
    ids |= {task["dataset"] for task in (aasd.get("tasks") or {}).values()}
    ids |= set(aasd.get("baseline_training") or [])
    return sorted(i for i in ids if "/" in i)


def profile_ids(spec: dict) -> list[str]:
    """Every hub id (models and datasets) a profile names: what its ``revisions`` must list, sorted."""
    return sorted(set(profile_models(spec)) | set(profile_dataset_ids(spec)))


def pinned_revision(spec: dict, repo_id: str) -> str | None:
    """The hub commit (40 hex digits) a profile's ``revisions`` pins for a model or dataset id; None: no pin
    (the main branch; ``unpinned`` in the yaml says why) or not a hub id."""
    revisions = _spec(spec).get("revisions") or {}
    if not isinstance(revisions, dict):
        raise TypeError(f"a profile's revisions must map a hub id to its commit, got {revisions!r}")
    return revisions.get(repo_id)


def _spec(spec) -> dict:
    """``spec`` if it is a profile's yaml read as a dict (``zoo.models.load_profile``), else a ``TypeError``."""
    if not isinstance(spec, dict):
        raise TypeError(
            f"spec must be a profile's yaml as a dict (yaml.safe_load of data/profiles/<name>.yaml), "
            f"got {type(spec).__name__} {spec!r}"
        )
    return spec


def _datasets(spec: dict) -> list[dict]:
    """A profile's ``datasets`` list, each entry a dict with an ``id`` (else a ``TypeError`` naming the entry)."""
    entries = spec.get("datasets") or []
    if not isinstance(entries, list) or not all(isinstance(d, dict) and "id" in d for d in entries):
        raise TypeError(
            f"a profile's datasets must be a list of {{'id': ..., 'config': ..., 'split': ...}} entries, "
            f"got {entries!r}"
        )
    return entries


def paper_revision(repo_id: str) -> str | None:
    """``pinned_revision`` of the paper profile (``data/profiles/paper.yaml``): what the paper path loads (read
    here, not through ``zoo.models.load_profile``, which imports this module)."""
    import yaml

    return pinned_revision(yaml.safe_load((zoo.DATA / "profiles" / "paper.yaml").read_text()), repo_id)


def snapshot_dir(
    hf_home: str | os.PathLike, repo_id: str, repo_type: str, revision: str, refs=("main",)
) -> pathlib.Path:
    """``$HF_HOME/hub/<models|datasets>--org--name/snapshots/<revision>/`` (created), with ``refs/<ref>`` naming
    ``revision`` for each of ``refs`` (``main``; a branch or short hash given as a revision gets its own ref): the
    layout ``hf download`` leaves, which ``from_pretrained(id, revision=...)`` resolves offline (a full commit hash
    resolves to ``snapshots/<hash>`` directly)."""
    from huggingface_hub.constants import REPO_ID_SEPARATOR

    if repo_type not in ("model", "dataset"):
        raise ValueError(f"repo_type must be 'model' or 'dataset', got {repo_type!r}")
    folder = REPO_ID_SEPARATOR.join([f"{repo_type}s", *repo_id.split("/")])
    repo = pathlib.Path(hf_home) / "hub" / folder
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    for ref in refs:
        (repo / "refs" / ref).write_text(revision)
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    return snapshot


def cached_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit hash of the snapshot ``from_pretrained(repo_id, revision=revision)`` reads from the local cache
    (``$HF_HOME/hub/models--org--name/snapshots/<commit>/``); ``None`` for a local folder or an id not cached."""
    from huggingface_hub import try_to_load_from_cache

    if pathlib.Path(repo_id).exists():
        return None
    try:
        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except ValueError:  # not a hub id (e.g. a relative path that does not exist)
        return None
    return pathlib.Path(found).parent.name if isinstance(found, str) else None


STANDIN_MARK = "standin-hub"  # scripts/standin_hub.py writes it into every stand-in model's config


def standin_cache() -> bool:
    """Whether ``$HF_HOME`` holds the stand-in hub (``make standin-hub``: random weights) rather than real models."""
    home = pathlib.Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
    config = next(home.glob("hub/models--*/snapshots/*/config.json"), None)
    return config is not None and STANDIN_MARK in config.read_text()


def missing(spec: dict) -> list[str]:
    """The model ids (at their pinned commit) and the datasets of a profile's ``datasets`` list that the local cache
    (``$HF_HOME``) lacks, sorted: what an offline run of that profile would stop on (``scripts/run_notebooks.py``
    checks it before the first notebook). A dataset counts as there when ``datasets`` prepared its Arrow cache."""
    from datasets.naming import camelcase_to_snakecase

    home = pathlib.Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
    out = {m for m in profile_models(spec) if cached_commit(m, pinned_revision(spec, m)) is None}
    for d in profile_datasets(spec):
        namespace, _, base = d["id"].rpartition("/")
        folder = "___".join(([namespace] if namespace else []) + [camelcase_to_snakecase(base)])
        if not (home / "datasets" / folder / (d.get("config") or "default")).is_dir():
            out.add(d["id"])
    return sorted(out)


# ------------------------------------------------------------------------------------------ download (online)
# Files of other frameworks and Meta's original checkpoints: transformers never reads them (tens of GB saved).
NOT_NEEDED = ["original/*", "*.msgpack", "*.h5", "*.ot", "*.onnx", "*.gguf", "coreml/*"]


class HubUnreachableError(RuntimeError):
    """``make download`` was asked to fetch while offline."""


def download(spec: dict, *, only: list[str] | None = None, log=print) -> dict:
    """Fetch every model (``huggingface_hub.snapshot_download``) and dataset (``datasets.load_dataset``, which
    also prepares the Arrow cache that offline runs read) of a profile into ``$HF_HOME``.

    Returns ``{"fetched": [...], "needs_token": [...], "failed": [...]}``. Gated repositories (``meta-llama/*``)
    land in ``needs_token`` unless a token with access is configured (``hf auth login``). Raises
    ``HubUnreachableError`` at once when an offline flag is set or the hub cannot be reached.
    """
    if any(_env_flag(v) for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")):
        raise HubUnreachableError(
            "an offline flag is set (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE / HF_DATASETS_OFFLINE): "
            "downloading needs them unset: `make download` unsets them itself"
        )
    if not hub_reachable():
        raise HubUnreachableError(
            "the Hugging Face hub is unreachable from this machine: run `make download PROFILE=paper` on a machine "
            f"with internet and copy its HF_HOME ({_cache()}) here, or use `{HF_CLI} download <id>` there"
        )
    import datasets
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    report: dict = {"fetched": [], "needs_token": [], "failed": []}
    wanted = lambda repo_id: not only or repo_id in only  # noqa: E731
    for repo_id in filter(wanted, profile_models(spec)):
        try:
            path = snapshot_download(repo_id, revision=pinned_revision(spec, repo_id), ignore_patterns=NOT_NEEDED)
            report["fetched"].append(f"{repo_id} @ {pathlib.Path(path).name}")
        except GatedRepoError:
            report["needs_token"].append(repo_id)
        except (RepositoryNotFoundError, OSError, ValueError) as err:
            report["failed"].append(f"{repo_id}: {type(err).__name__}: {str(err)[:160]}")
        log(f"model   {repo_id}")
    for d in filter(lambda d: wanted(d["id"]), profile_datasets(spec)):
        name = f"{d['id']} {d['config'] or ''} {d['split']}".replace("  ", " ")
        try:
            revision = pinned_revision(spec, d["id"])
            data = datasets.load_dataset(d["id"], d["config"], split=d["split"], revision=revision)
            report["fetched"].append(f"{name} ({len(data)} rows)")
        except Exception as err:  # gated, renamed, script-based: report and go on with the others
            kind = "needs_token" if "gated" in str(err).lower() else "failed"
            report[kind].append(f"{name}: {type(err).__name__}: {str(err)[:160]}")
        log(f"dataset {name}")
    return report


def _cache() -> str:
    return os.environ.get("HF_HOME", "~/.cache/huggingface")


def main(argv=None) -> int:
    """``python -m specdec.hub download [--profile paper] [ids...]``: what ``make download`` runs."""
    import argparse

    import yaml

    ap = argparse.ArgumentParser(prog="python -m specdec.hub", description="prefetch a profile's models and datasets")
    ap.add_argument("command", choices=["download", "list"])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("ids", nargs="*", help="only these ids")
    args = ap.parse_args(argv)
    from specdec import validate

    try:  # one plain name: nothing outside data/profiles is read
        path = zoo.DATA / "profiles" / f"{validate.plain_name('profile', args.profile)}.yaml"
    except ValueError as err:
        ap.error(str(err))
    if not path.exists():
        ap.error(f"unknown profile {args.profile!r}: known {sorted(p.stem for p in path.parent.glob('*.yaml'))}")
    spec = yaml.safe_load(path.read_text())
    if args.command == "list":
        print("\n".join(profile_models(spec)))
        print("\n".join(f"{d['id']} {d['config'] or '-'} {d['split']}" for d in profile_datasets(spec)))
        return 0
    try:
        report = download(spec, only=args.ids or None)
    except HubUnreachableError as err:
        print(f"make download: {err}", file=sys.stderr)
        return 2
    print(f"\nHF_HOME={_cache()}")
    for kind, title in (("fetched", "fetched"), ("needs_token", "needs a token (`hf auth login`, accept the licence)"),
                        ("failed", "failed")):  # fmt: skip
        print(f"{title}: {len(report[kind])}")
        print("".join(f"  {line}\n" for line in report[kind]), end="")
    return 1 if report["failed"] or report["needs_token"] else 0


if __name__ == "__main__":
    sys.exit(main())
