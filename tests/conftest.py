"""Shared fixtures: small random Llama and LLaVA models (fast, any vocabulary size), hand-built TABED run frames,
and the shipped tiny zoo."""

import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import CLIPVisionConfig, LlamaConfig, LlamaForCausalLM, LlavaConfig, LlavaForConditionalGeneration

from specdec import verdict

# The test models are tiny: one thread avoids thread start-up and oversubscription costs per call.
torch.set_num_threads(1)


# float32 unit roundoff: every correctly rounded float32 operation is off by at most a factor (1 +- U32).
U32 = torch.finfo(torch.float32).eps / 2
# torch's CPU kernels vectorise float32 over SIMD registers of 8 floats (256 bits: the DEFAULT and AVX2
# capabilities, and aarch64's two NEON registers) or 16 (AVX-512); the narrowest width bounds the worst case.
NARROWEST_SIMD_FLOATS = 8


def softmax_sum_atol(vocab: int) -> float:
    """How far from 1 the float32 sum of one row of ``torch.softmax`` over ``vocab`` entries may be, on any CPU.

    torch's softmax kernel adds the normaliser ``S = sum_i exp(x_i - max)`` lane by lane: each of the L SIMD lanes
    adds ``ceil(V / L)`` positive terms in sequence (relative error up to ``(ceil(V / L) - 1) U``), then the L
    lane sums are added (``log2 L`` more, within ``L U``). Sleef's ``exp`` is within 1 ulp (2 U) of each term, the
    division ``e_i / S`` rounds once more (U), and the check's own sum of V probabilities (torch's cascade sum)
    adds up to ``log2(V) + 1`` roundings. Every probability shares the normaliser's error, so the row's sum is off
    by their total. With L = 8 and V = 4,096 that is 3.2e-5: a row summing to 1 +- 2.3e-5 (seen on an AMD AVX2
    CPU, where the rounding of many near-equal small terms went one way) is correct float32, and 1e-5 was a
    tolerance of AVX-512's 16 lanes, not of the arithmetic.
    """
    lanes = NARROWEST_SIMD_FLOATS
    roundings = math.ceil(vocab / lanes) + lanes + 2 + 1 + math.ceil(math.log2(vocab)) + 1
    return roundings * U32


def native_cpu_capability() -> str:
    """The best CPU capability torch detects here (``DEFAULT``, ``AVX2``, ``AVX512``, ...), whatever
    ``ATEN_CPU_CAPABILITY`` this process was started with (``make test`` runs the float tests again at default)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def cpu_capabilities() -> list[str]:
    """The ``ATEN_CPU_CAPABILITY`` values this CPU can run, narrowest first (x86: default, avx2, avx512)."""
    ladder = ["default", "avx2", "avx512"]
    best = native_cpu_capability().lower()
    return ladder[: ladder.index(best) + 1] if best in ladder else ["default"]


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


def probe_llama(seed: int = 0, nan: str = "") -> LlamaForCausalLM:
    """The bad-input probes' model: a random one-layer Llama (vocabulary 64, 16 hidden units, 32 positions);
    ``nan``: the name of a weight filled with NaN (a broken checkpoint, a float16 overflow on a GPU)."""
    model = random_llama(64, 16, 1, seed=seed, max_position_embeddings=32)
    if nan:
        with torch.no_grad():
            model.get_parameter(nan).fill_(math.nan)
    return model


@pytest.fixture(scope="module")
def target():
    """The probes' target model (``probe_llama``)."""
    return probe_llama()


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
    """Stored-run rows of TABED (the columns ``specdec.tabed.experiments`` and ``findings`` read), hand-built.

    cells: {(scenario, turn): {method: τ}}, τ a scalar (the cell's mean) or a list of ``n`` per-request values
    taken as they are. ``n`` requests per cell (row ids ``{scenario}-t{turn}-{i:03d}``), every method decoding
    the same requests: each request has its own difficulty (normal, sd ``difficulty``, shared by the methods)
    plus per-method noise (sd ``noise``). ``difficulty=0, noise=0`` gives every row its cell's τ exactly.
    """
    from specdec.tabed.data import GROUP

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
    """χ² goodness-of-fit p-value of token ``samples`` against ``probs [V]`` (``specdec.verdict.chi2_pvalue``: cells
    expecting ≤ 5 draws merged; an observed token that expects (almost) nothing gives 0)."""
    observed = np.bincount(np.asarray(samples), minlength=len(probs))
    return verdict.chi2_pvalue(observed, probs.double().cpu().numpy())
