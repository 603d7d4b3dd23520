"""The decode loop: lossless greedy SD, exact stochastic SD, KV-cache rollback and token accounting."""

import pytest
import torch

from conftest import chi2_pvalue, random_llama
from specdec.cache import CachedLM
from specdec.drafters import ModelDrafter
from specdec.engine import autoregressive, generate
from specdec.sampling import SamplingConfig, logits_to_probs


def prompts(n, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (int(torch.randint(1, 12, (1,), generator=g)),), generator=g) for _ in range(n)]


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_sd_equals_target_greedy(random_pair, gamma):
    target, draft = random_pair
    for prompt in prompts(20, 64, seed=gamma):
        ar = autoregressive(target, prompt, max_new_tokens=24, eos_token_id=[])
        sd = generate(target, prompt, draft, gamma=gamma, max_new_tokens=24, eos_token_id=[])
        assert sd.output_ids == ar.output_ids
        assert sd.new_tokens == 24 and ar.target_calls == 24


def test_greedy_sd_with_good_draft_accepts_and_stays_lossless(random_pair):
    target, _ = random_pair
    prompt = torch.tensor([5, 9, 11])
    ar = autoregressive(target, prompt, max_new_tokens=30, eos_token_id=[])
    sd = generate(target, prompt, target, gamma=4, max_new_tokens=30, eos_token_id=[])  # the target drafts itself
    assert sd.output_ids == ar.output_ids
    assert sd.acceptance_rate == 1.0 and sd.block_efficiency == 5.0


def test_tokens_fed_prove_no_reprefill(random_pair):
    """Every position goes through each model once: fed = prompt + drafted/verified positions, nothing more."""
    target, draft = random_pair
    prompt = torch.arange(3, 13)
    res = generate(target, prompt, draft, gamma=3, max_new_tokens=40, eos_token_id=[])
    # target: the prompt but its last token at prefill, then γ_block + 1 positions per decode call
    assert res.target_tokens_fed == len(prompt) - 1 + sum(res.drafted_per_block) + res.target_calls
    # draft: the same prefill, then per block its γ_block positions plus, after a fully accepted block,
    # the last draft token it proposed but never fed
    full = [a == d for a, d in zip(res.accepted_per_block, res.drafted_per_block)]
    assert res.draft_tokens_fed == len(prompt) - 1 + sum(res.drafted_per_block) + sum(full[:-1])
    assert res.draft_calls == 1 + sum(res.drafted_per_block)  # prefill + one call per drafted token


def test_kv_rollback_matches_fresh_forward(random_pair):
    target, _ = random_pair
    lm = CachedLM(target)
    prompt = torch.tensor([4, 8, 15, 16, 23])
    lm.prefill([prompt])
    lm.extend([42, 7, 9, 30])  # a block of which only the first token will be kept
    lm.rollback([42, 11])  # kept: 42 and the corrected token 11 (pending)
    logits = lm.extend([42, 11])[0, -1]
    with torch.no_grad():
        fresh = target(torch.cat([prompt, torch.tensor([42, 11])])[None]).logits[0, -1]
    torch.testing.assert_close(logits, fresh.float(), rtol=1e-4, atol=1e-4)
    assert lm.cached_length == len(prompt) + 2


def test_batched_draft_rows_share_rollback(random_pair):
    """m draft rows of different prompt lengths (left-padded) give each row's own next-token logits."""
    _, draft = random_pair
    rows = [torch.tensor([5, 6, 7, 8, 9]), torch.tensor([10, 11])]
    lm = CachedLM(draft)
    lm.prefill(rows)
    lm.extend([3, 4, 5])
    lm.rollback([3, 20])
    logits = lm.extend([3, 20])[:, -1]
    with torch.no_grad():
        for i, row in enumerate(rows):
            fresh = draft(torch.cat([row, torch.tensor([3, 20])])[None]).logits[0, -1]
            torch.testing.assert_close(logits[i], fresh.float(), rtol=1e-4, atol=1e-4)


def test_two_identical_draft_rows_change_nothing(random_pair):
    target, draft = random_pair
    prompt = torch.tensor([3, 4, 5, 6])
    one = generate(target, prompt, ModelDrafter(draft), gamma=3, max_new_tokens=20, eos_token_id=[])
    two = generate(
        target, prompt, ModelDrafter(draft, make_rows=lambda p: [p, p]), gamma=3, max_new_tokens=20, eos_token_id=[]
    )
    assert one.output_ids == two.output_ids
    assert one.accepted_per_block == two.accepted_per_block


def _target_next_probs(target, ids, sampling):
    with torch.no_grad():
        return logits_to_probs(target(ids[None]).logits[0, -1], sampling)


