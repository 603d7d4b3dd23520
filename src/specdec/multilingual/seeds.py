"""Training randomness of the multilingual zoo (issue 26): the finetuned drafters of training seeds k > 0, their rows.

Seed 0 is the shipped zoo (``data/models``, rows in ``results/<profile>/ml_*.csv``). A seed k > 0 retrains F and
P-F drafters with ``recipe.model_seed(name, k)`` (the F initialisation and every finetune's data order; the target,
its distillation and the generic drafter P are shared, ``SHARED_BY_SEEDS``) into ``zoo.SEED_MODELS/seed<k>``
(gitignored: ``SEED_TRAIN_COMMAND`` rebuilds them); ``SeedDrafters(profile, k)`` loads them. Three tables have
seeds, each with a sibling table of the seeds' rows (``SEED_TABLES``, keys ``SEED_KEYS``):

- ``ml_tokens`` (Fig. 4, M2): the budget grid of De→En (``GRID``), ``seed_runs``;
- ``ml_main`` (Table 1, M1): F and P-F of every pair X→En (``PAIR_DRAFTERS``), ``main_seed_runs``;
- ``ml_ood`` (Figs. 5 / 8, M3): the P-F drafters on every direction, ``ood_seed_runs``.

``seed_frames`` gives each seed's rows of a table (the methods a seed does not retrain are seed 0's rows), the input
of the verdicts per seed and pooled (``verdict.over_seeds``).
"""

from __future__ import annotations

import pathlib

import pandas as pd

from specdec import zoo
from specdec.harness.profile import Profile
from specdec.hub import ModelNotAvailableError
from specdec.multilingual import experiments
from specdec.multilingual.drafters import (  # noqa: F401 (the seed drafters' names)
    GRID,
    PAIR_DRAFTERS,
    PAIRS,
    SEED_TRAIN_COMMAND,
    SHARED_BY_SEEDS,
    Drafters,
    ShippedDrafters,
)
from specdec.multilingual.experiments import KEYS

SEEDS_TABLE = "ml_tokens_seeds"
SEED_TABLES = {"ml_tokens": SEEDS_TABLE, "ml_main": "ml_main_seeds", "ml_ood": "ml_ood_seeds"}
MAIN_SHARED = ("ar", "sps-generic", "pld")  # Table 1's methods a training seed does not change (F, P-F it does)
SEED_KEYS = [*KEYS, "train_seed"]  # a training seed's rows: seed 0's keys and the seed
EXACT_COLUMNS = experiments.EXACT_COLUMNS  # as seed 0's (``study.TABLES``)


class SeedDrafters(ShippedDrafters):
    """``drafters.ShippedDrafters`` at training seed ``train_seed`` > 0 (``ShippedDrafters.at_seed``): its finetuned
    drafters from ``zoo.seed_dir`` (the target and P, ``SHARED_BY_SEEDS``, are the shipped ones) and their summary
    rows (``data/multilingual/ml_training_seeds.csv``). Its rows carry ``train_seed`` (``experiments.cell``)."""

    def __init__(self, profile, train_seed: int):
        super().__init__(profile, train_seed)
        if not Drafters(self.profile).checked_seed(train_seed):  # the profile's zoo: a hub one has no seeds
            raise ValueError(f"{self.study} training seed 0 has no SeedDrafters: its drafters are ShippedDrafters")


def seeds_store(profile, table: str = SEEDS_TABLE):
    """The rows of training seeds > 0 of a multilingual table (keys ``SEED_KEYS``): a sibling of ``ml_tokens`` on
    the committed one, like ``experiments.store``."""
    return Profile.load(profile).store(table, SEED_KEYS)


