"""The multilingual drafter recipe at paper scale (``specdec.multilingual.hub_run``) and the JParaCrawl loader,
on the stand-in hub: tiny random Llama models and a few rows under the paper's ids, read through the real path."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

from specdec import zoo
from specdec.multilingual import hub_run, hubdata
from specdec.multilingual.batches import Conversations
from specdec.multilingual.recipe import DISTIL_DIR, paper_settings

SCRIPT = zoo.ROOT / "scripts" / "standin_hub.py"
IDS = [
    "lmsys/vicuna-7b-v1.3",  # the target
    "double7/vicuna-68m",  # P
    "Jiayi-Pan/Tiny-Vicuna-1B",  # the large drafter's P
    "wmt/wmt16",  # De training prompts (and evaluation)
    hubdata.JPARACRAWL,  # Ja training prompts and evaluation
]


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("standin") / "hf"
    standin_module().build(home, only=IDS, log=lambda *_: None)
    return home


def offline_env(hf_home) -> dict:
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return env | {"HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(zoo.ROOT / "src"), "OMP_NUM_THREADS": "1"}


def recipe(hf_home, out, *args) -> list[dict]:
    """``python -m specdec.multilingual.train --profile paper ... --smoke`` (HF_HOME = the stand-in); its JSON lines."""
    cmd = [sys.executable, "-m", "specdec.multilingual.train", "--profile", "paper", *args, "--smoke", "--device",
           "cpu", "--langs", "de", "ja", "--out", str(out)]  # fmt: skip
    run = subprocess.run(cmd, env=offline_env(hf_home), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def trained(hf_home, tmp_path_factory):
    out = tmp_path_factory.mktemp("ml") / "specdec-ml-drafters"
    return out, recipe(hf_home, out, "all")


def snapshot(hf_home, repo_id: str) -> pathlib.Path:
    return next((hf_home / "hub" / f"models--{repo_id.replace('/', '--')}" / "snapshots").iterdir())


def test_recipe_distils_then_trains_every_drafter(trained):
    out, lines = trained
    files = sorted((out / DISTIL_DIR).rglob("part-*.jsonl"))
    cfg = paper_settings(smoke=True)
    parts = -(-cfg["prompts_per_pair"] // cfg["chunk_size"])
    assert len(files) == 2 * len(cfg["temperatures"]) * parts  # 2 pairs x 4 temperatures x parts
    row = json.loads(files[0].read_text().splitlines()[0])
    assert row["prompt_ids"][0] == 1 and row["output_ids"] and row["lang"] in ("de", "ja")
    ja = [json.loads(x) for f in files if "/ja/" in str(f) for x in f.read_text().splitlines()]
    assert all(r["id"].startswith(f"{hubdata.JPARACRAWL}:train[:-80]:") for r in ja)  # never the evaluation tail
    summary = {r["model"]: r for r in csv_rows(out / "ml_training.csv")}
    drafters = ["ml-draft-f-de", "ml-draft-pf-de", "ml-draft-f-ja", "ml-draft-pf-ja", "ml-draft-large-pf-de"]
    assert {"ml-target", "ml-draft-generic", *drafters, "ml-draft-f-de-b2", "ml-draft-pf-de-b2"} <= set(summary)
    assert all((out / name / "training_log.json").exists() for name in drafters)
    assert summary["ml-draft-pf-de"]["init"] == "double7/vicuna-68m"
    assert summary["ml-draft-large-pf-de"]["init"] == "Jiayi-Pan/Tiny-Vicuna-1B"
    assert summary["ml-draft-f-de"]["init"].startswith("random")
    main = summary["ml-draft-pf-de"]
    alias = summary[f"ml-draft-pf-de-b{main['finetune_budget']}"]
    assert alias["same_as"] == "ml-draft-pf-de" and int(summary["ml-draft-pf-de-b2"]["finetune_budget"]) == 2
    steps = [line["step"] for line in lines if line.get("model") == "ml-draft-pf-de"]
    assert steps[-1] == int(main["finetune_steps"]) > 1  # trained through the one loop


def csv_rows(path):
    import csv

    with path.open() as f:
        return list(csv.DictReader(f))


def test_saved_drafter_loads_and_greedy_sd_with_it_is_lossless(hf_home, trained):
    from transformers import AutoModelForCausalLM

    from specdec.engine import autoregressive, generate

    out, _ = trained
    target = AutoModelForCausalLM.from_pretrained(snapshot(hf_home, "lmsys/vicuna-7b-v1.3")).eval()
    pretrained = AutoModelForCausalLM.from_pretrained(snapshot(hf_home, "double7/vicuna-68m")).eval()
    row = json.loads(next((out / DISTIL_DIR / "de").rglob("part-*.jsonl")).read_text().splitlines()[0])
    prompt = torch.tensor(row["prompt_ids"])
    plain = autoregressive(target, prompt, max_new_tokens=16).output_ids
    for name in ("ml-draft-pf-de", "ml-draft-f-de", "ml-draft-pf-ja"):
        drafter = AutoModelForCausalLM.from_pretrained(out / name).eval()
        assert type(drafter).__name__ == "LlamaForCausalLM"
        assert drafter.config.vocab_size == target.config.vocab_size
        assert generate(target, prompt, drafter, gamma=3, max_new_tokens=16).output_ids == plain
    trained_pf = AutoModelForCausalLM.from_pretrained(out / "ml-draft-pf-de")
    moved = [not torch.equal(a, b) for a, b in zip(trained_pf.parameters(), pretrained.parameters())]
    assert any(moved)  # finetuning changed vicuna-68m's weights


def test_distillation_is_cached_and_an_interrupted_run_resumes(hf_home, trained):
    out, _ = trained
    files = sorted((out / DISTIL_DIR).rglob("part-*.jsonl"))
    before = {f: f.stat().st_mtime_ns for f in files}
    assert "/de/" in str(files[3])
    files[3].unlink()  # as if the run had stopped before this file
    with pytest.raises(FileNotFoundError, match="incomplete"):
        hub_run.load_pair(out, "de", 512, 0)  # finetuning refuses a partial distillation
    lines = recipe(hf_home, out, "distil")
    counts = next(line["distil"] for line in lines if "distil" in line)
    assert counts == {"written": 1, "kept": len(files) - 1}
    assert files[3].exists() and all(f.stat().st_mtime_ns == before[f] for f in files if f != files[3])


def test_jparacrawl_loader_holds_out_the_last_80_train_rows(hf_home):
    """Ja: JParaCrawl's train split only; the evaluation set is train[-80:], the training prompts train[:-80]."""
    code = f"""
        import json
        from specdec.hub import load_dataset
        from specdec.multilingual import hubdata
        ids = "{hubdata.JPARACRAWL}"
        train = [hubdata.pair_of(r) for r in load_dataset(ids, None, "train")]
        held = hubdata.parallel_rows(ids, None, "train[-80:]")
        rest = hubdata.parallel_rows(ids, None, "train[:-80]")
        prompts = hubdata.load_paper_prompts("ja", "en", 2)
        print(json.dumps({{"train": train, "held": held, "rest": rest, "prompts": prompts,
                          "columns": load_dataset(ids, None, "train").column_names}}))
    """
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=offline_env(hf_home),
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert {"japanese", "english"} <= set(got["columns"])
    assert len(got["held"]) == hubdata.JPARACRAWL_HELDOUT and got["held"] == got["train"][-80:]
    assert got["rest"] == got["train"][:-80] and len(got["rest"]) > 0
    assert set(got["held"][0]) == {"ja", "en"}
    first = got["prompts"][0]
    assert "USER: Translate Japanese to English: " + got["held"][0]["ja"] in first["prompt"]
    assert first["reference"] == " " + got["held"][0]["en"] and first["source"] == hubdata.JPARACRAWL


