"""The paper profile's driver of the multilingual recipe (``specdec.multilingual.recipe``): self-distil the target,
then finetune the drafters, at paper scale.

Every setting and hub id comes from ``paper.yaml`` (``multilingual.recipe``, with its sources); the steps::

    python -m specdec.multilingual.train --profile paper distil   --out DRAFTERS   # the target answers
    python -m specdec.multilingual.train --profile paper finetune --out DRAFTERS   # the drafters
    python -m specdec.multilingual.train --profile paper all      --out DRAFTERS   # both
    accelerate launch --config_file configs/accelerate/ddp.yaml scripts/train_accelerate.py multilingual-paper \\
        all --out DRAFTERS                                                          # the same on every GPU

``DRAFTERS`` defaults to ``drafters.drafters_dir()`` (``$SPECDEC_ML_DRAFTERS``, else
``$HF_HOME/specdec-ml-drafters``): the folder notebooks 30-34 read under ``profile=paper``.

1. **Self-distillation** (``distil``): for each pair X → En, the first ``prompts_per_pair`` rows of the pair's
   training set (``train_sets``: the WMT train splits; Ja: JParaCrawl's ``train[:-80]``, the rows before its
   evaluation tail) become the user turn ``"Translate German to English: <text>"`` in Vicuna's chat template
   (the evaluation prompt of ``hubdata.load_paper_prompts``), encoded ``<s>`` + ids (``zoo.tasks.encode``). The
   target (``pairs.multilingual.target``, on the profile's device and dtype) answers each at every temperature
   of ``temperatures`` with batched ``generate`` (``algorithm.answer_prompts``: left padding, an attention mask,
   pure temperature sampling; stops at ``</s>``, which is kept, or at ``max_new_tokens``). Prompts longer than
   ``max_length - max_new_tokens`` tokens are left out. The answers are written as data, one JSON-lines file per
   (pair, temperature, ``chunk_size`` prompts): ``<out>/self-distillation/<x>/t<T>/part-NNNNN.jsonl`` (written to
   a temporary name, then renamed), so an interrupted run resumes at the first missing file; under ``accelerate
   launch`` the files are dealt round-robin to the processes.
2. **Finetuning** (``finetune``; ``algorithm.finetune``: the one loop, ``specdec.zoo.training.train``, and the one
   answer loss, accelerate-aware): per pair, the distilled conversations (``algorithm.load_distilled``: every
   temperature, in one seeded shuffle) truncated to ``max_length`` tokens, the
   loss on the answer tokens only (``</s>`` included), AdamW (betas 0.9 / 0.999, ``weight_decay``), linear
   warm-up over ``warmup_ratio`` of the steps then cosine decay, gradient clipping at 1, global ``batch_size``
   (each process trains on its slice), ``epochs`` passes. ``ml-draft-pf-<x>`` (P-F) starts from ``pretrained``
   (vicuna-68m, the paper's P); ``ml-draft-f-<x>`` (F) from the same configuration with random weights (seeded).
   For ``budget_lang`` (De, Fig. 4) F and P-F drafters are also finetuned on the first N conversations for each N
   of ``budgets`` below the total (``ml-draft-{f,pf}-de-b<N>``; the total is the main drafter, listed with
   ``same_as``), and ``ml-draft-large-pf-de`` starts from ``large_pretrained`` (Tiny-Vicuna 1B, Table 6).
   Each drafter is written with ``save_pretrained`` (weights, config, the target's tokenizer and
   ``training_log.json``) into ``<out>/<name>``; a drafter already there is kept (a rerun resumes), and
   ``<out>/ml_training.csv`` lists every drafter (what
   ``drafters.Drafters.training_summary()`` reads under the paper profile).

``--smoke`` replaces the sizes with ``recipe.PAPER_SMOKE`` (a few prompts, a few tokens, one epoch):
``scripts/paper_smoke.py`` runs the whole recipe that way on the stand-in hub before notebooks 30-34.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import time
import zlib

import torch

from specdec.multilingual import algorithm, hubdata, parallel, recipe
from specdec.multilingual.batches import Conversations
from specdec.multilingual.recipe import DISTIL_DIR, model_seed
from specdec.zoo import training
from specdec.zoo.device import profile_device
from specdec.zoo.models import load, load_profile

SUMMARY_COLUMNS = [
    "model", "role", "recipe", "lang", "init", "parameters", "device", "processes", "epochs", "finetune_steps",
    "finetune_budget", "finetune_examples", "finetune_tokens", "batch_size", "lr", "seconds", "same_as",
]  # fmt: skip


# ----------------------------------------------------------------------------------------------- 1. distil
def training_prompts(cfg: dict, lang: str) -> list[dict]:
    """The first ``prompts_per_pair`` training rows of ``lang`` → En as chat prompts: ``{"id", "lang",
    "prompt"}``."""
    dataset_id, config, split = cfg["train_sets"][lang]
    rows = hubdata.parallel_rows(dataset_id, config, split, cfg["prompts_per_pair"])
    name = parallel.language_name(lang)
    out = []
    for i, pair in enumerate(rows):
        text = cfg["prompt"].format(src_name=name, tgt_name="English", text=pair[lang])
        prompt = cfg["chat_template"].format(prompt=text)
        out.append({"id": f"{dataset_id}:{split}:{i}", "lang": lang, "prompt": prompt})
    return out


def part_path(out: pathlib.Path, lang: str, temperature: float, part: int) -> pathlib.Path:
    return out / DISTIL_DIR / lang / f"t{float(temperature):g}" / f"part-{part:05d}.jsonl"


def distil(target, tokenizer, cfg: dict, langs, out: pathlib.Path, *, rank: int = 0, world: int = 1, log=print):
    """Step 1 (module docstring): write the missing distillation files of ``langs`` that fall to process
    ``rank`` of ``world`` (file ``k`` of the whole run goes to process ``k % world``); returns ``{"written": n,
    "kept": n}`` (files generated now / found from a previous run). File ``part-NNNNN`` of a temperature holds
    the prompts ``NNNNN * chunk_size`` up to the next chunk (those short enough), so what a file holds does not
    depend on the others; ``manifest.json`` per pair says how many files make the pair complete."""
    counts, job = {"written": 0, "kept": 0}, 0
    chunk = cfg["chunk_size"]
    for lang in langs:
        prompts = training_prompts(cfg, lang)
        parts = -(-len(prompts) // chunk)
        manifest = {"prompts": len(prompts), "chunk_size": chunk, "parts": parts}
        manifest |= {"temperatures": [float(t) for t in cfg["temperatures"]], "max_new_tokens": cfg["max_new_tokens"]}
        if rank == 0:
            (out / DISTIL_DIR / lang).mkdir(parents=True, exist_ok=True)
            (out / DISTIL_DIR / lang / "manifest.json").write_text(json.dumps(manifest) + "\n")
        for temperature in cfg["temperatures"]:
            for part in range(parts):
                job += 1
                path = part_path(out, lang, temperature, part)
                if (job - 1) % world != rank:
                    continue
                if path.exists():
                    counts["kept"] += 1
                    continue
                chunk_prompts = prompts[part * chunk : (part + 1) * chunk]
                distil_part(target, tokenizer, chunk_prompts, temperature, cfg, part, path, rank)
                counts["written"] += 1
        log(json.dumps({"distilled": lang, "prompts": len(prompts), "files": parts * len(cfg["temperatures"])}))
    return counts


def distil_part(target, tokenizer, prompts: list[dict], temperature, cfg: dict, part: int, path, rank: int) -> None:
    """One distillation file: the target's answers (``algorithm.answer_prompts``) to ``prompts`` (those at most
    ``max_length - max_new_tokens`` tokens), written to a temporary name, then renamed to ``path``."""
    lang = prompts[0]["lang"]
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    ids = [bos + x for x in tokenizer([p["prompt"] for p in prompts], add_special_tokens=False)["input_ids"]]
    limit = cfg["max_length"] - cfg["max_new_tokens"]  # ids = zoo.tasks.encode
    keep = [({"id": p["id"], "lang": lang}, {"prompt_ids": x}) for p, x in zip(prompts, ids) if len(x) <= limit]
    seed = zlib.crc32(f"distil:{lang}:{float(temperature)}:{part}".encode()) % 1_000_000
    rows = algorithm.answer_prompts(
        target, tokenizer, [(t["prompt_ids"], h, t) for h, t in keep], temperature, cfg, seed
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{rank}")
    algorithm.write_jsonl(rows, tmp)
    os.replace(tmp, path)


def distilled_files(out: pathlib.Path, lang: str) -> list[pathlib.Path]:
    """The distillation files of ``lang`` its ``manifest.json`` lists. Raises ``FileNotFoundError`` when the
    distillation is missing or incomplete (run ``distil`` (again) first)."""
    manifest_path = out / DISTIL_DIR / lang / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"no self-distillation data for {lang} under {out / DISTIL_DIR}: run the distil step")
    manifest = json.loads(manifest_path.read_text())
    files = [part_path(out, lang, t, k) for t in manifest["temperatures"] for k in range(manifest["parts"])]
    missing = [f for f in files if not f.exists()]
    if missing:
        raise FileNotFoundError(
            f"the self-distillation of {lang} is incomplete ({len(missing)} of {len(files)} files missing, e.g. "
            f"{missing[0]}): rerun the distil step, which generates only the missing files"
        )
    return files


def load_pair(out: pathlib.Path, lang: str, max_length: int, pad: int) -> Conversations:
    """Every distilled conversation of ``lang`` (``algorithm.load_distilled``: every temperature, cut to
    ``max_length``, in one shuffle seeded by the language: the order the budgets take their first N from)."""
    return algorithm.load_distilled(distilled_files(out, lang), [lang], max_length=max_length, pad=pad, shuffle=True)[
        lang
    ]


# ----------------------------------------------------------------------------------------------- 2. finetune
def init_drafter(cfg: dict, kind: str, name: str, device, large: bool = False):
    """P-F: ``from_pretrained(pretrained)`` (``large_pretrained`` with ``large``); F: its configuration with random
    weights seeded by the drafter's name. float32 on ``device``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    source = cfg["large_pretrained" if large else "pretrained"]
    revision = cfg["revisions"].get(source)
    if kind == "P-F":
        model = AutoModelForCausalLM.from_pretrained(source, revision=revision, dtype=torch.float32)
    else:
        torch.manual_seed(model_seed(name))
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(source, revision=revision))
    return model.float().to(device), source


