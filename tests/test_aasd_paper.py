"""AASD at paper scale on the stand-in hub: the recipe (target answers -> modules and distilled baselines) runs
through the real loaders, resumes without decoding again, and every draft it makes is lossless on the paper path;
TDA training under ``accelerate`` is the plain loop; a Llama draft on LLaVA's larger vocabulary is padded, not
refused, and only when its vocabulary is a prefix of the target's."""

from __future__ import annotations

import pytest
import torch
from test_aasd import random_module, request
from test_standin_hub import run_offline, standin

from conftest import random_llava
from specdec.aasd import baselines
from specdec.aasd.rows import make_batch, text_only_batch
from specdec.aasd.tda import TDAObjective, tda_loss
from specdec.engine import generate
from specdec.zoo import models, training

TARGET = "llava-hf/llava-1.5-7b-hf"


def tiny_llava(layers: int = 2, seed: int = 0):
    """The random LLaVA of ``tests/test_aasd.py`` (4 query heads, 2 key-value heads)."""
    return random_llava(layers=layers, seed=seed, heads=4)


IDS = [
    TARGET,
    "mjbooo/lvlm68m",
    "double7/vicuna-68m",
    "lmms-lab/llava-bench-in-the-wild",
    "lmms-lab/COCO-Caption2017",
    "lmms-lab/ScienceQA",
]


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("aasd-standin") / "hf"
    standin().build(home, only=IDS, log=lambda *_: None)
    return home


def test_the_paper_recipe_trains_resumes_and_every_draft_is_lossless(hf_home, tmp_path):
    out = run_offline(
        hf_home,
        f"""
        import json, os, pathlib
        os.environ["SPECDEC_AASD_ZOO"] = "{tmp_path / "zoo"}"
        os.environ["SPECDEC_OUTPUT_DIR"] = "{tmp_path / "out"}"
        from specdec.aasd import distill, experiments, tables, train, zoo_specs
        saved = train.paper("{TARGET}", steps=2, n=2, max_new_tokens=4, batch_size=2, device="cpu")
        zoo = zoo_specs.zoo_dir()
        answers = sorted(zoo.glob("distill-*.jsonl"))
        lines = answers[0].read_text().splitlines()
        def boom(*a, **k):
            raise AssertionError("decoded a stored answer again")
        distill.generate = boom  # a second run must read every answer back
        again = train.paper("{TARGET}", steps=1, n=2, max_new_tokens=4, variants=("",), baselines_too=False,
                              device="cpu")
        from specdec.harness.profile import Profile
        profile = Profile.load("paper", "cpu")
        requests = experiments.load_requests(1, profile=profile)
        store = experiments.store(profile)
        drafts = list(tables.MAIN_DRAFTS) + [d for d in tables.ABLATIONS if d != "AASD"]
        experiments.experiment(store, profile, "t", "{TARGET}", requests, drafts, [1, 3], 8).run()
        frame = tables.runs(store.frame(), "t")
        sd = frame[frame.draft != "AR"]
        print(json.dumps(dict(saved=sorted(saved), answers=[a.name for a in answers], lines=len(lines),
                              after=len(answers[0].read_text().splitlines()), again=sorted(again),
                              drafts=sorted(sd.draft.unique()), runs=len(sd), lossless=int(sd.lossless.sum()),
                              tasks=sorted(frame.task.unique()), device=sorted(frame.device.unique()))))
        """,
    )
    assert out["saved"] == sorted(
        [
            "aasd-module-llava-1.5-7b-hf",
            "aasd-module-llava-1.5-7b-hf-noproj",
            "aasd-module-llava-1.5-7b-hf-k1",
            "aasd-module-llava-1.5-7b-hf-own",
            "aasd-dt-llama-llava-1.5-7b-hf",
            "aasd-dt-llava-llava-1.5-7b-hf",
        ]
    )
    # the answers are keyed by the pinned revision and their length; 2 prompts from each training set
    pin = models.revision_of(models.load_profile("paper"), TARGET)
    assert out["answers"] == [f"distill-llava-1.5-7b-hf@{pin}-4.jsonl"] and out["lines"] == out["after"] == 4
    assert out["again"] == ["aasd-module-llava-1.5-7b-hf"]
    assert out["drafts"] == sorted(set(paper_drafts()))
    assert out["runs"] == out["lossless"] == 3 * 10 * 2  # 3 tasks x 1 request, 10 drafts, 2 gammas
    assert out["tasks"] == ["COCO Caption", "LLaVA-Bench", "ScienceQA CoT"] and out["device"] == ["cpu"]


