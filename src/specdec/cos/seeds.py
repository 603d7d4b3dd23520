"""Training randomness of the CoS zoo (issue 26): the five CoS models with training seeds k > 0, and their runs.

Seed 0 is the shipped zoo (``data/models/cos-*``, rows in ``results/<profile>/cos_{main,sweeps,theory}.csv``). A
seed k > 0 retrains every model of the zoo (``cos.train --train-seed k``: each model's seed + 1000 k, the same
streams, mixtures and steps) into the gitignored ``SEED_MODELS/seed<k>`` (``models.COS_SEED_COMMAND``; about 3
minutes for the zoo on one H200, some 5 CPU hours here). Its runs are the cells the speed findings read (C1, C4-λ,
C4-μ, C4-γ, C4-APF), at the defaults of notebooks 20-22 (``MAIN``, ``SWEEPS``, ``THEORY``; a test holds them to
the notebooks' parameters), into sibling tables (``TABLES``, keys ``SEED_KEY``). Left out: Fig. 8's trade-off and
Thm 3.2's proposer runs, which no seeded finding reads, and the sanity checks C2 / C3, which hold for any models.

``seed_frames`` reads them back per seed, the input of the findings per seed and pooled (``findings``);
``training_summary`` writes what each model of each seed took to train and its held-out loss per kind
(``TRAINING_SUMMARY``, committed).
"""

from __future__ import annotations

import argparse
import pathlib

import pandas as pd

from specdec import zoo
from specdec.cos import experiments, train
from specdec.cos.zoo import ShippedCollabs
from specdec.harness.experiment import Suite
from specdec.harness.profile import Profile

TRAIN_SEEDS = ShippedCollabs.train_seeds  # the shipped zoo's seeds k > 0
TABLES = {"cos_main": "cos_main_seeds", "cos_sweeps": "cos_sweeps_seeds", "cos_theory": "cos_theory_seeds"}
SEED_KEY = [*experiments.ROW_KEY, "train_seed"]
# seed 0's exact columns and inverse (``study.TABLES``): a key's ``train_seed`` decodes with that seed's zoo
EXACT_COLUMNS = experiments.EXACT_COLUMNS
recompute = experiments.recompute
TRAINING_SUMMARY = zoo.DATA / "cos_training_seeds.csv"  # committed: the seeds' weights are not
# notebook 20's defaults (every set and task of Tables 2-4)
MAIN = dict(
    configs=[
        {"set": "we", "temperature": 1.0},
        {"set": "we3", "temperature": 1.0},
        {"set": "cd", "temperature": 0.0},
        {"set": "cd", "temperature": 1.0},
    ],
    tasks=["humaneval", "gsm8k", "mmlu", "cnndm"],
    n_prompts=16,
    max_new_tokens=40,
    gammas=[1, 5],
    lam=0.5,
    mu=0.1,
    seed=0,
)
# notebook 21's defaults, without Fig. 8's trade-off (no seeded finding reads it)
SWEEPS = dict(
    tasks=["humaneval", "gsm8k"],
    n_prompts=16,
    max_new_tokens=32,
    lams=[0.1, 0.3, 0.5, 0.7, 0.9],
    mus=[0.1, 0.2, 0.3, 0.4, 0.5],
    gammas=[1, 2, 3, 4, 5],
    mu_gammas=[1, 5],
    tradeoff_lams=[],
    tradeoff_tasks=[],
    tradeoff_prompts=16,
    tradeoff_gamma=5,
    tradeoff_max_new_tokens=96,
    seed=0,
)
# notebook 22's defaults, without Thm 3.2's proposer runs (lams: C3, a sanity check)
THEORY = dict(tasks=["humaneval", "gsm8k"], n_prompts=16, max_new_tokens=32, lams=[], theory_gammas=[1, 3, 5], seed=0)


def at_defaults(params: dict, defaults: dict) -> bool:
    """Whether a notebook's ``params`` (its ``globals()``) equal ``defaults`` (``MAIN``, ``SWEEPS`` or ``THEORY``) on
    every setting the seeds ran, so that the seeds' rows are of this run's cells; an empty list in ``defaults``
    marks runs the seeds leave out."""
    if not isinstance(params, dict) or not isinstance(defaults, dict):
        raise TypeError(f"params and defaults must be dicts (globals() and MAIN / SWEEPS / THEORY), got {params!r:.60}")
    return all(params.get(k) == v for k, v in defaults.items() if v != [])


def seed_store(profile, table: str):
    """The seeds' sibling table of ``table`` (``TABLES``), keyed by ``SEED_KEY``, on the committed base layer."""
    return Profile.load(profile).store(TABLES[table], SEED_KEY)


