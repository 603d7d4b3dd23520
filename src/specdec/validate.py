"""One clear error per bad argument at the public entry points: the checks every module shares.

Each check returns the value in the form the caller computes with (a Python ``int`` / ``float`` / ``str``) or
raises ``ValueError`` (``TypeError`` for a value of the wrong kind) with one message that names the argument,
repeats the bad value and says what to pass instead. Integer-like values (``numpy.int64``, a 0-d integer
tensor) are accepted as integers; ``bool`` is never a number here (``True`` as a size is always a slip).
"""

from __future__ import annotations

import difflib
import functools
import math
import numbers
import operator
import re
from collections.abc import Iterable


def _tail(hint: str) -> str:
    return f" ({hint})" if hint else ""


def _bounds(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None, hint: str = "") -> int:
    """``value`` as an ``int`` (numpy / torch integers accepted), within ``[minimum, maximum]``."""
    want = f"{name} must be an integer{_bounds(minimum, maximum)}"
    if isinstance(value, bool) or isinstance(value, float) or isinstance(value, str):
        raise TypeError(f"{want}, got {value!r}{_tail(hint)}")
    try:
        out = operator.index(value)  # int, numpy ints, 0-d integer tensors; not floats
    except TypeError:
        raise TypeError(f"{want}, got {type(value).__name__} {value!r}{_tail(hint)}") from None
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        raise ValueError(f"{want}, got {out}{_tail(hint)}")
    return out


