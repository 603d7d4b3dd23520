"""Batched speculative decoding (``batching.generate_batch``): every row is its batch-1 run.

Greedy rows equal ``generate`` token for token (and block for block: τ, α), whatever γ, the mix of prompt lengths
and where rows stop; under sampling each row makes its batch-1 draws, and the first two tokens of every row follow
the target's distribution (χ²).
"""

import pytest
import torch

from conftest import chi2_pvalue, random_llama
from specdec.batching import generate_batch
from specdec.cache import BatchedLM
from specdec.drafters import ModelDrafter, PromptLookupDrafter
from specdec.engine import generate
from specdec.sampling import SamplingConfig, logits_to_probs
from specdec.tabed.algorithm import AdaptiveEnsembleDrafter


def mixed_prompts(n, vocab, seed=0, longest=12):
    """``n`` random prompts of lengths 1..``longest`` (a one-token prompt has nothing to prefill)."""
    g = torch.Generator().manual_seed(seed)
    lengths = [1, longest] + [int(torch.randint(1, longest + 1, (1,), generator=g)) for _ in range(n - 2)]
    return [torch.randint(3, vocab, (k,), generator=g) for k in lengths]


def assert_rows_equal_batch_one(target, prompts, drafter, **kwargs):
    """Run the batch, then every prompt alone with its row's seed; compare everything the row reports."""
    batch = generate_batch(target, prompts, drafter, **kwargs)
    assert len(batch.rows) == len(prompts)
    for i, prompt in enumerate(prompts):
        one = generate(target, prompt, drafter, seed=i, **kwargs)
        row = batch.rows[i]
        assert row.output_ids == one.output_ids, f"row {i}"
        assert row.accepted_per_block == one.accepted_per_block and row.drafted_per_block == one.drafted_per_block
        assert row.from_draft == one.from_draft and row.stop_reason == one.stop_reason
        assert row.target_calls == one.target_calls and row.target_tokens_fed == one.target_tokens_fed
        # the draft's per-row counts too (what the cost model prices): a row past its block feeds nothing
        assert (row.draft_calls, row.draft_tokens_fed) == (one.draft_calls, one.draft_tokens_fed), f"row {i}"
        for stat in ("block_efficiency", "acceptance_rate"):
            a, b = getattr(row, stat), getattr(one, stat)
            assert a == b or (a != a and b != b), (i, stat, a, b)  # NaN α when nothing was drafted
    return batch


@pytest.mark.parametrize("gamma", [1, 2, 3, 4, 5, 6])
def test_greedy_rows_equal_their_batch_one_runs(random_pair, gamma):
    target, draft = random_pair
    batch = assert_rows_equal_batch_one(
        target, mixed_prompts(10, 64, seed=gamma), draft, gamma=gamma, max_new_tokens=24, eos_token_id=[]
    )
    # rows decode together: fewer batched target calls than the rows' calls summed
    assert batch.steps == max(r.target_calls for r in batch.rows) < sum(r.target_calls for r in batch.rows)


def test_rows_stop_at_eos_mid_batch_and_leave(random_pair):
    target, draft = random_pair
    prompts = mixed_prompts(12, 64, seed=7)
    free = generate_batch(target, prompts, draft, gamma=3, max_new_tokens=30, eos_token_id=[])
    eos = free.rows[0].output_ids[4]  # a token row 0 emits early: some rows stop there, others run to the end
    batch = assert_rows_equal_batch_one(target, prompts, draft, gamma=3, max_new_tokens=30, eos_token_id=eos)
    reasons = [r.stop_reason for r in batch.rows]
    assert "eos" in reasons and "max_new_tokens" in reasons
    assert batch.rows[0].output_ids == free.rows[0].output_ids[:5]


def test_batch_edges(random_pair):
    """Autoregressive rows (no drafter), max_new_tokens 0 / 1 / 2 (blocks capped at the end), a plain
    ModelDrafter, a CachedLM target, stop strings, and one row alone."""
    from specdec.cache import CachedLM

    target, draft = random_pair
    prompts = mixed_prompts(5, 64, seed=3)
    for n in (0, 1, 2):
        assert [r.new_tokens for r in generate_batch(target, prompts, draft, max_new_tokens=n).rows] == [n] * 5
    assert_rows_equal_batch_one(target, prompts, None, max_new_tokens=9, eos_token_id=[])
    assert_rows_equal_batch_one(CachedLM(target), prompts, ModelDrafter(draft), gamma=4, max_new_tokens=9)
    assert_rows_equal_batch_one(target, prompts[:1], draft, gamma=2, max_new_tokens=9, eos_token_id=[])

    class Chars:  # a tokenizer stand-in: token id -> one character
        def decode(self, ids):
            return "".join(chr(65 + i % 26) for i in ids)

    stop = Chars().decode(generate(target, prompts[2], draft, max_new_tokens=12, eos_token_id=[]).output_ids)[5:7]
    batch = assert_rows_equal_batch_one(
        target, prompts, draft, max_new_tokens=12, eos_token_id=[], stop_strings=[stop], tokenizer=Chars()
    )
    assert batch.rows[2].stop_reason == "stop_string"


