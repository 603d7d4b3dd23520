"""The multilingual zoo: a tiny "Vicuna" target and specialised drafters (pretrain → self-distil → finetune).

Reproduces the training recipe of *Towards Fast Multilingual LLM Inference: Speculative Decoding and
Specialized Drafters* (Yi et al.) with tiny models on the foundation tokenizer (``data/models/tokenizer``,
4096 ids) and the parallel corpus of ``specdec.multilingual.parallel``. Two steps, so the training can run on a machine
without Django, Sphinx or the corpus sources (e.g. a GPU box):

    python -m specdec.multilingual.train data --out .gpu/ml_data.pt        # here: tokenise text + prompts
    python -m specdec.multilingual.train train --data .gpu/ml_data.pt --device cuda --out data/models

``python -m specdec.multilingual.train`` (step ``all``) does both on this machine. ``--profile paper`` runs the
recipe at paper scale instead (Vicuna target, vicuna-68m drafters, the WMT / JParaCrawl training sets of
``paper.yaml``): ``specdec.multilingual.paper_recipe``.

**Data step** (``specdec.multilingual.data.build_data``; needs the corpus sources): token streams of general
English and multilingual text (held-out pairs removed) and translation examples in both directions (see
``specdec.multilingual.data``).

**Train step** (``train_all``; reads only the data file and the tokenizer; one function per stage; models,
losses and metrics in ``specdec.multilingual.recipe``; every model trained by ``specdec.zoo.training.train``),
in order:

a. ``ml-target`` (size of ``zoo.TINY_ZOO["tiny-target"]``, ~2.6 M parameters): next-token loss on windows of
   general text (English + multilingual) and of the instruction documents (every language, both
   directions). Its held-out report: answer-token loss on the reference translations with the right source
   sentence and with the sources shuffled among the rows (the "chance" level: a model that ignores the
   source scores the same on both), and greedy exact match / chrF against the references (and against a
   shuffled reference).
b. Self-distillation: the target answers every training prompt of each pair X→En at temperatures
   ``{0, 0.3, 0.7, 1.0}`` (``max_new_tokens`` 48, stop at ``</s>`` = id 2). The decoding engine of this repo
   runs at batch size 1; distillation instead calls transformers' batched ``model.generate`` (left padding
   with an attention mask, so positions are those of the unpadded prompt; ``do_sample`` with pure temperature
   scaling, no top-k / top-p) for throughput: the same distributions as ``specdec.engine`` with
   ``SamplingConfig(temperature=t)``. The outputs (ids and text) are saved as ``ml_distilled.jsonl``.
c. Drafters (~0.37 M parameters, size of ``zoo.TINY_ZOO["tiny-draft-s"]``, same tokenizer):
   ``ml-draft-generic`` (pretrained on general English text only, the paper's P on C4 + ShareGPT: the SpS
   baseline, like vicuna-68m, and the start of every P-F drafter); per pair X→En (X in de fr ru ja zh)
   ``ml-draft-f-<x>`` (finetune only, from scratch) and ``ml-draft-pf-<x>`` (``ml-draft-generic`` finetuned),
   both on the target's distilled X→En outputs with the loss on the answer tokens (and ``</s>``) only; for the
   tokens-vs-speedup figure (Fig. 4), F and P-F drafters for ``de`` on nested subsets of the distillation (the
   answers to 1/64, 1/16, 1/4 and all of the training prompts, ``Run.grid``), each for the main drafter's number
   of passes, named ``ml-draft-{f,pf}-de-b<N>`` (N distilled examples; the full set is the main drafter, a
   summary row ``same_as`` it); and ``ml-draft-large-pf-de`` (hidden 80, 3 layers, ~0.59 M parameters: 0.15x the
   target's non-embedding parameters and 3 of its 4 layers, as Tiny-Vicuna 1B to Vicuna 7B) pretrained on the
   same general text, then P-F on de, for the drafter-size study (Table 6).
   Every drafter is evaluated on the held-out X→En prompts of every language (source A held-out and
   source B): answer-token loss and top-1 agreement with the target's greedy answer, teacher forced (the
   per-token greedy acceptance of speculative decoding).

**Drafters step** (``python -m specdec.multilingual.train drafters [--only NAME ...]``, ``retrain_drafters``):
retrains drafters on the saved target, its saved distillation (``data/multilingual/ml_distilled.jsonl.gz``) and
the saved generic drafter, exactly as step c would (the generic drafter is used as saved, float16, in both);
``ml_training.csv`` keeps the other models' rows and ``ml_run.json`` records what was retrained where.

A finetune budget counts answer tokens seen (``</s>`` included): steps = budget / (batch x mean answer
length of the pair's distilled data). ``--steps-scale`` multiplies every step count and budget and (below 1)
the number of prompts per set; below ``SMOKE_SCALE`` (0.01) it also shrinks batches, windows and answer
lengths (``SMOKE``): CI smoke runs. All seeds are fixed (a CRC of the model name). Weights are
saved as float16 with a float32 config (``specdec.zoo.training.save_half``) together with the tokenizer and a
``training_log.json``; the output directory also gets ``ml_training.csv`` (one row per model),
``ml_distilled.jsonl`` and ``ml_run.json`` (configuration, phase timings, sizes).
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import pathlib
import sys
import time
from dataclasses import dataclass, field

import torch

from specdec import zoo
from specdec.harness.profile import Profile
from specdec.multilingual import recipe
from specdec.multilingual.data import build_data, collections_count, data_summary, example_ids, tokenizer_digest
from specdec.multilingual.recipe import Examples, generate_batched, model_seed, new_model, pretrain
from specdec.zoo import training
from specdec.zoo.training import save_half

TARGET = "ml-target"
GENERIC = "ml-draft-generic"
LARGE = "ml-draft-large-pf-de"
BUDGET_LANG = "de"
DISTIL_DIRECTION = "xx-en"

SIZES = {
    "target": zoo.TINY_ZOO["tiny-target"],
    "draft": zoo.TINY_ZOO["tiny-draft-s"],
    # Table 6's Tiny-Vicuna 1B stands to Vicuna 7B at ~0.15x of its non-embedding parameters (0.97B / 6.5B) and
    # 22 / 32 of its layers; this drafter stands to ml-target at 0.15x (0.26M / 1.77M) and 3 / 4.
    "large": dict(
        hidden_size=80, intermediate_size=256, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4
    ),
}
# Weights of the kinds of training windows (``instruct``: the translation instruction documents).
MIXES = {
    "target": {"prose": 0.25, "code": 0.15, "translation": 0.15, "instruct": 0.45},
    "english": {"prose": 0.55, "code": 0.45},  # general text: the paper's P is C4 + ShareGPT
}
TRAIN = dict(
    target_steps=3000,
    pretrain_steps=2000,
    large_pretrain_steps=2000,  # window (pre)training steps
    batch_size=32,
    seq_len=256,
    lr=3e-3,
    ft_batch_size=64,
    ft_lr=2e-3,
    ft_budget=409_600,  # answer tokens seen by a main drafter (~17 passes over a pair's distilled answers)
    budget_factor=4,
    n_budgets=4,  # Fig. 4: nested quarters of a pair's distilled prompts, each trained for the same passes
    temperatures=(0.0, 0.3, 0.7, 1.0),
    max_new_tokens=48,
    gen_batch_size=1024,  # self-distillation
    max_prompt_tokens=160,  # longer prompts (a few long Sphinx messages) are left out of distillation / eval
    eval_windows=64,
    eval_batch_size=256,
    min_prompts=8,
)
# CI smoke runs (``steps_scale < SMOKE_SCALE``) also use these smaller batches, windows and answers.
SMOKE_SCALE = 0.01
SMOKE = dict(batch_size=8, seq_len=128, ft_batch_size=16, eval_windows=8, max_new_tokens=16, gen_batch_size=64)


def _select(examples: dict, keep, limit: int | None, max_prompt_tokens: int) -> list[int]:
    """Indices of the rows for which ``keep(row)`` holds, prompt at most ``max_prompt_tokens``, first ``limit``
    per (source, lang, direction)."""
    counts: dict[tuple, int] = {}
    out = []
    for i, row in enumerate(examples["rows"]):
        key = (row["source"], row["lang"], row["direction"])
        if keep(row) and int(examples["prompt_len"][i]) <= max_prompt_tokens and counts.get(key, 0) < (limit or 10**9):
            counts[key] = counts.get(key, 0) + 1
            out.append(i)
    return out


def _budget_name(recipe: str, n_examples: int) -> str:
    return f"ml-draft-{recipe}-{BUDGET_LANG}-b{n_examples}"


def subset_fractions(cfg: dict) -> list[float]:
    """The Fig. 4 grid: fractions of a pair's distilled prompts, smallest first; the last (1) is the main drafter."""
    return [1 / cfg["budget_factor"] ** k for k in range(cfg["n_budgets"] - 1, -1, -1)]


