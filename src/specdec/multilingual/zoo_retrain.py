"""The tiny profile's ``drafters`` step (``python -m specdec.multilingual.train drafters [--only NAME ...]``):
retrain drafters of the shipped multilingual zoo on the saved target, its saved distillation
(``data/multilingual/ml_distilled.jsonl.gz``) and the saved generic drafter, exactly as ``zoo_run.train_all`` would
(the generic drafter is used as saved, float16, in both); ``ml_training.csv`` keeps the other models' rows and
``ml_run.json`` records what was retrained where.

``--train-seed k [k ...] --out DIR`` (k > 0) finetunes other training seeds of the named drafters into
``DIR/seed<k>`` (never into the shipped zoo: seed 0 stays as it is), one after the other on one setup: the same
target, distillation and generic drafter, the F initialisation and the finetune data order seeded
``model_seed(name, k)`` (issue 26, training randomness). Each seed's summary rows go to
``DIR/seed<k>/ml_training.csv`` and, keyed by ``(model, train_seed)``, into ``ml_training_seeds.csv`` beside
``ml_training.csv``."""

from __future__ import annotations

import csv
import json
import pathlib
import time
from collections.abc import Sequence

from specdec import zoo
from specdec.multilingual.recipe import BUDGET_LANG, GENERIC, LARGE, TARGET, budget_name, model_names
from specdec.multilingual.zoo_run import (
    drafter_eval_sets,
    heldout_greedy,
    read_distillation,
    start_run,
    train_drafters,
)
from specdec.multilingual.zoo_summary import write_csv, write_summary

SEEDS_CSV = "ml_training_seeds.csv"  # summary rows of the training seeds > 0 (seed 0: ``ml_training.csv``)


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
    train_seeds: Sequence[int] = (),
    out_dir: pathlib.Path | None = None,
    evaluate: bool = True,
    **overrides,
) -> list[dict]:
    """The ``drafters`` step: retrain the drafters ``only`` on a saved target (``models_dir/ml-target``) and its saved
    distillation (``distilled``) with the generic drafter saved in ``models_dir``, exactly as ``train_all`` would
    after its distillation; rewrite ``summary_dir``'s ``ml_training.csv`` (rows of the models kept are carried
    over) and ``ml_run.json`` (with a ``retrained`` entry: names, device, seconds). ``train_seeds`` (each > 0): the
    drafters of those training seeds instead, saved in ``out_dir/seed<k>`` (``seed_rows``); ``evaluate`` False
    (training seeds only) skips the held-out X→En scores, which change no weight (``tests/test_committed_results.py``
    retrains a seed's drafter this way)."""
    from specdec.zoo.models import load

    if train_seeds and (out_dir is None or pathlib.Path(out_dir).resolve() == pathlib.Path(models_dir).resolve()):
        raise ValueError("training seeds > 0 need their own --out folder: the shipped zoo is seed 0")
    if not evaluate and not train_seeds:
        raise ValueError("only training seeds > 0 may skip the evaluation: ml_training.csv keeps every score")
    if any(k <= 0 for k in train_seeds):
        raise ValueError(f"training seeds must be > 0 (0 is the shipped zoo), got {list(train_seeds)}")
    run = start_run(data, models_dir, device, steps_scale, None, prompts_per_set, tokenizer_dir, overrides)
    t_run = time.perf_counter()
    distil_stats = read_distillation(run, data, distilled)
    if evaluate:  # the held-out X→En sets every drafter is scored on (the target's greedy answers: minutes)
        target = load(models_dir / TARGET, with_tokenizer=False)[0].float().to(device)
        drafter_eval_sets(run, data, *heldout_greedy(run, data, target))
    grid = (
        [budget_name(k, len(s)) for s in run.grid(BUDGET_LANG) for k in ("f", "pf")] if BUDGET_LANG in run.langs else []
    )
    if only is None:  # what reads the generic drafter or Fig. 4's sets: the P-F drafters, the grid, the large one
        only = [f"ml-draft-pf-{lang}" for lang in run.langs] + [LARGE] + grid[:-2]
    summary = summary_dir / "ml_training.csv"
    if GENERIC in only and not train_seeds:  # pretrained again here (train_drafters), then the others start from it
        base = None
    else:
        generic = load(models_dir / GENERIC, with_tokenizer=False)[0].float().to(device)
        steps_seconds = {r["model"]: r for r in csv.DictReader(summary.open(encoding="utf-8"))}[GENERIC]
        base = (generic, int(steps_seconds["pretrain_steps"]), float(steps_seconds["seconds"]))
    if train_seeds:
        return [row for k in train_seeds for row in seed_rows(run, k, base, set(only), out_dir, summary_dir)]
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


def seed_rows(run, train_seed: int, base: tuple, only: set, out_dir: pathlib.Path, summary_dir: pathlib.Path):
    """Train the drafters ``only`` at ``train_seed`` (> 0) from the generic drafter ``base`` into
    ``out_dir/seed<k>``; write their summary rows to ``ml_training.csv`` there and replace theirs in
    ``summary_dir/ml_training_seeds.csv`` (every seed's rows, keyed by ``(model, train_seed)``); returns them."""
    t0 = time.perf_counter()
    run.train_seed, run.rows, run.phases = train_seed, [], {}
    run.out_dir = pathlib.Path(out_dir) / f"seed{train_seed}"
    run.out_dir.mkdir(parents=True, exist_ok=True)
    train_drafters(run, generic=base, only=only)
    seconds = time.perf_counter() - t0
    rows = [{**r, "train_seed": run.train_seed} for r in run.rows]
    write_csv(run.out_dir / "ml_training.csv", rows)
    path = summary_dir / SEEDS_CSV
    old = list(csv.DictReader(path.open(encoding="utf-8"))) if path.exists() else []
    mine = {(r["model"], str(run.train_seed)) for r in rows}
    kept = [r for r in old if (r["model"], str(r["train_seed"])) not in mine]
    write_csv(path, kept + rows)  # old rows are flat already
    note = {"train_seed": run.train_seed, "models": sorted(r["model"] for r in rows), "device": run.device_name}
    note.update(seconds=round(seconds, 1), phases={k: round(v, 1) for k, v in run.phases.items()})
    (run.out_dir / "ml_run.json").write_text(json.dumps(note, indent=1) + "\n")
    return rows


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["SEEDS_CSV"]