def test_prompt_lookup_rows_propose_their_own_blocks(random_pair):
    target, _ = random_pair
    prompts = [torch.tensor([5, 6, 7, 8, 5, 6, 7]), torch.tensor([9, 3]), torch.tensor([4, 4, 4, 4, 4, 4])]
    batch = assert_rows_equal_batch_one(target, prompts, PromptLookupDrafter(), gamma=4, max_new_tokens=16)
    assert len({tuple(r.drafted_per_block) for r in batch.rows}) > 1  # ragged blocks in one batch


def test_drafters_with_per_sequence_state_are_refused(random_pair):
    target, draft = random_pair
    rows = ModelDrafter(draft, make_rows=lambda p: [p, p])
    adaptive = AdaptiveEnsembleDrafter(draft, lambda p: [p, p], policy=lambda history: torch.tensor([0.5, 0.5]))
    for drafter in (rows, ModelDrafter(draft, weights=[1.0]), adaptive):
        with pytest.raises(ValueError, match="batch size 1"):
            generate_batch(target, [torch.tensor([3, 4])], drafter)
    with pytest.raises(ValueError, match="shared tokenizer"):
        generate_batch(target, [torch.tensor([3, 4])], random_llama(vocab_size=32, hidden_size=16, layers=1))
    with pytest.raises(ValueError, match="at least one prompt"):
        generate_batch(target, [], draft)


def test_ragged_cache_with_holes_matches_a_fresh_forward(random_pair):
    """``BatchedLM``: after feeding rows different numbers of tokens and truncating them by different amounts, each
    row's next logits equal a plain forward of that row's sequence alone."""
    target, _ = random_pair
    seqs = [[5, 9, 11, 3], [7], [4, 8, 12, 16, 20, 24]]
    lm = BatchedLM(target)
    lm.prefill([torch.tensor(s) for s in seqs])
    lm.feed(
        torch.tensor([[s[-1], 30, 31, 32] for s in seqs]),
        torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]]).bool(),
    )
    keep = [len(seqs[0]) + 2, len(seqs[1]), len(seqs[2]) + 1]  # rows keep 2, 0 and 1 of their new tokens
    lm.truncate(torch.tensor(keep))
    lm.select(torch.tensor([2, 0]))  # the middle row leaves the batch
    rows = [(seqs[2] + [30], 40), (seqs[0] + [30, 31], 41)]
    logits = lm.feed(torch.tensor([[t] for _, t in rows]), torch.ones((2, 1), dtype=torch.bool))[:, -1]
    for j, (seq, t) in enumerate(rows):
        with torch.no_grad():
            fresh = target(torch.tensor([seq + [t]])).logits[0, -1]
        torch.testing.assert_close(logits[j], fresh, atol=1e-4, rtol=1e-4)
    assert lm.tokens_fed == [len(seqs[0]) - 1 + 4 + 1, len(seqs[1]) - 1 + 2, len(seqs[2]) - 1 + 3 + 1]


@pytest.mark.parametrize("sampling", [SamplingConfig(1.0), SamplingConfig(0.7, top_k=6, top_p=0.9)])
def test_sampled_rows_make_their_batch_one_draws(random_pair, sampling):
    target, draft = random_pair
    assert_rows_equal_batch_one(
        target, mixed_prompts(6, 64, seed=11), draft, gamma=4, max_new_tokens=20, eos_token_id=[], sampling=sampling
    )
    assert_rows_equal_batch_one(
        target, mixed_prompts(4, 64, seed=12), PromptLookupDrafter(), gamma=3, max_new_tokens=12, sampling=sampling
    )


def _next_probs(model, ids, sampling):
    with torch.no_grad():
        return logits_to_probs(model(ids[None]).logits[0, -1], sampling)


