"""The tiny AASD zoo: a second LLaVA target, the four one-size baselines and the speculating modules.

    python -m specdec.aasd.train all          # everything below, on the TABED data file (built if missing)
    python -m specdec.aasd.train target       # the second target only (``zoo_specs.SECOND_TARGET``)
    python -m specdec.aasd.train baselines    # FT/DT-LLaMA (text-only Llama), FT/DT-LLaVA (small LLaVA)
    python -m specdec.aasd.train modules      # the AASD modules of both targets and the ablation modules
    python -m specdec.aasd.train paper --target llava-hf/llava-1.5-7b-hf   # paper scale (specdec.aasd.paper_zoo)
    accelerate launch --config_file configs/accelerate/ddp.yaml -m specdec.aasd.train paper --target ...

Data: the TABED data file (``specdec.vlm.train data``; same rows, images and split as the TABED zoo). Every
model trains with ``specdec.zoo.training.train`` (LLaVA models through ``vlm.train.train_all``):

- ``aasd-target-s``: a LLaVA target smaller than ``tabed-target`` (``zoo_specs.TARGET_SPECS``);
- ``aasd-ft-llava``: a small LLaVA (the text size of ``tabed-draft``) finetuned on the task answers;
  ``aasd-dt-llava-<target>``: the same, on ``DISTILL_ROWS`` training prompts answered by the target's greedy
  output (sequence-level distillation);
- ``aasd-ft-llama`` / ``aasd-dt-llama-<target>``: a text-only Llama of the same text size on the same rows with
  every image replaced by ``"\\n"`` (what TABED's text-only drafting row does at inference);
- ``aasd-module-<target>[-<variant>]``: the speculating module (``specdec.aasd.algorithm``) trained by Target-Draft
  Attention (``specdec.aasd.tda``) against the frozen target's next-token distribution; ablation variants
  (tabed-target only, ``MODULE_VARIANTS``): projector off, ``k = 1``, target cache off. Image KV off / text KV off
  are inference-time ablations of the main module (``specdec.aasd.tables.ABLATIONS``).

At paper scale (``paper``: a hub target of the paper profile) ``specdec.aasd.paper_zoo`` trains the module, its
ablation variants and the distilled baselines on the target's own answers, through the same loop, under
``accelerate launch`` when started that way (``--accelerate``, implied by ``accelerate launch``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import torch
from transformers import AutoTokenizer, LlamaForCausalLM

from specdec import zoo
from specdec.aasd import baselines, zoo_specs
from specdec.aasd.algorithm import SpeculatingModule, config_for, save_module
from specdec.aasd.tda import tda_loss
from specdec.aasd.zoo_specs import MODULE_VARIANTS, module_name
from specdec.vlm import batches
from specdec.vlm import train as vlm_train
from specdec.vlm.data import build_data
from specdec.zoo import training
from specdec.zoo.models import load
from specdec.zoo.training import save_half

DATA_FILE = pathlib.Path(".cache/tabed_data.pt")
DISTILL_ROWS = 120  # training prompts each target answers for the DT baselines (CPU-affordable)
DISTILL_MAX_NEW_TOKENS = 64
BASELINE_TEXT = dict(  # one LM size for the four baselines: tabed-draft's text model
    hidden_size=48, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4
)
BASELINE_TRAIN = dict(steps=200, batch_size=32, lr=2e-3, weight_decay=0.1)
MODULE_TRAIN = dict(steps=100, batch_size=16, lr=2e-3, weight_decay=0.0, depths=(0, 1, 2, 3, 4), max_positions=384)
MODULE_SIZE = dict(intermediate_size=256, projector_k=4, context="target")


# ---------------------------------------------------------------------------------------------- the loop
def _train_on_rows(model, n_rows: int, loss_fn, cfg: dict, seed: int, name: str) -> training.TrainLog:
    """The one ``training.train`` call of the tiny AASD zoo (modules and text-only baselines).

    Each step draws ``cfg["batch_size"]`` training-row indices uniformly with replacement from ``range(n_rows)``
    (a CPU ``LongTensor[batch_size]``, from the loop's generator seeded ``seed + 1``; the caller seeds the model's
    initialisation with ``seed``) and takes ``loss_fn(model, rows)``, a scalar mean loss. ``cfg``: ``steps``,
    ``batch_size``, ``lr``, ``weight_decay`` (``MODULE_TRAIN`` / ``BASELINE_TRAIN``)."""
    return training.train(
        model,
        lambda g: torch.randint(n_rows, (cfg["batch_size"],), generator=g),
        loss_fn,
        steps=cfg["steps"],
        lr=cfg["lr"],
        seed=seed + 1,
        weight_decay=cfg["weight_decay"],
        mean_loss=True,
        name=name,
        progress=False,
    )


# ------------------------------------------------------------------------------------------------ modules
def train_module(target, splits, name: str, seed: int = 0, **settings) -> tuple[SpeculatingModule, dict]:
    """Train one speculating module on the frozen ``target`` (``MODULE_SIZE`` / ``MODULE_TRAIN`` overridden by
    ``settings``); returns ``(module, summary)``."""
    size = {**MODULE_SIZE, **{k: v for k, v in settings.items() if k in MODULE_SIZE}}
    cfg = {**MODULE_TRAIN, **{k: v for k, v in settings.items() if k in MODULE_TRAIN}}
    target.requires_grad_(False).eval()
    train_split, held, images = splits
    torch.manual_seed(seed)
    module = SpeculatingModule(config_for(target, **size)).attach(target)
    picks = torch.Generator().manual_seed(seed + 2)
    n_rows = len(train_split.scenario)

    def loss_fn(m, rows):
        batch = batches.batch_inputs(train_split, images, rows)
        return tda_loss(m, batch, target, cfg["depths"], cfg["max_positions"], picks)

    t0 = time.perf_counter()
    log = _train_on_rows(module, n_rows, loss_fn, cfg, seed, name)
    seconds = time.perf_counter() - t0
    heldout = heldout_loss(module, target, held, images, cfg)
    summary = {
        "model": name,
        "trainable_parameters": sum(p.numel() for p in module.parameters()),
        **size,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items()},
        "seed": seed,
        "device": "cpu",
        "seconds": round(seconds, 1),
        "final_train_loss": log.rows[-1]["train_loss"],
        "heldout_loss": heldout,
        "log": log.rows,
    }
    return module, summary


@torch.no_grad()
def heldout_loss(module, target, held, images, cfg, n_rows: int = 96) -> float:
    """Mean TDA loss (every depth, every answer position) on the first ``n_rows`` held-out rows."""
    module.eval()
    gen = torch.Generator().manual_seed(0)
    losses = []
    for start in range(0, min(n_rows, len(held.scenario)), 16):
        rows = torch.arange(start, min(start + 16, n_rows, len(held.scenario)))
        batch = batches.batch_inputs(held, images, rows)
        losses.append(float(tda_loss(module, batch, target, cfg["depths"], 10**9, gen)))
    return round(sum(losses) / len(losses), 4)


def train_modules(data: dict, out_dir: pathlib.Path, targets=zoo_specs.TARGETS, variants=tuple(MODULE_VARIANTS)):
    """The main module of each target, then the ablation variants on ``tabed-target``; saved under ``out_dir``."""
    splits = batches.load_splits(data)
    jobs = [(t, "") for t in targets] + [("tabed-target", v) for v in variants]
    for target_name, variant in jobs:
        target, _ = load(target_name, kind="llava", with_tokenizer=False)
        name = module_name(target_name, variant)
        module, summary = train_module(target, splits, name, **MODULE_VARIANTS.get(variant, {}))
        save_module(module, out_dir / name, {"target": target_name, "variant": variant or "main", "summary": summary})
        print(json.dumps({k: v for k, v in summary.items() if k != "log"}), flush=True)


# ---------------------------------------------------------------------------------------------- baselines
def baseline_spec(seed: int) -> dict:
    """A small LLaVA of the baselines' one LM size (``BASELINE_TEXT``), shaped like a ``TABED_ZOO`` entry."""
    return dict(text=BASELINE_TEXT, vision=vlm_train.VISION, max_images=5, seed=seed, train=BASELINE_TRAIN)