def seed_suites(profile="tiny", train_seed: int = 1) -> list[Suite]:
    """Notebooks 20, 21 and 22's suites (``MAIN``, ``SWEEPS``, ``THEORY``) on the zoo of training seed
    ``train_seed`` > 0, each into its seeds table. Raises ``ModelNotAvailableError`` naming the training command
    where seed k's models are not on this machine."""
    k = int(train_seed)
    if k <= 0:
        raise ValueError(f"train_seed must be a seed k > 0 (seed 0's rows are notebooks 20-22's), got {train_seed}")
    profile = Profile.load(profile)
    return [
        experiments.main_table(profile, runs=seed_store(profile, "cos_main"), train_seed=k, **MAIN),
        experiments.sweeps(profile, runs=seed_store(profile, "cos_sweeps"), train_seed=k, **SWEEPS),
        experiments.theory(profile, runs=seed_store(profile, "cos_theory"), train_seed=k, **THEORY),
    ]


def seed_frames(profile: str = "tiny", root=None) -> dict[int, dict[str, pd.DataFrame]]:
    """``{train seed k > 0: {table: its rows}}`` for the three tables of ``TABLES`` (keys the seed-0 names), read
    from ``root/<profile>`` (a results folder: the scoreboard's ``results.COMMITTED``), or by default from this run's
    seed stores standing on the committed rows (``seed_store``: a notebook run into an empty output folder reads the
    committed seeds). A seed without rows in every table is left out, so every seed is read on the same findings."""
    if root is None:
        frames = {t: seed_store(profile, t).frame() for t in TABLES}
    else:
        read = {t: pathlib.Path(root) / str(profile) / f"{s}.csv" for t, s in TABLES.items()}
        if not all(p.exists() for p in read.values()):
            return {}
        frames = {t: pd.read_csv(p) for t, p in read.items()}
    if any(f.empty for f in frames.values()):
        return {}
    seeds = set.intersection(*(set(f.train_seed.astype(int)) for f in frames.values()))
    return {k: {t: f[f.train_seed == k].drop(columns="train_seed") for t, f in frames.items()} for k in sorted(seeds)}


def training_summary(streams: pathlib.Path, path=TRAINING_SUMMARY) -> pd.DataFrame:
    """One row per model of ``train.COS_ZOO`` and training seed found (seed 0: ``data/models``; k > 0:
    ``zoo.seed_dir``): ``model, train_seed, seed, device, seconds`` (from its ``training_log.json``) and
    ``heldout_<kind>``, the held-out loss per kind of the streams ``streams`` (``cos.train streams``), measured here
    for every seed alike (a training log's own losses may be of an older held-out split); written to ``path``."""
    import json

    import torch
    from transformers import AutoModelForCausalLM

    heldout = {k: v.long() for k, v in torch.load(streams, weights_only=True)["heldout"].items()}
    rows = []
    for k in (0, *TRAIN_SEEDS):
        for name in train.COS_ZOO:
            folder = zoo.model_dir(name) if k == 0 else zoo.seed_dir(name, k)
            if not (folder / "training_log.json").exists():
                continue
            log = json.loads((folder / "training_log.json").read_text())["summary"]
            model = AutoModelForCausalLM.from_pretrained(folder).eval()
            with torch.no_grad():
                losses = {f"heldout_{kind}": loss for kind, loss in train.heldout_by_kind(model, heldout).items()}
            seed = train.model_seed(name, k)
            rows.append(
                dict(model=name, train_seed=k, seed=seed, device=log["device"], seconds=log["seconds"], **losses)
            )
    frame = pd.DataFrame(rows)
    frame.to_csv(path, index=False)
    return frame


def main(argv=None):
    parser = argparse.ArgumentParser(description="Decode the CoS findings' cells with the zoo of training seeds k.")
    parser.add_argument("--train-seeds", nargs="+", type=int, default=list(TRAIN_SEEDS))
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--summary", type=pathlib.Path, help="write TRAINING_SUMMARY from these streams, then stop")
    args = parser.parse_args(argv)
    if args.summary:
        print(training_summary(args.summary).to_string())
        return
    for k in args.train_seeds:
        for suite in seed_suites(args.profile, k):
            frame = suite.run()
            print(f"seed {k}: {len(frame)} rows of {suite.store.table}", flush=True)


if __name__ == "__main__":
    main()

# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["MAIN", "SEED_KEY", "SWEEPS", "TABLES", "THEORY", "TRAINING_SUMMARY", "TRAIN_SEEDS", "at_defaults", "main"]
