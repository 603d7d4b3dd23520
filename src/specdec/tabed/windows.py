"""Table 3 on the pair built for it (docs/papers/tabed.md, "T2 and T5"): ``vlm.train``'s long-answer target and draft,
trained on the "full" answers (``vlm.full_answers``), where a window of h = 16 verified positions is shorter than most
answers. ``window_study`` decodes Table 3's requests with MT* at every window (notebook 12), into a table of its own
(``KEY`` names no model) keyed by the training seed too; seeds k > 0 load from ``zoo.SEED_MODELS/seed<k>``.
``window_frames`` reads the rows back per seed, ``t5_validity`` the proxy condition T5 rests on; the verdict is
``findings.verdict_t5_over_seeds``.
"""

from __future__ import annotations

import pathlib

import pandas as pd

from specdec import results
from specdec.harness.experiment import Suite
from specdec.harness.profile import Profile
from specdec.tabed import data
from specdec.tabed.experiments import BATCH_SIZE, EXACT_COLUMNS, setting
from specdec.tabed.tables import runs
from specdec.tabed.zoo import KEY, REFERENCE, Pair, zoo_for
from specdec.verdict import validity
from specdec.zoo import models

# the setting every tiny TABED finding is read in (findings.validities: a condition that holds is "partly" valid)
TINY_WHY = (
    "tiny LLaVA-like proxies on this project's synthetic scenes and follow-ups stand in for LLaVA-1.5 and its 68M"
    " drafts; τ is hardware-independent"
)

WINDOW_PAIR = ("tabed-target-long", "tabed-draft-long")
WINDOW_TABLE = "tabed_windows"
WINDOW_KEY = [*KEY, "train_seed"]
WINDOW_EXACT = EXACT_COLUMNS  # as ``tabed_runs``' (``study.TABLES``)
WINDOW_SCENARIOS = [s for s, g in data.GROUP.items() if g in ("benchmark", "ood")]  # Table 3's first turns
WINDOW_SEED_COMMAND = (
    "python -m specdec.vlm.train data --style full --out .gpu/tabed_data_full.pt && python -m specdec.vlm.train "
    "train --data .gpu/tabed_data_full.pt --models " + " ".join(WINDOW_PAIR) + " --out data/models-seeds/seed<k> "
    "--seeds <k> (a GPU job: the target trains in 2 minutes on one H100, in hours on a CPU)"
)


def seed_source(name: str, train_seed: int, command: str):
    """Where a zoo model of training seed k lives (``models.seed_weights``): its zoo ``name`` for k = 0, else
    ``zoo.SEED_MODELS/seed<k>/<name>-seed<k>`` (``vlm.train``'s folder names; ``ModelNotAvailableError`` naming
    ``command`` where missing)."""
    k = int(train_seed)
    return models.seed_weights(name, k, command, folder=models.zoo.seed_dir(f"{name}-seed{k}", k))


def load_pair(profile: Profile, name: str | None, target, draft) -> Pair:
    """A ``Pair`` named ``name`` of the LLaVA ``target`` and ``draft`` (zoo names or folders) on ``profile``'s
    device, dtype and threads; the processor is the target's."""
    profile.use_threads()
    common = dict(kind="llava", device=profile.device, dtype=profile.dtype)
    target_model, processor = models.load(target, **common)
    draft_model, _ = models.load(draft, **common, with_tokenizer=False)
    return Pair(profile, name, target_model, draft_model, processor)


def stored_rows(profile: Profile, table: str, key: list[str], root=None) -> pd.DataFrame:
    """Every stored row of ``table``: in ``root`` (a results folder, e.g. the scoreboard's ``results.COMMITTED``), or
    by default this run's store standing on the committed rows (a notebook under make test)."""
    if root is None:
        return profile.store(table, key).frame()
    return results.ResultStore(profile.name, table, key, root=root).frame()


