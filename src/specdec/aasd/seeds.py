"""AASD's findings over training seeds (issue 26): the modules again with seeds 1 and 2, their runs, and the frames
each seed's findings are read from.

The modules retrain in seconds to minutes (``python -m specdec.aasd.train seeds``: ``zoo_specs.TRAIN_SEEDS``, the
module's seeds moved by ``zoo_specs.SEED_STEP * k``); the targets, the data, the baselines and every setting stay
those of seed 0, the shipped zoo. Seed k's runs (``seed_runs``) are the modules' methods of notebooks 40 and 41 with
the seed-k modules, stored in ``results/<profile>/aasd_runs_seeds.csv`` keyed by ``train_seed`` as well; seed 0's are
the committed ``aasd_runs`` rows. ``seed_frames`` gives, per seed, the stored rows of one notebook table with the
modules' rows of that seed and everything else (plain decoding, the baselines) from seed 0, so each seed's findings
are read exactly as seed 0's; ``pooled_frame`` stacks them, a request's seeds averaged into one unit.
"""

from __future__ import annotations

import pandas as pd

from specdec.aasd import experiments, zoo_specs
from specdec.aasd.experiments import KEY, experiment, load_requests, profile_targets, recompute  # noqa: F401
from specdec.aasd.tables import ABLATIONS, runs
from specdec.harness.experiment import Suite
from specdec.harness.profile import Profile

SEED_KEY = [*KEY, "train_seed"]  # ``recompute`` (``experiments.recompute``) decodes such keys with their seed's modules
MODULE_DRAFTS = {"table1": ("AASD",), "ablations": tuple(ABLATIONS)}  # the methods whose weights a seed moves


def trained_seeds(profile) -> tuple[int, ...]:
    """The other training seeds a profile's zoo has: ``zoo_specs.TRAIN_SEEDS`` for the shipped tiny zoo, none for a
    hub profile (its modules train once, at the paper's scale)."""
    return zoo_specs.TRAIN_SEEDS if Profile.load(profile).shipped else ()


def seed_store(profile):
    """The seed runs' table, ``results/<profile>/aasd_runs_seeds.csv`` (on its committed base layer)."""
    return Profile.load(profile).store("aasd_runs_seeds", SEED_KEY)


def seed_runs(profile, train_seed: int, *, gammas=(3, 5), n_per_task: int = 63, max_new_tokens: int = 48,
              seed: int = 0, tables=tuple(MODULE_DRAFTS)) -> Suite:  # fmt: skip
    """Seed ``train_seed``'s runs: the AASD module on every target of Table 1 and the ablations on notebook 41's
    target (``tables``: which of the two), with plain decoding as each target's reference (the lossless check), the
    notebooks' settings."""
    profile = Profile.load(profile)
    if train_seed not in trained_seeds(profile):
        raise ValueError(
            f"no modules of training seed {train_seed} in the {profile.name} zoo: {trained_seeds(profile)}"
        )
    profile.use_threads()
    runs = seed_store(profile)
    rows = load_requests(n_per_task, seed=seed, profile=profile)
    cells = [("table1", t) for t in profile_targets(profile)] + [("ablations", experiments.ablation_target(profile))]
    cells = [(table, target) for table, target in cells if table in tables]
    out = Suite(runs, requests=rows, train_seed=train_seed)
    for table, target in cells:
        out.add(lambda s, table=table, target=target: experiment(
            runs, profile, table, target, rows, MODULE_DRAFTS[table], gammas, max_new_tokens, train_seed=train_seed
        ))  # fmt: skip
    return out


def seed_frames(stored: pd.DataFrame, seeded: pd.DataFrame, table: str) -> dict[int, pd.DataFrame]:
    """``{train seed: stored rows of ``table``}``: seed 0 the committed rows (``stored``, ``aasd_runs``), seed k
    those with the modules' rows (``MODULE_DRAFTS``) replaced by seed k's (``seeded``, ``aasd_runs_seeds``), on the
    targets seed k ran. Columns are ``stored``'s."""
    base = stored[stored.table == table]
    out = {0: base}
    if seeded.empty:
        return out
    seeded = seeded[seeded.table == table]
    for k, rows in seeded.groupby(seeded.train_seed.astype(int)):
        modules = rows[rows.draft.isin(MODULE_DRAFTS[table])][base.columns]
        keep = base[base.target.isin(set(rows.target)) & ~base.draft.isin(MODULE_DRAFTS[table])]
        out[int(k)] = pd.concat([keep, modules], ignore_index=True)
    return out


def pooled_frame(frames: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Every seed's frame (after ``tables.runs``) stacked: the verdicts' per-request statistics
    (``verdict.per_request``) average a request's seeds into one unit, so a module's τ on a request is its mean over
    the seeds and the baselines' (the same rows in every seed) are unchanged."""
    return pd.concat(list(frames.values()), ignore_index=True)


def frames_for(frame: pd.DataFrame, profile, table: str, **settings) -> dict[int, pd.DataFrame]:
    """``{train seed: runs}`` for a notebook's own ``frame`` (``tables.runs`` of ``table``; seed 0) and the other
    seeds' stored rows on the same targets, requests, γ and drafts. ``settings`` (the notebook's ``gammas``,
    ``n_per_task``, ``max_new_tokens``, ``seed``): each seed's runs of ``table`` at them are decoded first where they
    are missing (``seed_runs``; the seeds' modules are committed), so a run from an empty output folder recomputes
    them too. A seed that lacks any of the notebook's rows is left out, so every seed is read on the same runs."""
    profile = Profile.load(profile)
    out = {0: frame}
    if not trained_seeds(profile):
        return out
    if settings:
        for k in trained_seeds(profile):
            seed_runs(profile, k, tables=(table,), **settings).run()
    stored = experiments.store(profile).frame()
    same = ["target", "row", "gamma", "draft"]
    want = set(map(tuple, frame[same].astype(str).values))
    for k, f in seed_frames(stored, seed_store(profile).frame(), table).items():
        if k == 0:
            continue
        f = runs(f, table)
        f = f[[t in want for t in map(tuple, f[same].astype(str).values)]]
        if len(f) == len(frame):
            out[k] = f
    return out


def seed_summary(frames: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Mean τ per (target, γ, module draft) and training seed, one column per seed (the modules' rows only)."""
    rows = [f.assign(seed=k) for k, f in frames.items()]
    frame = pd.concat(rows, ignore_index=True)
    frame = frame[frame.draft.isin({d for drafts in MODULE_DRAFTS.values() for d in drafts})]
    return frame.pivot_table(index=["target", "gamma", "draft"], columns="seed", values="block_efficiency")
