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
    "llava-hf/llava-v1.6-vicuna-7b-hf",  # LLaVA-NeXT target (any-resolution processor), Table 11
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
    assert len(unpinned) <= 7, sorted(unpinned)  # mjbooo/* (3), wmt/wmt19, IWSLT/iwslt2017, Tiny-Vicuna, JParaCrawl
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
        from specdec.tabed import experiments as tb
        from specdec.zoo import tasks
        from specdec.zoo.models import load_collab, load_pair

        out = {}
        target, draft, processor = tb.load_vlm_pair("paper", "llava-7b", device="cpu")
        out["llava"] = [type(target).__name__, type(processor).__name__, processor.image_token, str(target.dtype)]
        target, draft, processor = tb.load_vlm_pair("paper", "llava-next-7b", device="cpu")
        out["next"] = [type(target).__name__, type(draft).__name__, type(processor).__name__,
                       len(processor.image_processor.image_grid_pinpoints)]
        target, draft, processor = tb.load_vlm_pair("paper", "llava-next-7b-as-authors", device="cpu", dtype=torch.float32)
        from PIL import Image
        from specdec.tabed import algorithm as drafting
        from specdec.vlm.prompts import encode
        ids, inputs = encode(processor, "USER: <image>\\nWhat is it? ASSISTANT:", [Image.new("RGB", (50, 30), (9, 99, 199))])
        ar = autoregressive(target, ids, max_new_tokens=10, eos_token_id=[], target_inputs=inputs).output_ids
        sd = generate(target, ids, drafting.make_drafter(draft, "MT*", processor.tokenizer), gamma=3, max_new_tokens=10,
                      eos_token_id=[], target_inputs=inputs, draft_inputs=inputs).output_ids
        out["authors"] = [type(target).__name__, type(processor).__name__, target.name_or_path, sd == ar,
                          int((ids == target.config.image_token_id).sum())]
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
    next_classes = ["LlavaNextForConditionalGeneration", "LlavaForConditionalGeneration", "LlavaNextProcessor"]
    assert got["next"] == [*next_classes, 3]  # target, draft, processor, any-resolution grid
    # the authors' way: the NeXT checkpoint through the LLaVA-1.5 class on the draft's processor (4 = 28/14 squared)
    assert got["authors"] == [
        "LlavaForConditionalGeneration",
        "LlavaProcessor",
        "llava-hf/llava-v1.6-vicuna-7b-hf",
        True,
        4,
    ]
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
    images get the App. I instruction; second turns are refused without the target that answers the first."""
    home = tmp_path / "hf"
    standin().build(home, only=["lmms-lab/LLaVA-NeXT-Interleave-Bench", "lmms-lab/POPE"], log=lambda *_: None)
    got = run_offline(
        home,
        """
        import json
        from specdec.tabed import data as tb
        rows = tb.load_suite("paper", n_per_scenario=1, scenarios=["spot", "psv", "pope"], turns=(1,))
        try:
            tb.load_suite("paper", n_per_scenario=1, scenarios=[("pope", 2)])
            refused = False
        except ValueError:  # second turns need the target (its first answers)
            refused = True
        print(json.dumps({"n_images": [len(r["images"]) for r in rows], "placeholders": [r["prompt"].count("<image>")
            for r in rows], "pope": rows[0]["prompt"], "refused": refused}))
        """,
    )
    assert got["n_images"] == [1, 2, 5] and got["placeholders"] == [1, 2, 5]  # in scenes.SCENARIOS order
    assert got["pope"].startswith(f"USER: <image>\n{'For the following question, provide a detailed'}")
    assert got["refused"] is True


def test_paper_second_turns_continue_the_targets_cached_greedy_answers(tmp_path):
    """Second turns on the paper profile: the first turn, the target's own greedy answer (computed once, cached
    under target id + commit + max tokens, read back afterwards), then the authors' follow-up, in the
    processor's chat template; NQ / GSM8K follow an image conversation."""
    home = tmp_path / "hf"
    ids = ["llava-hf/llava-1.5-7b-hf", "mjbooo/lvlm68m", "lmms-lab/POPE", "lmms-lab/llava-bench-in-the-wild"]
    ids += ["lmms-lab/LMMs-Eval-Lite"]  # NQ request 1 follows DocVQA request 1
    standin().build(home, only=ids + ["google-research-datasets/nq_open"], log=lambda *_: None)
    got = run_offline(
        home,
        f"""
        import json, os
        os.environ["SPECDEC_OUTPUT_DIR"] = {str(tmp_path / "out")!r}
        from specdec import engine
        from specdec.tabed import data as tb
        from specdec.tabed.experiments import load_vlm_pair
        from specdec.vlm.prompts import encode
        target, draft, processor = load_vlm_pair("paper", "llava-7b", device="cpu")
        wanted = [("pope", 2), ("nq", 2)]
        rows = {{r["id"]: r for r in tb.load_suite("paper", 2, scenarios=wanted, target=target, processor=processor,
                                                  answer_tokens=5)}}
        firsts = {{r["id"]: r for r in tb.load_suite("paper", 3, scenarios=["pope", "describe"], turns=(1,))}}
        ids, inputs = encode(processor, firsts["pope-t1-paper-00000"]["prompt"], firsts["pope-t1-paper-00000"]["images"])
        greedy = engine.autoregressive(target, ids, max_new_tokens=5, eos_token_id=processor.tokenizer.eos_token_id,
                                       target_inputs=inputs).output_ids
        answer = processor.tokenizer.decode(greedy, skip_special_tokens=True).strip()
        store = tb.answer_store("paper")
        cached = store.frame()
        engine.autoregressive = None  # a cached answer is read back, never recomputed
        tb.autoregressive = None
        again = tb.load_suite("paper", 2, scenarios=wanted, target=target, processor=processor, answer_tokens=5)
        print(json.dumps({{
            "ids": sorted(rows), "follow": [rows[i]["follow_up"] for i in sorted(rows)],
            "n_images": [len(rows[i]["images"]) for i in sorted(rows)],
            "pope0": rows["pope-t2-paper-00000"]["prompt"], "pope1": rows["pope-t2-paper-00001"]["prompt"],
            "nq0": rows["nq-t2-paper-00000"]["prompt"],
            "first_pope0": firsts["pope-t1-paper-00000"]["prompt"], "user_pope1": firsts["pope-t1-paper-00001"]["user"],
            "first_describe0": firsts["describe-t1-paper-00000"]["prompt"], "answer": answer,
            "cached": len(cached), "key": sorted(cached.columns[:5]), "target": sorted(set(cached.target)),
            "revision": sorted(set(cached.revision)),
            "again": [r["prompt"] for r in again] == [rows[r["id"]]["prompt"] for r in again],
        }}))
        """,  # noqa: E501
    )
    assert got["ids"] == ["nq-t2-paper-00000", "nq-t2-paper-00001", "pope-t2-paper-00000", "pope-t2-paper-00001"]
    assert got["follow"] == ["nq", "nq", "qaorg", "captioning"]
    assert got["n_images"] == [1, 1, 2, 1]
    first = got["first_pope0"]  # "USER: <image>\n<App. I> <question> ASSISTANT:"
    assert got["pope0"] == f"{first} {got['answer']} USER: {got['user_pope1']} ASSISTANT:"  # qaorg: next request
    assert got["pope1"].endswith("USER: Provide a detailed caption for the provided image. ASSISTANT:")
    assert got["nq0"].startswith(got["first_describe0"] + " ") and "Provide a comprehensive" in got["nq0"]
    assert got["cached"] == 4 and got["target"] == ["llava-hf/llava-1.5-7b-hf"]  # pope 0, 1, describe 0, docvqa 1
    assert got["key"] == sorted(["target", "revision", "max_new_tokens", "row", "prompt_sha"])
    pinned = load_profile("paper")["revisions"]["llava-hf/llava-1.5-7b-hf"]  # a short ref: the key holds its commit
    assert got["revision"] == [standin().revision_for("llava-hf/llava-1.5-7b-hf", pinned)]
    assert got["again"] is True
