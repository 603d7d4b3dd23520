"""The specialised-drafter recipe of Yi et al. at paper scale: self-distil the target, then finetune the drafters.

Every setting and hub id comes from ``paper.yaml`` (``multilingual.recipe``, with its sources); the steps::

    python -m specdec.multilingual.train --profile paper distil   --out DRAFTERS   # the target answers
    python -m specdec.multilingual.train --profile paper finetune --out DRAFTERS   # the drafters
    python -m specdec.multilingual.train --profile paper all      --out DRAFTERS   # both
    accelerate launch --config_file configs/accelerate/ddp.yaml scripts/train_accelerate.py multilingual-paper \\
        all --out DRAFTERS                                                          # the same on every GPU

``DRAFTERS`` defaults to ``experiments.drafters_dir()`` (``$SPECDEC_ML_DRAFTERS``, else
``$HF_HOME/specdec-ml-drafters``): the folder notebooks 30-34 read under ``profile=paper``.

1. **Self-distillation** (``distil``): for each pair X → En, the first ``prompts_per_pair`` rows of the pair's
   training set (``train_sets``: the WMT train splits; Ja: JParaCrawl's ``train[:-80]``, the rows before its
   evaluation tail) become the user turn ``"Translate German to English: <text>"`` in Vicuna's chat template
   (the evaluation prompt of ``hubdata.load_paper_prompts``), encoded ``<s>`` + ids (``zoo.tasks.encode``). The
   target (``pairs.multilingual.target``, on the profile's device and dtype) answers each at every temperature
   of ``temperatures`` with batched ``generate`` (``recipe.generate_batched``: left padding, an attention mask,
   pure temperature sampling; stops at ``</s>``, which is kept, or at ``max_new_tokens``). Prompts longer than
   ``max_length - max_new_tokens`` tokens are left out. The answers are written as data, one JSON-lines file per
   (pair, temperature, ``chunk_size`` prompts): ``<out>/self-distillation/<x>/t<T>/part-NNNNN.jsonl`` (written to
   a temporary name, then renamed), so an interrupted run resumes at the first missing file; under ``accelerate
   launch`` the files are dealt round-robin to the processes.
2. **Finetuning** (``finetune``; the one loop, ``specdec.zoo.training.train``, accelerate-aware): per pair, the
   distilled conversations (every temperature, in one seeded shuffle) truncated to ``max_length`` tokens, the
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
   ``experiments.Drafters.training_summary()`` reads under the paper profile).

``--smoke`` replaces the sizes with ``SMOKE`` (a few prompts, a few tokens, one epoch): ``scripts/paper_smoke.py``
runs the whole recipe that way on the stand-in hub before notebooks 30-34.
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

from specdec.multilingual import hubdata, parallel
from specdec.multilingual.recipe import EpochBatches, generate_batched, model_seed
from specdec.zoo import training
from specdec.zoo.models import load, load_profile, profile_device

DISTIL_DIR = "self-distillation"
# --smoke: the recipe end to end in seconds on tiny stand-ins (scripts/paper_smoke.py, tests)
SMOKE = dict(
    prompts_per_pair=3,
    max_new_tokens=6,
    max_length=512,  # the stand-in tokenizer spends ~2 tokens a word: Vicuna's system prompt is ~200
    epochs={"P-F": 1, "F": 1},
    batch_size=2,
    budgets=[2],
    gen_batch_size=8,
    chunk_size=2,
)
SUMMARY_COLUMNS = [
    "model", "role", "recipe", "lang", "init", "parameters", "device", "processes", "epochs", "finetune_steps",
    "finetune_budget", "finetune_examples", "finetune_tokens", "batch_size", "lr", "seconds", "same_as",
]  # fmt: skip


def settings(smoke: bool = False, **overrides) -> dict:
    """``paper.yaml``'s ``multilingual.recipe`` (``SMOKE`` on top with ``smoke``, then ``overrides``), with the
    target id, the prompt and the chat template."""
    spec = load_profile("paper")
    ml = spec["multilingual"]
    cfg = dict(ml["recipe"])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown recipe settings {sorted(unknown)}; known: {sorted(cfg)}")
    cfg.update(SMOKE if smoke else {})
    cfg.update(overrides)
    cfg.update(
        target=spec["pairs"]["multilingual"]["target"],
        prompt=ml["prompt"],
        chat_template=ml["chat_template"],
        revisions=spec.get("revisions") or {},
    )
    return cfg


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
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.unk_token_id or 0)
    limit, chunk = cfg["max_length"] - cfg["max_new_tokens"], cfg["chunk_size"]
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
                texts = [p["prompt"] for p in chunk_prompts]
                bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
                ids = [bos + x for x in tokenizer(texts, add_special_tokens=False)["input_ids"]]  # = zoo.tasks.encode
                keep = [i for i, x in enumerate(ids) if len(x) <= limit]
                seed = zlib.crc32(f"distil:{lang}:{float(temperature)}:{part}".encode()) % 1_000_000
                outs = generate_batched(
                    target, [ids[i] for i in keep], float(temperature), cfg["max_new_tokens"], cfg["gen_batch_size"],
                    seed, eos_id=tokenizer.eos_token_id, pad_id=pad,
                )  # fmt: skip
                rows = [
                    {
                        "id": chunk_prompts[i]["id"],
                        "lang": lang,
                        "temperature": float(temperature),
                        "prompt_ids": ids[i],
                        "output_ids": o,
                        "stop": "eos" if o and o[-1] == tokenizer.eos_token_id else "max_new_tokens",
                        "output": tokenizer.decode(o, skip_special_tokens=True),
                    }
                    for i, o in zip(keep, outs)
                ]
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".tmp{rank}")
                tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
                os.replace(tmp, path)
                counts["written"] += 1
        log(json.dumps({"distilled": lang, "prompts": len(prompts), "files": parts * len(cfg["temperatures"])}))
    return counts


def load_distilled(out: pathlib.Path, lang: str, max_length: int, pad_id: int) -> Conversations:
    """Every distilled conversation of ``lang`` (every temperature; empty answers left out) as ``Conversations``,
    ordered by one shuffle seeded by the language (the order the budgets take their first N from). Raises
    ``FileNotFoundError`` when the distillation of ``lang`` is missing or incomplete (its ``manifest.json`` lists
    more files than there are: run ``distil`` (again) first)."""
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
    tokens, lengths, prompt_len = [], [], []
    for path in files:  # one file at a time into flat int32 tensors (millions of conversations at paper scale)
        flat = []
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["output_ids"]:
                seq = (row["prompt_ids"] + row["output_ids"])[:max_length]
                flat += seq
                lengths.append(len(seq))
                prompt_len.append(min(len(row["prompt_ids"]), max_length))
        tokens.append(torch.tensor(flat, dtype=torch.int32))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor(lengths, dtype=torch.long).cumsum(0)])
    order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(zlib.crc32(lang.encode())))
    return Conversations(torch.cat(tokens), offsets, torch.tensor(prompt_len), pad_id, order)


# ----------------------------------------------------------------------------------------------- 2. finetune
class Conversations:
    """Distilled conversations (prompt + answer ids, each at most ``max_length``) on the CPU, stored flat:
    ``tokens`` (``IntTensor[total]``), ``offsets`` (``LongTensor[N + 1]``), ``prompt_len`` (``LongTensor[N]``).
    ``order`` (``LongTensor[n]``, default all in turn) is the sequence in which they are used: position ``i``
    is conversation ``order[i]``; ``n``, ``answer_len`` (``LongTensor[n]``, by position: what ``EpochBatches``
    counts), ``head(k)`` (the first ``k`` positions) and ``batch(positions, device)``."""

    def __init__(self, tokens, offsets, prompt_len, pad_id: int, order=None):
        self.tokens, self.offsets, self.prompt_len, self.pad_id = tokens, offsets, prompt_len, pad_id
        self.order = torch.arange(len(prompt_len)) if order is None else order
        self.n = len(self.order)
        self.answer_len = (offsets[1:] - offsets[:-1] - prompt_len)[self.order]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[list[int], list[int]]], max_length: int, pad_id: int) -> Conversations:
        """From ``(prompt ids, answer ids)`` pairs, in their order, each truncated to ``max_length`` tokens."""
        seqs = [(p + a)[:max_length] for p, a in pairs]
        offsets = torch.tensor([0] + [len(x) for x in seqs]).cumsum(0)
        tokens = torch.tensor([t for x in seqs for t in x], dtype=torch.int32)
        return cls(tokens, offsets, torch.tensor([min(len(p), max_length) for p, _ in pairs]), pad_id)

    def head(self, k: int) -> Conversations:
        """The first ``k`` conversations of the order (the budgets of Fig. 4)."""
        return Conversations(self.tokens, self.offsets, self.prompt_len, self.pad_id, self.order[:k])

    def batch(self, positions: torch.Tensor, device) -> dict:
        """``{"input_ids", "attention_mask", "labels"}``, each ``LongTensor[len(positions), T]`` right-padded;
        labels are the input ids on answer positions and -100 elsewhere (prompt, padding)."""
        rows = self.order[positions].tolist()
        seqs = [self.tokens[self.offsets[r] : self.offsets[r + 1]].long() for r in rows]
        width = max(len(x) for x in seqs)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for k, (r, seq) in enumerate(zip(rows, seqs)):
            start = int(self.prompt_len[r])
            ids[k, : len(seq)], mask[k, : len(seq)] = seq, 1
            labels[k, start : len(seq)] = seq[start:]
        return {"input_ids": ids.to(device), "attention_mask": mask.to(device), "labels": labels.to(device)}


def init_drafter(cfg: dict, recipe: str, name: str, device, large: bool = False):
    """P-F: ``from_pretrained(pretrained)`` (``large_pretrained`` with ``large``); F: its configuration with random
    weights seeded by the drafter's name. float32 on ``device``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    source = cfg["large_pretrained" if large else "pretrained"]
    revision = cfg["revisions"].get(source)
    if recipe == "P-F":
        model = AutoModelForCausalLM.from_pretrained(source, revision=revision, dtype=torch.float32)
    else:
        torch.manual_seed(model_seed(name))
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(source, revision=revision))
    return model.float().to(device), source


