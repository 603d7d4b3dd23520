"""Train the AASD zoo with the one recipe (``specdec.aasd.recipe``): the tiny zoo, or a hub target's at paper scale.

    python -m specdec.aasd.train all          # everything below, on the TABED data file (built if missing)
    python -m specdec.aasd.train target       # the second target only (``zoo_specs.SECOND_TARGET``)
    python -m specdec.aasd.train baselines    # FT/DT-LLaMA (text-only Llama), FT/DT-LLaVA (small LLaVA): ft, then dt
    python -m specdec.aasd.train ft           # the pretrained text draft, FT-LLaMA, FT-LLaVA
    python -m specdec.aasd.train answers      # the targets' greedy answers to the training prompts (resumable)
    python -m specdec.aasd.train dt           # the targets' answers, then DT-LLaMA / DT-LLaVA per target
    python -m specdec.aasd.train modules      # the AASD modules of both targets and the ablation modules
    python -m specdec.aasd.train p8 --device cuda   # A2's 64-position target and its modules (p8-target, p8-modules)
    python -m specdec.aasd.train seeds        # the modules with training seeds 1 and 2 (``zoo_specs.TRAIN_SEEDS``)
    python -m specdec.aasd.train baseline-seeds   # FT and DT baselines with seeds 1 and 2 (data/models-seeds/seed<k>)
    python -m specdec.aasd.train matched --train-seeds 0 1 2   # A1's budget-matched modules (``zoo_specs.MATCHED``)
    python -m specdec.aasd.train baseline-seeds --train-seeds 2   # one seed (two processes side by side)
    python -m specdec.aasd.train paper --target llava-hf/llava-1.5-7b-hf   # paper scale (one GPU)
    accelerate launch --config_file configs/accelerate/ddp.yaml -m specdec.aasd.train paper --target ...

Each tiny step writes into ``--out``, ``.cache/trained`` unless given: ``--out data/models`` (as ``make models-aasd``
passes) rebuilds the committed zoo and reads the shipped target answers (``baseline-seeds``, ``matched``).

Tiny (``zoo_specs.TINY``, into ``--out``: ``data/models`` only when named, else ``.cache/trained``): the data are the
TABED data file (``specdec.vlm.train data``; same rows, images and split as the TABED zoo). ``aasd-target-s``, a
LLaVA target smaller than ``tabed-target`` (``zoo_specs.TARGET_SPECS``), trains as the TABED zoo does
(``vlm.train.train_all``). The baselines have one language model size (``zoo_specs.BASELINE_TEXT``) and train in the
paper's order: ``aasd-pt-llama`` pretrained on the foundation corpus, ``aasd-ft-llama`` finetuned from it on the task
answers, ``aasd-ft-llava`` (its language model from ``aasd-ft-llama``) on the image rows, ``aasd-dt-llava-<target>``
/ ``aasd-dt-llama-<target>`` from the FT baselines on the target's greedy answers to 2,000 training prompts; the
text-only Llama sees every image as ``"\\n"`` (what TABED's text-only drafting row does at inference). The modules
(``aasd-module-<target>[-<variant>]``) train on the task answers; ablation variants (tabed-target only): projector
off, ``k = 1``, target cache off. Image KV off / text KV off are inference-time ablations of the main module
(``specdec.aasd.tables.ABLATIONS``).

Paper (``zoo_specs.paper_settings``: the profile's ``aasd`` section, into ``$SPECDEC_AASD_ZOO``): the target
answers the image rows of ``aasd.training`` (splits disjoint from the evaluation sets); the module, its variants
and the distilled baselines (the profile's ``init`` drafts) train on those answers; FT-LLaMA / FT-LLaVA are the
public drafts the profile names. Under ``accelerate launch`` (or ``--accelerate``) every model trains through
accelerate (DDP / FSDP as its config says).
"""

from __future__ import annotations

import argparse
import os
import pathlib

