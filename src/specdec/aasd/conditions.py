"""AASD A3's measured proxy condition (issue 44; docs/papers/aasd.md, *Proxy conditions*; data/DATA_CARD.md), fixed
from the paper's words before A3 was recomputed: Fig. 3 compares the module reading the target's KV cache with one
reading only its own ("models without access to the KV Cache are prone to deviate from the target distribution"),
a difference of what the module reads, not of how long it trained. The two modules of the ablation target must
have trained on the same rows (steps × batch size) at the same learning rate, on every training seed (their
``config.json``'s ``training``); a budget confound (issue 44 point 11: A5's 15x) makes A3 not testable.
"""

from __future__ import annotations

import json
import pathlib

from specdec import zoo
from specdec.verdict import validity

NOT_MEASURED = "not measured on this profile"
PAPER_MODELS_WHY = "the profile's own models (the paper's ids) on its own runs"


def paper_validities(names) -> dict[str, tuple[str, str]]:
    """Each finding of ``names``' validity on a profile of the paper's own models: AASD's conditions are measured on
    the tiny proxies' rows and files only, so each says it is not measured here (never a proxy's sentence)."""
    if isinstance(names, str):
        raise TypeError(f"paper_validities needs finding names, not one string {names!r}")
    return {name: validity("partly", PAPER_MODELS_WHY, f"{NOT_MEASURED}: its condition") for name in names}


def module_budget(folder: pathlib.Path) -> tuple[int, float] | None:
    """``(training rows = steps × batch size, learning rate)`` of a module's ``config.json``, None where absent."""
    path = pathlib.Path(folder) / "config.json"
    if not path.exists():
        return None
    training = json.loads(path.read_text()).get("training") or {}
    if "steps" not in training:
        return None
    return int(training["steps"]) * int(training["batch_size"]), float(training["lr"])


def budgets(target: str, seeds=(0, 1, 2), root: pathlib.Path | None = None) -> dict:
    """``{seed: (AASD's budget, own-cache-only's budget)}`` of ``target``'s modules (``<root>/aasd-module-<target>``
    and ``…-own``, ``-seed<k>`` for k > 0; ``root`` default the zoo's models folder); seeds missing either left out."""
    root = pathlib.Path(root or zoo.model_dir(""))
    out = {}
    for k in seeds:
        tail = f"-seed{k}" if k else ""
        pair = (
            module_budget(root / f"aasd-module-{target}{tail}"),
            module_budget(root / f"aasd-module-{target}-own{tail}"),
        )
        if all(pair):
            out[k] = pair
    return out


def a3_validity(found: dict, why: str, met: str = "partly") -> tuple[str, str]:
    """A3's validity from ``budgets``' ``found``: ``met`` when on every seed both modules trained on the same rows at
    the same learning rate, else ``no``; unmeasured (``partly``) without both modules' configs."""
    if not isinstance(found, dict):
        raise TypeError(f"a3_validity needs budgets()' {{seed: (AASD, own)}}, got {type(found).__name__}")
    if not found:
        return validity("partly", why, f"{NOT_MEASURED}: the A3 modules' training budgets")
    each = "; ".join(
        f"seed {k}: {a[0]:,} vs {o[0]:,} rows, lr {a[1]:g} vs {o[1]:g}" for k, (a, o) in sorted(found.items())
    )
    measured = (
        f"the module with the target's KV and the own-cache-only one trained on {each} (AASD vs own cache only, their"
        " config.json; needs the same rows and lr on every seed)"
    )
    if all(a == o for a, o in found.values()):
        return validity(met, why, measured)
    return validity("no", why, measured + ": a training-budget confound, not what the module reads")
