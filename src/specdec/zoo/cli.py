"""What every training command line checks before it trains: the step budget and where the weights go.

A step scale multiplies a model's fixed step count (CI smoke runs); it must be a finite number > 0 (0 or a negative
scale once trained one step and saved it). A training command writes into the committed zoo (``data/models``) only
when asked explicitly (``--out data/models``, as ``make models*`` does); without ``--out`` its weights go to
``TRAINED`` (git-ignored), so a smoke run or a typo never replaces shipped weights.
"""

from __future__ import annotations

import argparse
import math
import pathlib

from specdec.zoo import MODELS, ROOT

TRAINED = ROOT / ".cache" / "trained"  # a training command's default output folder (never the committed zoo)


def check_scale(scale, name: str = "steps_scale") -> float:
    """``scale`` as a float, or a ``ValueError`` unless it is a finite number > 0."""
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"{name} must be a finite number > 0 (it multiplies every step count), got {scale!r}")
    return float(scale)


def scaled_steps(steps: float, scale: float) -> int:
    """``max(1, int(steps * scale))`` for a valid ``scale`` (``check_scale``)."""
    return max(1, int(steps * check_scale(scale)))


def check_budget(steps_scale, prompts_per_set=None) -> None:
    """``check_scale(steps_scale)``, and ``prompts_per_set`` an integer >= 1 or ``None`` (all)."""
    from specdec import validate

    check_scale(steps_scale)
    if prompts_per_set is not None:
        validate.integer("prompts_per_set", prompts_per_set, minimum=1, hint="None: every prompt")


def positive_float(text: str) -> float:
    """An argparse type: a finite float > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected an integer > 0, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a finite float >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def output_dir(out: pathlib.Path | None) -> pathlib.Path:
    """Where a training command writes: ``out`` when given (``data/models`` only so), else ``TRAINED``."""
    if out is None:
        print(
            f"note: no --out given, weights go to {TRAINED} (pass --out {MODELS.relative_to(ROOT)} to replace "
            "the committed zoo)",
            flush=True,
        )
        return TRAINED
    return pathlib.Path(out)


POS, NAT = positive_int, non_negative_int  # short names for argparse types (``type=cli.POS``)