@pytest.mark.width_independent
@pytest.mark.parametrize(
    "sampling, runs", [(SamplingConfig(1.0), 1500), (SamplingConfig(0.7, top_k=6, top_p=0.9), 800)]
)
def test_stochastic_sd_first_two_tokens_follow_target(sharp_pair, sampling, runs):
    """Full SD runs: the first new token follows p(x1 | prompt), the second p(x2 | prompt), where p is the
    target's distribution after the same temperature / top-k / top-p warping as the draft's."""
    target, draft = sharp_pair
    prompt = torch.tensor([1, 5, 9])
    p1 = _target_next_probs(target, prompt, sampling)
    p2 = sum(p1[x] * _target_next_probs(target, torch.cat([prompt, torch.tensor([x])]), sampling) for x in range(16))
    firsts, seconds = [], []
    for seed in range(runs):
        res = generate(target, prompt, draft, gamma=2, max_new_tokens=3, sampling=sampling, eos_token_id=[], seed=seed)
        firsts.append(res.output_ids[0])
        seconds.append(res.output_ids[1])
    for samples, probs in ((firsts, p1), (seconds, p2)):
        assert chi2_pvalue(samples, probs) > 1e-3


def test_eos_and_stop_strings(random_pair):
    target, draft = random_pair
    prompt = torch.tensor([3, 4, 5])
    free = autoregressive(target, prompt, max_new_tokens=20, eos_token_id=[])
    eos = free.output_ids[5]
    cut = generate(target, prompt, draft, gamma=4, max_new_tokens=20, eos_token_id=eos)
    assert cut.output_ids == free.output_ids[: free.output_ids.index(eos) + 1]
    assert cut.stop_reason == "eos"

    class Chars:  # a tokenizer stand-in: token id -> one character
        def decode(self, ids):
            return "".join(chr(65 + i % 26) for i in ids)

    text = Chars().decode(free.output_ids)
    stop = text[7:9]
    res = generate(
        target, prompt, draft, gamma=4, max_new_tokens=20, eos_token_id=[], stop_strings=[stop], tokenizer=Chars()
    )
    assert Chars().decode(res.output_ids).endswith(stop) and res.stop_reason == "stop_string"
    assert res.output_ids == free.output_ids[: len(res.output_ids)]


def test_max_new_tokens_is_exact(random_pair):
    target, draft = random_pair
    for n in [0, 1, 2, 7]:
        res = generate(target, torch.tensor([3, 4]), draft, gamma=5, max_new_tokens=n, eos_token_id=[])
        assert res.new_tokens == n


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(gamma=0), "gamma must be an integer >= 1"),
        (dict(max_new_tokens=-1), "max_new_tokens must be an integer >= 0"),
        (dict(prompt=torch.tensor([], dtype=torch.long)), "prompt is empty"),
        (dict(sampling="neg"), "temperature must be a finite number >= 0"),
        (dict(stop_strings=["x"]), "need the tokenizer"),
    ],
)
def test_bad_input_gives_one_clear_error(random_pair, kwargs, match):
    target, draft = random_pair
    prompt = kwargs.pop("prompt", torch.tensor([3, 4]))
    with pytest.raises(ValueError, match=match):
        if kwargs.get("sampling") == "neg":
            kwargs["sampling"] = SamplingConfig(temperature=-1.0)
        generate(target, prompt, draft, **kwargs)


def test_vocabulary_mismatch_is_refused(random_pair):
    target, _ = random_pair
    other = random_llama(vocab_size=32, hidden_size=16, layers=1)
    with pytest.raises(ValueError, match="shared tokenizer"):
        generate(target, torch.tensor([3, 4]), other)


def test_eos_from_the_generation_config_stops_a_cached_target(random_pair):
    """A ``CachedLM`` target stops at the wrapped model's ``generation_config.eos_token_id`` like the model."""
    target, draft = random_pair
    prompt = torch.tensor([5, 9, 11])
    free = autoregressive(target, prompt, max_new_tokens=12, eos_token_id=[]).output_ids
    eos = free[4]
    old = target.generation_config.eos_token_id
    target.generation_config.eos_token_id = eos
    try:
        for wrapped in (target, CachedLM(target)):
            out = generate(wrapped, prompt, draft, gamma=3, max_new_tokens=12)
            assert out.output_ids == free[: free.index(eos) + 1] and out.stop_reason == "eos"
    finally:
        target.generation_config.eos_token_id = old


def test_drafters_and_targets_are_checked_against_their_protocols(random_pair):
    from specdec.cache import TargetLM
    from specdec.drafters import AdaptiveDrafter, Drafter, PromptLookupDrafter

    target, draft = random_pair
    assert isinstance(ModelDrafter(draft), Drafter) and isinstance(PromptLookupDrafter(), Drafter)
    assert not isinstance(ModelDrafter(draft), AdaptiveDrafter)
    assert isinstance(CachedLM(target), TargetLM) and not isinstance(target, TargetLM)
    with pytest.raises(TypeError, match="Drafter"):
        generate(target, torch.tensor([5, 9]), object(), max_new_tokens=2)
    with pytest.raises(TypeError, match="TargetLM"):
        generate("a model id", torch.tensor([5, 9]), draft, max_new_tokens=2)