@pytest.mark.width_independent
def test_sampled_rows_follow_the_target_distribution(sharp_pair):
    """Three prompts of different lengths, 600 rows each (one batch per 150), seeds all distinct: per prompt, the
    first two new tokens follow the target's p(x1) and p(x2), and not the draft's q (so the check can fail)."""
    target, draft = sharp_pair
    sampling = SamplingConfig(1.0)
    prompts = [torch.tensor([1, 5, 9]), torch.tensor([7]), torch.tensor([2, 3, 4, 6, 8, 10])]
    firsts, seconds = {i: [] for i in range(3)}, {i: [] for i in range(3)}
    for chunk in range(4):
        rows = prompts * 50
        seeds = [1000 * chunk + j for j in range(len(rows))]
        batch = generate_batch(
            target, rows, draft, gamma=2, max_new_tokens=3, sampling=sampling, eos_token_id=[], seeds=seeds
        )
        for j, res in enumerate(batch.rows):
            firsts[j % 3].append(res.output_ids[0])
            seconds[j % 3].append(res.output_ids[1])
    for i, prompt in enumerate(prompts):
        p1, q1 = _next_probs(target, prompt, sampling), _next_probs(draft, prompt, sampling)
        p2 = sum(p1[x] * _next_probs(target, torch.cat([prompt, torch.tensor([x])]), sampling) for x in range(16))
        assert chi2_pvalue(firsts[i], p1) > 1e-3 and chi2_pvalue(seconds[i], p2) > 1e-3
        assert chi2_pvalue(firsts[i], q1) < 1e-3  # the draft's own distribution is rejected


@pytest.mark.parametrize("gamma", [2, 5])
def test_zoo_rows_on_real_text_equal_their_batch_one_runs(zoo, gamma):
    """The trained tiny pair (position-sensitive, unlike the random models) on held-out prompts cut to mixed
    lengths, with an EOS id it emits: rows leave the batch at different steps."""
    from specdec.zoo import tasks

    target, draft, _, tokenizer = zoo
    texts = tasks.heldout_prompts(n=3)
    prompts = [tasks.encode(tokenizer, p["prompt"])[: 4 + 5 * i] for i, p in enumerate(texts[:6])]
    free = generate_batch(target, prompts, draft, gamma=gamma, max_new_tokens=32, eos_token_id=[])
    eos = free.rows[1].output_ids[10]
    batch = assert_rows_equal_batch_one(target, prompts, draft, gamma=gamma, max_new_tokens=32, eos_token_id=eos)
    assert len({r.new_tokens for r in batch.rows}) > 1


def test_acceptance_rows_are_the_same_batched(zoo):
    """Notebook 01's τ-vs-γ rows (``bench.acceptance_rows``) decode greedy prompts in batches: the very rows of
    one prompt at a time."""
    from specdec import bench
    from specdec.zoo import tasks

    target, draft, _, tokenizer = zoo
    prompts = [tasks.encode(tokenizer, p["prompt"])[: 6 + 3 * i] for i, p in enumerate(tasks.heldout_prompts(n=2))]
    args = (target, {"s": draft}, prompts, [2, 5], 16)
    assert bench.acceptance_rows(*args, batch_size=4) == bench.acceptance_rows(*args, batch_size=1)


@pytest.mark.parametrize("sampling", [SamplingConfig(), SamplingConfig(1.0)])
def test_grouped_query_rows_equal_their_batch_one_runs(sampling):
    """A grouped-query target (4 query heads share 1 key-value head; SDPA packs them differently for one new token
    and for several, and for a padded batch) with a grouped-query draft: rows of mixed lengths that leave the batch at
    an EOS still equal their batch-1 runs, both decode calls taking ``decode_call``'s fast path."""
    models = []
    for hidden, layers, seed in ((32, 2, 20), (16, 1, 21)):
        config = random_llama(64, hidden, layers).config
        config.num_attention_heads, config.num_key_value_heads = 4, 1
        torch.manual_seed(seed)
        models.append(type(random_llama())(config).eval())
    target, draft = models
    assert BatchedLM(target).fast and BatchedLM(draft).fast
    prompts = mixed_prompts(7, 64, seed=5)
    free = generate_batch(target, prompts, draft, gamma=3, max_new_tokens=20, eos_token_id=[], sampling=sampling)
    eos = free.rows[0].output_ids[6]
    batch = assert_rows_equal_batch_one(target, prompts, draft, gamma=3, max_new_tokens=20, eos_token_id=eos,
                                        sampling=sampling)  # fmt: skip
    assert "eos" in {r.stop_reason for r in batch.rows}