def seed_frames(
    seed0: pd.DataFrame, root: pathlib.Path | None, methods, table: str = "ml_tokens", shared=()
) -> dict[int, pd.DataFrame]:
    """``{train seed: its rows of methods}`` of ``table``: seed 0 from ``seed0`` (the table's rows), every seed k > 0
    found in ``root/<SEED_TABLES[table]>.csv`` (none if the file is missing), as ``with_seeds`` puts them."""
    path = pathlib.Path(root) / f"{SEED_TABLES[table]}.csv" if root is not None else None
    rows = pd.read_csv(path) if path is not None and path.exists() else None
    seeded = {} if rows is None else {int(k): g for k, g in rows.groupby("train_seed", sort=True)}
    return with_seeds(seed0, seeded, methods, shared)


def with_seeds(seed0: pd.DataFrame, seeded: dict, methods, shared=()) -> dict[int, pd.DataFrame]:
    """``{0: seed 0's rows of methods, k: seed k's}`` (``seeded``: ``{k: rows}``), each seed k at seed 0's settings
    (γ, tokens, T, sampling seed). The methods of ``shared``, which a training seed does not change (plain decoding,
    generic SpS, PLD), are seed 0's rows in every seed's frame, so a seed differs from seed 0 in its retrained
    drafters only."""
    methods = list(methods)
    frames = {0: seed0[seed0.method.isin(methods)]}
    settings = ["gamma", "max_new_tokens", "temperature", "seed"]
    wanted = frames[0][settings].drop_duplicates()
    own = [m for m in methods if m not in shared]
    base = frames[0][frames[0].method.isin(list(shared))]
    for k, rows in sorted(seeded.items()):
        rows = rows[rows.method.isin(own)].merge(wanted, on=settings)
        frames[int(k)] = pd.concat([base, rows], ignore_index=True) if len(base) else rows.reset_index(drop=True)
    return frames


def tau_by_seed(frames: dict, by=("pair", "method")) -> pd.DataFrame:
    """τ (new tokens ÷ target calls, pooled over the rows) per ``by`` group, one column ``seed <k>`` per training seed
    of ``frames`` (``{train seed: rows}``)."""
    by = list(by)
    stacked = pd.concat([f.assign(train_seed=k) for k, f in frames.items()], ignore_index=True)
    sums = stacked.groupby([*by, "train_seed"])[["new_tokens", "target_calls"]].sum()
    return (sums.new_tokens / sums.target_calls).unstack("train_seed").rename(columns=lambda k: f"seed {k}")


def available(train_seed: int, names) -> bool:
    """Whether every drafter of ``names`` (zoo names; the shared ones and PLD need no seed) of ``train_seed`` is on
    this machine (the seeds' weights are not committed)."""
    own = {n for n in names if n and n != "pld" and n not in SHARED_BY_SEEDS}
    return all((zoo.seed_dir(name, train_seed) / "config.json").exists() for name in own)


def table_seed_runs(
    profile,
    train_seed: int,
    table: str,
    prompts: dict,
    methods_for,
    *,
    gamma: int,
    temperatures=(0.0,),
    seeds=(0,),
    max_new_tokens: int,
    batch_size: int = 1,
):
    """The rows of training seed ``train_seed`` > 0 of ``table`` (a key of ``SEED_TABLES``): ``methods_for(pair)``
    (``{method: zoo name}``, plain decoding ``ar`` first: the lossless reference of each prompt) on ``prompts``
    (``{pair: rows}``) at every temperature and sampling seed, and whether they were decoded here. With the seed's
    weights on this machine: ``experiments.grid`` on ``seeds_store`` (stored rows are read, missing ones decoded,
    ``batch_size`` at a time; a row of other weights is not reused); without them: the stored rows of the seed."""
    from specdec.multilingual import tables

    drafters = SeedDrafters(profile, train_seed)
    store = seeds_store(profile, SEED_TABLES[table])
    if available(train_seed, {n for p in prompts for n in methods_for(p).values()}):
        exp = experiments.grid(
            drafters,
            store,
            prompts,
            methods_for,
            gamma=gamma,
            temperatures=temperatures,
            seeds=seeds,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
        )
        frame, decoded = exp.run(), True
    else:
        frame, decoded = store.frame(), False
        if "train_seed" not in frame or not (frame.train_seed.astype(int) == train_seed).any():
            raise ModelNotAvailableError(f"no rows and no weights of training seed {train_seed}: {SEED_TRAIN_COMMAND}")
        frame = frame[frame.train_seed.astype(int) == train_seed]
    return tables.select(frame, prompts, gamma, list(temperatures), list(seeds), max_new_tokens), decoded


