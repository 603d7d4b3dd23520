"""The AASD training recipe, one for both profiles: the tiny zoo is this recipe with ``zoo_specs.TINY``, the paper
scale is it with ``zoo_specs.paper_settings`` (``python -m specdec.aasd.train``). For each target:

1. ``aasd.distill``: the target's greedy answers to training prompts (plain decoding on our engine), stored as JSON
   lines next to the models, one per prompt; an interrupted run resumes.
2. ``train_module``: the speculating module (``aasd.algorithm``) and its ablation variants, by Target-Draft
   Attention (``aasd.tda``) against the frozen target on prompt + answer (the data's answers or the target's);
   saved as ``aasd-module-<target>[-<variant>]``.
3. ``aasd.draft_training``: the baselines (``aasd.baselines``), in the paper's order (Gagrani et al. 2024): a text
   draft pretrained on the foundation corpus, FT baselines on the data's answers, DT baselines on the target's
   (sequence-level distillation, Kim & Rush 2016) starting from the FT ones.

Every model trains through the one loop (``zoo.training.train``: AdamW, warm-up + cosine, clipping), under
``accelerate`` when given an accelerator (the main process alone distils and saves).
"""

from __future__ import annotations

import json
import pathlib

import torch

from specdec.aasd.algorithm import SpeculatingModule, config_for, save_module
from specdec.aasd.distill import answers_path, is_main, target_answers, target_version
from specdec.aasd.draft_training import recipe_arguments, sampler, train_drafts
from specdec.aasd.rows import Rows
from specdec.aasd.tda import TDAObjective, tda_loss
from specdec.aasd.zoo_specs import SEED_STEP, module_name
from specdec.zoo import models, training
from specdec.zoo.training import device_name

MODULE_SIZE = ("intermediate_size", "projector_k", "context")


# ------------------------------------------------------------------------------------------------- modules
def train_module(
    target,
    rows: Rows,
    cfg: dict,
    variant: dict | None = None,
    *,
    name: str = "aasd-module",
    heldout: Rows | None = None,
    accelerator=None,
) -> tuple[SpeculatingModule, dict]:
    """One speculating module for the frozen ``target`` on ``rows`` (prompt + answer), ``cfg``: the recipe's
    ``module`` settings, ``variant`` overriding its sizes; returns ``(module, summary)`` (the summary holds the
    log rows and, given ``heldout`` rows, ``heldout_loss``).

    The module's initialisation is seeded ``seed``, the batches drawn from a generator seeded ``seed + 1``, the
    (depth, row, position) triples that go through the output head from one seeded ``seed + 2``."""
    target.requires_grad_(False).eval()
    device = next(target.parameters()).device
    size = {k: (variant or {}).get(k, cfg[k]) for k in MODULE_SIZE}
    seed = cfg.get("seed", 0)
    torch.manual_seed(seed)
    module = SpeculatingModule(config_for(target, **size)).to(device).attach(target)
    picks = torch.Generator().manual_seed(seed + 2)

    def loss_fn(objective, picked):
        batch = rows.batch(picked, device, target.dtype)
        return tda_loss(objective, batch, target, cfg["depths"], cfg["max_positions"], picks)

    log = training.train(
        TDAObjective(module),
        sampler(len(rows), cfg["batch_size"]),
        loss_fn,
        **recipe_arguments(cfg, seed),
        name=name,
        accelerator=accelerator,
    )
    summary = {
        "model": name,
        "trainable_parameters": sum(p.numel() for p in module.parameters()),
        **size,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items() if k not in MODULE_SIZE},
        "rows": len(rows),
        "device": device_name(device),
        "processes": accelerator.num_processes if accelerator is not None else 1,
        "seconds": round(log.seconds, 1),
        "final_train_loss": log.rows[-1]["train_loss"],
    }
    if heldout is not None:
        summary["heldout_loss"] = module_heldout_loss(module, target, heldout, cfg)
    return module, summary | {"log": log.rows}


@torch.no_grad()
def module_heldout_loss(module, target, heldout: Rows, cfg: dict, n_rows: int = 96) -> float:
    """Mean TDA loss (every depth, every answer position) over chunks of 16 of the first ``n_rows`` held-out
    rows."""
    module.eval()
    gen = torch.Generator().manual_seed(0)
    device = next(target.parameters()).device
    n = min(n_rows, len(heldout))
    losses = [
        float(
            tda_loss(
                module,
                heldout.batch(torch.arange(s, min(s + 16, n)), device, target.dtype),
                target,
                cfg["depths"],
                10**9,
                gen,
            )
        )
        for s in range(0, n, 16)
    ]
    return round(sum(losses) / len(losses), 4)


