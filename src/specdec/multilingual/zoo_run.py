"""The tiny profile's driver of the multilingual recipe (``specdec.multilingual.recipe``): builds the shipped
``ml-*`` zoo, a tiny "Vicuna" target and specialised drafters, on the foundation tokenizer (``data/models/tokenizer``,
4096 ids) and the parallel corpus of ``specdec.multilingual.parallel``. Two steps, so the training can run on a
machine without Django, Sphinx or the corpus sources (e.g. a GPU box):

    python -m specdec.multilingual.train data --out .gpu/ml_data.pt        # here: tokenise text + prompts
    python -m specdec.multilingual.train train --data .gpu/ml_data.pt --device cuda --out data/models

``python -m specdec.multilingual.train`` (step ``all``) does both on this machine.

**Data step** (``specdec.multilingual.data.build_data``; needs the corpus sources): token streams of general
English and multilingual text (held-out pairs removed) and translation examples in both directions (see
``specdec.multilingual.data``).

**Train step** (``train_all``; reads only the data file and the tokenizer; one function per stage, each calling
``specdec.multilingual.algorithm``'s stage function), in order:

a. ``ml-target`` (size of ``zoo.TINY_ZOO["tiny-target"]``, ~2.6 M parameters; ``algorithm.pretrain``): next-token
   loss on windows of general text (English + multilingual) and of the instruction documents (every language,
   both directions). Its held-out report (``metrics.target_quality``): answer-token loss on the reference
   translations with the right source sentence and with the sources shuffled among the rows (the "chance" level:
   a model that ignores the source scores the same on both), and greedy exact match / chrF against the references
   (and against a shuffled reference).
b. Self-distillation (``algorithm.answer_prompts``): the target answers every training prompt of each pair X→En at
   temperatures ``{0, 0.3, 0.7, 1.0}`` (``max_new_tokens`` 48, stop at ``</s>`` = id 2). The decoding engine of
   this repo runs at batch size 1; distillation instead calls transformers' batched ``model.generate`` (left
   padding with an attention mask, so positions are those of the unpadded prompt; ``do_sample`` with pure
   temperature scaling, no top-k / top-p) for throughput: the same distributions as ``specdec.engine`` with
   ``SamplingConfig(temperature=t)``. The outputs (ids and text) are saved as ``ml_distilled.jsonl`` and read
   back with ``algorithm.load_distilled``.
c. Drafters (~0.37 M parameters, size of ``zoo.TINY_ZOO["tiny-draft-s"]``, same tokenizer):
   ``ml-draft-generic`` (pretrained on general English text only, the paper's P on C4 + ShareGPT: the SpS
   baseline, like vicuna-68m, and the start of every P-F drafter); per pair X→En (X in de fr ru ja zh)
   ``ml-draft-f-<x>`` (finetune only, from scratch) and ``ml-draft-pf-<x>`` (``ml-draft-generic`` finetuned),
   both on the target's distilled X→En outputs with the loss on the answer tokens (and ``</s>``) only
   (``algorithm.finetune``); for the tokens-vs-speedup figure (Fig. 4), F and P-F drafters for ``de`` on nested
   subsets of the distillation (the answers to 1/64, 1/16, 1/4 and all of the training prompts, ``Run.grid``),
   each for the main drafter's number of passes, named ``ml-draft-{f,pf}-de-b<N>`` (N distilled examples; the
   full set is the main drafter, a summary row ``same_as`` it); and ``ml-draft-large-pf-de`` (hidden 80, 3
   layers, ~0.59 M parameters: 0.15x the target's non-embedding parameters and 3 of its 4 layers, as Tiny-Vicuna
   1B to Vicuna 7B) pretrained on the same general text, then P-F on de, for the drafter-size study (Table 6).
   Every drafter is evaluated on the held-out X→En prompts of every language (source A held-out and source B):
   teacher-forced answer-token loss and top-1 agreement with the target's greedy answer (``metrics``).

A finetune budget counts answer tokens seen (``</s>`` included): steps = budget / (batch x mean answer
length of the pair's distilled data). ``--steps-scale`` multiplies every step count and budget and (below 1)
the number of prompts per set; below ``recipe.SMOKE_SCALE`` (0.01) it also shrinks batches, windows and answer
lengths (``recipe.SMOKE``): CI smoke runs. Seeds are a CRC of the model name (the ``drafters`` step,
``zoo_retrain``, retrains named drafters, ``--train-seed k`` at other seeds). Weights: float16, float32 config
(``zoo.training.save_half``), with the tokenizer and a ``training_log.json``; the output directory also gets
``ml_training.csv`` (one row per model), ``ml_distilled.jsonl`` and ``ml_run.json`` (configuration, timings, sizes;
``zoo_summary``).
"""