def model_names(langs=None, cfg: dict | None = None) -> list[str]:
    """Every model directory ``train_all`` saves, in training order (the Fig. 4 grid's points are named after their
    example counts, known only once the data are distilled: see ``Run.grid``)."""
    langs = list(langs or ["de", "fr", "ru", "ja", "zh"])
    names = [TARGET, GENERIC]
    for lang in langs:
        names += [f"ml-draft-f-{lang}", f"ml-draft-pf-{lang}"]
    return names + ([LARGE] if BUDGET_LANG in langs else [])


@dataclass
class Run:
    """What the stages of ``train_all`` share: settings, tokenizer, streams, held-out sets, saved rows, timings."""

    cfg: dict
    out_dir: pathlib.Path
    device: str
    device_name: str
    tokenizer: object
    steps_scale: float
    langs: list[str]
    prompts_per_set: int | None
    general_train: dict
    general_heldout: dict
    rows: list[dict] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    distilled: dict[str, tuple[list, list]] = field(default_factory=dict)  # lang -> (prompt ids, answer ids)
    drafter_eval: dict[str, Examples] = field(default_factory=dict)  # "<source>-<lang>" -> held-out X→En

    def scale(self, n: int) -> int:
        return max(1, int(n * self.steps_scale))

    def save(self, model, name: str, info: dict, log: list, extra: dict | None = None) -> None:
        """float16 weights, tokenizer and ``training_log.json`` under ``out_dir/name``; a summary row."""
        path = self.out_dir / name
        save_half(copy.deepcopy(model).cpu(), path)
        self.tokenizer.save_pretrained(path)
        params = sum(p.numel() for p in model.parameters())
        info = {"model": name, "parameters": params, "device": self.device_name, **info}
        (path / "training_log.json").write_text(
            json.dumps({"summary": info, **(extra or {}), "log": log}, indent=0, ensure_ascii=False) + "\n"
        )
        self.rows.append(info)
        print(json.dumps({k: v for k, v in info.items() if not isinstance(v, dict)}), flush=True)

    def general_losses(self, model) -> dict:
        held = self.general_heldout
        return {k: recipe.window_loss(model, held, k, self.cfg["eval_windows"]) for k in held if len(held[k]) > 8}

    def drafter_metrics(self, model) -> dict:
        batch_size = self.cfg["eval_batch_size"]
        return {key: recipe.answer_metrics(model, ex, batch_size) for key, ex in self.drafter_eval.items()}

    def main_steps(self, lang: str) -> int:
        """Finetune steps of a main drafter: ``ft_budget`` answer tokens / (batch x mean answer length of the pair)."""
        answers = self.distilled[lang][1]
        mean_answer = sum(map(len, answers)) / max(1, len(answers))
        return max(1, round(self.scale(self.cfg["ft_budget"]) / (self.cfg["ft_batch_size"] * mean_answer)))

    def grid(self, lang: str) -> list[list[int]]:
        """Fig. 4's finetune sets for ``lang``: nested sets of distilled examples (indices into
        ``distilled[lang]``), smallest first, the last all of them. A set holds every answer (each temperature)
        of the first ``ceil(fraction x n)`` of the pair's training prompts in a seeded random order, so a larger
        set adds distinct prompts and tokens, never repeats."""
        prompts = self.distilled[lang][0]
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(prompts):
            groups.setdefault(tuple(p), []).append(i)
        keys = list(groups)
        order = torch.randperm(len(keys), generator=torch.Generator().manual_seed(model_seed(f"grid-{lang}")))
        counts = [max(1, math.ceil(fraction * len(keys))) for fraction in subset_fractions(self.cfg)]
        if len(set(counts)) < len(counts):
            raise ValueError(
                f"{lang}: {len(keys)} distilled prompts are too few for {len(counts)} nested sets {counts}; "
                "lower n_budgets or budget_factor"
            )
        return [sorted(i for k in order[:n] for i in groups[keys[int(k)]]) for n in counts]