def number(
    name: str,
    value,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    positive: bool = False,
    hint: str = "",
) -> float:
    """``value`` as a finite ``float`` within ``[minimum, maximum]`` (``positive``: strictly above zero)."""
    bounds = " > 0" if positive else _bounds(minimum, maximum)
    want = f"{name} must be a finite number{bounds}"
    if isinstance(value, bool) or isinstance(value, str) or not isinstance(value, numbers.Real):
        if not (hasattr(value, "item") and getattr(value, "ndim", 1) == 0):  # a 0-d tensor / numpy scalar
            raise TypeError(f"{want}, got {type(value).__name__} {value!r}{_tail(hint)}")
        value = value.item()  # type: ignore[union-attr]  # checked just above: a 0-d tensor / numpy scalar
        if isinstance(value, bool):
            raise TypeError(f"{want}, got {value!r}{_tail(hint)}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{want}, got {out}{_tail(hint)}")
    if (positive and out <= 0) or (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        raise ValueError(f"{want}, got {out}{_tail(hint)}")
    return out


def numbers_list(name: str, values, *, length: int | None = None, minimum: float | None = None) -> list[float]:
    """A sequence of finite numbers (``length`` of them if given), each ``>= minimum``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of numbers, got {type(values).__name__} {values!r}")
    values = list(values.flatten().tolist() if hasattr(values, "flatten") else values)
    if length is not None and len(values) != length:
        raise ValueError(f"{name} must hold {length} numbers, got {len(values)}: {values!r}")
    return [number(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(values)]


def model(name: str, value):
    """``value`` if it is a torch model (a ``torch.nn.Module``, e.g. from ``specdec.zoo.models.load``)."""
    import torch

    if not isinstance(value, torch.nn.Module):
        raise TypeError(
            f"{name} must be a torch model (torch.nn.Module, e.g. specdec.zoo.models.load(...)), "
            f"got {type(value).__name__} {value!r:.80}"
        )
    return value


def choice(name: str, value, allowed: Iterable, *, hint: str = ""):
    """``value`` if it is one of ``allowed``; otherwise the error lists them and suggests the closest."""
    allowed = list(allowed)
    if value in allowed and not isinstance(value, bool):
        return value
    close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown {name} {value!r}{guess}: choose one of {allowed}{_tail(hint)}")


def strings(name: str, value) -> list[str]:
    """A list of strings; a single ``str`` is one string (never its characters)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]  # checked below: "" as one string is refused like [""] (it matches every text)
    if isinstance(value, bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a string or a list of strings, got {type(value).__name__} {value!r}")
    out = list(value)
    bad = [v for v in out if not isinstance(v, str) or not v]
    if bad:
        raise ValueError(f"{name} must hold non-empty strings, got {bad!r} in {out!r}")
    return out


def finite_tensor(name: str, tensor, *, hint: str = "") -> None:
    """Raise unless every entry of the floating-point ``tensor`` is finite (NaN / inf would decode token 0); ``None``
    passes (an input not given), another kind than a tensor is a ``TypeError``, an integer tensor is finite."""
    import torch

    if tensor is None:
        return
    if not torch.is_tensor(tensor):
        raise TypeError(f"{name} must be a tensor, got {type(tensor).__name__} {tensor!r}{_tail(hint)}")
    if not torch.is_floating_point(tensor):
        return
    bad = ~torch.isfinite(tensor)
    if bool(bad.any()):
        raise ValueError(
            f"{name} holds {int(bad.sum())} non-finite value(s) (NaN or inf) of {tensor.numel()}"
            f"{_tail(hint or 'check the inputs, or run the model in float32 if float16 overflowed')}"
        )


def model_inputs(name: str, inputs) -> None:
    """Extra prefill inputs (``target_inputs`` / ``draft_inputs``): a dict (or ``None``) whose floating tensors are
    finite and whose pixels are floats. Raw ``uint8`` pixels (0..255) would go into the vision tower unnormalised,
    a different image; the processor's ``pixel_values`` are floats."""
    import torch

    if inputs is None:
        return
    if not isinstance(inputs, dict):
        kind = type(inputs).__name__
        raise TypeError(f"{name} must be a dict of model inputs (e.g. {{'pixel_values': ...}}), got {kind}")
    for key, value in inputs.items():
        if not torch.is_tensor(value):
            continue
        if "pixel" in key and not torch.is_floating_point(value):
            raise TypeError(
                f"{name}[{key!r}] has dtype {value.dtype}: pixel values are the image processor's normalised floats, "
                "not raw image bytes; pass processor(images=...)['pixel_values']"
            )
        finite_tensor(f"{name}[{key!r}]", value, hint="the processor's output holds finite numbers only")


def draft_scores(scores, what: str = "logits") -> None:
    """Stop on a draft's non-finite ``scores [..., V]`` (``broken_scores``): a NaN row would draft token 0 with
    probability NaN, so every draft token is rejected silently (α = 0) instead of failing."""
    if broken_scores(scores):
        raise FloatingPointError(
            f"the draft's {what} hold NaN or inf: the draft model overflowed (float16?), its weights are broken, or "
            "its inputs (draft-only pixels) are; load it in float32 / bfloat16 or check the checkpoint and inputs"
        )


def name_part(name: str, value) -> str:
    """A file-name part (a profile, a table): no path separators, no ``..``, not empty."""
    if not isinstance(value, str) or not value or value in (".", "..") or "\x00" in value:
        raise ValueError(f"{name} must be a non-empty name, got {value!r}")
    parts = value.replace("\\", "/").split("/")
    if ".." in parts or value.startswith("/") or any(not p for p in parts):
        raise ValueError(f"{name} {value!r} must stay inside its folder: no '..', no leading or doubled '/'")
    return value


def plain_name(name: str, value) -> str:
    """A single file-name part (a profile, a figure): ``name_part`` without any ``/`` or ``\\``."""
    value = name_part(name, value)
    if "/" in value or "\\" in value:
        raise ValueError(f"{name} {value!r} must be a plain name: no '/' or '\\' (it names one file or folder)")
    return value


def broken_scores(scores) -> bool:
    """Whether logits ``[..., V]`` cannot be decoded: a NaN or +inf anywhere, or a row without a finite entry.

    ``-inf`` alone is a legal logit (a masked token); an all-NaN row would silently argmax to token 0."""
    import torch

    if not torch.is_floating_point(scores) or scores.numel() == 0:
        return False
    # Fast path, one reduction and one read (the engine asks every step): a finite sum means every entry is finite,
    # since NaN and ±inf propagate through any order of addition. A float32 sum that overflows only takes the slow path.
    if math.isfinite(float(scores.sum(dtype=torch.float32))):
        return False
    if bool(torch.isnan(scores).any()) or bool(torch.isposinf(scores).any()):
        return True
    return not bool(torch.isfinite(scores).any(-1).all())


def reads_frame(function):
    """Decorate a public function whose first argument is a result frame (a DataFrame of a table's rows): a frame
    lacking a column it reads gives one ``ValueError`` naming that column and the frame's columns, where pandas would
    raise an ``AttributeError`` ("'DataFrame' object has no attribute 'method'") or a bare ``KeyError`` from deep
    inside. The function reads, never writes: nothing is half done when it raises."""

    @functools.wraps(function)
    def reading(frame, *args, **kwargs):
        try:
            return function(frame, *args, **kwargs)
        except (AttributeError, KeyError) as error:
            missing = _missing_column(error, getattr(frame, "columns", None))
            if missing is None:
                raise
            raise ValueError(
                f"{function.__name__} reads the column {missing!r}, which this frame lacks (it has "
                f"{list(frame.columns)}): pass the rows of the table it reads"
            ) from error

    return reading


def _missing_column(error: Exception, columns) -> str | None:
    """The column a pandas ``AttributeError`` / ``KeyError`` names, when ``columns`` lack it (else ``None``)."""
    if columns is None:
        return None
    if isinstance(error, AttributeError):
        found = re.fullmatch(r"'DataFrame' object has no attribute '([^']+)'", str(error))
        name = found.group(1) if found else None
    else:
        name = error.args[0] if len(error.args) == 1 else None
        name = name.removeprefix("Column not found: ") if isinstance(name, str) else None
    return name if name is not None and name not in set(map(str, columns)) else None


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "choice",
    "draft_scores",
    "finite_tensor",
    "model",
    "integer",
    "model_inputs",
    "name_part",
    "number",
    "numbers_list",
    "plain_name",
    "reads_frame",
    "strings",
]