def window_pair(profile: str | Profile = "tiny", train_seed: int = 0) -> Pair:
    """``WINDOW_PAIR`` of training seed ``train_seed`` as a ``Pair`` named ``"long"`` (seed 0: the shipped models;
    k > 0: ``seed_source``, ``ModelNotAvailableError`` naming ``WINDOW_SEED_COMMAND`` when missing)."""
    profile = Profile.load(profile)
    if not has_window_pair(profile):
        raise ValueError(f"the long-answer window pair is a tiny-zoo proxy; profile {profile.name!r} runs Table 3 on "
                         "its own pair (experiments.ablations)")  # fmt: skip
    return load_pair(profile, "long", *(seed_source(n, train_seed, WINDOW_SEED_COMMAND) for n in WINDOW_PAIR))


def has_window_pair(profile: str | Profile = "tiny") -> bool:
    """Whether the profile's zoo has ``WINDOW_PAIR`` (the shipped proxy zoo; ``zoo.ShippedPairs``)."""
    return zoo_for(profile).proxy


def window_study(
    profile="tiny",
    *,
    train_seed: int = 0,
    n_per_scenario: int = 20,
    n_ood: int | None = 60,
    windows=(1, 4, 16, "ALL"),
    gamma: int = 5,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
) -> Suite:
    """Table 3 (notebook 12, T5) on ``window_pair(profile, train_seed)``: MT* at every window h on the first turns
    of the benchmark scenarios and the OOD stories (``WINDOW_SCENARIOS``; the same requests as ``ablations``'),
    with the target's plain decoding as the lossless reference; rows in ``WINDOW_TABLE``, keyed by ``WINDOW_KEY``.
    ``context``: ``pair``, ``requests``."""
    loaded = window_pair(profile, train_seed)
    rows = data.load_suite(profile, n_per_scenario, seed, scenarios=WINDOW_SCENARIOS, turns=(1,), n_ood=n_ood)
    runs = loaded.profile.store(WINDOW_TABLE, WINDOW_KEY)
    suite = Suite(runs, pair=loaded, requests=rows)
    at = dict(gamma=gamma, max_new_tokens=max_new_tokens, batch_size=batch_size)
    for h in windows:
        desc, fixed = f"seed {train_seed} h={h}", dict(train_seed=int(train_seed))
        suite.add(setting(runs, loaded, rows, ["MT*"], window=h, desc=desc, fixed=fixed, **at))
    return suite


def recompute_windows(keys: list[dict], *, profile: str = "tiny") -> pd.DataFrame:
    """``recompute`` for rows of ``WINDOW_TABLE`` (``WINDOW_KEY`` columns) of one training seed's pair: the fresh
    rows in the order of ``keys``."""
    seeds = {int(k["train_seed"]) for k in keys}
    if len(seeds) != 1:
        raise ValueError(f"recompute_windows takes the keys of one training seed, got seeds {sorted(seeds)}")
    train_seed = seeds.pop()
    pair = window_pair(profile, train_seed)
    n_per_scenario = 1 + max(int(str(k["row"]).rsplit("-", 1)[1]) for k in keys)
    rows = {r["id"]: r for r in data.load_suite(profile, n_per_scenario, scenarios=WINDOW_SCENARIOS, turns=(1,))}
    runs = pair.profile.store(WINDOW_TABLE, WINDOW_KEY)
    fresh: dict[int, dict] = {}
    for window in dict.fromkeys(str(k["window"]) for k in keys):
        positions = [i for i, k in enumerate(keys) if str(k["window"]) == window]
        group = [keys[i] for i in positions]
        wanted = [rows[r] for r in dict.fromkeys(str(k["row"]) for k in group)]
        methods = [m for m in dict.fromkeys(str(k["method"]) for k in group) if m != REFERENCE]
        experiment = setting(runs, pair, wanted, methods, window=None if window in ("ALL", "-") else int(window),
                             fixed=dict(train_seed=train_seed))  # fmt: skip
        fresh.update(zip(positions, experiment.recompute(group).to_dict("records")))
    return pd.DataFrame([fresh[i] for i in range(len(keys))])


