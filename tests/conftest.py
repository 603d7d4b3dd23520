"""Shared fixtures: small random Llama models (fast, any vocabulary size) and the shipped tiny zoo."""

import numpy as np
import pytest
import torch
from scipy.stats import chisquare
from transformers import LlamaConfig, LlamaForCausalLM

# The test models are tiny: one thread avoids thread start-up and oversubscription costs per call.
torch.set_num_threads(1)


def random_llama(vocab_size=64, hidden_size=32, layers=2, seed=0, max_position_embeddings=512):
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="session")
def random_pair():
    """A random target and a random draft on a 64-token vocabulary (they disagree often)."""
    return random_llama(64, 32, 2, seed=0), random_llama(64, 16, 1, seed=1)


@pytest.fixture(scope="session")
def sharp_pair():
    """A 16-token target and draft whose next-token distributions are far from uniform (for χ² tests)."""
    target, draft = random_llama(16, 32, 2, seed=2), random_llama(16, 32, 1, seed=3)
    with torch.no_grad():  # larger output weights -> peaked but not one-hot distributions
        target.lm_head.weight.mul_(8)
        draft.lm_head.weight.mul_(8)
    return target, draft


@pytest.fixture(scope="session")
def zoo():
    """The shipped tiny zoo: (target, draft_s, draft_xs, tokenizer)."""
    from specdec.zoo.models import load

    target, tokenizer = load("tiny-target")
    draft_s, _ = load("tiny-draft-s")
    draft_xs, _ = load("tiny-draft-xs")
    return target, draft_s, draft_xs, tokenizer


def chi2_pvalue(samples, probs) -> float:
    """χ² goodness-of-fit p-value of token ``samples`` against ``probs [V]``; cells expecting ≤ 5 draws are
    merged. A merged cell that expects (almost) nothing but was observed gives 0: an impossible token."""
    observed = np.bincount(np.asarray(samples), minlength=len(probs))
    expected = probs.double().cpu().numpy() * len(samples)
    keep = expected > 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 1e-9:
        if obs[-1] > 0:
            return 0.0
        obs, exp = obs[:-1], exp[:-1]
    return chisquare(obs, exp * obs.sum() / exp.sum()).pvalue