# Marked slow (make test-all): a multi-process launch (accelerate, two processes) costs about 16 s of make test's
# 15 minutes on two cores, mostly process start-up; the single-process path it distributes is tested in make test.
@pytest.mark.slow
def test_accelerate_launch_trains_the_paper_recipe_on_two_processes(hf_home, tmp_path):
    """DDP over two CPU processes (gloo): the TDA objective and both distilled baselines train and save once."""
    import json
    import os
    import subprocess
    import sys

    from test_accelerate import CONFIGS, _free_port

    from specdec import zoo

    launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / "ddp.yaml")]
    launch += ["--num_processes", "2", "--main_process_port", str(_free_port()), "-m", "specdec.aasd.train", "paper"]
    launch += ["--target", TARGET, "--steps", "2", "--n", "2", "--max-new-tokens", "4", "--batch-size", "2"]
    launch += ["--device", "cpu", "--variants", "", "own", "--zoo", str(tmp_path)]
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "HF_HOME": str(hf_home)}
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env["PYTHONPATH"] = str(zoo.ROOT / "src")
    done = subprocess.run(launch, env=env, capture_output=True, text=True, timeout=300, cwd=zoo.ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    saved = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert saved == ["aasd-dt-llama-llava-1.5-7b-hf", "aasd-dt-llava-llava-1.5-7b-hf", "aasd-module-llava-1.5-7b-hf",
                     "aasd-module-llava-1.5-7b-hf-own"]  # fmt: skip
    info = json.loads((tmp_path / "aasd-module-llava-1.5-7b-hf" / "config.json").read_text())
    assert info["training"]["processes"] == 2 and len(info["log"]) >= 1
    assert done.stdout.count("saved aasd-module-llava-1.5-7b-hf:") == 1  # the main process alone saves


def paper_drafts():
    from specdec.aasd import tables

    return list(tables.MAIN_DRAFTS) + [d for d in tables.ABLATIONS if d != "AASD"]


def test_a_missing_paper_module_names_the_command(tmp_path, monkeypatch):
    from specdec.aasd import experiments

    monkeypatch.setenv("SPECDEC_AASD_ZOO", str(tmp_path))
    target = tiny_llava(layers=1)
    with pytest.raises(models.ModelNotAvailableError, match="python -m specdec.aasd.train paper --target x/y"):
        experiments.make_drafter("AASD", "x/y", target, None, None, profile="paper")


def test_tda_training_through_one_accelerate_process_is_the_plain_loop():
    import accelerate

    target = tiny_llava(layers=1)
    prompt, pixels = request(1, seed=3)
    answer = torch.randint(3, 60, (6,), generator=torch.Generator().manual_seed(4))
    ids = torch.cat([prompt, answer])[None]
    labels = torch.full_like(ids, -100)
    labels[0, len(prompt) :] = answer
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels, **pixels}

    def trained(accelerator):
        module = random_module(target, seed=1)
        picks = torch.Generator().manual_seed(2)
        training.train(
            TDAObjective(module), lambda g: None, lambda m, _: tda_loss(m, batch, target, (0, 1, 2), 10**6, picks),
            steps=3, lr=1e-2, seed=0, progress=False, log_every=10, accelerator=accelerator,
        )  # fmt: skip
        return [p.detach().clone() for p in module.parameters()]

    plain, accelerated = trained(None), trained(accelerate.Accelerator(cpu=True))
    assert all(torch.equal(a, b) for a, b in zip(plain, accelerated))
    assert not all(torch.equal(a, b) for a, b in zip(plain, [p for p in random_module(target, 1).parameters()]))


