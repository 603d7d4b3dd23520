"""``decode_call``: the engine's decode call without transformers' wrappers gives the bits ``model(...)`` gives, for one
sequence (``CachedLM``) and for a padded batch (``BatchedLM``), and steps aside wherever it does not apply (hooks,
padded ``CachedLM`` rows, other architectures)."""

import pytest
import torch

from conftest import random_llama, random_llava
from specdec import decode_call, engine
from specdec.batching import generate_batch
from specdec.cache import BatchedLM, CachedLM
from specdec.drafters import ModelDrafter
from specdec.sampling import SamplingConfig


def _lm(model, fast: bool) -> CachedLM:
    lm = CachedLM(model)
    lm.fast = fast and lm.fast
    return lm


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_fast_calls_give_the_same_logits_bit_for_bit(kv_heads):
    model = random_llama(64, 32, 2, seed=4)
    if kv_heads == 1:  # grouped-query attention: SDPA packs the query heads when one token is fed
        model.config.num_key_value_heads = 1
        model = type(model)(model.config).eval()
    assert decode_call.fast_path(model)
    prompt = torch.randint(3, 64, (23,))
    fast, slow = _lm(model, True), _lm(model, False)
    sequence: list[int] = []
    for lm in (fast, slow):
        lm.prefill([prompt])
    for step, n_new in enumerate([1, 2, 6, 1, 3, 1]):  # one token (draft), several (verify, after a full block)
        sequence = sequence + torch.randint(3, 64, (n_new,)).tolist()
        a, b = fast.extend(sequence), slow.extend(sequence)
        assert torch.equal(a, b), f"step {step}: the fast call changed the logits"
        keep = sequence[: len(sequence) - step % 3]  # roll back by 0, 1 or 2 tokens, as after a rejection
        fast.rollback(keep)
        slow.rollback(keep)
        sequence = keep
    assert fast.calls == slow.calls and fast.tokens_fed == slow.tokens_fed


@pytest.mark.parametrize("sampling", [SamplingConfig(), SamplingConfig(temperature=1.0)])
def test_generate_is_the_same_with_and_without_the_fast_call(random_pair, sampling):
    target, draft = random_pair
    results = []
    for fast in (True, False):
        drafter = ModelDrafter(draft)
        drafter.lm.fast = fast
        res = engine.generate(_lm(target, fast), torch.tensor([1, 5, 9, 12]), drafter, gamma=4, max_new_tokens=40,
                              sampling=sampling, seed=7)  # fmt: skip
        results.append((res.output_ids, res.accepted_per_block, res.target_tokens_fed, res.draft_tokens_fed))
    assert results[0] == results[1]


@pytest.mark.parametrize("hooked", ["model", "base model"])
def test_a_hooked_model_is_called_through_its_forward(hooked):
    model = random_llama(64, 32, 1, seed=5)
    calls = []
    handle = (model if hooked == "model" else model.model).register_forward_hook(lambda *_: calls.append(1))
    try:
        lm = CachedLM(model)
        assert lm.fast  # the path exists, but the hook must see every call
        lm.prefill([torch.tensor([1, 7, 9])])
        lm.extend([4])
        lm.extend([4, 8])
    finally:
        handle.remove()
    assert len(calls) == lm.calls == 3


def test_other_models_and_settings_keep_the_model_call():
    assert not decode_call.fast_path(random_llava())
    eager = random_llama(64, 32, 1, seed=6)
    eager.config._attn_implementation = "eager"
    assert not decode_call.fast_path(eager)
    lm = CachedLM(random_llama(64, 32, 1, seed=6))
    lm.prefill([torch.tensor([1, 7, 9]), torch.tensor([1, 7])])  # left padding: masks and position ids per row
    assert lm.padded


def test_unpadded_rows_take_the_fast_call_with_the_same_logits():
    model = random_llama(64, 32, 2, seed=8)
    rows = [torch.tensor([1, 7, 9, 4]), torch.tensor([1, 3, 9, 5])]  # equal lengths: no padding, one batch
    fast, slow = _lm(model, True), _lm(model, False)
    for lm in (fast, slow):
        lm.prefill(rows)
    assert not fast.padded
    for sequence in ([6], [6, 11], [6, 11, 12, 13]):
        assert torch.equal(fast.extend(sequence), slow.extend(sequence))