def test_pair_of_reads_both_schemas():
    assert hubdata.pair_of({"translation": {"de": "Haus", "en": "house"}}) == {"de": "Haus", "en": "house"}
    row = {"english": "cat", "japanese": "猫", "model1_accepted": 1, "model2_accepted": 0}
    assert hubdata.pair_of(row) == {"ja": "猫", "en": "cat"}
    with pytest.raises(KeyError, match="parallel"):
        hubdata.pair_of({"text": "x"})


def test_conversation_batches_mask_everything_but_the_answer():
    conv = Conversations.from_pairs([([1, 5, 6], [7, 2]), ([1, 8], [9, 10, 2])], max_length=4, pad_id=0)
    assert conv.answer_len.tolist() == [1, 2]  # truncated to 4 tokens: [1 5 6 7], [1 8 9 10]
    batch = conv.batch(torch.tensor([0, 1]), "cpu")
    assert batch["input_ids"].tolist() == [[1, 5, 6], [1, 8, 9]]  # the last token predicts nothing
    assert batch["labels"].tolist() == [[-100, -100, -100, 7], [-100, -100, 9, 10]]
    short = Conversations.from_pairs([([1, 5], [2]), ([1, 8, 8], [9, 2])], max_length=16, pad_id=0)
    batch = short.batch(torch.tensor([0, 1]), "cpu")
    assert batch["labels"].tolist() == [[-100, -100, 2, -100, -100], [-100, -100, -100, 9, 2]]
    assert batch["input_ids"].tolist() == [[1, 5, 2, 0], [1, 8, 8, 9]] and "attention_mask" not in batch
    assert short.head(1).n == 1 and short.head(1).answer_len.tolist() == [1]
    shuffled = Conversations(short.tokens, short.offsets, short.prompt_len, 0, torch.tensor([1, 0]))
    assert shuffled.answer_len.tolist() == [2, 1]
    first = shuffled.head(1).batch(torch.tensor([0]), "cpu")
    assert first["labels"].tolist() == [[-100, -100, -100, 9, 2]]


