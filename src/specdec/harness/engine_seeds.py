"""Training randomness of the foundation drafts (issue 26): notebook 01's runs with drafts of training seeds k > 0.

Seed 0 is the shipped zoo. A seed k > 0 retrains ``tiny-draft-s`` and ``tiny-draft-xs`` (``SEED_DRAFTS``: each
model's initialisation and data order move by ``zoo.SEED_STEP`` × k; corpus, steps and tokenizer stay) into the
gitignored ``zoo.seed_dir(name, k)`` (``SEED_TRAIN_COMMAND`` rebuilds them); the target is the shipped one for every
seed. Table ``engine_seeds`` (key ``SEED_KEY``) holds each seed's greedy runs at seed 0's settings, each request
beside plain decoding, against which every run is marked ``lossless``:

- the τ sweep of notebook 01 (b): every draft × γ on its held-out prompts (``iid_verdict``);
- the timed prompts of (d) at its γ with the first pair's draft (``engine_speed_verdict`` in the paper's regime:
  counts priced at the paper's costs; decoded in batches, so the rows have no walltime).

``seed_runs`` decodes what is missing (``SeedEngine`` raises ``ModelNotAvailableError`` for a seed whose weights
are not on this machine); ``engine_findings`` reads the table (``seed_rows``) and decides over the seeds.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pandas as pd

from specdec import results, zoo
from specdec.engine_findings import SEED_TABLE
from specdec.harness import engine_zoo
from specdec.harness.engine_experiments import NOTEBOOK_SWEEP, Engine
from specdec.harness.experiment import Experiment, Request, Setting, plain, speculative
from specdec.hub import ModelNotAvailableError
from specdec.zoo.models import load, revision_of, seed_weights, weights_digest, weights_identity

SEED_DRAFTS = engine_zoo.SEED_DRAFTS
SEED_TRAIN_COMMAND = engine_zoo.SEED_TRAIN_COMMAND
SEED_KEY = ["train_seed", "method", "draft", "weights", "gamma", "n_prompts", "prompts", "max_new_tokens", "prompt"]
SEED_EXACT = ["new_tokens", "target_calls", "draft_calls", "output"]  # what a recompute gives back
BATCH = 16  # prompts decoded together (``batching.generate_batch``; its rows equal the batch-1 runs)


class SeedEngine(Engine):
    """An ``Engine`` whose drafts are training seed ``train_seed``'s (``zoo.seed_dir``), on the shipped target."""

    train_seed: int = 0

    @classmethod
    def of(cls, eng: Engine, train_seed: int) -> SeedEngine:
        if int(train_seed) not in eng.train_seeds:
            raise ValueError(f"training seeds > 0 exist for the tiny zoo only (got {train_seed}, {eng.profile.name})")
        drafts = {}
        for pair, name in eng.draft_names().items():
            folder = seed_weights(name, train_seed, f"{SEED_TRAIN_COMMAND} <k>")
            drafts[pair] = load(folder, device=eng.profile.device, dtype=eng.profile.dtype, with_tokenizer=False)[0]
        seeded = cls(eng.profile, eng.pairs, eng.target, eng.tokenizer, drafts, eng.device_name, eng.train_seeds)
        seeded.train_seed = int(train_seed)
        return seeded

    def weights(self, pair: str) -> str:
        """The ``weights`` key: the shipped target's and this seed's draft's weights (a retrain never reuses rows)."""
        spec = self.spec(pair)
        target = weights_identity(spec["target"], revision_of(self.profile.spec, spec["target"]))
        return weights_digest(target, weights_identity(zoo.seed_dir(spec["draft"], self.train_seed)))


