"""Real-user plumbing of the paper profile: device labels, HF_HOME, make download, the notebooks' device."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time

import pytest
import torch

from specdec import bench, hub, results, zoo
from specdec.harness.profile import Profile
from specdec.multilingual import experiments as ml_experiments
from specdec.multilingual import hubdata as ml_hubdata
from specdec.zoo.models import load_profile


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, zoo.ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_a_cpu_machine_is_never_labelled_as_a_gpu():
    with pytest.raises(RuntimeError, match="no CUDA device"):
        bench.describe_device("cuda")
    model = torch.nn.Linear(2, 2)
    assert bench.describe_device(model).startswith("cpu")  # a model: where its weights are


def test_notebooks_follow_the_profiles_device_unless_told():
    run = script("run_notebooks")
    paper = run.build_parameters(run.parse_args(["--profile", "paper"]))
    assert load_profile("paper")["device"] == "cuda"
    assert paper["device"] == ("cuda" if torch.cuda.is_available() else "cpu")  # what torch sees
    assert run.build_parameters(run.parse_args(["--profile", "paper", "-p", "device", "cpu"]))["device"] == "cpu"
    assert "device" not in run.build_parameters(run.parse_args([]))  # tiny: the notebooks' own default


def test_executed_notebooks_embed_their_figures_even_under_a_headless_backend(tmp_path, monkeypatch):
    """MPLBACKEND=agg (what make test sets) once left every committed notebook without its figures."""
    import nbformat

    run = script("run_notebooks")
    monkeypatch.setenv("MPLBACKEND", "agg")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0]);")]
    nbformat.write(nb, tmp_path / "plot.ipynb")
    name, status, _ = run.execute(tmp_path / "plot.ipynb", tmp_path / "out.ipynb", {}, "specdec", tmp_path, None)
    assert status == "ok", status
    outputs = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_the_paper_profile_sets_each_notebooks_paper_settings(tmp_path):
    """paper.yaml notebook_params: CoS every Table 1 set and 256 new tokens; -p / -f still win; tiny untouched."""
    run = script("run_notebooks")
    nb = zoo.ROOT / "notebooks" / "20_cos_main.ipynb"
    args = run.parse_args(["--profile", "paper"])
    params = run.notebook_parameters(nb, run.build_parameters(args), args)
    assert params["max_new_tokens"] == 256 and {c["set"] for c in params["configs"]} == set(params["paper_pairs"])
    assert set(params["paper_pairs"]) == set(load_profile("paper")["collab"]) - {"we", "we3", "cd"}
    args = run.parse_args(["--profile", "paper", "-p", "max_new_tokens", "8"])
    assert run.notebook_parameters(nb, run.build_parameters(args), args)["max_new_tokens"] == 8
    args = run.parse_args([])
    assert run.notebook_parameters(nb, run.build_parameters(args), args) == {"profile": "tiny"}


def test_model_provenance_keeps_hub_ids_whatever_the_working_directory(tmp_path, monkeypatch):
    model = torch.nn.Linear(2, 2)
    model.config = type("Config", (), {"_name_or_path": "Qwen/Qwen2.5-3B-Instruct"})()
    (tmp_path / "Qwen").mkdir()  # a folder of that first name where the notebook runs must not matter
    monkeypatch.chdir(zoo.ROOT / "notebooks")
    assert results.model_provenance(target=model)["target_model"] == "Qwen/Qwen2.5-3B-Instruct"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_makefile_respects_hf_home_from_the_environment(tmp_path):
    show = ["make", "--no-print-directory", "-C", str(zoo.ROOT), "--eval", "show-hf-home: ; @echo $$HF_HOME"]
    env = {k: v for k, v in os.environ.items() if k != "HF_HOME"}
    given = subprocess.run([*show, "show-hf-home"], env={**env, "HF_HOME": str(tmp_path)}, capture_output=True)
    default = subprocess.run([*show, "show-hf-home"], env=env, capture_output=True)
    assert given.stdout.decode().strip() == str(tmp_path)
    assert default.stdout.decode().strip() == str(zoo.ROOT / ".cache" / "huggingface")


def test_download_fails_fast_offline(monkeypatch):
    spec = load_profile("paper")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hub.HubUnreachableError, match="offline flag"):
        hub.download(spec)
    for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=2.0: False)
    start = time.perf_counter()
    with pytest.raises(hub.HubUnreachableError, match="make download PROFILE=paper"):
        hub.download(spec)
    assert time.perf_counter() - start < 1
    assert hub.main(["download", "--profile", "paper"]) == 2  # the exit status make download stops on


def test_download_lists_what_it_fetched_and_what_needs_a_token(monkeypatch, tmp_path):
    """Gated repositories (meta-llama/*) are reported as needing a token; the others as fetched."""
    import datasets
    import httpx
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=2.0: True)

    spec = load_profile("paper")
    fetched_at = {}

    def snapshot_download(repo_id, revision=None, ignore_patterns=()):
        assert "original/*" in ignore_patterns  # Meta's consolidated checkpoints are not fetched
        fetched_at[repo_id] = revision
        if repo_id.startswith("meta-llama/"):
            request = httpx.Request("GET", f"https://huggingface.co/{repo_id}")
            raise GatedRepoError(f"{repo_id} is gated", response=httpx.Response(401, request=request))
        return str(tmp_path / "snapshots" / "0123abcd")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: fetched_at.update({a[0]: k["revision"]}) or [1, 2, 3])
    report = hub.download(spec, log=lambda *_: None)
    assert fetched_at == {i: spec["revisions"][i] for i in fetched_at}  # every fetch at the commit paper.yaml pins
    assert fetched_at["llava-hf/llava-1.5-7b-hf"].startswith("a272c74") and fetched_at["cais/mmlu"]
    gated = sorted(m for m in hub.profile_models(spec) if m.startswith("meta-llama/"))
    assert report["needs_token"] == gated and len(gated) == 3
    assert len(report["fetched"]) == len(hub.profile_models(spec)) - 3 + len(hub.profile_datasets(spec))
    assert report["failed"] == [] and "facebook/opt-125m @ 0123abcd" in report["fetched"]


def test_errors_name_the_hf_command(monkeypatch, tmp_path):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("no")))
    with pytest.raises(hub.DatasetNotAvailableError) as info:
        hub.load_dataset("openai/gsm8k", "main", "test")
    assert "hf download --repo-type dataset openai/gsm8k" in str(info.value)
    assert "huggingface-cli" not in str(info.value)
    with pytest.raises(hub.DatasetNotAvailableError, match="openai/gsm8k --revision 740312a"):
        hub.load_dataset("openai/gsm8k", "main", "test", revision=hub.paper_revision("openai/gsm8k"))


def test_load_dataset_reads_the_revision_it_is_given(monkeypatch):
    import datasets

    seen = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: seen.append((a, k)) or datasets.Dataset.from_dict({}))
    hub.load_dataset("openai/gsm8k", "main", "test", revision="0" * 40)
    assert seen == [(("openai/gsm8k", "main"), {"split": "test", "revision": "0" * 40})]


def test_the_paper_path_loads_every_dataset_at_its_pinned_commit(monkeypatch):
    """TABED, AASD and multilingual loaders pass paper.yaml's commit as ``revision`` (CoS: tests/test_cos_tasks)."""
    import datasets

    from specdec.aasd import experiments as aasd_experiments
    from specdec.tabed import data as tb

    asked = []

    def fake_hub_load(dataset_id, config, split, n=None, revision=None):
        asked.append((dataset_id, revision))
        return datasets.Dataset.from_dict({"sub_task": []})

    monkeypatch.setattr(tb, "load_dataset", fake_hub_load)
    monkeypatch.setattr(hub, "load_dataset", fake_hub_load)
    monkeypatch.setattr(
        datasets, "load_dataset", lambda path, name, split, revision: fake_hub_load(path, name, split, None, revision)
    )
    tb.paper_rows("pope", 1)
    tb.paper_rows("spot", 1)  # an LLaVA-Interleave sub-task
    aasd_experiments.paper_requests("paper", 1)
    ml_hubdata.load_paper_prompts("de", "en", 1)
    ml_hubdata.load_paper_prompts("de", "en", 1, generalization=True)
    spec = load_profile("paper")
    ids = {"lmms-lab/POPE", "lmms-lab/LLaVA-NeXT-Interleave-Bench", "lmms-lab/COCO-Caption2017", "wmt/wmt16"}
    assert ids <= {i for i, _ in asked}
    assert all(revision == spec["revisions"][i] for i, revision in asked), asked
    assert sum(revision is None for _, revision in asked) == 1  # IWSLT/iwslt2017: unpinned, says why


def test_multilingual_names_stand_for_the_paper_models(monkeypatch, tmp_path):
    """Under the paper profile ml-target is Vicuna-7B v1.3 and the generic drafter vicuna-68m (not the tiny zoo);
    a trained drafter is looked up in drafters_dir() and its absence names the fix."""
    paper = ml_experiments.Drafters(Profile.load("paper", device="cpu"))
    assert paper.where("ml-target") == "lmsys/vicuna-7b-v1.3"
    assert paper.where("ml-draft-generic") == "double7/vicuna-68m"
    monkeypatch.setenv("SPECDEC_ML_DRAFTERS", str(tmp_path))
    with pytest.raises(hub.ModelNotAvailableError, match="SPECDEC_ML_DRAFTERS"):
        paper.where("ml-draft-pf-de")
    (tmp_path / "ml-draft-pf-de").mkdir()
    (tmp_path / "ml-draft-pf-de" / "config.json").write_text("{}")
    assert paper.source("ml-draft-pf-de") == (str(tmp_path / "ml-draft-pf-de"), None)


def test_the_tiny_profile_keeps_the_zoo():
    tiny = ml_experiments.Drafters("tiny")
    assert tiny.source("ml-target") == ("ml-target", None)
    assert next(tiny.load("ml-draft-generic").parameters()).dtype == torch.float32
