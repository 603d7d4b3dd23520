"""``specdec.harness.profile.Profile``: the one place that knows tiny from paper."""

from __future__ import annotations

import pytest
import torch

from specdec import results, zoo
from specdec.harness.profile import Profile, default_device, default_dtype


def test_tiny_is_shipped_strict_generated_and_on_the_cpu():
    p = Profile.load("tiny")
    assert p.shipped and p.strict and p.data_source == "generated"
    assert p.device == "cpu" and p.device_type == "cpu" and p.dtype == torch.float32
    assert p.model_source("cos-general") == (zoo.MODELS / "cos-general", None)
    assert p.collab_sets() == ["we", "we3", "cd"]
    assert p.datasets() == [] and p.notebook_params("20_") == {}
    assert p.results_dir == results.RESULTS / "tiny"
    assert Profile.load(p) is p
    moved = Profile.load(p, dtype="bfloat16")
    assert moved.dtype is torch.bfloat16 and moved.device == "cpu" and moved.name == "tiny" and p.dtype is torch.float32


def test_paper_reads_its_hub_ids_revisions_datasets_and_notebook_parameters():
    p = Profile.load("paper", device="cpu")
    assert not p.shipped and not p.strict and p.data_source == "hub"
    assert p.device == "cpu" and p.dtype == torch.float16
    where, revision = p.model_source("lmsys/vicuna-7b-v1.3")
    assert where == "lmsys/vicuna-7b-v1.3" and (revision is None or len(revision) == 40)
    assert {"we", "cd"} <= set(p.collab_sets()) or p.collab_sets()
    assert any(d["id"] == "openai/gsm8k" for d in p.datasets("CoS"))
    assert all("CoS" in d["paper"] for d in p.datasets("cos"))
    assert p.notebook_params("20_cos_main")["max_new_tokens"] == 256


def test_device_default_is_what_torch_sees():
    assert default_device({"device": "cuda"}) == ("cuda" if torch.cuda.is_available() else "cpu")
    assert default_device({}) == "cpu"
    assert default_device({"device": "cuda"}, "cpu") == "cpu"
    with pytest.raises(RuntimeError):
        default_device({}, "gpu0")


def test_dtype_by_name_or_dtype():
    assert default_dtype({"dtype": "float16"}) is torch.float16
    assert default_dtype({}, "bfloat16") is torch.bfloat16
    assert default_dtype({}, torch.float64) is torch.float64
    assert default_dtype({}) is None
    with pytest.raises(ValueError, match="unknown dtype"):
        default_dtype({}, "float13")
    assert Profile.load("tiny", dtype="bfloat16").dtype is torch.bfloat16


def test_unknown_profile_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="known profiles"):
        Profile.load("huge")


def test_store_stands_on_the_committed_base_layer(tmp_path):
    """The profile's store reads the committed rows (public API only: the storage behind it may change)."""
    from specdec.cos.experiments import ROW_KEY

    store = Profile.load("tiny").store("cos_main", ROW_KEY, root=tmp_path)
    committed = store.frame()
    assert store.profile == "tiny" and len(committed) > 100
    assert store.done(**committed[ROW_KEY].iloc[0].to_dict())
    assert not any(tmp_path.rglob("*.csv"))  # nothing written to its own folder


@pytest.mark.parametrize("name", sorted(p.stem for p in (zoo.DATA / "profiles").glob("*.yaml")))
def test_one_device_rule_on_a_cpu_only_machine(name, monkeypatch, capsys):
    """Every profile gets one (device, dtype) from one rule: Profile.load, zoo.models.load_pair / load_collab and the
    notebook runner agree, and on a machine where torch sees no GPU they all say cpu (paper.yaml's cuda falls back)."""
    import importlib.util

    from specdec.zoo import device, models

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spec = models.load_profile(name)
    profile = Profile.load(name)
    assert device.profile_device(spec) == (profile.device, profile.dtype)
    assert profile.device == "cpu"
    seen = []
    monkeypatch.setattr(
        models, "load", lambda model, device=None, dtype=None, **kw: (seen.append((device, dtype)), None)
    )
    # a profile's named models (the real profile's package GGUF) load through load_named: record, never load
    monkeypatch.setattr(
        models, "load_named", lambda spec, model, device=None, dtype=None: (seen.append((device, dtype)), None)
    )
    monkeypatch.setattr(models, "check_same_vocabulary", lambda *a: None)
    for pair in spec.get("pairs") or {}:
        models.load_pair(name, pair)
    for collab in spec.get("collab") or {}:
        models.load_collab(name, collab)
    assert set(seen) <= {(profile.device, profile.dtype)}
    runner = importlib.util.spec_from_file_location("run_notebooks", zoo.ROOT / "scripts" / "run_notebooks.py")
    module = importlib.util.module_from_spec(runner)
    runner.loader.exec_module(module)
    assert module.profile_device(name) == profile.device