def start_run(data: dict, out_dir, device, steps_scale, langs, prompts_per_set, tokenizer_dir, overrides) -> Run:
    """Settings (``TRAIN``, ``SMOKE``, ``overrides``), output directory, tokenizer check, general text streams."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    cfg = {**TRAIN, **(SMOKE if steps_scale < SMOKE_SCALE else {}), **overrides}
    unknown = set(overrides) - set(TRAIN)
    if unknown:
        raise ValueError(f"unknown training settings {sorted(unknown)}; known: {sorted(TRAIN)}")
    if str(device).startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if data["meta"]["tokenizer_sha256"] != tokenizer_digest(tokenizer_dir):
        raise ValueError(f"{tokenizer_dir} is not the tokenizer the data file was built with")
    if prompts_per_set is None and steps_scale < 1:
        n_max = max(collections_count(data["train"]["rows"]).values())
        prompts_per_set = max(cfg["min_prompts"], math.ceil(n_max * steps_scale))
    return Run(
        cfg=cfg,
        out_dir=out_dir,
        device=device,
        device_name=training.device_name(device),
        tokenizer=tokenizer,
        steps_scale=steps_scale,
        langs=list(langs or data["meta"]["languages"]),
        prompts_per_set=prompts_per_set,
        general_train={k: v.long() for k, v in data["general"]["train"].items()},
        general_heldout={k: v.long() for k, v in data["general"]["heldout"].items()},
    )


def train_target(run: Run, data: dict):
    """Stage a: pretrain ``ml-target`` on general text and the instruction documents; returns (model, steps, log,
    seconds)."""
    # the instruction documents: every train-split example (both directions), <s> … </s> each, in a fixed
    # shuffled order (so a window does not hold a pair in both directions side by side)
    offsets = data["train"]["offsets"].tolist()
    order = torch.randperm(len(offsets) - 1, generator=torch.Generator().manual_seed(0)).tolist()
    instruct = torch.cat([data["train"]["ids"][offsets[i] : offsets[i + 1]] for i in order]).long()
    cfg, seed = run.cfg, model_seed(TARGET)
    t0 = time.perf_counter()
    target = new_model(SIZES["target"], seed, run.device)
    steps = run.scale(cfg["target_steps"])
    streams = {**run.general_train, "instruct": instruct}
    args = (MIXES["target"], steps, cfg["batch_size"], cfg["seq_len"], cfg["lr"], seed, TARGET)
    log = pretrain(target, streams, *args, {**run.general_heldout}, cfg["eval_windows"])
    seconds = time.perf_counter() - t0
    run.phases["target_train"] = seconds
    return target, steps, log, seconds


def evaluate_target(run: Run, data: dict, target, steps: int, log: list, seconds: float):
    """The target's held-out report (``target_quality``) and its saved model; returns the evaluation prompts
    (indices into ``data["heldout"]``, prompt ids) and the target's greedy answers to them."""
    cfg, heldout = run.cfg, data["heldout"]
    t0 = time.perf_counter()
    eval_idx, eval_prompts, greedy = heldout_greedy(run, data, target)
    eval_refs = [example_ids(heldout, i)[1] for i in eval_idx]
    args = (heldout, eval_idx, eval_prompts, eval_refs, greedy, run.tokenizer, cfg, run.device)
    quality = recipe.target_quality(target, *args)
    run.phases["target_eval"] = time.perf_counter() - t0
    info = {
        "role": "target",
        "recipe": "pretrain (general + instructions)",
        "lang": "all",
        "pretrain_steps": steps,
        "batch_size": cfg["batch_size"],
        "seq_len": cfg["seq_len"],
        "lr": cfg["lr"],
        "mix": MIXES["target"],
        "seconds": round(seconds, 1),
        "heldout_general": run.general_losses(target),
        "heldout_summary": quality["summary"],
    }
    run.save(target, TARGET, info, log, {"heldout_translation": quality["detail"]})
    return eval_idx, eval_prompts, greedy


