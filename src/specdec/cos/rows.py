"""Row helpers shared by the CoS task generators (``specdec.cos.tasks``): hash splits, ids, argument checks.

Splits are decided by sha256 hashes of a question's text (or fact), so they never depend on
``PYTHONHASHSEED``, dict or set order, and a question is in one split only.
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "test")
TRAIN_FRACTION = 0.9  # hash-based splits: a question goes to "train" when its hash bucket is below this


def hash_split(text: str) -> str:
    """``"train"`` or ``"test"`` for a text, from its sha256 (``TRAIN_FRACTION`` of texts go to train)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < TRAIN_FRACTION else "test"


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {list(SPLITS)}")


def check_n(n, allow_none: bool = True) -> None:
    if n is None and allow_none:
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        allowed = "a positive int or None" if allow_none else "a positive int"
        raise ValueError(f"n must be {allowed}, got {n!r}")


def max_tries(n: int) -> int:
    return 200 * n + 2000


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["SPLITS", "TRAIN_FRACTION"]
