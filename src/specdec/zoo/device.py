"""The one device and dtype rule of every profile: what a run gets from its yaml, what it asked for and what torch
sees here.

``profile_device(spec, device, dtype) -> (device, dtype)``: ``device`` if given (checked: torch must know it), else
the profile's (``paper.yaml``: cuda) where torch sees that kind, else ``cpu``; ``dtype`` if given (a
``torch.dtype`` or its name), else the profile's (``paper.yaml``: float16), else ``None`` (the saved config's).
``Profile.load``, ``zoo.models.load_pair`` / ``load_collab`` and the notebook runner all ask this module, so a
CPU-only machine runs the paper profile on the cpu everywhere.
"""

from __future__ import annotations

import torch


def default_device(spec: dict, device: str | None = None) -> str:
    """``device`` if given (checked: torch must know it), else the profile's when torch sees it, else cpu."""
    if device is not None:
        torch.device(device)  # a clear error for a typo
        if not _has_device(device):
            raise ValueError(
                f"device {str(device)!r} is not on this machine (torch sees cuda: {torch.cuda.device_count()} "
                "device(s)): pass 'cpu', or leave device unset for the profile's when torch sees it"
            )
        return str(device)
    wanted = str(spec.get("device", "cpu"))
    if torch.device(wanted).type == "cuda" and not torch.cuda.is_available():
        return "cpu"
    if torch.device(wanted).type == "mps" and not torch.backends.mps.is_available():
        return "cpu"
    return wanted


def _has_device(device) -> bool:
    """Whether torch can place a tensor on ``device`` here (a cuda index below the device count, mps if built)."""
    found = torch.device(device)
    if found.type == "cuda":
        return torch.cuda.is_available() and (found.index or 0) < torch.cuda.device_count()
    if found.type == "mps":
        return torch.backends.mps.is_available()
    return True


def default_dtype(spec: dict, dtype: torch.dtype | str | None = None) -> torch.dtype | None:
    """``dtype`` if given (a ``torch.dtype`` or its name), else the profile's (``None``: the saved config's)."""
    value = dtype if dtype is not None else spec.get("dtype")
    if value is None or isinstance(value, torch.dtype):
        return value
    found = getattr(torch, str(value).removeprefix("torch."), None)
    if not isinstance(found, torch.dtype):
        raise ValueError(f"unknown dtype {value!r}: use a torch dtype name such as 'float32' or 'bfloat16'")
    return found


def profile_device(
    spec: dict, device: str | None = None, dtype: torch.dtype | str | None = None
) -> tuple[str, torch.dtype | None]:
    """``(device, dtype)`` of a profile's yaml ``spec`` under what was asked for (see the module docstring)."""
    return default_device(spec, device), default_dtype(spec, dtype)