def self_distil(run: Run, data: dict, target) -> dict:
    """Stage b: the target answers the training prompts X→En at every temperature (``run.distilled``,
    ``ml_distilled.jsonl``); returns per-language statistics."""
    cfg, tokenizer, langs, train = run.cfg, run.tokenizer, run.langs, data["train"]
    t0 = time.perf_counter()
    keep = lambda r: r["lang"] in langs and r["direction"] == DISTIL_DIRECTION  # noqa: E731
    idx = _select(train, keep, run.prompts_per_set, cfg["max_prompt_tokens"])
    prompts = [example_ids(train, i)[0] for i in idx]
    run.distilled = distilled = {lang: ([], []) for lang in langs}
    jsonl = []
    for k, temperature in enumerate(cfg["temperatures"]):  # every pair in one batched pass per temperature
        seed = model_seed("distil") + 1000 * k
        outs = generate_batched(target, prompts, float(temperature), cfg["max_new_tokens"], cfg["gen_batch_size"], seed)
        for i, p, o in zip(idx, prompts, outs):
            row = train["rows"][i]
            if not o:
                continue
            distilled[row["lang"]][0].append(p)
            distilled[row["lang"]][1].append(o)
            jsonl.append(
                {
                    "id": row["id"],
                    "lang": row["lang"],
                    "direction": DISTIL_DIRECTION,
                    "temperature": float(temperature),
                    "prompt": row["prompt"],
                    "output": tokenizer.decode([t for t in o if t != tokenizer.eos_token_id]),
                    "stop": "eos" if o[-1] == tokenizer.eos_token_id else "max_new_tokens",
                    "output_ids": o,
                }
            )
    jsonl.sort(key=lambda r: (langs.index(r["lang"]), r["temperature"]))
    with (run.out_dir / "ml_distilled.jsonl").open("w", encoding="utf-8") as f:
        for row in jsonl:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    run.phases["distil"] = time.perf_counter() - t0
    stats = {
        lang: {
            "examples": len(a),
            "answer_tokens": sum(map(len, a)),
            "eos_fraction": round(sum(o[-1] == 2 for o in a) / max(1, len(a)), 3),
        }
        for lang, (_, a) in distilled.items()
    }
    print(json.dumps({"distilled": stats}), flush=True)
    return stats


