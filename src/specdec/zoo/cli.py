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

from specdec import validate
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
    check_scale(steps_scale)
    if prompts_per_set is not None:
        validate.integer("prompts_per_set", prompts_per_set, minimum=1, hint="None: every prompt")


def int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum`` (``int_at_least(1)``: a count, said "> 0")."""
    want = "an integer > 0" if minimum == 1 else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {want}, got {value}")
        return value

    return parse


def finite_number(*, minimum: float | None = None, positive: bool = False):
    """An argparse type: a finite float, ``> 0`` (``positive``) or ``>= minimum``, as ``validate.number`` checks it."""
    want = "a finite number" + (" > 0" if positive else f" >= {minimum}" if minimum is not None else "")

    def parse(text: str) -> float:
        try:
            return validate.number("value", float(text), minimum=minimum, positive=positive)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None

    return parse


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


# short names for argparse types (``type=cli.POS``)
POS, NAT, POS_NUMBER = int_at_least(1), int_at_least(0), finite_number(positive=True)