import torch

from specdec.aasd import distill, draft_training, recipe, zoo_specs
from specdec.aasd.rows import file_rows, request_rows, training_requests
from specdec.harness.profile import SHIPPED, Profile
from specdec.zoo import cli

DATA_FILE = pathlib.Path(".cache/tabed_data.pt")
STEPS = ("all", "target", "baselines", "ft", "answers", "dt", "modules", "p8", "p8-target", "p8-modules", "seeds")
STEPS += ("baseline-seeds", "matched")
STEPS += ("paper",)


def tiny(
    step: str,
    data: dict,
    out: pathlib.Path,
    settings: dict = zoo_specs.TINY,
    device: str = "cpu",
    train_seeds=zoo_specs.TRAIN_SEEDS,
) -> dict:
    """A step of the tiny zoo (``all``, ``target``, ``baselines`` = ``ft`` then ``dt``, ``modules``, ``answers``,
    ``p8`` = ``p8-target`` then ``p8-modules``) on the TABED data file ``data``, saved under ``out``; returns
    ``{name: folder}`` of the recipe's models."""
    from specdec.vlm import train as vlm_train

    if step.startswith("p8"):
        return p8(step, data, out, device)
    if step == "seeds":
        return seeds(data, out, device, train_seeds)
    profile = Profile.load(SHIPPED)
    rows = file_rows(data, "train")
    heldout = {"": file_rows(data, "heldout"), "_blank_images": file_rows(data, "heldout", blank=True)}
    saved = {}
    if step in ("all", "target"):
        vlm_train.train_all(data, [zoo_specs.SECOND_TARGET], out, specs=zoo_specs.TARGET_SPECS)
    if step in ("all", "baselines", "ft"):
        saved |= draft_training.train_drafts(None, settings, "corpus", out)
        saved |= draft_training.train_drafts(rows, settings, "task", out, heldout=heldout)
    if step == "answers":
        for target in settings["targets"]:
            model = recipe.load_target(profile, target)[0]
            path = distill.answers_path(
                out, target, distill.target_version(profile, target), settings["distill"]["max_new_tokens"]
            )
            distill.target_answers(model, rows, settings["distill"], path)
    if step in ("all", "baselines", "dt"):
        for k, target in enumerate(settings["targets"]):
            saved |= recipe.run_target(
                profile, target, settings, lambda *_: rows, out, modules=False, target_index=k, heldout=heldout
            )
    if step == "baseline-seeds":  # on the pretrained PT-LLaMA and the target answers of ``out`` (the shipped zoo's)
        for k in train_seeds:
            saved |= draft_training.train_drafts(rows, settings, "task", out, heldout=heldout, train_seed=k)
            for i, target in enumerate(settings["targets"]):
                saved |= recipe.run_target(
                    profile,
                    target,
                    settings,
                    lambda *_: rows,
                    out,
                    modules=False,
                    target_index=i,
                    heldout=heldout,
                    train_seed=k,
                )
        from specdec.aasd.seeds import baseline_summary

        print(baseline_summary().to_string(index=False), flush=True)  # data/aasd_baseline_seeds.csv, committed
    if step == "matched":  # on the target answers of ``out``; seed 0 into ``out``, seeds k > 0 gitignored
        for k in train_seeds:
            for target in zoo_specs.MATCHED["targets"]:
                name = zoo_specs.matched_dir(target).name
                folder = lambda v, t=target, k=k, n=name: zoo_specs.matched_dir(t, k) if k else out / n  # noqa: E731
                saved |= recipe.run_target(
                    profile,
                    target,
                    zoo_specs.MATCHED,
                    lambda *_: rows,
                    out,
                    drafts=False,
                    heldout=heldout,
                    train_seed=k,
                    module_folder=folder,
                )
    if step in ("all", "modules"):
        for k, target in enumerate(settings["targets"]):
            saved |= recipe.run_target(
                profile, target, settings, lambda *_: rows, out, drafts=False, target_index=k, heldout=heldout
            )
    return saved