def seed_runs(profile, train_seed: int, prompts: dict, *, gamma: int, max_new_tokens: int, lang: str = "de"):
    """Fig. 4's greedy rows of training seed ``train_seed`` > 0 (plain decoding and the seed's grid drafters) on
    ``prompts``, one at a time (``table_seed_runs``)."""
    grid = SeedDrafters(profile, train_seed).budget_grid(lang)
    methods = {"ar": None, **dict(zip(grid.model, grid.load))}
    return table_seed_runs(
        profile, train_seed, "ml_tokens", prompts, lambda p: methods, gamma=gamma, max_new_tokens=max_new_tokens
    )


def main_methods(pair: str) -> dict:
    """Table 1's methods a training seed retrains on ``pair`` (``x-en``), with plain decoding as the reference."""
    x = pair.split("-")[0]
    return {"ar": None, "sps-f": f"ml-draft-f-{x}", "sps-pf": f"ml-draft-pf-{x}"}


def main_seed_runs(
    profile,
    train_seed: int,
    prompts: dict,
    *,
    gamma: int,
    temperatures,
    seeds,
    max_new_tokens: int,
    batch_size: int = 8,
):
    """Table 1's rows of training seed ``train_seed`` (M1): plain decoding, F and P-F (``main_methods``) on every
    pair of ``prompts`` at notebook 30's temperatures and sampling seeds, decoded ``batch_size`` at a time: the
    counts (τ, calls, tokens) are their batch-1 values, the walltime columns stay empty (M1 over seeds is decided in
    the paper's regime, priced from the counts; the measured walltime is seed 0's)."""
    return table_seed_runs(
        profile,
        train_seed,
        "ml_main",
        prompts,
        main_methods,
        gamma=gamma,
        temperatures=temperatures,
        seeds=seeds,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
    )


def ood_seed_runs(
    profile, train_seed: int, prompts: dict, drafter_langs, *, gamma: int, max_new_tokens: int, batch_size: int = 8
):
    """Figs. 5 / 8's greedy rows of training seed ``train_seed`` (M3): plain decoding and the seed's P-F drafter of
    each of ``drafter_langs`` on every direction of ``prompts``, ``batch_size`` at a time."""
    methods = {"ar": None, **{f"ml-draft-pf-{x}": f"ml-draft-pf-{x}" for x in drafter_langs}}
    return table_seed_runs(
        profile,
        train_seed,
        "ml_ood",
        prompts,
        lambda p: methods,
        gamma=gamma,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
    )


def recompute(keys: list[dict], *, profile="tiny") -> pd.DataFrame:
    """``experiments.recompute`` of ``keys`` whose ``train_seed`` > 0 rows decode with that seed's ``SeedDrafters``
    (the tests run it in a subprocess at another CPU vector width, as they run ``experiments.recompute``)."""
    return experiments.recompute(keys, profile=profile, seed_drafters=SeedDrafters)


def trained_seeds(profile) -> tuple[int, ...]:
    """The training seeds > 0 that have rows under ``profile``: 1 and 2 for the shipped tiny zoo, none elsewhere
    (the paper profile's drafters are one training run each)."""
    return Drafters(profile).train_seeds


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "MAIN_SHARED",
    "SEEDS_TABLE",
    "SEED_KEYS",
    "SEED_TABLES",
    "main_seed_runs",
    "ood_seed_runs",
    "recompute",
    "seed_runs",
    "tau_by_seed",
    "trained_seeds",
    "with_seeds",
]
