"""Training randomness of Fig. 4's grid (issue 26): the drafters of training seeds k > 0 and their rows.

Seed 0 is the shipped zoo (``data/models``, rows in ``results/<profile>/ml_tokens.csv``). A seed k > 0 retrains the
grid's F and P-F drafters with ``recipe.model_seed(name, k)`` (the F initialisation and every finetune's data
order; the target, its distillation and the generic drafter P are shared, ``SHARED_BY_SEEDS``) into
``SEED_MODELS/seed<k>`` (gitignored: ``SEED_TRAIN_COMMAND`` rebuilds them); ``SeedDrafters(profile, k)`` loads
them, and their rows go to the sibling table ``ml_tokens_seeds`` (``seeds_store``, keys ``SEED_KEYS``).
``seed_frames`` gives each seed's rows of the grid, the input of the M2 verdicts per seed and pooled
(``scaling_verdicts.m2_over_seeds``).
"""

from __future__ import annotations

import os
import pathlib

import pandas as pd

from specdec import zoo
from specdec.harness.profile import Profile
from specdec.hub import ModelNotAvailableError
from specdec.multilingual import experiments
from specdec.multilingual.drafters import Drafters
from specdec.multilingual.experiments import KEYS

# where the seeds' drafters are (gitignored); SPECDEC_SEED_MODELS: another folder (the tests retrain into one)
SEED_MODELS = pathlib.Path(os.environ.get("SPECDEC_SEED_MODELS") or zoo.MODELS.parent / "models-seeds")
SHARED_BY_SEEDS = ("ml-target", "ml-draft-generic")  # one run each, the same for every training seed
GRID = ["ml-draft-f-de", "ml-draft-pf-de"] + [f"ml-draft-{k}-de-b{n}" for n in (44, 168, 612) for k in ("f", "pf")]
SEED_TRAIN_COMMAND = (
    "python -m specdec.multilingual.train drafters --out data/models-seeds --only " + " ".join(GRID) + " --train-seed"
)
SEEDS_TABLE = "ml_tokens_seeds"
SEED_KEYS = [*KEYS, "train_seed"]  # a training seed's rows: seed 0's keys and the seed


class SeedDrafters(Drafters):
    """``drafters.Drafters`` of the tiny zoo with the finetuned drafters of training seed ``train_seed`` > 0 (from
    ``SEED_MODELS/seed<k>``; the target and P, ``SHARED_BY_SEEDS``, are the shipped ones) and their summary rows
    (``data/multilingual/ml_training_seeds.csv``). Its rows carry ``train_seed`` (``experiments.cell``)."""

    def __init__(self, profile, train_seed: int):
        super().__init__(profile)
        if not self.profile.shipped or int(train_seed) <= 0:
            raise ValueError(f"training seeds > 0 exist for the tiny zoo only (got {train_seed}, {self.profile.name})")
        self.train_seed = int(train_seed)

    def source(self, name: str) -> str:
        if name in SHARED_BY_SEEDS:
            return name
        path = SEED_MODELS / f"seed{self.train_seed}" / name
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(f"no {path} (not committed): {SEED_TRAIN_COMMAND} {self.train_seed}")
        return str(path)

    def training_summary(self) -> pd.DataFrame:
        rows = pd.read_csv(zoo.DATA / "multilingual" / "ml_training_seeds.csv")
        return rows[rows.train_seed == self.train_seed].reset_index(drop=True)


def seeds_store(profile, table: str = SEEDS_TABLE):
    """The rows of training seeds > 0 of a multilingual table (keys ``SEED_KEYS``): a sibling of ``ml_tokens`` on
    the committed one, like ``experiments.store``."""
    return Profile.load(profile).store(table, SEED_KEYS)


def seed_frames(seed0: pd.DataFrame, root: pathlib.Path | None, methods) -> dict[int, pd.DataFrame]:
    """``{train seed: its rows of methods}``: seed 0 from ``seed0`` (``ml_tokens`` rows), every seed k > 0 found in
    ``root/ml_tokens_seeds.csv`` (none if the file is missing) at seed 0's settings (γ, tokens, T, sampling seed)."""
    methods = list(methods)
    frames = {0: seed0[seed0.method.isin(methods)]}
    path = pathlib.Path(root) / f"{SEEDS_TABLE}.csv" if root is not None else None
    if path is None or not path.exists():
        return frames
    rows = pd.read_csv(path)
    settings = ["gamma", "max_new_tokens", "temperature", "seed"]
    wanted = frames[0][settings].drop_duplicates()
    rows = rows[rows.method.isin(methods)].merge(wanted, on=settings)
    for k, g in rows.groupby("train_seed", sort=True):
        frames[int(k)] = g.reset_index(drop=True)
    return frames


def available(train_seed: int, grid: pd.DataFrame) -> bool:
    """Whether every drafter of the grid of ``train_seed`` is on this machine (the seeds' weights are not committed)."""
    return all((SEED_MODELS / f"seed{train_seed}" / name / "config.json").exists() for name in set(grid.load))


def seed_runs(profile, train_seed: int, prompts: dict, *, gamma: int, max_new_tokens: int, lang: str = "de"):
    """Fig. 4's greedy rows of training seed ``train_seed`` > 0 (plain decoding, the lossless reference of each
    prompt, and the seed's grid drafters) on ``prompts`` (``{pair: rows}``), and whether they were decoded here.
    With the seed's weights on this machine: ``experiments.grid`` on ``seeds_store`` (stored rows are read, missing
    ones decoded; a row of other weights is not reused); without them: the stored rows of the seed as committed."""
    from specdec.multilingual import tables

    drafters = SeedDrafters(profile, train_seed)
    grid = drafters.budget_grid(lang)
    store = seeds_store(profile)
    if available(train_seed, grid):
        methods = {"ar": None, **dict(zip(grid.model, grid.load))}
        exp = experiments.grid(
            drafters, store, prompts, lambda p: methods, gamma=gamma, temperatures=[0.0], seeds=[0],
            max_new_tokens=max_new_tokens,
        )  # fmt: skip
        frame, decoded = exp.run(), True
    else:
        frame, decoded = store.frame(), False
        if "train_seed" not in frame or not (frame.train_seed.astype(int) == train_seed).any():
            raise ModelNotAvailableError(f"no rows and no weights of training seed {train_seed}: {SEED_TRAIN_COMMAND}")
        frame = frame[frame.train_seed.astype(int) == train_seed]
    return tables.select(frame, prompts, gamma, [0.0], [0], max_new_tokens), decoded


def recompute(keys: list[dict], *, profile="tiny") -> pd.DataFrame:
    """``experiments.recompute`` of ``keys`` whose ``train_seed`` > 0 rows decode with that seed's ``SeedDrafters``
    (the tests run it in a subprocess at another CPU vector width, as they run ``experiments.recompute``)."""
    return experiments.recompute(keys, profile=profile, seed_drafters=SeedDrafters)


def trained_seeds(profile) -> tuple[int, ...]:
    """The training seeds > 0 that have rows under ``profile``: 1 and 2 for the shipped tiny zoo, none elsewhere
    (the paper profile's drafters are one training run each)."""
    return (1, 2) if Profile.load(profile).shipped else ()
