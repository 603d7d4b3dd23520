"""Everything that touches the Hugging Face hub or ``datasets``: model id / path resolution, dataset loading, and
the errors that say what to fetch when something is not here.

This project runs offline: ``resolve`` maps zoo names to the shipped directories and leaves hub ids as they are;
``load_dataset`` reads the local cache only when an offline flag is set or the hub is unreachable, so a missing
model or dataset fails at once (``ModelNotAvailableError``, ``DatasetNotAvailableError``) with instructions.
"""

from __future__ import annotations

import contextlib
import os

from specdec import zoo


class ModelNotAvailableError(RuntimeError):
    """The model is neither shipped, nor a local directory, nor in the local Hugging Face cache."""


def resolve(name_or_path: str | os.PathLike) -> str:
    """Map a zoo name to its shipped directory; leave hub ids and paths as they are."""
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


def load_dataset(dataset_id: str, config: str | None, split: str, n: int | None = None):
    """``datasets.load_dataset(dataset_id, config, split=split)`` (its first ``n`` rows) from the hub or the local
    cache; anything that keeps it from loading raises one ``DatasetNotAvailableError`` naming the fix."""
    try:
        import datasets
    except ImportError:
        raise DatasetNotAvailableError(
            f"loading {dataset_id} needs the datasets package: `pip install datasets`, or use profile='tiny'"
        ) from None
    try:
        with datasets_offline_if_unreachable():
            data = datasets.load_dataset(dataset_id, config, split=split)
    except Exception as err:  # ConnectionError, FileNotFoundError, DatasetNotFoundError, ... all mean "not here"
        cache = os.environ.get("HF_HOME", "~/.cache/huggingface")
        raise DatasetNotAvailableError(
            f"cannot load dataset {dataset_id!r} (config {config!r}, split {split!r}): "
            f"{type(err).__name__}: {str(err)[:200]}. This machine does not download from the Hugging Face hub. "
            f"On a machine with internet run `hf download --repo-type dataset {dataset_id}` and "
            f"load it once with datasets.load_dataset, then copy the cache (HF_HOME={cache}) here; "
            "or use profile='tiny'."
        ) from err
    if n is not None:
        data = data.select(range(min(n, len(data))))
    return data
