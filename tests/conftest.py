"""Shared fixtures: small random Llama and LLaVA models (fast, any vocabulary size), hand-built TABED run frames,
and the shipped tiny zoo."""

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import chisquare
from transformers import CLIPVisionConfig, LlamaConfig, LlamaForCausalLM, LlavaConfig, LlavaForConditionalGeneration

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


LLAVA_IMAGE_TOKEN = 63  # random_llava's image_token_id (< vocab size); a 32 x 32 image gives 4 image tokens


def random_llava(hidden_size=32, layers=2, seed=0, heads=2, kv_heads=2, vocab_size=64):
    """A random LLaVA: a one-layer CLIP tower on 32 x 32 images with 16 x 16 patches (4 image tokens per image,
    token id ``LLAVA_IMAGE_TOKEN``) and a Llama text model of ``heads`` query / ``kv_heads`` key-value heads."""
    torch.manual_seed(seed)
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32, patch_size=16
    )
    text = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=256,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_id=LLAVA_IMAGE_TOKEN,
        projector_hidden_act="gelu",
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    return LlavaForConditionalGeneration(config).eval()


def tabed_runs(cells: dict, n: int = 8, noise: float = 0.05, seed: int = 0, difficulty: float = 0.5) -> pd.DataFrame:
    """Stored-run rows of TABED (the columns ``specdec.tabed.bench`` and ``findings`` read), hand-built.

    cells: {(scenario, turn): {method: τ}}, τ a scalar (the cell's mean) or a list of ``n`` per-request values
    taken as they are. ``n`` requests per cell (row ids ``{scenario}-t{turn}-{i:03d}``), every method decoding
    the same requests: each request has its own difficulty (normal, sd ``difficulty``, shared by the methods)
    plus per-method noise (sd ``noise``). ``difficulty=0, noise=0`` gives every row its cell's τ exactly.
    """
    from specdec.tabed.bench import GROUP

    rng = np.random.default_rng(seed)
    rows = []
    for (scenario, turn), by_method in cells.items():
        shift = rng.normal(0, difficulty, n)
        for method, tau in by_method.items():
            taus = tau + shift + rng.normal(0, noise, n) if np.isscalar(tau) else np.asarray(tau, dtype=float)
            for i, t in enumerate(taus):
                rows.append(
                    dict(
                        method=method,
                        gamma=5,
                        window="ALL" if method.endswith("*") else "-",
                        criterion="kl" if method.endswith("*") else "-",
                        captioner="draft" if "C" in method else "-",
                        row=f"{scenario}-t{turn}-{i:03d}",
                        scenario=scenario,
                        turn=turn,
                        group=GROUP[scenario],
                        block_efficiency=float(t),
                    )
                )
    return pd.DataFrame(rows)


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