def drafter_eval_sets(run: Run, data: dict, eval_idx, eval_prompts, greedy) -> None:
    """``run.drafter_eval``: held-out X→En prompts of every language and source with the target's greedy answers
    (what greedy speculative decoding must reproduce)."""
    rows = data["heldout"]["rows"]
    for source in ("django", "sphinx"):
        for lang in data["meta"]["languages"]:
            sel = [
                j
                for j, i in enumerate(eval_idx)
                if rows[i]["source"] == source
                and rows[i]["lang"] == lang
                and rows[i]["direction"] == DISTIL_DIRECTION
                and greedy[j]
            ]
            run.drafter_eval[f"{source}-{lang}"] = Examples(
                [eval_prompts[j] for j in sel], [greedy[j] for j in sel], run.device
            )


def pretrained_drafter(run: Run, name: str, size: str, mix: str, steps_key: str, save_as: str | None = None):
    """A drafter pretrained on windows of general text (mixture ``MIXES[mix]``); saved as ``save_as`` if given.
    Returns (model, log, steps, seconds)."""
    cfg = run.cfg
    t0 = time.perf_counter()
    model = new_model(SIZES[size], model_seed(name), run.device)
    steps = run.scale(cfg[steps_key])
    args = (MIXES[mix], steps, cfg["batch_size"], cfg["seq_len"], cfg["lr"], model_seed(name), name)
    log = pretrain(model, run.general_train, *args, run.general_heldout, cfg["eval_windows"])
    seconds = time.perf_counter() - t0
    run.phases[f"pretrain {name}"] = seconds
    if save_as:
        info = {
            "role": "drafter",
            "recipe": "P",
            "lang": "none",
            "pretrain_steps": steps,
            "mix": MIXES[mix],
            "seconds": round(seconds, 1),
            "heldout_general": run.general_losses(model),
            "heldout_xx_en": run.drafter_metrics(model),
        }
        run.save(model, save_as, info, log)
    return model, log, steps, seconds


def finetuned_drafter(run: Run, name: str, lang: str, recipe_name: str, subset: list[int], init=None, **origin):
    """A drafter finetuned on the target's distilled ``lang``→En answers ``subset`` (indices into
    ``run.distilled[lang]``; a copy of ``init``, or from scratch) for the passes of a main drafter (``main_steps``
    scaled by the subset's share of the answer tokens), saved as ``name``. ``origin``: ``init_name``,
    ``init_steps``, ``init_seconds``, ``init_log`` (the pretraining of ``init``), ``size`` (from scratch),
    ``aliases`` (further names of the same model: summary rows only, ``same_as`` = ``name``)."""
    cfg = run.cfg
    t0 = time.perf_counter()
    size = SIZES[origin.get("size", "draft")]
    model = copy.deepcopy(init) if init is not None else new_model(size, model_seed(name), run.device)
    prompts, answers = run.distilled[lang]
    distinct = sum(len(answers[i]) for i in subset)
    steps = max(1, round(run.main_steps(lang) * distinct / max(1, sum(map(len, answers)))))
    examples = Examples([prompts[i] for i in subset], [answers[i] for i in subset], run.device)
    args = (steps, cfg["ft_batch_size"], cfg["ft_lr"], model_seed(name), name)
    log, seen = recipe.finetune(model, examples, *args, run.drafter_eval.get(f"django-{lang}"), cfg["eval_batch_size"])
    seconds = time.perf_counter() - t0
    run.phases[f"finetune {name}"] = seconds
    info = {
        "role": "drafter",
        "recipe": recipe_name,
        "lang": lang,
        "init": origin.get("init_name", "scratch"),
        "pretrain_steps": origin.get("init_steps", 0),
        "finetune_steps": steps,
        "finetune_budget": examples.n,  # distinct distilled examples (prompt, temperature)
        "finetune_tokens": distinct,  # distinct answer tokens: Fig. 4's x-axis
        "finetune_tokens_seen": seen,
        "finetune_examples": examples.n,
        "ft_batch_size": cfg["ft_batch_size"],
        "ft_lr": cfg["ft_lr"],
        "seconds": round(origin.get("init_seconds", 0.0) + seconds, 1),
        "heldout_general": run.general_losses(model),
        "heldout_xx_en": run.drafter_metrics(model),
    }
    run.save(model, name, info, [*origin.get("init_log", ()), *log])
    for alias in origin.get("aliases", ()):
        run.rows.append({**run.rows[-1], "model": alias, "same_as": name})
    return model