def window_frames(profile: str | Profile = "tiny", windows=(1, 4, 16, "ALL"), root=None) -> dict[int, pd.DataFrame]:
    """``{train seed: MT* runs at every window in windows}`` of Table 3's long-answer pair
    (``window_study``, ``WINDOW_TABLE``; empty where the table is missing). ``root``: a results folder
    (the scoreboard's ``results.COMMITTED``); default this run's store standing on the committed rows."""
    if not has_window_pair(profile):
        return {}
    stored = stored_rows(Profile.load(profile), WINDOW_TABLE, WINDOW_KEY, root)
    if stored.empty:
        return {}
    frames = {}
    for k, rows in latest_weights(stored).groupby("train_seed", sort=True):
        frames[int(k)] = pd.concat([runs(rows, gamma=5, window=h, criterion="kl") for h in windows])
    return frames


def latest_weights(stored: pd.DataFrame) -> pd.DataFrame:
    """The rows of the ``model_weights`` each (training seed, method) stored last: a seed whose model was retrained
    is read on the new model's rows, never on a mix of old and new (a store keeps both, keyed by the weights)."""
    last = stored.groupby(["train_seed", "method"]).model_weights.transform("last")
    return stored[stored.model_weights == last]


# the window counts verified positions (``algorithm``: "the last h verified positions"; the paper: t' ∈ [t − h, t − 1]),
# a request's history before its last block holds at least new tokens − (γ + 1) positions, so h can cover every past
# position only where new tokens ≤ h + γ + 1 (an upper bound on the share covered)
COVER_QUANTITY = "share of requests where h can cover every past verified position"
T5_MIN_ANSWER = 70  # the check (docs/papers/tabed.md, "T2 and T5"): mean answer tokens in each of Table 3's groups
T5_MAX_COVERED = 0.5  # ... and h = 16 can cover every past position on fewer than this share of the requests


def t5_validity(root=None) -> tuple[str, str]:
    """T5's proxy validity from the ``T5`` rows of ``<root>/tiny/proxy_conditions.csv`` (``scripts/proxy_conditions.py``
    on ``WINDOW_TABLE``): ``partly`` (the tiny proxies) when the long-answer pair's answers average at least
    ``T5_MIN_ANSWER`` tokens in both of Table 3's groups and h = 16 can cover every past position on fewer than
    ``T5_MAX_COVERED`` of the requests, on every training seed; else ``no``. The measured numbers either way."""
    rows = pd.read_csv(pathlib.Path(root or results.COMMITTED) / "tiny" / "proxy_conditions.csv")
    t5 = rows[rows.condition == "T5"]
    answers = t5[t5.quantity == "mean answer tokens"]
    covered = t5[(t5.quantity == COVER_QUANTITY) & t5.subset.str.endswith("h=16")]
    if answers.empty or covered.empty:
        missing = "the T5 rows of results/tiny/proxy_conditions.csv are missing (scripts/proxy_conditions.py --only T5)"
        return validity("no", missing)
    shortest, widest = answers.value.min(), covered.value.max()
    measured = (
        f"Table 3's pair (tabed-target-long / tabed-draft-long) answers {shortest:.1f} tokens or more on average in"
        f" each group and seed, and h = 16 verified positions can cover every past one on at most {widest:.0%} of"
        " the requests"
        f" (results/tiny/proxy_conditions.csv, T5 rows)"
    )
    if shortest >= T5_MIN_ANSWER and widest < T5_MAX_COVERED:
        return validity("partly", TINY_WHY, measured, "a pair of its own, trained on the full answers")
    return validity("no", measured + f": the check asks for {T5_MIN_ANSWER} tokens and under {T5_MAX_COVERED:.0%}")


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "COVER_QUANTITY",
    "T5_MAX_COVERED",
    "T5_MIN_ANSWER",
    "TINY_WHY",
    "WINDOW_KEY",
    "WINDOW_PAIR",
    "WINDOW_SCENARIOS",
    "WINDOW_SEED_COMMAND",
    "WINDOW_TABLE",
    "has_window_pair",
    "load_pair",
    "t5_validity",
    "window_frames",
    "window_study",
]
