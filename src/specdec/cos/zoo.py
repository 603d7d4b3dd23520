"""CoS's models per profile and the tables they key: the study's ``Zoo`` (``zoo_for``: ``ShippedCollabs``, the
shipped zoo and its training seeds; ``HubCollabs``, the yaml's hub ids), a profile's model sets (``ModelSet``, at a
training seed), their per-call costs measured once per set and device (``stored_call_costs``) and the runs tables
(``store``) keyed by ``ROW_KEY``.
"""

from __future__ import annotations

from dataclasses import dataclass

from specdec import bench
from specdec.cos import tables
from specdec.harness.profile import Profile
from specdec.harness.study import BaseZoo
from specdec.results import ResultStore
from specdec.zoo import models as zoo_models
from specdec.zoo.models import model_weights

# A stored row is one prompt of a cell (``tables.KEYS``): its id and ``request``, the ``text_digest`` of its text (a
# prompt id that names another text, after a task generator or template changed, is computed again).
ROW_KEY = tables.KEYS + ["prompt", "request"]
MAX_MODELS = 3  # per-model columns are written for up to this many models, so one table holds every set


def store(profile, table: str) -> ResultStore:
    """A CoS runs table (``cos_main``, ``cos_sweeps``, ``cos_theory``; keys ``ROW_KEY``) on the committed one
    (read-only), so under ``make test`` the notebooks read the committed 16-prompt cells and compute only keys that
    are not there; ``tests/test_committed_results.py`` recomputes a sample of them (``recompute``)."""
    return Profile.load(profile).store(table, ROW_KEY)


def cost_store(profile) -> ResultStore:
    """The per-call costs (``stored_call_costs``; keys set, device) on the committed table, like ``store``."""
    return Profile.load(profile).store("cos_call_costs", ["set", "device"])


def call_costs(models, context: int = 64, repeats: int = 20) -> list[float]:
    """Median seconds of one one-token decode call T(1, context, 1) per model (``bench.forward_latency``)."""
    return [bench.forward_latency(m, 1, context, 1, repeats=repeats) for m in models]


def stored_call_costs(costs: ResultStore, set_name: str, models) -> list[float]:
    """``call_costs(models)``, measured once per (set, device) and kept in ``costs`` (keys set, device)."""
    device = bench.describe_device(next(models[0].parameters()).device)
    padded = lambda set, device: {f"cost_{i}": c for i, c in enumerate(_padded(call_costs(models)))}  # noqa: E731
    costs.run([dict(set=set_name, device=device)], padded)
    row = costs.get(set=set_name, device=device)
    return [float(row[f"cost_{i}"]) for i in range(len(models))]


def _padded(values) -> list:
    return [values[i] if i < len(values) else "" for i in range(MAX_MODELS)]


@dataclass
class ModelSet:
    """A profile's CoS model set, loaded: ``models`` (smallest / amateur first), their ``tokenizer``, combination
    ``kind`` and ``weights`` (``model_weights``: the key column that makes a retrained model's rows new)."""

    models: list
    tokenizer: object
    kind: str
    weights: str
    train_seed: int = 0  # the models' training seed (``cos.seeds``; 0: the shipped zoo)

    @classmethod
    def load(cls, profile: Profile, name: str, train_seed: int = 0) -> ModelSet:
        models, tokenizer, kind = profile.load_collab(name, train_seed)
        return cls(models, tokenizer, kind, model_weights(*models), int(train_seed))

    @property
    def device_type(self) -> str:
        return next(self.models[-1].parameters()).device.type


def collab_of(label: str, profile="tiny") -> tuple[str, str | None, int | None]:
    """``(model set, combination kind, proposer)`` of a stored ``set`` label.

    A set of the profile (``we``, ``we3``, ``cd``): its own kind and ``default_proposer`` (``None``, ``None``: at
    the row's λ). ``"<set>/proposer<k>"``: that set, model k proposing (notebook 22's Thm 3.2 runs).
    ``"<set>+<kind>"``: the set's models combined as ``kind``, model 0 proposing (notebook 21's Fig. 8 ``cd+we``)."""
    known = set(Profile.load(profile).collab_sets())
    if "/proposer" in label:
        name, k = label.split("/proposer")
        kind, proposer = None, int(k)
    elif "+" in label:
        name, kind = label.split("+")
        proposer = 0
    else:
        name, kind, proposer = label, None, None
    if name not in known or kind not in (None, "we", "cd"):
        raise ValueError(
            f"unknown CoS set label {label!r}: a set of {sorted(known)}, '<set>/proposer<k>' or '<set>+<we|cd>'"
        )
    return name, kind, proposer


class HubCollabs(BaseZoo):
    """CoS's ``harness.study.Zoo`` where the models are hub ids of the profile's ``collab`` sets (one training run
    each: no seeds k > 0). ``load(name)`` and ``weights(name)`` take a model set's name (``we``, ``cd``, ...)."""

    study = "CoS"

    def source(self, name: str):
        """``(folder or hub id, revision)`` of one model of a set at this zoo's training seed."""
        where, revision = self.profile.model_source(name)
        if self.train_seed:
            return zoo_models.seed_weights(name, self.train_seed, zoo_models.COS_SEED_COMMAND), revision
        return where, revision

    def load(self, name: str, **kw) -> ModelSet:
        """The model set ``name``, loaded on the profile's device at this zoo's training seed."""
        return ModelSet.load(self.profile, name, self.train_seed)

    def weights(self, *names: str) -> str:
        """The ``weights`` key of a row of the model set ``names[0]`` (``ModelSet.weights``: it loads the set)."""
        return self.load(*names).weights


class ShippedCollabs(HubCollabs):
    """CoS's ``Zoo`` of the shipped ``cos-*`` models (``data/models/``), retrained with training seeds 1 and 2
    (``cos.seeds``; their committed rows are read by the findings per seed)."""

    train_seeds = (1, 2)
    proxy = True


ZOOS = {"shipped": ShippedCollabs, "hub": HubCollabs}


def zoo_for(profile) -> HubCollabs:
    """CoS's models under ``profile`` (``Profile.zoo``: the class of the profile's model source)."""
    return Profile.load(profile).zoo(ZOOS, "CoS")


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["HubCollabs", "MAX_MODELS", "ROW_KEY", "ShippedCollabs", "ZOOS", "store", "zoo_for"]
