"""The tiny profile's ``drafters`` step (``python -m specdec.multilingual.train drafters [--only NAME ...]``):
retrain drafters of the shipped multilingual zoo on the saved target, its saved distillation
(``data/multilingual/ml_distilled.jsonl.gz``) and the saved generic drafter, exactly as ``zoo_run.train_all`` would
(the generic drafter is used as saved, float16, in both); ``ml_training.csv`` keeps the other models' rows and
``ml_run.json`` records what was retrained where."""

from __future__ import annotations

import csv
import json
import pathlib
import time

from specdec import zoo
from specdec.multilingual.recipe import BUDGET_LANG, GENERIC, LARGE, TARGET, budget_name, model_names
from specdec.multilingual.zoo_run import (
    drafter_eval_sets,
    heldout_greedy,
    read_distillation,
    start_run,
    train_drafters,
    write_summary,
)  # fmt: skip


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
    distil_stats = read_distillation(run, data, distilled)
    drafter_eval_sets(run, data, eval_idx, eval_prompts, greedy)
    generic = load(models_dir / GENERIC, with_tokenizer=False)[0].float().to(device)
    grid = (
        [budget_name(k, len(s)) for s in run.grid(BUDGET_LANG) for k in ("f", "pf")] if BUDGET_LANG in run.langs else []
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
            conv = run.distilled[row["lang"]]
            row["finetune_tokens_seen"] = row.get("finetune_tokens_seen") or row["finetune_tokens"]
            row.update(finetune_budget=conv.n, finetune_tokens=int(conv.answer_len.sum()))
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