def test_a_prefix_vocabulary_draft_is_padded_and_lossless():
    from transformers import LlamaConfig, LlamaForCausalLM

    target = tiny_llava(layers=1, seed=6)  # vocabulary 64; its outputs include ids the draft lacks
    torch.manual_seed(7)  # a Llama draft with the first 60 ids of it
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=60, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()  # fmt: skip
    drafter = baselines.PrefixVocabularyDrafter(llama, 64)
    assert drafter.vocab_size == 64
    beyond = 0
    for seed in range(4):
        prompt = torch.randint(3, 60, (7,), generator=torch.Generator().manual_seed(seed))
        ref = generate(target, prompt, None, max_new_tokens=12).output_ids
        beyond += sum(t >= 60 for t in ref)
        for gamma in (1, 3):
            assert generate(target, prompt, drafter, gamma=gamma, max_new_tokens=12).output_ids == ref
    assert beyond > 0  # the target emitted ids outside the draft's vocabulary, which the draft reads as <unk>
    with pytest.raises(ValueError, match="smaller than the draft"):
        baselines.PrefixVocabularyDrafter(llama, 50)


def test_only_a_prefix_vocabulary_passes_the_check():
    class Tok:
        def __init__(self, vocab):
            self.vocab = vocab

        def get_vocab(self):
            return self.vocab

    target = Tok({"a": 0, "b": 1, "<image>": 2})
    models.check_vocabulary_prefix(target, Tok({"a": 0, "b": 1}))
    with pytest.raises(ValueError, match="not a prefix"):
        models.check_vocabulary_prefix(target, Tok({"b": 0, "a": 1}))


def test_text_only_batches_replace_images_and_drop_ids_the_draft_lacks():
    image, n = 9, 3
    ids = torch.tensor([[1, image, image, image, 5, 6, 7, 20, 0]])
    labels = torch.tensor([[-100] * 6 + [7, 20, -100]])
    mask = torch.tensor([[1] * 8 + [0]])
    out = text_only_batch({"input_ids": ids, "labels": labels, "attention_mask": mask}, [13], image, n, vocab_size=16)
    assert out["input_ids"].tolist() == [[1, 13, 5, 6, 7, 0]]
    assert out["labels"].tolist() == [[-100, -100, -100, -100, 7, -100]]
    assert out["attention_mask"].tolist() == [[1] * 6]


def test_both_batches_right_pad_their_rows():
    """The paper batches (with and without images) share one right padding: pad id / 0 mask / -100 labels."""
    image, n = 9, 2
    encoded = [(torch.tensor([1, image, image, 5]), {}), (torch.tensor([1, 5]), {})]
    batch = make_batch(encoded, [[7, 20], [8]], pad_id=99, device="cpu")
    assert batch["input_ids"].tolist() == [[1, image, image, 5, 7, 20], [1, 5, 8, 99, 99, 99]]
    assert batch["attention_mask"].tolist() == [[1] * 6, [1] * 3 + [0] * 3]
    assert batch["labels"].tolist() == [[-100] * 4 + [7, 20], [-100, -100, 8, -100, -100, -100]]
    assert batch["pixel_values"] is None
    out = text_only_batch(batch, [13, 14], image, n, vocab_size=16)
    assert out["input_ids"].tolist() == [[1, 13, 14, 5, 7, 0], [1, 5, 8, 0, 0, 0]]
    assert out["attention_mask"].tolist() == [[1] * 6, [1] * 3 + [0] * 3]
    assert out["labels"].tolist() == [[-100] * 4 + [7, -100], [-100, -100, 8, -100, -100, -100]]