def train_drafters(run: Run, generic=None, only=None) -> None:
    """Stage c: the generic drafter (P: general text only; the SpS baseline and the start of every P-F drafter),
    F and P-F drafters per language, Fig. 4's grid and the large drafter (``BUDGET_LANG``).

    ``generic``: ``(model, steps, seconds)`` of an already trained generic drafter (else it is pretrained here);
    ``only``: train just these names (``drafters`` step: the rest stay as saved)."""
    want = lambda name: only is None or name in only  # noqa: E731
    if generic is None:
        model, _, steps, seconds = pretrained_drafter(
            run, GENERIC, "draft", "english", "pretrain_steps", save_as=GENERIC
        )
        with torch.no_grad():  # P-F starts from the shipped (float16) generic drafter, as the ``drafters`` step does
            for param in model.parameters():
                param.copy_(param.half().float())
        generic = (model, steps, seconds)
    from_base = dict(init=generic[0], init_name=GENERIC, init_steps=generic[1], init_seconds=generic[2])
    for lang in run.langs:
        grid = run.grid(lang)
        main = grid[-1]
        for kind, recipe_name, init in (("f", "F", {}), ("pf", "P-F", from_base)):
            alias = (_budget_name(kind, len(main)),) if lang == BUDGET_LANG else ()
            if want(f"ml-draft-{kind}-{lang}"):
                finetuned_drafter(run, f"ml-draft-{kind}-{lang}", lang, recipe_name, main, aliases=alias, **init)
    if BUDGET_LANG not in run.langs:
        return
    grid = run.grid(BUDGET_LANG)
    for subset in grid[:-1]:
        for kind, recipe_name, init in (("f", "F", {}), ("pf", "P-F", from_base)):
            name = _budget_name(kind, len(subset))
            if want(name):
                finetuned_drafter(run, name, BUDGET_LANG, recipe_name, subset, **init)
    if want(LARGE):
        large, large_log, large_steps, large_seconds = pretrained_drafter(
            run, "ml-draft-large-pretrained", "large", "english", "large_pretrain_steps"
        )
        from_large = dict(init_name="ml-draft-large-pretrained (not saved)", init_steps=large_steps)
        from_large.update(init_seconds=large_seconds, size="large", init_log=large_log)
        finetuned_drafter(run, LARGE, BUDGET_LANG, "P-F", grid[-1], init=large, **from_large)


def write_summary(run: Run, data: dict, distil_stats: dict, seconds_total: float, summary_dir=None, extra=None):
    """``ml_training.csv`` (one row per model name) and ``ml_run.json`` (configuration, timings, sizes) in
    ``summary_dir`` (default the models directory). ``extra``: more ``ml_run.json`` entries."""
    out_dir, rows = run.out_dir, run.rows
    summary_dir = pathlib.Path(summary_dir or out_dir)
    saved = [r["model"] for r in rows if not r.get("same_as")]
    weights = {m: (out_dir / m / "model.safetensors").stat().st_size for m in saved}
    dirs = {m: sum(p.stat().st_size for p in (out_dir / m).iterdir()) for m in saved}
    _write_csv(summary_dir / "ml_training.csv", rows)
    distilled_jsonl = out_dir / "ml_distilled.jsonl"
    summary = {
        "device": run.device_name,
        "steps_scale": run.steps_scale,
        "langs": run.langs,
        "prompts_per_set": run.prompts_per_set,
        "config": run.cfg,
        "sizes": SIZES,
        "mixes": MIXES,
        "fig4_grid": {BUDGET_LANG: [len(s) for s in run.grid(BUDGET_LANG)]} if BUDGET_LANG in run.langs else {},
        "distilled": distil_stats,
        "seconds_total": round(seconds_total, 1),
        "phase_seconds": {k: round(v, 1) for k, v in run.phases.items()},
        "weights_bytes_total": sum(weights.values()),
        "model_dirs_bytes_total": sum(dirs.values()),
        "distilled_jsonl_bytes": distilled_jsonl.stat().st_size if distilled_jsonl.exists() else None,
        "weights_bytes": weights,
        "data_meta": data["meta"],
        **(extra or {}),
    }
    (summary_dir / "ml_run.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(
        f"{len(rows)} models, float16 weights {sum(weights.values()) / 1e6:.2f} MB "
        f"(model directories with tokenizer files {sum(dirs.values()) / 1e6:.2f} MB), "
        f"{summary['seconds_total']:.0f} s on {run.device_name}",
        flush=True,
    )


