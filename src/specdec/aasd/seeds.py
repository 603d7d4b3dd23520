"""AASD's findings over training seeds (issue 26): the modules and the baselines again with seeds 1 and 2, their runs,
and the frames each seed's findings are read from.

The modules retrain in seconds to minutes (``python -m specdec.aasd.train seeds``: ``zoo_specs.TRAIN_SEEDS``, the
module's seeds moved by ``zoo_specs.SEED_STEP * k``), the FT and DT baselines in about 20 on the fixed pretrained
PT-LLaMA (``train baseline-seeds``, weights gitignored); the targets, PT-LLaMA, the data and every setting stay those
of seed 0, the shipped zoo. Seed k's runs (``seed_runs``) are the methods of notebooks 40 and 41 whose weights the seed
moves (``SEEDED_DRAFTS``) with the seed-k weights, stored in ``results/<profile>/aasd_runs_seeds.csv`` keyed by
``train_seed`` as well; seed 0's are the committed ``aasd_runs`` rows. ``seed_frames`` gives, per seed, the stored
rows of one notebook table with those methods' rows of that seed and everything else (plain decoding) from seed 0,
so each seed's findings are read exactly as seed 0's; ``pooled_frame`` stacks them, a request's seeds averaged into
one unit.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from specdec import zoo
from specdec.aasd import experiments, zoo_specs
from specdec.aasd.experiments import KEY, experiment, load_requests, profile_targets, recompute  # noqa: F401
from specdec.aasd.tables import ABLATIONS, MATCHED_DRAFT, runs
from specdec.aasd.zoo import zoo_for
from specdec.harness.experiment import Suite
from specdec.harness.profile import Profile
from specdec.validate import reads_frame

SEED_KEY = [*KEY, "train_seed"]  # ``recompute`` (``experiments.recompute``) decodes such keys with their seed's modules
EXACT_COLUMNS = experiments.EXACT_COLUMNS  # as seed 0's (``study.TABLES``)
MODULE_DRAFTS = {"table1": ("AASD", MATCHED_DRAFT), "ablations": tuple(ABLATIONS)}  # the module's methods
# the methods whose weights a seed moves: the modules', and in Table 1 every baseline's
SEEDED_DRAFTS = {"table1": (*MODULE_DRAFTS["table1"], *zoo_specs.SEEDED_BASELINES), "ablations": tuple(ABLATIONS)}


def trained_seeds(profile) -> tuple[int, ...]:
    """The other training seeds a profile's zoo has: ``zoo_specs.TRAIN_SEEDS`` for the shipped tiny zoo, none for a
    hub profile (its modules train once, at the paper's scale)."""
    return zoo_for(profile).train_seeds


def seed_store(profile):
    """The seed runs' table, ``results/<profile>/aasd_runs_seeds.csv`` (on its committed base layer)."""
    return Profile.load(profile).store("aasd_runs_seeds", SEED_KEY)


def seed_runs(
    profile,
    train_seed: int,
    *,
    gammas=(3, 5),
    n_per_task: int = 63,
    max_new_tokens: int = 48,
    seed: int = 0,
    tables=tuple(MODULE_DRAFTS),
) -> Suite:
    """Seed ``train_seed``'s runs: the AASD module and the baselines on every target of Table 1 and the ablations
    on notebook 41's target (``tables``: which of the two), with plain decoding as each target's reference (the
    lossless check), the notebooks' settings. A method whose seed-k weights are gitignored and not on this machine
    (``here``: the budget-matched module, the baselines) is left out: its stored rows are read as they are."""
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
        drafts = MODULE_DRAFTS[table] if table == "ablations" else ("AASD", *here(target, train_seed))
        out.add(
            lambda s, table=table, target=target, drafts=drafts: experiment(
                runs, profile, table, target, rows, drafts, gammas, max_new_tokens, train_seed=train_seed
            )
        )
    return out


def here(target: str, train_seed: int) -> tuple[str, ...]:
    """The gitignored Table 1 methods of training seed ``train_seed`` on this machine: the budget-matched module
    (``zoo_specs.matched_dir``) and the baselines (``baselines_here``)."""
    matched = (zoo_specs.matched_dir(target, train_seed) / "module.safetensors").exists()
    return ((MATCHED_DRAFT,) if matched else ()) + baselines_here(target, train_seed)


def baselines_here(target: str, train_seed: int) -> tuple[str, ...]:
    """The baselines (of ``target``) whose training seed ``train_seed`` is on this machine
    (``zoo_specs.baseline_seed_dir``; gitignored, ``python -m specdec.aasd.train baseline-seeds`` trains them)."""
    return tuple(
        d
        for d in zoo_specs.SEEDED_BASELINES
        if (zoo_specs.baseline_seed_dir(d, target, train_seed) / "config.json").exists()
    )


def seed_frames(stored: pd.DataFrame, seeded: pd.DataFrame, table: str) -> dict[int, pd.DataFrame]:
    """``{train seed: stored rows of ``table``}``: seed 0 the committed rows (``stored``, ``aasd_runs``), seed k
    those with the rows of the methods it moves (``SEEDED_DRAFTS``) replaced by seed k's (``seeded``,
    ``aasd_runs_seeds``), on the targets seed k ran. A seed without rows of every such method of ``stored`` (a
    recompute from nothing on a machine without the seed's baselines) is left out rather than read with seed 0's
    rows in their place. Columns are ``stored``'s."""
    base = stored[stored.table == table]
    out = {0: base}
    if seeded.empty:
        return out
    seeded = seeded[seeded.table == table]
    for k, rows in seeded.groupby(seeded.train_seed.astype(int)):
        moved = set(rows.draft) & set(SEEDED_DRAFTS[table])
        if set(base.draft) & set(SEEDED_DRAFTS[table]) - moved:
            continue
        modules = rows[rows.draft.isin(moved)][base.columns]
        keep = base[base.target.isin(set(rows.target)) & ~base.draft.isin(moved)]
        out[int(k)] = pd.concat([keep, modules], ignore_index=True)
    return out


def pooled_frame(frames: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """Every seed's frame (after ``tables.runs``) stacked: the verdicts' per-request statistics
    (``verdict.per_request``) average a request's seeds into one unit, so a module's τ on a request is its mean over
    the seeds and the baselines' (the same rows in every seed) are unchanged."""
    return pd.concat(list(frames.values()), ignore_index=True)


@reads_frame
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
    """Mean τ per (target, γ, draft a seed moves) and training seed, one column per seed (``SEEDED_DRAFTS``)."""
    rows = [f.assign(seed=k) for k, f in frames.items()]
    frame = pd.concat(rows, ignore_index=True)
    frame = frame[frame.draft.isin({d for drafts in SEEDED_DRAFTS.values() for d in drafts})]
    return frame.pivot_table(index=["target", "gamma", "draft"], columns="seed", values="block_efficiency")


BASELINE_SUMMARY = zoo.DATA / "aasd_baseline_seeds.csv"  # committed: the baseline seeds' weights are not


def baseline_summary(path=BASELINE_SUMMARY) -> pd.DataFrame:
    """One row per baseline (a DT one per target), training seed found (seed 0: the shipped ``data/models``; k > 0:
    ``zoo_specs.baseline_seed_dir``) from its ``training_log.json``: ``model, target, train_seed, seed, steps,
    seconds, heldout_loss, heldout_loss_blank_images`` (``target`` empty for the FT baselines); a seed whose folder
    is not on this machine keeps its row of ``path``. Written to ``path`` (``python -m specdec.aasd.train
    baseline-seeds`` does) and returned."""
    import json

    rows = []
    for draft in zoo_specs.SEEDED_BASELINES:
        distilled = zoo_specs.TINY["drafts"][draft]["answers"] == "target"
        for target in zoo_specs.TARGETS if distilled else ("",):
            folders = {0: zoo.MODELS / zoo_specs.draft_name(draft, target or None)}
            folders |= {k: zoo_specs.baseline_seed_dir(draft, target, k) for k in zoo_specs.TRAIN_SEEDS}
            for k, folder in folders.items():
                if not (folder / "training_log.json").exists():
                    continue
                s = json.loads((folder / "training_log.json").read_text())["summary"]
                rows.append(
                    dict(
                        model=draft,
                        target=target,
                        train_seed=k,
                        seed=s["seed"],
                        steps=s["steps"],
                        seconds=s["seconds"],
                        heldout_loss=s["heldout_loss"],
                        heldout_loss_blank_images=s.get("heldout_loss_blank_images"),
                    )
                )
    frame = pd.DataFrame(rows)
    if pathlib.Path(path).exists():
        old = pd.read_csv(path, keep_default_na=False)  # an FT baseline's target is "", not NaN
        here = frame.set_index(["model", "target", "train_seed"]).index if len(frame) else []
        frame = pd.concat([frame, old[~old.set_index(["model", "target", "train_seed"]).index.isin(here)]])
    frame = frame.sort_values(["target", "model", "train_seed"]).reset_index(drop=True)
    frame.to_csv(path, index=False, lineterminator="\n")
    return frame


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["BASELINE_SUMMARY", "MODULE_DRAFTS", "SEEDED_DRAFTS", "SEED_KEY", "frames_for", "seed_summary"]