def p8(step: str, data: dict, out: pathlib.Path, device: str = "cpu") -> dict:
    """A2's target ``aasd-target-p8`` (64 visual positions per image) and its modules (``zoo_specs.P8``), on the
    TABED data file widened to 8-px patches (``vlm.data.with_patch_size``)."""
    from specdec.vlm import train as vlm_train
    from specdec.vlm.data import with_patch_size

    wide = with_patch_size(data, zoo_specs.P8_PATCH)
    if step in ("p8", "p8-target"):
        vlm_train.train_all(wide, [zoo_specs.P8_TARGET], out, device=device, specs=zoo_specs.TARGET_SPECS)
    saved = {zoo_specs.P8_TARGET: out / zoo_specs.P8_TARGET}
    if step in ("p8", "p8-modules"):
        heldout = {"": file_rows(wide, "heldout")}
        saved |= recipe.run_target(
            Profile.load(SHIPPED, device),
            zoo_specs.P8_TARGET,
            zoo_specs.P8,
            lambda *_: file_rows(wide, "train"),
            out,
            drafts=False,
            heldout=heldout,
        )
    return saved


def seeds(data: dict, out: pathlib.Path, device: str = "cpu", train_seeds=zoo_specs.TRAIN_SEEDS) -> dict:
    """The modules again with each training seed of ``train_seeds``: the main module of every target of
    ``zoo_specs.TINY`` (Table 1) and every variant of the ablation target's (``zoo_specs.P8``: Table 2, Figs. 3-4)."""
    from specdec.vlm.data import with_patch_size

    profile, saved = Profile.load(SHIPPED, device), {}
    wide = with_patch_size(data, zoo_specs.P8_PATCH)
    narrow = {**zoo_specs.TINY, "targets": {t: ("",) for t in zoo_specs.TINY["targets"]}}
    for k in train_seeds:
        for settings, file in ((narrow, data), (zoo_specs.P8, wide)):
            for target in settings["targets"]:
                rows = file_rows(file, "train")
                saved |= recipe.run_target(
                    profile,
                    target,
                    settings,
                    lambda *_, r=rows: r,
                    out,
                    drafts=False,
                    heldout={"": file_rows(file, "heldout")},
                    train_seed=k,
                )
    return saved