def seed_experiments(eng: SeedEngine, *, sweep: dict, speed: dict, base: pathlib.Path | None = None):
    """The two experiments of one seed on table ``engine_seeds``: the τ sweep (``sweep``: ``n_per_kind``, ``gammas``,
    ``max_new_tokens``, as notebook 01 (b)) and the timed prompts of (d) (``speed``: ``per_kind``, ``gamma``,
    ``max_new_tokens``), the latter with the first pair's draft only."""
    runs = [
        (sweep["n_per_kind"], sweep["max_new_tokens"], {p: list(sweep["gammas"]) for p in eng.pairs}),
        (speed["per_kind"], speed["max_new_tokens"], {eng.pairs[0]: [int(speed["gamma"])]}),
    ]
    out = []  # one store per experiment: each run returns its own requested keys
    for per_kind, max_new_tokens, gammas in runs:
        prompts, texts = eng.prompts(per_kind)
        requests = [
            Request(str(i), ids, key=dict(prompt=i, n_prompts=len(prompts), prompts=texts), seed=i)
            for i, ids in enumerate(prompts)
        ]
        target_only = weights_digest(weights_identity(eng.spec(eng.pairs[0])["target"]))
        methods = {"plain": plain(eng.target, batched=True, draft="", weights=target_only)}
        for pair, pair_gammas in gammas.items():
            name = eng.spec(pair)["draft"]
            for g in pair_gammas:
                methods[f"{name} γ={g}"] = speculative(
                    eng.target, lambda request, d=eng.drafts[pair]: d, gamma=g, batched=True, draft=name,
                    weights=eng.weights(pair),
                )  # fmt: skip
        out.append(
            Experiment(
                eng.profile.store(SEED_TABLE, SEED_KEY, base=base or results.COMMITTED),
                requests,
                methods,
                fixed=dict(train_seed=eng.train_seed, max_new_tokens=max_new_tokens),
                setting=Setting(max_new_tokens=max_new_tokens, eos_token_id=[]),
                batch_size=BATCH,
                desc=f"seed {eng.train_seed}, {len(prompts)} prompts",
            )
        )
    return out


def seed_runs(eng: Engine, train_seeds, **settings) -> pd.DataFrame:
    """Decode what is missing of ``train_seeds``' experiments (``seed_experiments``; ``settings``: its ``sweep`` and
    ``speed``) and return their rows. A seed whose weights are not on this machine (they are not committed) gives
    its stored rows of these settings (``stored_runs``); with neither, ``ModelNotAvailableError``."""
    frames = []
    for k in train_seeds:
        try:
            seeded = SeedEngine.of(eng, k)
        except ModelNotAvailableError:
            stored = stored_runs(eng, k, **settings)
            if stored.empty:
                raise
            frames.append(stored)
            continue
        frames.extend(experiment.run() for experiment in seed_experiments(seeded, **settings))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SEED_KEY)


def stored_runs(eng: Engine, train_seed: int, *, sweep: dict, speed: dict) -> pd.DataFrame:
    """The stored rows of training seed ``train_seed`` at ``seed_experiments``' settings (its prompts, γ and token
    budgets), read without its weights: what a machine without the seed's drafts shows."""
    rows = eng.profile.store(SEED_TABLE, SEED_KEY, base=results.COMMITTED).frame(requested=False)
    rows = rows[rows.train_seed.astype(int) == int(train_seed)]
    wanted = []
    for per_kind, tokens, gammas in (
        (sweep["n_per_kind"], sweep["max_new_tokens"], list(sweep["gammas"])),
        (speed["per_kind"], speed["max_new_tokens"], [int(speed["gamma"])]),
    ):
        texts = eng.prompts(per_kind)[1]
        mine = (rows.prompts == texts) & (rows.max_new_tokens.astype(int) == int(tokens))
        wanted.append(rows[mine & rows.gamma.astype(int).isin([0, *gammas])])
    return pd.concat(wanted, ignore_index=True)


# notebook 01's settings of (b) and (d), those of the committed rows
NOTEBOOK_SETTINGS: dict[str, dict[str, Any]] = dict(
    sweep=NOTEBOOK_SWEEP,
    speed=dict(per_kind=4, gamma=5, max_new_tokens=48),
)


def recompute(keys, *, profile: str = "tiny") -> pd.DataFrame:
    """Decode the runs of stored ``keys`` of ``engine_seeds`` again on ``profile``'s CPU (the committed-results test
    through ``papers.ENGINE``'s table, where the seeds' drafts are on this machine), at notebook 01's settings; fresh
    rows in the order of ``keys``."""
    from specdec.harness.profile import Profile

    eng = Engine.load(Profile.load(profile, "cpu"), ["default", "xs"])
    experiments = {}
    out = []
    for key in keys:
        k = int(key["train_seed"])
        if k not in experiments:
            experiments[k] = seed_experiments(
                SeedEngine.of(eng, k), sweep=NOTEBOOK_SETTINGS["sweep"], speed=NOTEBOOK_SETTINGS["speed"]
            )
        for experiment in experiments[k]:
            try:
                out.append(experiment.recompute([key]))
                break
            except KeyError:
                continue
        else:
            raise KeyError(f"{dict(key)} is no run of notebook 01's settings")
    return pd.concat(out, ignore_index=True)