def train_text_baseline(name: str, data: dict, out_dir: pathlib.Path, seed: int, tokenizer) -> dict:
    """A text-only Llama (``BASELINE_TEXT``) on ``data`` (already ``baselines.text_only``); saved under
    ``out_dir/name`` with the tokenizer and ``training_log.json``; returns the summary."""
    train_split, held, images = batches.load_splits(data)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(zoo.llama_config(BASELINE_TEXT))
    n = len(train_split.scenario)
    cfg = BASELINE_TRAIN
    log = _train_on_rows(
        model,
        n,
        lambda m, rows: training.answer_loss(m, batches.batch_inputs(train_split, images, rows), pixels=False),
        cfg,
        seed,
        name,
    )
    with torch.no_grad():
        chunks = [torch.arange(s, min(s + 32, len(held.scenario))) for s in range(0, len(held.scenario), 32)]
        held_loss = sum(
            float(training.answer_loss(model, batches.batch_inputs(held, images, c), pixels=False)) for c in chunks
        )
    summary = {
        "model": name,
        "parameters": sum(p.numel() for p in model.parameters()),
        **cfg,
        "seed": seed,
        "device": "cpu",
        "seconds": round(log.seconds, 1),
        "training_rows": n,
        "heldout_loss": round(held_loss / len(chunks), 4),
    }
    save_half(model, out_dir / name)
    tokenizer.save_pretrained(out_dir / name)
    (out_dir / name / "training_log.json").write_text(json.dumps({"summary": summary, "log": log.rows}) + "\n")
    print(json.dumps(summary), flush=True)
    return summary


