"""The verification rules: greedy prefix matching and speculative sampling's exact target distribution."""

import numpy as np
import pytest
import torch

from conftest import chi2_pvalue
from specdec import verify
from specdec.sampling import SamplingConfig, logits_to_probs, sample


def random_probs(rows, vocab, generator, sharpness=2.0):
    return (torch.randn(rows, vocab, generator=generator) * sharpness).softmax(-1)


def test_greedy_accepts_matching_prefix():
    logits = torch.full((4, 5), -1.0)
    for i, tok in enumerate([3, 1, 4, 2]):
        logits[i, tok] = 1.0
    assert verify.greedy(torch.tensor([3, 1, 4]), logits) == (3, 2)  # all accepted, bonus = 2
    assert verify.greedy(torch.tensor([3, 0, 4]), logits) == (1, 1)  # rejected at 1, corrected to 1
    assert verify.greedy(torch.tensor([0, 1, 4]), logits) == (0, 3)
    assert verify.greedy(torch.tensor([], dtype=torch.long), logits[:1]) == (0, 3)


def test_greedy_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"\[γ\+1, V\]"):
        verify.greedy(torch.tensor([1, 2]), torch.zeros(2, 5))
    with pytest.raises(ValueError, match="share a vocabulary"):
        verify.greedy(torch.tensor([7]), torch.zeros(2, 5))


def _first_and_bonus(draft_probs, target_probs, trials, seed, rule=verify.stochastic):
    """Run the rule ``trials`` times on drafts sampled from q; collect the first emitted token and, when
    the whole block was accepted, the bonus token."""
    g = torch.Generator().manual_seed(seed)
    first, bonus = [], []
    gamma = draft_probs.shape[0]
    for _ in range(trials):
        draft = sample(draft_probs, g)
        n, nxt = rule(draft, draft_probs, target_probs, g)
        first.append(int(draft[0]) if n > 0 else nxt)
        if n == gamma:
            bonus.append(nxt)
    return np.array(first), np.array(bonus)


@pytest.mark.width_independent
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stochastic_output_follows_target(seed):
    g = torch.Generator().manual_seed(100 + seed)
    vocab, gamma = 6, 3
    p = random_probs(gamma + 1, vocab, g)
    q = 0.6 * p[:gamma] + 0.4 * random_probs(gamma, vocab, g)  # a draft close to, not equal to, p
    first, bonus = _first_and_bonus(q, p, trials=6000, seed=seed)
    assert chi2_pvalue(first, p[0]) > 1e-3
    assert len(bonus) > 300
    assert chi2_pvalue(bonus, p[gamma]) > 1e-3


@pytest.mark.width_independent
def test_chi2_detects_a_wrong_rule():
    """The χ² check above has power: a rule that always accepts the draft is caught."""

    def always_accept(draft, q, p, g):
        return len(draft), int(sample(p[len(draft)], g))

    g = torch.Generator().manual_seed(7)
    q = random_probs(2, 6, g)
    p = random_probs(3, 6, g)
    first, _ = _first_and_bonus(q, p, trials=6000, seed=0, rule=always_accept)
    assert chi2_pvalue(first, p[0]) < 1e-6


def test_stochastic_zero_draft_probability_and_empty_residual():
    # q puts no mass on token 0; the draft token 0 must be accepted iff p > 0 (no division by zero).
    q = torch.tensor([[0.0, 0.5, 0.5]])
    p = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert verify.stochastic(torch.tensor([0]), q, p) == (1, 2)
    # p == q: the residual max(0, p - q) is zero everywhere; every draft is accepted.
    same = torch.tensor([[0.2, 0.3, 0.5]])
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        n, _ = verify.stochastic(torch.tensor([1]), same, torch.cat([same, same]), g)
        assert n == 1


def test_stochastic_rejection_samples_residual():
    # p and q disjoint: every draft token is rejected and the replacement comes from p.
    q = torch.tensor([[1.0, 0.0, 0.0]])
    p = torch.tensor([[0.0, 0.25, 0.75], [1.0, 0.0, 0.0]])
    g = torch.Generator().manual_seed(0)
    outs = [verify.stochastic(torch.tensor([0]), q, p, g) for _ in range(400)]
    assert all(n == 0 for n, _ in outs)
    assert 0.6 < np.mean([t == 2 for _, t in outs]) < 0.9


def test_stochastic_rejects_unnormalised_input():
    q = torch.tensor([[0.5, 0.6]])
    p = torch.tensor([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match="sum to one"):
        verify.stochastic(torch.tensor([0]), q, p)
    with pytest.raises(ValueError, match="not logits"):
        verify.stochastic(torch.tensor([0]), torch.tensor([[2.0, -1.0]]), p)
    with pytest.raises(ValueError, match=r"\[γ, V\]"):
        verify.stochastic(torch.tensor([0]), torch.tensor([[0.5, 0.5], [0.5, 0.5]]), p)


def test_warping_is_shared_and_valid():
    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0]])
    assert logits_to_probs(logits, SamplingConfig(0.0)).tolist() == [[1.0, 0.0, 0.0, 0.0]]
    top2 = logits_to_probs(logits, SamplingConfig(1.0, top_k=2))
    assert (top2[0, 2:] == 0).all() and torch.isclose(top2.sum(), torch.tensor(1.0))
    nucleus = logits_to_probs(logits, SamplingConfig(1.0, top_p=0.5))
    assert nucleus[0, 0] == 1.0  # the top token alone holds 66% > 50%
    with pytest.raises(ValueError, match="temperature"):
        SamplingConfig(temperature=-0.5)
    with pytest.raises(ValueError, match="top_p"):
        SamplingConfig(temperature=1.0, top_p=0.0)
