"""Pluggable drafters: prompt lookup (model-free) proposes only n-grams from its context and stays lossless."""

import torch

from specdec.drafters import PromptLookupDrafter, lookup
from specdec.engine import autoregressive, generate
from specdec.sampling import SamplingConfig


def test_lookup_copies_what_followed_the_latest_match():
    context = [5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6]
    assert lookup(context, 3, max_ngram=2) == [7, 1, 2]  # latest "5 6" is followed by 7 1 2
    assert lookup(context, 10, max_ngram=2) == [7, 1, 2, 5, 6]
    assert lookup([1, 2, 3], 3) == []  # nothing repeats
    assert lookup([4, 4], 3) == [4]


def test_pld_drafts_only_ngrams_present_in_context(random_pair):
    target, _ = random_pair
    prompt = torch.tensor([3, 4, 5, 6, 3, 4, 5, 6, 3, 4])
    drafter = PromptLookupDrafter(max_ngram=3)
    drafter.prefill(prompt)
    for gen in ([], [5], [5, 6, 3]):
        tokens, probs = drafter.propose(gen, 4, SamplingConfig())
        context = prompt.tolist() + gen
        block = tokens.tolist()
        assert block, "a repeated prompt always has a match"
        # the proposal is a contiguous span of the context
        assert any(context[i : i + len(block)] == block for i in range(len(context)))
        assert torch.equal(probs.argmax(-1), tokens) and torch.all(probs.sum(-1) == 1)
    ar = autoregressive(target, prompt, max_new_tokens=30, eos_token_id=[])
    sd = generate(target, prompt, PromptLookupDrafter(), gamma=4, max_new_tokens=30, eos_token_id=[])
    assert sd.output_ids == ar.output_ids
    sampled = generate(
        target, prompt, PromptLookupDrafter(), gamma=4, max_new_tokens=30, eos_token_id=[], sampling=SamplingConfig(1.0)
    )
    assert sampled.new_tokens == 30