def finetune_drafter(
    name,
    kind,
    conv: Conversations,
    n: int,
    cfg,
    out,
    tokenizer,
    *,
    lang,
    device,
    accelerator=None,
    large=False,
    log=print,
) -> dict:
    """Finetune one drafter on the first ``n`` conversations (step 2) and save it under ``out/name``; returns its
    summary row. A drafter already saved there (``training_log.json``) is kept and its row returned."""
    path = out / name
    if (path / "training_log.json").exists():
        return json.loads((path / "training_log.json").read_text())["summary"]
    t0 = time.perf_counter()
    model, source = init_drafter(cfg, kind, name, device, large)
    batch_size, epochs = cfg["batch_size"], cfg["epochs"][kind]
    steps = max(1, epochs * math.ceil(n / batch_size))
    rows, seen = algorithm.finetune(
        model,
        conv.head(n),
        steps=steps,
        batch_size=batch_size,
        lr=cfg["lr"],
        seed=model_seed(name),
        name=name,
        betas=(0.9, 0.999),
        weight_decay=cfg["weight_decay"],
        warmup=max(1, math.ceil(cfg["warmup_ratio"] * steps)),
        accelerator=accelerator,
    )
    info = {
        "model": name,
        "role": "drafter",
        "recipe": kind,
        "lang": lang,
        "init": source if kind == "P-F" else f"random ({source} config)",
        "parameters": sum(p.numel() for p in model.parameters()),
        "device": training.device_name(device),
        "processes": accelerator.num_processes if accelerator else 1,
        "epochs": epochs,
        "finetune_steps": steps,
        "finetune_budget": n,
        "finetune_examples": n,
        "finetune_tokens": seen,
        "batch_size": batch_size,
        "lr": cfg["lr"],
        "seconds": round(time.perf_counter() - t0, 1),
    }
    algorithm.save_model(model, tokenizer, path, {"summary": info, "log": rows}, accelerator=accelerator)
    return info