def finetune_drafter(name, recipe, conv: Conversations, n: int, cfg, out, tokenizer, *, lang, device,
                     accelerator=None, large=False, log=print) -> dict:  # fmt: skip
    """Finetune one drafter on the first ``n`` conversations (step 2) and save it under ``out/name``; returns its
    summary row. A drafter already saved there (``training_log.json``) is kept and its row returned."""
    path = out / name
    if (path / "training_log.json").exists():
        return json.loads((path / "training_log.json").read_text())["summary"]
    t0 = time.perf_counter()
    model, source = init_drafter(cfg, recipe, name, device, large)
    batch_size, epochs = cfg["batch_size"], cfg["epochs"][recipe]
    steps = max(1, epochs * math.ceil(n / batch_size))
    subset = conv.head(n)
    order = EpochBatches(subset, batch_size)
    result = training.train(
        model,
        lambda g: subset.batch(order(g), device),
        training.answer_loss,
        steps=steps,
        lr=cfg["lr"],
        seed=model_seed(name) + 2,
        warmup=max(1, math.ceil(cfg["warmup_ratio"] * steps)),
        betas=(0.9, 0.999),
        weight_decay=cfg["weight_decay"],
        fused=str(device).startswith("cuda"),
        name=name,
        fields={"phase": "finetune"},
        counters=lambda: {"tokens": order.tokens},
        accelerator=accelerator,
    )
    info = {
        "model": name, "role": "drafter", "recipe": recipe, "lang": lang, "init": source if recipe == "P-F" else
        f"random ({source} config)", "parameters": sum(p.numel() for p in model.parameters()),
        "device": training.device_name(device), "processes": accelerator.num_processes if accelerator else 1,
        "epochs": epochs, "finetune_steps": steps, "finetune_budget": n, "finetune_examples": n,
        "finetune_tokens": order.tokens, "batch_size": batch_size, "lr": cfg["lr"],
        "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    save_drafter(model, tokenizer, path, accelerator, {"summary": info, "log": result.rows})
    return info


def save_drafter(model, tokenizer, path: pathlib.Path, accelerator, log: dict) -> None:
    """``save_pretrained`` (weights gathered from every process under accelerate), the tokenizer, then
    ``training_log.json`` last: its presence marks a finished drafter."""
    if accelerator is not None:
        state = accelerator.get_state_dict(model)
        if accelerator.is_main_process:
            accelerator.unwrap_model(model).save_pretrained(path, state_dict=state)
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return
    else:
        model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    (path / "training_log.json").write_text(json.dumps(log, indent=0, ensure_ascii=False) + "\n")


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
        rows.append({"model": name, "role": role, "recipe": "published", "lang": "none", "init": source,
                     "parameters": count})  # fmt: skip
    return rows


def finetune_all(cfg, langs, out, tokenizer, *, device, accelerator=None, large=True, log=print) -> list[dict]:
    """Step 2 for every pair of ``langs`` (module docstring); writes ``out/ml_training.csv`` (the target and the
    generic drafter first, then every drafter trained); returns its rows."""
    rows = untrained_rows(cfg)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.unk_token_id or 0)
    for lang in langs:
        conv = load_distilled(out, lang, cfg["max_length"], pad)
        if not conv.n:
            raise ValueError(f"{lang}: no distilled conversation (prompts longer than max_length - max_new_tokens?)")
        log(json.dumps({"finetune": lang, "conversations": conv.n, "answer_tokens": int(conv.answer_len.sum())}))
        kw = dict(lang=lang, device=device, accelerator=accelerator, log=log)
        main = {r: finetune_drafter(f"ml-draft-{r.lower().replace('-', '')}-{lang}", r, conv, conv.n, cfg, out,
                                    tokenizer, **kw) for r in ("F", "P-F")}  # fmt: skip
        rows += main.values()
        if lang != cfg["budget_lang"]:
            continue
        for budget in sorted(b for b in cfg["budgets"] if b < conv.n):
            for r in ("F", "P-F"):
                name = f"ml-draft-{r.lower().replace('-', '')}-{lang}-b{budget}"
                rows.append(finetune_drafter(name, r, conv, budget, cfg, out, tokenizer, **kw))
        for r, row in main.items():  # the main drafter is the largest budget of the grid
            rows.append({**row, "model": f"ml-draft-{r.lower().replace('-', '')}-{lang}-b{conv.n}",
                         "same_as": row["model"]})  # fmt: skip
        if large and cfg.get("large_pretrained"):
            rows.append(finetune_drafter(f"ml-draft-large-pf-{lang}", "P-F", conv, conv.n, cfg, out, tokenizer,
                                         large=True, **kw))  # fmt: skip
    if accelerator is None or accelerator.is_main_process:
        with (out / "ml_training.csv").open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return rows


