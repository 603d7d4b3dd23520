"""Training seeds of the foundation drafts (``zoo.training --train-seed``, ``harness.engine_seeds``): a seed trains
into its own folder with its own model seed, its runs are lossless and keyed by the seed, and a machine without the
seed's weights reads its stored rows instead."""

from __future__ import annotations

import json

import pytest
import torch

from specdec import results, zoo
from specdec.harness import engine_experiments as ee
from specdec.harness import engine_seeds
from specdec.harness.profile import Profile
from specdec.hub import ModelNotAvailableError
from specdec.zoo import training

SETTINGS = dict(
    sweep=dict(n_per_kind=1, gammas=[1, 3], max_new_tokens=8), speed=dict(per_kind=1, gamma=2, max_new_tokens=8)
)


@pytest.fixture(scope="module")
def seed_models(tmp_path_factory):
    """Seeds 1 and 2 of both drafts, 3 optimizer steps each (the shipped recipe at 1/300 of its steps)."""
    root = tmp_path_factory.mktemp("models-seeds")
    for k in (1, 2):
        training.train_seed(list(engine_seeds.SEED_DRAFTS), k, out=root / f"seed{k}", steps_scale=1 / 300)
    return root


def test_a_training_seed_moves_the_model_seed_and_changes_the_weights(seed_models):
    from safetensors.torch import load_file

    for k in (1, 2):
        log = json.loads((seed_models / f"seed{k}" / "tiny-draft-xs" / "training_log.json").read_text())
        assert log["train_seed"] == k and log["seed"] == zoo.list_seed("tiny-draft-xs") + zoo.SEED_STEP * k
        assert log["steps"] == 3
    one, two = (load_file(seed_models / f"seed{k}" / "tiny-draft-xs" / "model.safetensors") for k in (1, 2))
    assert not torch.equal(one["model.embed_tokens.weight"], two["model.embed_tokens.weight"])


def test_training_seed_zero_is_the_shipped_zoo():
    with pytest.raises(SystemExit):
        training.main(["--models", "tiny-draft-xs", "--train-seed", "-1"])


def test_seed_runs_are_lossless_keyed_by_seed_and_read_back_without_weights(seed_models, tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "SEED_MODELS", seed_models)
    monkeypatch.setattr(results, "RESULTS", tmp_path / "out")
    monkeypatch.setattr(results, "COMMITTED", tmp_path / "committed")  # empty: nothing committed is read
    eng = ee.Engine.load(Profile.load("tiny", "cpu"), ["default", "xs"])
    rows = engine_seeds.seed_runs(eng, [1, 2], **SETTINGS)
    # per seed: 3 prompts x (plain + 2 drafts x 2 γ) in the sweep, 3 x (plain + the first draft at γ 2) timed
    assert rows.groupby("train_seed").size().to_dict() == {1: 15 + 6, 2: 15 + 6}
    assert rows.lossless.astype(str).eq("True").all()
    sd = rows[rows.method != "plain"]
    assert sd.groupby(["train_seed", "draft"]).weights.nunique().eq(1).all()
    assert sd.groupby("draft").weights.nunique().eq(2).all()  # each seed's own weights digest

    # the seed's drafts leave this machine: its stored rows are what a rerun gives
    (seed_models / "seed2" / "tiny-draft-s" / "config.json").rename(seed_models / "seed2" / "config.moved")
    try:
        again = engine_seeds.seed_runs(eng, [2], **SETTINGS)
        assert len(again) == 21 and set(again.train_seed.astype(int)) == {2}
        monkeypatch.setattr(results, "RESULTS", tmp_path / "elsewhere")  # neither the weights nor the rows
        with pytest.raises(ModelNotAvailableError, match="--train-seed 2"):
            engine_seeds.seed_runs(eng, [2], **SETTINGS)
    finally:
        (seed_models / "seed2" / "config.moved").rename(seed_models / "seed2" / "tiny-draft-s" / "config.json")


def test_seeds_exist_for_the_shipped_zoo_only():
    eng = ee.Engine.load(Profile.load("tiny", "cpu"), ["default"])
    with pytest.raises(ValueError, match="tiny zoo only"):
        engine_seeds.SeedEngine.of(eng, 0)


def test_the_seed_summary_has_a_row_per_draft_and_seed(seed_models, monkeypatch):
    monkeypatch.setattr(zoo, "SEED_MODELS", seed_models)
    frame = training.seed_summary()
    assert frame.groupby("model").train_seed.apply(list).to_dict() == {d: [0, 1, 2] for d in engine_seeds.SEED_DRAFTS}
    retrained = frame[frame.train_seed > 0]
    assert (retrained.steps == 3).all() and (retrained.seed % zoo.SEED_STEP == retrained.model.map(zoo.list_seed)).all()