def parameter_count(repo_id: str, revision: str | None) -> int:
    """Parameters of a hub model from its configuration alone (built on the meta device: no weights read)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(repo_id, revision=revision))
    return sum(p.numel() for p in model.parameters())


def untrained_rows(cfg: dict) -> list[dict]:
    """Summary rows of the two models the recipe uses as published: the target and the generic drafter (P)."""
    rows = []
    published = (("ml-target", "target", cfg["target"]), ("ml-draft-generic", "drafter", cfg["pretrained"]))
    for name, role, source in published:
        count = parameter_count(source, cfg["revisions"].get(source))
        rows.append(
            {"model": name, "role": role, "recipe": "published", "lang": "none", "init": source, "parameters": count}
        )
    return rows


def finetune_all(cfg, langs, out, tokenizer, *, device, accelerator=None, large=True, log=print) -> list[dict]:
    """Step 2 for every pair of ``langs`` (module docstring); writes ``out/ml_training.csv`` (the target and the
    generic drafter first, then every drafter trained); returns its rows."""
    rows = untrained_rows(cfg)
    pad = algorithm.pad_id(tokenizer)
    for lang in langs:
        conv = load_pair(out, lang, cfg["max_length"], pad)
        if not conv.n:
            raise ValueError(f"{lang}: no distilled conversation (prompts longer than max_length - max_new_tokens?)")
        log(json.dumps({"finetune": lang, "conversations": conv.n, "answer_tokens": int(conv.answer_len.sum())}))
        kw = dict(lang=lang, device=device, accelerator=accelerator, log=log)
        main = {
            r: finetune_drafter(
                f"ml-draft-{r.lower().replace('-', '')}-{lang}", r, conv, conv.n, cfg, out, tokenizer, **kw
            )
            for r in ("F", "P-F")
        }
        rows += main.values()
        if lang != cfg["budget_lang"]:
            continue
        for budget in sorted(b for b in cfg["budgets"] if b < conv.n):
            for r in ("F", "P-F"):
                name = f"ml-draft-{r.lower().replace('-', '')}-{lang}-b{budget}"
                rows.append(finetune_drafter(name, r, conv, budget, cfg, out, tokenizer, **kw))
        for r, row in main.items():  # the main drafter is the largest budget of the grid
            rows.append(
                {**row, "model": f"ml-draft-{r.lower().replace('-', '')}-{lang}-b{conv.n}", "same_as": row["model"]}
            )
        if large and cfg.get("large_pretrained"):
            rows.append(
                finetune_drafter(
                    f"ml-draft-large-pf-{lang}", "P-F", conv, conv.n, cfg, out, tokenizer, large=True, **kw
                )
            )
    if accelerator is None or accelerator.is_main_process:
        with (out / "ml_training.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return rows


# ----------------------------------------------------------------------------------------------- entry point
def run(
    step: str,
    out,
    *,
    langs=None,
    device=None,
    dtype=None,
    smoke=False,
    large=True,
    accelerator=None,
    log=print,
    **overrides,
) -> list[dict]:
    """Run ``distil``, ``finetune`` or ``all`` (module docstring) into ``out``; returns the summary rows (empty
    for ``distil``). ``device`` / ``dtype``: the target's (default: the profile's; under accelerate the device
    is the process's)."""
    cfg = recipe.paper_settings(smoke, **overrides)
    langs = list(langs or cfg["train_sets"])
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    device, dtype = profile_device(load_profile("paper"), device, dtype)
    if accelerator is not None:
        device = accelerator.device
    rank, world = (accelerator.process_index, accelerator.num_processes) if accelerator else (0, 1)
    if cfg["batch_size"] % world:
        raise ValueError(f"batch_size {cfg['batch_size']} must split evenly over {world} processes")
    revision = cfg["revisions"].get(cfg["target"])
    target, tokenizer = None, None
    if step in ("distil", "all"):
        target, tokenizer = load(cfg["target"], device=device, dtype=dtype, revision=revision)
        t0 = time.perf_counter()
        counts = distil(target, tokenizer, cfg, langs, out, rank=rank, world=world, log=log)
        log(json.dumps({"distil": counts, "seconds": round(time.perf_counter() - t0, 1), "process": rank}))
        del target
        if accelerator is not None:
            accelerator.wait_for_everyone()
    if step == "distil":
        return []
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(cfg["target"], revision=revision)
    return finetune_all(cfg, langs, out, tokenizer, device=device, accelerator=accelerator, large=large, log=log)


