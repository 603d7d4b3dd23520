"""The stand-in hub: tiny copies of the paper profile's ids, loaded through the very code path of the real hub."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from specdec import hub, zoo
from specdec.zoo.models import load_profile

SCRIPT = zoo.ROOT / "scripts" / "standin_hub.py"
ONE_OF_EACH = [
    "llava-hf/llava-1.5-7b-hf",  # LLaVA target with its processor
    "mjbooo/lvlm68m",  # LLaVA draft
    "lmsys/vicuna-7b-v1.3",  # Llama (sentencepiece-style tokenizer)
    "double7/vicuna-68m",
    "Qwen/Qwen2.5-3B-Instruct",  # Qwen2 (ChatML template)
    "Qwen/Qwen2.5-Coder-3B-Instruct",
    "facebook/opt-125m",  # OPT (GPT-2 tokenizer)
    "facebook/opt-13b",
    "openai/gsm8k",  # a dataset with a config and two splits
]


def standin():
    spec = importlib.util.spec_from_file_location("standin_hub", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("standin") / "hf"
    built = standin().build(home, only=ONE_OF_EACH, log=lambda *_: None)
    assert sorted(built["models"]) == sorted(ONE_OF_EACH[:-1]) and built["datasets"] == ["openai/gsm8k:main"]
    return home


def run_offline(hf_home, code: str) -> dict:
    """Run ``code`` in a fresh interpreter with HF_HOME = the stand-in cache and every offline flag set (the
    hub libraries read HF_HOME when imported); it prints one JSON object."""
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env |= {"HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(zoo.ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_paper_id_has_a_stand_in():
    """Every model id of paper.yaml has a family (class, tokenizer), every dataset a schema with rows."""
    module, spec = standin(), load_profile("paper")
    assert set(hub.profile_models(spec)) <= set(module.FAMILY)
    for d in hub.profile_datasets(spec):
        features, rows = module.dataset_rows(d["id"], d["config"])
        assert set(rows) == set(features), d["id"]


def test_every_paper_id_is_pinned_or_says_why_not():
    """Issue 13: every model and dataset id of paper.yaml (AASD tasks and baseline data included) is in
    ``revisions``, pinned to a full 40-hex commit, or null with a reason under ``unpinned`` (and nothing else)."""
    spec = load_profile("paper")
    ids = set(hub.profile_ids(spec))
    assert {"lmms-lab/COCO-Caption2017", "laion/OIG", "wmt/wmt16"} <= ids and "JParaCrawl-v3.0" not in ids
    assert set(spec["revisions"]) == ids
    unpinned = {i for i in ids if spec["revisions"][i] is None}
    assert set(spec["unpinned"]) == unpinned
    assert all(isinstance(why, str) and len(why) > 20 for why in spec["unpinned"].values())
    bad = {i: r for i, r in spec["revisions"].items() if r is not None and not re.fullmatch(r"[0-9a-f]{40}", r)}
    assert not bad, f"pins must be full commit hashes (short ones do not resolve offline as snapshots): {bad}"
    assert len(unpinned) <= 6, sorted(unpinned)  # mjbooo/*, wmt/wmt19, IWSLT/iwslt2017, Tiny-Vicuna, JParaCrawl
    # the TABED authors' short revision a272c74, as its full hash
    assert spec["revisions"]["llava-hf/llava-1.5-7b-hf"].startswith("a272c74")
    assert spec["pairs"]["llava-7b-160m"]["draft"] == "mjbooo/lvlm160m-bf16"  # the authors' code's id
    assert {"we", "we3", "cd"} <= set(spec["collab"])  # the set names notebooks 20-22 use
    assert hub.paper_revision("cais/mmlu") == spec["revisions"]["cais/mmlu"]
    assert set(hub.profile_models(spec)).isdisjoint(hub.profile_dataset_ids(spec))


def test_models_and_a_dataset_load_through_the_normal_path(hf_home):
    """One LLaVA, one Llama, one Qwen2, one OPT and one dataset, through load_vlm_pair / load_pair / load_collab /
    hub.load_dataset with nothing but HF_HOME pointing at the stand-in cache; greedy SD stays lossless."""
    got = run_offline(
        hf_home,
        """
        import json, torch
        from specdec.engine import autoregressive, generate
        from specdec import hub
        from specdec.hub import load_dataset
        from specdec.tabed import bench as tb
        from specdec.zoo import tasks
        from specdec.zoo.models import load_collab, load_pair

        out = {}
        target, draft, processor = tb.load_vlm_pair("paper", "llava-7b", device="cpu")
        out["llava"] = [type(target).__name__, type(processor).__name__, processor.image_token, str(target.dtype)]
        target, draft, tok = load_pair("paper", "default", device="cpu", dtype=torch.float32)
        ids = tasks.encode(tok, "Question: Tom has 3 boxes")
        sd = generate(target, ids, draft, gamma=3, max_new_tokens=12).output_ids
        out["llama"] = [type(target).__name__, type(tok).__name__, tok.bos_token, sd == autoregressive(target, ids, max_new_tokens=12).output_ids]
        models, tok, kind = load_collab("paper", "we", device="cpu")
        out["qwen"] = [type(models[0]).__name__, type(tok).__name__, tok.eos_token, "im_start" in tok.chat_template, kind]
        models, tok, kind = load_collab("paper", "cd-opt", device="cpu")
        out["opt"] = [type(models[1]).__name__, type(tok).__name__, tok.bos_token, tok("a").input_ids[0] == tok.bos_token_id]
        data = load_dataset("openai/gsm8k", "main", "test", 2, revision=hub.paper_revision("openai/gsm8k"))
        out["gsm8k"] = [len(data), sorted(data.column_names)]
        from transformers import AutoConfig
        pin = hub.paper_revision("facebook/opt-125m")
        out["pinned"] = AutoConfig.from_pretrained("facebook/opt-125m", revision=pin).model_type
        try:
            AutoConfig.from_pretrained("facebook/opt-125m", revision="f" * 40)
            out["other"] = "loaded"
        except OSError:
            out["other"] = "absent"
        print(json.dumps(out))
        """,  # noqa: E501
    )
    assert got["llava"] == ["LlavaForConditionalGeneration", "LlavaProcessor", "<image>", "torch.float16"]
    assert got["llama"] == ["LlamaForCausalLM", "LlamaTokenizer", "<s>", True]
    assert got["qwen"] == ["Qwen2ForCausalLM", "Qwen2Tokenizer", "<|im_end|>", True, "we"]
    assert got["opt"] == ["OPTForCausalLM", "GPT2Tokenizer", "</s>", True]
    assert got["gsm8k"] == [2, ["answer", "question"]]
    assert got["pinned"] == "opt" and got["other"] == "absent"  # the stand-in sits at the pinned commit only
    pin = hub.paper_revision("facebook/opt-125m")
    assert (hf_home / "hub" / "models--facebook--opt-125m" / "refs" / "main").read_text() == pin


def test_datasets_offline_reads_the_prepared_cache_not_the_parquet_repo(hf_home, tmp_path):
    """What datasets 5.2 does offline: only the prepared Arrow cache (``$HF_HOME/datasets``) is read; the
    hub-layout parquet repo alone (what ``hf download`` leaves) does not load. So the stand-in writes both, and
    ``make download`` loads every dataset once."""
    import shutil

    assert (hf_home / "hub" / "datasets--openai--gsm8k" / "refs" / "main").exists()
    pin = hub.paper_revision("openai/gsm8k")  # both written under the pinned commit
    assert (hf_home / "hub" / "datasets--openai--gsm8k" / "snapshots" / pin / "main").is_dir()
    assert (hf_home / "datasets" / "openai___gsm8k" / "main" / "0.0.0" / pin / "dataset_info.json").exists()
    only_repo = tmp_path / "hf"
    shutil.copytree(hf_home / "hub", only_repo / "hub")
    got = run_offline(
        only_repo,
        """
        import json
        from specdec.hub import DatasetNotAvailableError, load_dataset
        try:
            load_dataset("openai/gsm8k", "main", "test", 2)
            print(json.dumps({"loaded": True}))
        except DatasetNotAvailableError as err:
            print(json.dumps({"loaded": False, "message": str(err)}))
        """,
    )
    assert got["loaded"] is False and "make download PROFILE=paper" in got["message"]


def test_the_paper_suite_reads_multi_image_sets_from_the_interleave_bench(tmp_path):
    """TABED's multi-image scenarios load from the LLaVA-Interleave bench sub-tasks (images image_0..); single
    images get the App. I instruction; second turns are refused (not built for the paper profile)."""
    home = tmp_path / "hf"
    standin().build(home, only=["lmms-lab/LLaVA-NeXT-Interleave-Bench", "lmms-lab/POPE"], log=lambda *_: None)
    got = run_offline(
        home,
        """
        import json
        from specdec.tabed import bench as tb
        rows = tb.load_suite("paper", n_per_scenario=1, scenarios=["spot", "psv", "pope"])
        try:
            tb.load_suite("paper", n_per_scenario=1, scenarios=[("pope", 2)])
            refused = False
        except tb.DatasetNotAvailableError:
            refused = True
        print(json.dumps({"n_images": [len(r["images"]) for r in rows], "placeholders": [r["prompt"].count("<image>")
            for r in rows], "pope": rows[2]["prompt"], "refused": refused}))
        """,
    )
    assert got["n_images"] == [2, 5, 1] and got["placeholders"] == [2, 5, 1]
    assert got["pope"].startswith(f"USER: <image>\n{'For the following question, provide a detailed'}")
    assert got["refused"] is True