def train_baselines(data: dict, out_dir: pathlib.Path, targets=zoo_specs.TARGETS, ft: bool = True) -> None:
    """FT-LLaVA and FT-LLaMA on the task data (``ft``), DT-LLaVA and DT-LLaMA per target on its greedy answers."""
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    newline = tokenizer(baselines.NEWLINE, add_special_tokens=False)["input_ids"]
    if ft:
        vlm_train.train_all(data, ["aasd-ft-llava"], out_dir, specs={"aasd-ft-llava": baseline_spec(30)})
        train_text_baseline("aasd-ft-llama", baselines.text_only(data, newline), out_dir, 31, tokenizer)
    rows = baselines.distill_rows(DISTILL_ROWS, len(data["train"]["scenario"]))
    for target_name in targets:
        k = zoo_specs.TARGETS.index(target_name)
        target, _ = load(target_name, kind="llava", with_tokenizer=False)
        t0 = time.perf_counter()
        dt_data = baselines.distilled(data, target, rows, DISTILL_MAX_NEW_TOKENS)
        print(json.dumps({"distilled": target_name, "rows": len(rows), "seconds": round(time.perf_counter() - t0, 1)}))
        name = f"aasd-dt-llava-{target_name}"
        vlm_train.train_all(dt_data, [name], out_dir, specs={name: baseline_spec(32 + 2 * k)})
        train_text_baseline(
            f"aasd-dt-llama-{target_name}", baselines.text_only(dt_data, newline), out_dir, 33 + 2 * k, tokenizer
        )


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="?", choices=["all", "target", "baselines", "modules", "paper"], default="all")
    parser.add_argument("--data", type=pathlib.Path, default=DATA_FILE, help="the TABED data file (built if missing)")
    parser.add_argument("--out", type=pathlib.Path, default=zoo.MODELS)
    parser.add_argument("--threads", type=int, default=1)
    paper = parser.add_argument_group("paper (python -m specdec.aasd.train paper --target ID)")
    paper.add_argument("--target", action="append", help="hub target (repeatable; default: aasd.targets)")
    paper.add_argument("--profile", default="paper")
    paper.add_argument("--zoo", type=pathlib.Path, default=None, help="default: $SPECDEC_AASD_ZOO or $HF_HOME/...")
    paper.add_argument("--device", default=None, help="default: the profile's device")
    paper.add_argument("--steps", type=int, default=None, help="override the profile's steps (smoke runs)")
    paper.add_argument("--n", type=int, default=None, help="training prompts per dataset (default: the profile's)")
    paper.add_argument("--max-new-tokens", type=int, default=None, help="answer length (default: the profile's)")
    paper.add_argument("--batch-size", type=int, default=None)
    paper.add_argument("--variants", nargs="*", default=["", "noproj", "k1", "own"], help="'' is the main module")
    paper.add_argument("--no-baselines", action="store_true", help="modules only")
    paper.add_argument("--accelerate", action="store_true", help="train through accelerate (set by accelerate launch)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.step == "paper":
        return train_paper(args)
    if not args.data.exists():
        args.data.parent.mkdir(parents=True, exist_ok=True)
        torch.save(build_data(), args.data)
    data = torch.load(args.data, weights_only=True)
    if args.step in ("all", "target"):
        vlm_train.train_all(data, [zoo_specs.SECOND_TARGET], args.out, specs=zoo_specs.TARGET_SPECS)
    if args.step in ("all", "baselines"):
        train_baselines(data, args.out)
    if args.step in ("all", "modules"):
        train_modules(data, args.out)


def train_paper(args) -> None:
    """``specdec.aasd.paper_zoo.run`` for each target, under ``accelerate`` when launched by it."""
    import os

    from specdec.aasd import paper_zoo

    accelerator = None
    if args.accelerate or "ACCELERATE_MIXED_PRECISION" in os.environ or int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import Accelerator

        accelerator = Accelerator()
    targets = args.target or paper_zoo.settings(args.profile)["targets"]
    for target in targets:
        saved = paper_zoo.run(
            target, profile=args.profile, out=args.zoo, steps=args.steps, n=args.n, max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size, variants=tuple(args.variants), baselines_too=not args.no_baselines,
            device=args.device, accelerator=accelerator,
        )  # fmt: skip
        for name, folder in saved.items():
            print(f"saved {name}: {folder}", flush=True)


if __name__ == "__main__":
    main()