def train_all(
    data: dict,
    out_dir: pathlib.Path,
    device: str = "cpu",
    steps_scale: float = 1.0,
    langs=None,
    prompts_per_set: int | None = None,
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR,
    **overrides,
) -> list[dict]:
    """Run steps a-c of the module docstring; save every model under ``out_dir/<name>``; returns summary rows.

    ``overrides`` replace entries of ``TRAIN`` (e.g. ``batch_size`` for a CPU test); a smoke run
    (``steps_scale < SMOKE_SCALE``) starts from ``TRAIN`` updated with ``SMOKE``. ``prompts_per_set``: at most
    this many prompts per (source, language, direction) for distillation and evaluation (default: all, or
    ``max(min_prompts, n x steps_scale)`` when ``steps_scale < 1``).
    """
    run = start_run(data, out_dir, device, steps_scale, langs, prompts_per_set, tokenizer_dir, overrides)
    t_run = time.perf_counter()
    target, steps, log, seconds = train_target(run, data)
    eval_idx, eval_prompts, greedy = evaluate_target(run, data, target, steps, log, seconds)
    distil_stats = self_distil(run, data, target)
    drafter_eval_sets(run, data, eval_idx, eval_prompts, greedy)
    train_drafters(run)
    write_summary(run, data, distil_stats, time.perf_counter() - t_run)
    return run.rows


def load_distilled(run: Run, data: dict, path: pathlib.Path) -> dict:
    """``run.distilled`` from a saved ``ml_distilled.jsonl`` (or ``.jsonl.gz``): the prompt ids of each row are
    those of ``data["train"]`` (its id and direction), in the file's order (language, temperature, prompt), the
    order ``self_distil`` builds; returns per-language statistics."""
    import gzip

    train = data["train"]
    index = {(r["id"], r["direction"]): i for i, r in enumerate(train["rows"])}
    run.distilled = distilled = {lang: ([], []) for lang in run.langs}
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["lang"] not in distilled:
                continue
            prompt = example_ids(train, index[(row["id"], row["direction"])])[0]
            distilled[row["lang"]][0].append(prompt)
            distilled[row["lang"]][1].append(row["output_ids"])
    return {
        lang: {
            "examples": len(a),
            "answer_tokens": sum(map(len, a)),
            "eos_fraction": round(sum(o[-1] == 2 for o in a) / max(1, len(a)), 3),
        }
        for lang, (_, a) in distilled.items()
    }


def heldout_greedy(run: Run, data: dict, target):
    """The held-out prompts the drafters are evaluated on (indices into ``data["heldout"]``, prompt ids) and the
    target's greedy answers to them."""
    cfg, heldout = run.cfg, data["heldout"]
    eval_idx = _select(heldout, lambda r: True, run.prompts_per_set, cfg["max_prompt_tokens"])
    eval_prompts = [example_ids(heldout, i)[0] for i in eval_idx]
    greedy = generate_batched(
        target, eval_prompts, 0.0, cfg["max_new_tokens"], cfg["gen_batch_size"], model_seed(TARGET)
    )
    return eval_idx, eval_prompts, greedy


def retrain_drafters(
    data: dict,
    models_dir: pathlib.Path,
    distilled: pathlib.Path,
    summary_dir: pathlib.Path,
    only: list[str] | None = None,
    device: str = "cpu",
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR,
    steps_scale: float = 1.0,
    prompts_per_set: int | None = None,
    **overrides,
) -> list[dict]:
    """The ``drafters`` step: retrain the drafters ``only`` on a saved target (``models_dir/ml-target``) and its saved
    distillation (``distilled``) with the generic drafter saved in ``models_dir``, exactly as ``train_all`` would
    after its distillation; rewrite ``summary_dir``'s ``ml_training.csv`` (rows of the models kept are carried
    over) and ``ml_run.json`` (with a ``retrained`` entry: names, device, seconds)."""
    from specdec.zoo.models import load

    run = start_run(data, models_dir, device, steps_scale, None, prompts_per_set, tokenizer_dir, overrides)
    t_run = time.perf_counter()
    target = load(models_dir / TARGET, with_tokenizer=False)[0].float().to(device)
    eval_idx, eval_prompts, greedy = heldout_greedy(run, data, target)
    distil_stats = load_distilled(run, data, distilled)
    drafter_eval_sets(run, data, eval_idx, eval_prompts, greedy)
    generic = load(models_dir / GENERIC, with_tokenizer=False)[0].float().to(device)
    grid = (
        [_budget_name(k, len(s)) for s in run.grid(BUDGET_LANG) for k in ("f", "pf")]
        if BUDGET_LANG in run.langs
        else []
    )
    if only is None:  # what reads the generic drafter or Fig. 4's sets: the P-F drafters, the grid, the large one
        only = [f"ml-draft-pf-{lang}" for lang in run.langs] + [LARGE] + grid[:-2]
    summary = summary_dir / "ml_training.csv"
    steps_seconds = {r["model"]: r for r in csv.DictReader(summary.open(encoding="utf-8"))}[GENERIC]
    base = (generic, int(steps_seconds["pretrain_steps"]), float(steps_seconds["seconds"]))
    train_drafters(run, generic=base, only=set(only))
    # read the table only now: a concurrent ``drafters`` run (other names) may have rewritten it meanwhile
    old = {r["model"]: r for r in csv.DictReader(summary.open(encoding="utf-8"))}
    new = {r["model"]: r for r in run.rows}
    rows = []
    for name in model_names(run.langs) + grid:
        if name in new:
            rows.append(new[name])
            continue
        main = name.rsplit("-b", 1)[0] if name in grid[-2:] else name
        if name not in old and (name == main or main not in old):
            print(f"note: {name} is neither trained by this run nor in {summary}", flush=True)
            continue
        row = dict(old.get(name) or old[main])
        if row.get("recipe") in ("F", "P-F") and main != LARGE and name not in grid[:-2]:  # a main drafter
            answers = run.distilled[row["lang"]][1]
            row["finetune_tokens_seen"] = row.get("finetune_tokens_seen") or row["finetune_tokens"]
            row.update(finetune_budget=len(answers), finetune_tokens=sum(map(len, answers)))
        if name != main:
            row.update(model=name, same_as=main)
        rows.append(row)
    run.rows = rows
    seconds = time.perf_counter() - t_run
    previous = json.loads((summary_dir / "ml_run.json").read_text())
    retrained = previous.get("retrained", [])
    phases = {k: round(v, 1) for k, v in run.phases.items()}
    retrained.append({"models": sorted(new), "device": run.device_name, "seconds": round(seconds, 1), "phases": phases})
    before = previous.get("trained_before") or {
        k: previous.get(k) for k in ("device", "seconds_total", "phase_seconds")
    }
    extra = {"retrained": retrained, "trained_before": before}
    write_summary(run, data, distil_stats, seconds, summary_dir, extra)
    return run.rows