from __future__ import annotations

import copy
import json
import math
import pathlib
import time
from dataclasses import dataclass, field

import torch

from specdec import zoo
from specdec.multilingual import algorithm, metrics, recipe
from specdec.multilingual.algorithm import generate_batched, new_model, pretrain
from specdec.multilingual.batches import Conversations
from specdec.multilingual.data import collections_count, example_ids, tokenizer_digest
from specdec.multilingual.recipe import (
    BUDGET_LANG,
    DISTIL_DIRECTION,
    GENERIC,
    LARGE,
    MIXES,
    SIZES,
    TARGET,
    budget_name,
    model_seed,
    subset_fractions,
)
from specdec.multilingual.zoo_summary import write_summary
from specdec.zoo import cli, training


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
    distilled: dict[str, Conversations] = field(default_factory=dict)  # lang -> distilled X→En conversations
    drafter_eval: dict[str, Conversations] = field(default_factory=dict)  # "<source>-<lang>" -> held-out X→En
    train_seed: int = 0  # finetunes: ``model_seed(name, train_seed)`` (0: the shipped zoo's seeds)

    def scale(self, n: int) -> int:
        return cli.scaled_steps(n, self.steps_scale)

    def save(self, model, name: str, info: dict, log: list, extra: dict | None = None) -> None:
        """float16 weights, tokenizer and ``training_log.json`` under ``out_dir/name``; a summary row."""
        params = sum(p.numel() for p in model.parameters())
        info = {"model": name, "parameters": params, "device": self.device_name, **info}
        algorithm.save_model(
            model, self.tokenizer, self.out_dir / name, {"summary": info, **(extra or {}), "log": log}, half=True
        )
        self.rows.append(info)
        print(json.dumps({k: v for k, v in info.items() if not isinstance(v, dict)}), flush=True)

    def general_losses(self, model) -> dict:
        held = self.general_heldout
        return {k: metrics.window_loss(model, held, k, self.cfg["eval_windows"]) for k in held if len(held[k]) > 8}

    def drafter_metrics(self, model) -> dict:
        batch_size = self.cfg["eval_batch_size"]
        return {key: metrics.answer_metrics(model, ex, batch_size) for key, ex in self.drafter_eval.items()}

    def finetune_steps(self, recipe_name: str, n_examples: int) -> int:
        """Finetune steps of ``recipe_name`` (F or P-F) on a set of ``n_examples`` distilled examples: its passes
        (``ft_passes``, App. F.3's epochs) over the set at ``ft_batch_size`` examples a step. Not scaled by
        ``steps_scale``: a smoke run's sets are already small (``prompts_per_set``)."""
        passes = self.cfg["ft_passes"][recipe_name]
        return max(1, round(passes * n_examples / self.cfg["ft_batch_size"]))

    def grid(self, lang: str) -> list[list[int]]:
        """Fig. 4's finetune sets for ``lang``: nested sets of distilled examples (indices into
        ``distilled[lang]``), smallest first, the last all of them. A set holds every answer (each temperature)
        of the first ``ceil(fraction x n)`` of the pair's training prompts in a seeded random order, so a larger
        set adds distinct prompts and tokens, never repeats."""
        conv = self.distilled[lang]
        groups: dict[tuple, list[int]] = {}
        for i in range(conv.n):
            groups.setdefault(tuple(conv.prompt(i)), []).append(i)
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
    cfg = recipe.tiny_settings(steps_scale, prompts_per_set, **overrides)  # checked before the folder is made
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
    args = (heldout, eval_idx, eval_prompts, eval_refs, greedy, run.tokenizer, cfg)
    quality = metrics.target_quality(target, *args)
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
    """Stage b: the target answers the training prompts X→En at every temperature (``algorithm.answer_prompts``, every
    pair in one batched pass per temperature) into ``ml_distilled.jsonl``, read back as ``run.distilled``; returns
    per-language statistics."""
    cfg, langs, train = run.cfg, run.langs, data["train"]
    t0 = time.perf_counter()
    keep = lambda r: r["lang"] in langs and r["direction"] == DISTIL_DIRECTION  # noqa: E731
    idx = _select(train, keep, run.prompts_per_set, cfg["max_prompt_tokens"])
    prompts = []
    for i in idx:
        row = train["rows"][i]
        head = {"id": row["id"], "lang": row["lang"], "direction": DISTIL_DIRECTION}
        prompts.append((example_ids(train, i)[0], head, {"prompt": row["prompt"]}))
    rows = []
    for k, temperature in enumerate(cfg["temperatures"]):
        seed = model_seed("distil") + 1000 * k
        rows += algorithm.answer_prompts(target, run.tokenizer, prompts, temperature, cfg, seed)
    rows.sort(key=lambda r: (langs.index(r["lang"]), r["temperature"]))
    algorithm.write_jsonl(rows, run.out_dir / "ml_distilled.jsonl")
    stats = read_distillation(run, data, run.out_dir / "ml_distilled.jsonl")
    run.phases["distil"] = time.perf_counter() - t0
    print(json.dumps({"distilled": stats}), flush=True)
    return stats