def test_settings_come_from_paper_yaml():
    cfg = paper_settings()
    assert cfg["pretrained"] == "double7/vicuna-68m" and cfg["target"] == "lmsys/vicuna-7b-v1.3"
    assert cfg["temperatures"] == [0.0, 0.3, 0.7, 1.0] and cfg["epochs"] == {"P-F": 3, "F": 5}
    assert cfg["train_sets"]["ja"] == [hubdata.JPARACRAWL, None, "train[:-80]"]
    assert paper_settings(smoke=True, lr=1e-3)["lr"] == 1e-3
    with pytest.raises(ValueError, match="unknown recipe settings"):
        paper_settings(learning_rate=1.0)


# Marked slow (make test-all): a multi-process launch (accelerate, two processes) costs about 12 s of make test's
# 15 minutes on two cores, mostly process start-up; the single-process path it distributes is tested in make test.
@pytest.mark.slow
def test_accelerate_launch_two_processes_runs_the_recipe(hf_home, tmp_path):
    """``accelerate launch`` (DDP over gloo on 2 CPU processes) of ``scripts/train_accelerate.py
    multilingual-paper``: the distillation files are dealt to the two processes, every drafter trains on both
    and is saved once, loadable with ``from_pretrained``."""
    import socket

    from transformers import AutoModelForCausalLM

    pytest.importorskip("accelerate")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "drafters"
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
              str(zoo.ROOT / "configs" / "accelerate" / "ddp.yaml"), "--num_processes", "2", "--main_process_port",
              str(port), str(zoo.ROOT / "scripts" / "train_accelerate.py"), "multilingual-paper", "all", "--smoke",
              "--langs", "de", "--no-large", "--out", str(out)]  # fmt: skip
    env = offline_env(hf_home) | {"ACCELERATE_USE_CPU": "true"}
    done = subprocess.run(launch, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    counts = [json.loads(x) for x in done.stdout.splitlines() if x.startswith('{"distil"')]
    assert len(counts) == 1  # only the main process logs
    cfg = paper_settings(smoke=True)
    files = list((out / DISTIL_DIR / "de").rglob("part-*.jsonl"))
    assert len(files) == len(cfg["temperatures"]) * -(-cfg["prompts_per_pair"] // cfg["chunk_size"])
    summary = {r["model"]: r for r in csv_rows(out / "ml_training.csv")}
    assert summary["ml-draft-pf-de"]["processes"] == "2" and "ml-draft-large-pf-de" not in summary
    assert AutoModelForCausalLM.from_pretrained(out / "ml-draft-pf-de").config.model_type == "llama"


def test_paper_smoke_trains_the_drafters_before_every_notebook_that_reads_them():
    """Every notebook that binds the ml-* names (a ``multilingual.experiments`` table) is in paper_smoke's
    ML_NOTEBOOKS, so the recipe has written the drafters it loads; the smoke runs the recipe, not stand-in weights."""
    spec = importlib.util.spec_from_file_location("paper_smoke", zoo.ROOT / "scripts" / "paper_smoke.py")
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    readers = {
        nb.name[:3]
        for nb in (zoo.ROOT / "notebooks").glob("[0-9]*.ipynb")
        if "from specdec.multilingual import" in nb.read_text()
    }
    assert readers and readers <= set(smoke.ML_NOTEBOOKS)
    assert not hasattr(standin_module(), "write_ml_drafters")  # no random stand-in drafters any more


def standin_module():
    spec = importlib.util.spec_from_file_location("standin_hub", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