def paper(
    target_id: str,
    *,
    profile: str = "paper",
    out: pathlib.Path | None = None,
    steps: int | None = None,
    n: int | None = None,
    max_new_tokens: int | None = None,
    batch_size: int | None = None,
    variants: tuple[str, ...] = zoo_specs.ALL_VARIANTS,
    baselines_too: bool = True,
    device: str | None = None,
    accelerator=None,
) -> dict:
    """The recipe for one hub target of a profile (the ``None`` arguments: the profile's settings; smaller ones for
    a smoke run), into ``out`` (default ``zoo_specs.zoo_dir()``). Returns ``{name: folder}`` of what it saved."""
    prof = Profile.load(profile, device)
    settings = zoo_specs.paper_settings(prof.spec, variants)
    overrides = {k: v for k, v in (("steps", steps), ("batch_size", batch_size)) if v}
    settings["module"] |= overrides
    settings["finetune"] |= overrides
    if max_new_tokens:
        settings["distill"]["max_new_tokens"] = max_new_tokens
    settings["targets"] = {target_id: tuple(variants)}
    requests = training_requests(prof.spec, n)
    return recipe.run_target(
        prof,
        target_id,
        settings,
        lambda target, processor: request_rows(requests, processor, target),
        pathlib.Path(out or zoo_specs.zoo_dir()),
        drafts=baselines_too,
        accelerator=accelerator,
    )


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "step",
        nargs="?",
        choices=STEPS,
        default="all",
    )
    parser.add_argument("--data", type=pathlib.Path, default=DATA_FILE, help="the TABED data file (built if missing)")
    parser.add_argument("--out", type=pathlib.Path, default=None, help=f"default {cli.TRAINED} (data/models: say so)")
    parser.add_argument("--threads", type=cli.POS, default=1)
    parser.add_argument("--drafts", nargs="*", help="tiny baselines: only these (and those they start from)")
    parser.add_argument(
        "--train-seeds",
        type=cli.POS,
        nargs="+",
        default=list(zoo_specs.TRAIN_SEEDS),
        help="seeds and dt-seeds: which training seeds (default: zoo_specs.TRAIN_SEEDS)",
    )
    group = parser.add_argument_group("paper (python -m specdec.aasd.train paper --target ID)")
    group.add_argument("--target", action="append", help="hub target (repeatable; default: aasd.targets)")
    group.add_argument("--profile", default="paper")
    group.add_argument("--zoo", type=pathlib.Path, default=None, help="default: $SPECDEC_AASD_ZOO or $HF_HOME/...")
    group.add_argument("--device", default=None, help="default: the profile's device")
    group.add_argument("--steps", type=cli.POS, default=None, help="override the profile's steps (smoke runs)")
    group.add_argument("--n", type=cli.POS, default=None, help="training prompts per dataset (default: the profile's)")
    group.add_argument("--max-new-tokens", type=cli.POS, default=None, help="answer length (default: the profile's)")
    group.add_argument("--batch-size", type=cli.POS, default=None)
    group.add_argument("--variants", nargs="*", default=list(zoo_specs.ALL_VARIANTS), help="'' is the main module")
    group.add_argument("--no-baselines", action="store_true", help="modules only")
    group.add_argument("--accelerate", action="store_true", help="train through accelerate (set by accelerate launch)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.step == "paper":
        return train_paper(args)
    if not args.data.exists():
        from specdec.vlm.data import build_data

        args.data.parent.mkdir(parents=True, exist_ok=True)
        torch.save(build_data(), args.data)
    data = torch.load(args.data, weights_only=True)
    settings = only_drafts(zoo_specs.TINY, args.drafts)
    out = cli.output_dir(args.out)
    tiny(args.step, data, out, settings, device=args.device or "cpu", train_seeds=tuple(args.train_seeds))


def only_drafts(settings: dict, names: list[str] | None) -> dict:
    """``settings`` whose baselines are ``names`` and the baselines they start from (``None``: all), e.g. ``dt
    --drafts DT-LLaMA`` beside a run still training FT-LLaVA; a draft trains as it does in the full run (its seed
    and settings are its own)."""
    if not names:
        return settings
    drafts, keep = settings["drafts"], set(names)
    for name in names:  # what it starts from, and what that starts from
        while name in drafts and drafts[name].get("init", drafts[name].get("language_model")) in drafts:
            name = drafts[name].get("init", drafts[name].get("language_model"))
            keep.add(name)
    return {**settings, "drafts": {k: v for k, v in drafts.items() if k in keep}}


def train_paper(args) -> None:
    """``paper`` for each target, under ``accelerate`` when launched by it."""
    accelerator = None
    if args.accelerate or "ACCELERATE_MIXED_PRECISION" in os.environ or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import Accelerator

        accelerator = Accelerator()
    targets = args.target or Profile.load(args.profile).spec["aasd"]["targets"]
    for target in targets:
        saved = paper(
            target,
            profile=args.profile,
            out=args.zoo,
            steps=args.steps,
            n=args.n,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
            variants=tuple(args.variants),
            baselines_too=not args.no_baselines,
            device=args.device,
            accelerator=accelerator,
        )
        for name, folder in saved.items():
            print(f"saved {name}: {folder}", flush=True)


if __name__ == "__main__":
    main()

# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["DATA_FILE", "STEPS", "main", "p8", "paper", "seeds"]