def main(argv=None, accelerator=None) -> int:
    """The paper driver's command line (``python -m specdec.multilingual.train --profile paper``, module docstring)."""
    from specdec.multilingual.drafters import drafters_dir

    ap = argparse.ArgumentParser(prog="python -m specdec.multilingual.train --profile paper", description=__doc__)
    ap.formatter_class = argparse.RawDescriptionHelpFormatter
    ap.add_argument("step", nargs="?", choices=["distil", "finetune", "all"], default="all")
    ap.add_argument("--out", type=pathlib.Path, default=None, help="drafters folder (default: drafters.drafters_dir())")
    ap.add_argument("--langs", nargs="*", default=None, help="pairs X->En (default: every pair of train_sets)")
    ap.add_argument("--device", default=None, help="default: paper.yaml's (cuda)")
    ap.add_argument("--dtype", default=None, help="the target's dtype for distillation (default: paper.yaml's)")
    ap.add_argument(
        "--smoke", action="store_true", help="tiny sizes (recipe.PAPER_SMOKE): the stand-in hub's smoke run"
    )
    ap.add_argument("--no-large", action="store_true", help="skip the large (Tiny-Vicuna 1B) drafter")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="override recipe settings (YAML values)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    import yaml

    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = {k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in args.set)}
    run(
        args.step,
        args.out or drafters_dir(),
        langs=args.langs,
        device=args.device,
        dtype=getattr(torch, args.dtype) if args.dtype else None,
        smoke=args.smoke,
        large=not args.no_large,
        accelerator=accelerator,
        log=(print if accelerator is None or accelerator.is_main_process else (lambda *_: None)),
        **overrides,
    )
    return 0


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["SUMMARY_COLUMNS", "distil", "load_pair", "main", "run"]
