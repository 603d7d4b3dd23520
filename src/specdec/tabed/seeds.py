"""Training randomness of the TABED draft (issue 26): ``tabed-draft`` with training seeds k > 0 and their runs.

Seed 0 is the shipped draft (``data/models/tabed-draft``; its runs in ``tabed_runs``). A seed k > 0 retrains the
draft alone (``vlm.train.seeded``: initialisation and batch order moved by ``SEED_STEP`` k) into
``SEED_MODELS/seed<k>/tabed-draft-seed<k>`` (gitignored: ``SEED_COMMAND`` rebuilds them); the target, its first
answers and the captioner are the shipped ones. ``draft_seed_runs`` decodes, with seed k's draft, the requests and
methods that T1-T4 read at the notebooks' defaults (notebook 10's ``benchmark`` and 11's ``more_drafts`` at γ 5,
h = ALL, KL, ``captioners.CAPTIONER``) into ``SEEDS_TABLE`` (keys ``SEED_KEY``); ``seed_frames`` reads them back
per seed and ``findings_over_seeds`` decides T1-T4 per seed and pooled (``verdict.over_seeds``).
"""

from __future__ import annotations

import pandas as pd

from specdec.harness.experiment import Suite
from specdec.harness.profile import Profile
from specdec.tabed import data, speed, tables
from specdec.tabed.experiments import BATCH_SIZE, setting
from specdec.tabed.windows import latest_weights, load_pair, seed_source, stored_rows
from specdec.tabed.zoo import KEY, Pair, zoo_for
from specdec.verdict import over_seeds
from specdec.vlm.train import TRAIN_SEEDS

SEEDS_TABLE = "tabed_runs_seeds"
SEED_KEY = [*KEY, "train_seed"]
DRAFT = "tabed-draft"
SEED_COMMAND = (
    "python -m specdec.vlm.train data --out .gpu/tabed_data.pt && python -m specdec.vlm.train train --data "
    ".gpu/tabed_data.pt --models tabed-draft --seeds <k> --out data/models-seeds/seed<k> (one H100: 1 minute; "
    "this CPU: about 5 to 10 minutes)"
)
MORE = [m for m in tables.ALL_METHODS if m not in tables.TABLE1]  # notebook 11's methods beyond notebook 10's


def seed_pair(profile: str | Profile = "tiny", train_seed: int = 1) -> Pair:
    """The shipped ``tabed-target`` with ``tabed-draft`` of training seed ``train_seed`` > 0 (``SEED_MODELS``;
    ``ModelNotAvailableError`` naming ``SEED_COMMAND`` when it is missing)."""
    profile = Profile.load(profile)
    k = int(train_seed)
    if k not in zoo_for(profile).train_seeds:
        raise ValueError(f"draft training seeds > 0 exist for the tiny zoo only (got {k}, {profile.name})")
    return load_pair(profile, None, data.TINY_TARGET, seed_source(DRAFT, k, SEED_COMMAND))


def draft_seed_runs(
    profile="tiny",
    train_seed: int = 1,
    *,
    n_per_scenario: int = 20,
    n_ood: int = 60,
    n_second: int = 60,
    gamma: int = 5,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
) -> Suite:
    """Seed ``train_seed``'s draft on the runs T1-T4 read: notebook 10's methods (``tables.TABLE1``) on its suite
    (``n_ood`` per story set, ``n_second`` per second-turn cell) and notebook 11's other methods (``MORE``) on its
    suite, at the notebooks' defaults; ``context``: ``pair``, ``requests``, ``rests``."""
    pair = seed_pair(profile, train_seed)
    first = pair.suite(n_per_scenario, seed, answer_tokens=max_new_tokens, n_ood=n_ood, n_second=n_second)
    more = pair.suite(n_per_scenario, seed, answer_tokens=max_new_tokens, n_ood=n_ood)
    runs = pair.profile.store(SEEDS_TABLE, SEED_KEY)
    at = dict(gamma=gamma, max_new_tokens=max_new_tokens, batch_size=batch_size, fixed=dict(train_seed=int(train_seed)))
    suite = Suite(runs, pair=pair, requests=first, rests=data.rests_on(first))
    suite.add(setting(runs, pair, first, tables.TABLE1, desc=f"seed {train_seed} Table 1", **at))
    suite.add(setting(runs, pair, more, MORE, desc=f"seed {train_seed} Table 2", **at))
    return suite


def seed_frames(profile: str | Profile = "tiny", root=None) -> dict[int, pd.DataFrame]:
    """``{train seed: runs at the notebooks' defaults}`` of the draft seeds k > 0 in ``SEEDS_TABLE`` (none where the
    table is missing; each seed on its last stored weights, ``windows.latest_weights``). ``root``: a results folder
    (the scoreboard's ``results.COMMITTED``); default this run's store standing on the committed rows. Empty where
    the profile's zoo has no training seeds k > 0 (``zoo.zoo_for``)."""
    if not zoo_for(profile).train_seeds:
        return {}
    stored = stored_rows(Profile.load(profile), SEEDS_TABLE, SEED_KEY, root)
    if stored.empty:
        return {}
    default = tables.runs(latest_weights(stored), gamma=5, window="ALL", criterion="kl")
    return {int(k): g.drop(columns="train_seed") for k, g in default.groupby("train_seed", sort=True)}


def aligned_frames(frame: pd.DataFrame, seeded: dict[int, pd.DataFrame]) -> dict[int, pd.DataFrame]:
    """``{0: frame, k: seed k's rows of the (method, request) pairs in frame}``: every seed read on seed 0's runs."""
    key = ["method", "row"]
    return {0: frame, **{k: f.merge(frame[key].drop_duplicates(), on=key) for k, f in seeded.items()}}


def findings_over_seeds(findings, frame: pd.DataFrame, seeded: dict[int, pd.DataFrame], setting) -> list:
    """``findings(frame) -> [Verdict]`` without T5 (T1a-T4) on seed 0's ``frame`` and every draft seed of
    ``seeded``, each seed read on the (method, request) pairs seed 0 ran (``aligned_frames``), combined by
    ``verdict.over_seeds`` at each finding's own threshold (T2: the paper's share; T3b: its largest shortfall, of
    ``setting``'s table; the others: 0)."""
    frames = aligned_frames(frame, seeded)
    target = tables.threshold_setting(setting)
    rules = {
        "T2": (tables.paper_top_two_share(tables.T2_METHODS, setting=target) - 1e-9, True),
        "T3b": (-tables.paper_max_shortfall(setting=target), True),
        "T-speed": (speed.paper_gain(target)[0] - 1e-9, True),
    }
    return over_seeds(lambda f: [v for v in findings(f) if v.name != "T5"], frames, rules)


__all__ = ["TRAIN_SEEDS", "aligned_frames", "draft_seed_runs", "findings_over_seeds", "seed_frames"]