def train_modules(
    target,
    target_name: str,
    rows: Rows,
    settings: dict,
    variants,
    out: pathlib.Path,
    info: dict,
    heldout: Rows | None = None,
    accelerator=None,
    train_seed: int = 0,
    folder_of=None,
) -> dict:
    """The module variants ``variants`` (``""``: the main one) of one target, saved under ``out`` with ``info``
    (target, revision, profile); ``train_seed`` k > 0: with the module's seed moved by ``SEED_STEP * k``, saved as
    ``module_name(.., train_seed=k)``; ``folder_of(variant)``: where to save a variant instead of ``out/<name>``.
    Returns ``{name: folder}``."""
    saved = {}
    cfg = {**settings["module"], "seed": settings["module"].get("seed", 0) + SEED_STEP * train_seed}
    for variant in variants:
        name = module_name(target_name, variant, train_seed)
        module, summary = train_module(
            target,
            rows,
            cfg,
            settings["variants"].get(variant, {}),
            name=name,
            heldout=heldout,
            accelerator=accelerator,
        )
        if is_main(accelerator):
            log = summary.pop("log")
            meta = {**info, "variant": variant or "main", "train_seed": train_seed, "training": summary, "log": log}
            folder = folder_of(variant) if folder_of else out / name
            save_module(module, folder, meta)
            print(json.dumps(summary), flush=True)
            saved[name] = folder
    return saved


# ------------------------------------------------------------------------------------------------- a target
def load_target(profile, name: str, accelerator=None):
    """``(target, processor, revision)``: a LLaVA target of a ``harness.profile.Profile`` (a shipped zoo folder or
    a hub id at its pinned revision) on the profile's device (the accelerator's, under one) and dtype."""
    source, revision = profile.model_source(name)
    device = str(accelerator.device) if accelerator is not None else profile.device
    target, processor = models.load(source, kind="llava", device=device, dtype=profile.dtype, revision=revision)
    return target, processor, revision


def run_target(
    profile,
    target_name: str,
    settings: dict,
    make_rows,
    out: pathlib.Path,
    *,
    modules=True,
    drafts=True,
    target_index: int = 0,
    heldout: dict | None = None,
    accelerator=None,
    train_seed: int = 0,
    module_folder=None,
) -> dict:
    """The recipe for one target of ``profile`` (a ``harness.profile.Profile``): its answers to the training
    prompts ``make_rows(target, processor)`` when something trains on them, its ``modules`` (the variants
    ``settings["targets"]`` names) and its distilled baselines (``drafts``); ``heldout``: ``{label: Rows}`` the
    summaries score (``""``: the module's); ``train_seed`` k > 0: both with their seeds moved by ``SEED_STEP * k``;
    ``module_folder(variant)``: where a module is saved (default ``out/<name>``). Returns ``{name: folder}``."""
    target, processor, revision = load_target(profile, target_name, accelerator)
    rows = make_rows(target, processor)
    device = next(target.parameters()).device
    wants_answers = (modules and settings["module"]["answers"] == "target") or (
        drafts and any(d["answers"] == "target" for d in settings["drafts"].values())
    )
    answered, path = None, None
    if wants_answers:
        version = target_version(profile, target_name)
        path = answers_path(out, target_name, version, settings["distill"]["max_new_tokens"])
        answered = target_answers(target, rows, settings["distill"], path, accelerator)
    saved = {}
    if modules:
        on_answers = settings["module"]["answers"] == "target"
        module_rows = answered if on_answers else rows
        info = {
            "target": target_name,
            "revision": revision,
            "profile": profile.name,
            "answers": path.name if on_answers else "task",
        }
        saved |= train_modules(
            target,
            target_name,
            module_rows,
            settings,
            settings["targets"][target_name],
            out,
            info,
            (heldout or {}).get(""),
            accelerator,
            train_seed,
            module_folder,
        )
    if drafts and answered is not None:
        saved |= train_drafts(
            answered,
            settings,
            "target",
            out,
            target=target_name,
            target_index=target_index,
            device=device,
            heldout=heldout,
            spec=profile.spec,
            accelerator=accelerator,
            train_seed=train_seed,
        )
    return saved


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["MODULE_SIZE"]
