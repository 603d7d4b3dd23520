"""Loading: zoo names, local directories (the paper path's code), offline hub ids, vocabulary checks."""

import time

import pytest
import torch
from transformers import AutoTokenizer

from conftest import random_llama
from specdec import zoo
from specdec.engine import generate
from specdec.hub import ModelNotAvailableError
from specdec.zoo.models import check_same_vocabulary, load, load_pair, load_profile


def test_local_directory_loads_through_from_pretrained(tmp_path):
    """The paper profile's code path: save a small model + tokenizer, load it back by path, decode with it."""
    model = random_llama(vocab_size=zoo.VOCAB_SIZE, hidden_size=32, layers=1)
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    model.save_pretrained(tmp_path / "target")
    tokenizer.save_pretrained(tmp_path / "target")
    loaded, loaded_tok = load(tmp_path / "target")
    assert loaded_tok.get_vocab() == tokenizer.get_vocab()
    ids = torch.tensor([1, 50, 60])
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids[None]).logits, model(ids[None]).logits)
    res = generate(loaded, ids, model, gamma=3, max_new_tokens=8, eos_token_id=[])
    assert res.acceptance_rate == 1.0  # same weights: every draft token is accepted


def test_half_stored_weights_load_in_the_config_dtype(tmp_path):
    """Zoo weights are stored as float16 with a float32 config (``specdec.zoo.training.save_half``): they
    load as float32 unless a dtype is asked for, and the shipped zoos do too."""
    from specdec.zoo.training import save_half

    model = random_llama(vocab_size=zoo.VOCAB_SIZE, hidden_size=32, layers=1)
    save_half(model, tmp_path / "half")
    loaded, _ = load(tmp_path / "half", with_tokenizer=False)
    assert loaded.dtype == torch.float32
    assert load(tmp_path / "half", with_tokenizer=False, dtype=torch.float16)[0].dtype == torch.float16
    ids = torch.tensor([[1, 50, 60]])
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model.half().float()(ids).logits)
    assert load("tiny-draft-xs", with_tokenizer=False)[0].dtype == torch.float32


def test_missing_hub_id_fails_fast_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(ModelNotAvailableError, match="download"):
        load("lmsys/vicuna-7b-v1.3")
    assert time.perf_counter() - t0 < 10


def test_missing_local_path_is_named(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="config.json"):
        load(tmp_path)
    with pytest.raises(ModelNotAvailableError, match="no model directory"):
        load(tmp_path / "nowhere" / "model")


def test_tokenizer_mismatch_is_refused():
    tok = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)

    class Other:
        def get_vocab(self):
            return {"a": 0, "b": 1}

    check_same_vocabulary(tok, tok)
    with pytest.raises(ValueError, match="shared vocabulary|one shared"):
        check_same_vocabulary(tok, Other())


def test_profiles_list_the_papers_models():
    paper = load_profile("paper")
    assert paper["pairs"]["default"] == {"target": "lmsys/vicuna-7b-v1.3", "draft": "double7/vicuna-68m"}
    assert paper["pairs"]["llava-7b"]["draft"] == "mjbooo/lvlm68m"
    assert set(load_profile("tiny")["pairs"]) >= {"default", "xs"}
    with pytest.raises(ValueError, match="known profiles"):
        load_profile("huge")


def test_paper_pair_offline_error_is_clear(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="hf download"):
        load_pair("paper", "default")


def test_missing_hub_id_fails_fast_without_offline_flags(monkeypatch):
    """Even when the user forgot HF_HUB_OFFLINE, an unreachable hub gives the clear error within seconds."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    t0 = time.perf_counter()
    with pytest.raises(ModelNotAvailableError, match="download"):
        load("specdec-tests/no-such-model")
    assert time.perf_counter() - t0 < 15


def test_model_weights_change_with_one_byte_and_name_hub_ids_by_commit(tmp_path):
    """The ``weights`` key of result rows: a retrained (here: one flipped byte) model gets a new digest."""
    import shutil

    from specdec.zoo.models import model_weights, pair_weights, weights_identity

    copy = tmp_path / "draft"
    shutil.copytree(zoo.model_dir("tiny-draft-xs"), copy)
    before = model_weights(load(copy)[0])
    assert before == model_weights(load(copy)[0]) and len(before) == 12
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # the last byte of the last tensor
    weights.write_bytes(bytes(data))
    assert model_weights(load(copy)[0]) != before
    assert model_weights(load("tiny-draft-xs")[0]) == model_weights(load(zoo.model_dir("tiny-draft-xs"))[0])
    assert weights_identity("org/model", "abc123") == "org/model@abc123"
    assert weights_identity("org/model") == "org/model@unpinned"
    assert pair_weights("tiny", "default") != pair_weights("tiny", "xs")