def _batched(model, fast: bool) -> BatchedLM:
    lm = BatchedLM(model)
    lm.fast = fast and lm.fast
    return lm


def _same_caches(a: BatchedLM, b: BatchedLM) -> bool:
    return all(
        torch.equal(x.keys, y.keys) and torch.equal(x.values, y.values) for x, y in zip(a.cache.layers, b.cache.layers)
    )


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_batched_fast_calls_give_the_same_logits_bit_for_bit(kv_heads):
    """``BatchedLM`` with and without the fast call: left-padded prompts of mixed lengths, ragged blocks (filler
    columns), per-row rollback (holes), ``last_only`` (a drafter's call), and rows leaving the batch."""
    model = random_llama(64, 32, 2, seed=9)
    if kv_heads == 1:  # grouped-query attention
        model.config.num_key_value_heads = 1
        model = type(model)(model.config).eval()
    assert decode_call.fast_path(model)
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 64, (n,), generator=g) for n in (9, 1, 4, 13, 6)]
    fast, slow = _batched(model, True), _batched(model, False)
    assert fast.fast and not slow.fast
    for lm in (fast, slow):
        lm.prefill(prompts)
    assert _same_caches(fast, slow)
    for step, width in enumerate([4, 1, 6, 3, 1, 5]):
        b = fast.lengths.shape[0]
        ids = torch.randint(3, 64, (b, width), generator=g)
        blocks = torch.randint(0, width, (b,), generator=g)  # row j feeds blocks[j] + 1 tokens, then filler
        valid = torch.arange(width)[None, :] <= blocks[:, None]
        last_only = step == 4
        a, c = fast.feed(ids, valid, last_only=last_only), slow.feed(ids, valid, last_only=last_only)
        assert a.shape == c.shape == (b, 1 if last_only else width, 64)
        assert torch.equal(a, c), f"step {step}: the fast call changed the logits"
        keep = fast.lengths - torch.randint(0, 3, (b,), generator=g).clamp(max=valid.sum(1) - 1)  # per-row rollback
        for lm in (fast, slow):
            lm.truncate(keep)
        if step in (1, 3):  # a row finishes: it leaves the batch
            stay = torch.tensor([j for j in range(b) if j != step % b])
            for lm in (fast, slow):
                lm.select(stay)
        assert torch.equal(fast.valid, slow.valid) and _same_caches(fast, slow)
    assert fast.tokens_fed == slow.tokens_fed and fast.calls == slow.calls


def test_a_hooked_batched_model_is_called_through_its_forward():
    model = random_llama(64, 32, 1, seed=5)
    calls = []
    handle = model.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        lm = BatchedLM(model)
        assert lm.fast
        lm.prefill([torch.tensor([1, 7, 9]), torch.tensor([4, 2])])
        lm.feed(torch.tensor([[3, 5], [6, 8]]), torch.tensor([[True, True], [True, False]]))
    finally:
        handle.remove()
    assert len(calls) == 2
    assert not BatchedLM(random_llava()).fast  # LLaVA: model(...), the one decision of decode_call.fast_path


@pytest.mark.parametrize("sampling", [SamplingConfig(), SamplingConfig(temperature=1.0)])
def test_generate_batch_is_the_same_with_and_without_the_fast_call(random_pair, sampling, monkeypatch):
    target, draft = random_pair
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 64, (n,), generator=g) for n in (1, 7, 3, 12, 5)]
    runs = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(decode_call, "fast_path", lambda model: False)
        batch = generate_batch(target, prompts, draft, gamma=4, max_new_tokens=24, sampling=sampling,
                               eos_token_id=[], seed=3)  # fmt: skip
        runs.append([(r.output_ids, r.accepted_per_block, r.target_tokens_fed, r.draft_tokens_fed) for r in batch.rows])
    assert runs[0] == runs[1]