def read_distillation(run: Run, data: dict, path: pathlib.Path) -> dict:
    """``run.distilled`` from a saved ``ml_distilled.jsonl`` (or ``.jsonl.gz``) through ``algorithm.load_distilled``:
    the prompt ids of each row are those of ``data["train"]`` (its id and direction), in the file's order
    (language, temperature, prompt), the order ``self_distil`` writes; returns per-language statistics."""
    train = data["train"]
    index = {(r["id"], r["direction"]): i for i, r in enumerate(train["rows"])}
    prompt_ids = lambda row: example_ids(train, index[(row["id"], row["direction"])])[0]  # noqa: E731
    run.distilled = algorithm.load_distilled([path], run.langs, prompt_ids)
    return algorithm.distilled_stats(run.distilled, run.tokenizer.eos_token_id)


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
            run.drafter_eval[f"{source}-{lang}"] = Conversations.from_pairs([(eval_prompts[j], greedy[j]) for j in sel])


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
    ``run.distilled[lang]``; a copy of ``init``, or from scratch) for its recipe's passes over the subset
    (``finetune_steps``; cosine schedule, ``ft_warmup`` of the steps warm-up), saved as ``name``. ``origin``:
    ``init_name``, ``init_steps``, ``init_seconds``, ``init_log`` (the pretraining of ``init``), ``size`` (from
    scratch), ``aliases`` (further names of the same model: summary rows only, ``same_as`` = ``name``).
    ``run.train_seed`` seeds the initialisation from scratch and the data order (``model_seed``); a copied
    ``init`` is shared."""
    cfg = run.cfg
    t0 = time.perf_counter()
    size, seed = SIZES[origin.get("size", "draft")], model_seed(name, run.train_seed)
    model = copy.deepcopy(init) if init is not None else new_model(size, seed, run.device)
    conv = run.distilled[lang]
    distinct = int(conv.answer_len[subset].sum())
    steps = run.finetune_steps(recipe_name, len(subset))
    examples = conv.select(subset)
    log, seen = algorithm.finetune(
        model,
        examples,
        steps=steps,
        batch_size=cfg["ft_batch_size"],
        lr=cfg["ft_lr"],
        seed=seed,
        warmup=max(1, round(cfg["ft_warmup"] * steps)),
        name=name,
        heldout=run.drafter_eval.get(f"django-{lang}"),
        eval_batch_size=cfg["eval_batch_size"],
    )
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
        **({"train_seed": run.train_seed} if run.train_seed else {}),
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
            run, GENERIC, "draft", "general", "pretrain_steps", save_as=GENERIC
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
            alias = (budget_name(kind, len(main)),) if lang == BUDGET_LANG else ()
            if want(f"ml-draft-{kind}-{lang}"):
                finetuned_drafter(run, f"ml-draft-{kind}-{lang}", lang, recipe_name, main, aliases=alias, **init)
    if BUDGET_LANG not in run.langs:
        return
    grid = run.grid(BUDGET_LANG)
    for subset in grid[:-1]:
        for kind, recipe_name, init in (("f", "F", {}), ("pf", "P-F", from_base)):
            name = budget_name(kind, len(subset))
            if want(name):
                finetuned_drafter(run, name, BUDGET_LANG, recipe_name, subset, **init)
    if want(LARGE):
        large, large_log, large_steps, large_seconds = pretrained_drafter(
            run, "ml-draft-large-pretrained", "large", "general", "large_pretrain_steps"
        )
        from_large = dict(init_name="ml-draft-large-pretrained (not saved)", init_steps=large_steps)
        from_large.update(init_seconds=large_seconds, size="large", init_log=large_log)
        finetuned_drafter(run, LARGE, BUDGET_LANG, "P-F", grid[-1], init=large, **from_large)


def train_all(
    data: dict,
    out_dir: pathlib.Path,
    device: str = "cpu",
    steps_scale: float = 1.0,
    langs=None,
    prompts_per_set: int | None = None,
    tokenizer_dir=zoo.TOKENIZER_DIR,
    **overrides,
) -> list:
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


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