def _write_csv(path: pathlib.Path, rows: list[dict]) -> None:
    flat = []
    for r in rows:
        row = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
        for k, v in (r.get("heldout_general") or {}).items():
            row[f"loss_{k}"] = v
        for k, v in (r.get("heldout_summary") or {}).items():
            row[k] = v
        for key, m in (r.get("heldout_xx_en") or {}).items():
            row[f"agree_{key}"] = m["agree"]
            row[f"loss_{key}"] = m["loss"]
        flat.append(row)
    header: list[str] = []
    for row in flat:
        header += [k for k in row if k not in header]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(flat)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument("--profile", choices=["tiny", "paper"], default="tiny")
    known, rest = profile.parse_known_args(argv)
    if not Profile.load(known.profile).shipped:  # the recipe at paper scale: specdec.multilingual.paper_recipe
        from specdec.multilingual import paper_recipe

        return paper_recipe.main(rest)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], parents=[profile])
    parser.add_argument("step", nargs="?", choices=["data", "train", "all", "drafters"], default="all")
    parser.add_argument(
        "--data",
        type=pathlib.Path,
        default=pathlib.Path(".gpu/ml_data.pt"),
        help="the data file (read by train, written by all)",
    )
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=None,
        help="data: the data file to write; train/all: the models directory (default data/models)",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--steps-scale",
        type=float,
        default=1.0,
        help="multiply steps and budgets (and, below 1, the prompts per set): CI smoke runs",
    )
    parser.add_argument("--langs", nargs="*", default=None, help="pairs X→En to build drafters for (default all)")
    parser.add_argument("--prompts-per-set", type=int, default=None)
    parser.add_argument("--ft-budget", type=int, default=TRAIN["ft_budget"], help="main finetune budget (tokens)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--distilled",
        type=pathlib.Path,
        default=zoo.DATA / "multilingual" / "ml_distilled.jsonl.gz",
        help="drafters: the saved distillation of the target in the models directory",
    )
    parser.add_argument(
        "--summary-dir",
        type=pathlib.Path,
        default=zoo.DATA / "multilingual",
        help="drafters: where ml_training.csv / ml_run.json live",
    )
    parser.add_argument(
        "--only", nargs="*", default=None, help="drafters: the names to retrain (default: P-F, grid, large)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    data_path = args.out if args.step == "data" and args.out else args.data
    if args.step in ("data", "all"):
        t0 = time.perf_counter()
        data = build_data()
        data_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, data_path)
        print(
            json.dumps(
                {
                    "file": str(data_path),
                    "bytes": data_path.stat().st_size,
                    "seconds": round(time.perf_counter() - t0, 1),
                    **data_summary(data),
                }
            )
        )
    if args.step == "drafters":
        return retrain_drafters(
            build_data(),
            args.out or zoo.MODELS,
            args.distilled,
            args.summary_dir,
            args.only,
            device=args.device,
            ft_budget=args.ft_budget,
        )
    if args.step in ("train", "all"):
        data = torch.load(data_path, weights_only=True)
        train_all(
            data,
            args.out or zoo.MODELS,
            device=args.device,
            steps_scale=args.steps_scale,
            langs=args.langs,
            prompts_per_set=args.prompts_per_set,
            ft_budget=args.ft_budget,
        )


if __name__ == "__main__":
    main()