# ----------------------------------------------------------------------------------------------- entry point
def run(step: str, out, *, langs=None, device=None, dtype=None, smoke=False, large=True, accelerator=None,
        log=print, **overrides) -> list[dict]:  # fmt: skip
    """Run ``distil``, ``finetune`` or ``all`` (module docstring) into ``out``; returns the summary rows (empty
    for ``distil``). ``device`` / ``dtype``: the target's (default: the profile's; under accelerate the device
    is the process's)."""
    cfg = settings(smoke, **overrides)
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
    from specdec.multilingual.experiments import drafters_dir

    ap = argparse.ArgumentParser(prog="python -m specdec.multilingual.train --profile paper", description=__doc__)
    ap.formatter_class = argparse.RawDescriptionHelpFormatter
    ap.add_argument("step", nargs="?", choices=["distil", "finetune", "all"], default="all")
    ap.add_argument(
        "--out", type=pathlib.Path, default=None, help="drafters folder (default: experiments.drafters_dir())"
    )
    ap.add_argument("--langs", nargs="*", default=None, help="pairs X->En (default: every pair of train_sets)")
    ap.add_argument("--device", default=None, help="default: paper.yaml's (cuda)")
    ap.add_argument("--dtype", default=None, help="the target's dtype for distillation (default: paper.yaml's)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (SMOKE): the stand-in hub's smoke run")
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
