"""One clear error per bad input, never a silent result (issue: NaN μ once decoded [0, 0, 0, 0])."""

import math

import pytest
import torch

from conftest import random_llama
from specdec.cos import Combination, contrastive
from specdec.cos import algorithm as cos_algorithm
from specdec.engine import generate
from specdec.sampling import SamplingConfig
from specdec.zoo.models import load


@pytest.mark.parametrize("temperature", [math.nan, math.inf, -0.5, "1.0", True])
def test_sampling_rejects_a_temperature_that_is_not_a_finite_non_negative_number(temperature):
    with pytest.raises(ValueError, match="temperature"):
        SamplingConfig(temperature=temperature)


@pytest.mark.parametrize("options", [{"mu": math.nan}, {"temperature": math.nan}, {"mu": math.inf}])
def test_contrastive_rejects_nan_and_inf(options):
    with pytest.raises(ValueError, match="finite"):
        Combination("cd", 2, **options)
    if "mu" in options:
        with pytest.raises(ValueError, match="finite"):
            contrastive(torch.zeros(5), torch.zeros(5), mu=options["mu"])


def test_weighted_ensemble_rejects_a_nan_weight():
    with pytest.raises(ValueError, match="λ"):
        Combination.weighted(math.nan)


def test_make_combination_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="unknown combination 'zz'"):
        cos_algorithm.make_combination("zz", 2)


@pytest.fixture(scope="module")
def tiny_target():
    return random_llama(64, 16, 1, max_position_embeddings=32)


def test_prompt_ids_outside_the_vocabulary(tiny_target):
    with pytest.raises(ValueError, match="outside the target's vocabulary 0..63"):
        generate(tiny_target, torch.tensor([3, 64]), max_new_tokens=2)
    with pytest.raises(ValueError, match="outside"):
        generate(tiny_target, torch.tensor([-1, 3]), max_new_tokens=2)


def test_a_prompt_longer_than_the_context(tiny_target):
    with pytest.raises(ValueError, match="exceeds the target's context of 32"):
        generate(tiny_target, torch.arange(3, 30), max_new_tokens=8)


@pytest.mark.parametrize("eos", ["2", [2, "3"], [True]])
def test_eos_token_id_must_be_ids(tiny_target, eos):
    with pytest.raises(ValueError, match="eos_token_id must be a token id"):
        generate(tiny_target, torch.tensor([3, 4]), max_new_tokens=2, eos_token_id=eos)


def test_a_llava_prompt_with_image_tokens_needs_pixels():
    target, _ = load("tabed-target", kind="llava")
    image = target.config.image_token_id
    with pytest.raises(ValueError, match="image tokens but no images"):
        generate(target, torch.tensor([1, image, image, 5]), max_new_tokens=2)


def test_loading_a_causal_lm_folder_as_llava_names_the_fix():
    with pytest.raises(ValueError, match="not LLaVA: load it with kind='causal_lm'"):
        load("tiny-target", kind="llava")
