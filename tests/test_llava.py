"""LLaVA-style targets and drafts (image inputs at prefill) run through the same decode loop, losslessly."""

import pytest
import torch

from conftest import LLAVA_IMAGE_TOKEN, random_llama, random_llava
from specdec.drafters import ModelDrafter
from specdec.engine import autoregressive, generate

IMAGE = LLAVA_IMAGE_TOKEN  # a 32x32 image with 16x16 patches gives 4 image tokens


@pytest.fixture(scope="module")
def llava_pair():
    return random_llava(32, 2, seed=0), random_llava(16, 1, seed=1)


@pytest.mark.parametrize("n_images", [1, 2])
@pytest.mark.parametrize("gamma", [1, 3])
def test_llava_greedy_sd_is_lossless(llava_pair, n_images, gamma):
    target, draft = llava_pair
    g = torch.Generator().manual_seed(n_images * 10 + gamma)
    for _ in range(4):
        text = torch.randint(3, IMAGE, (6,), generator=g)
        prompt = torch.cat([torch.tensor([1]), *[torch.tensor([IMAGE] * 4 + [5]) for _ in range(n_images)], text])
        pixels = {"pixel_values": torch.randn(n_images, 3, 32, 32, generator=g)}
        ar = autoregressive(target, prompt, max_new_tokens=16, eos_token_id=[], target_inputs=pixels)
        sd = generate(
            target,
            prompt,
            draft,
            gamma=gamma,
            max_new_tokens=16,
            eos_token_id=[],
            target_inputs=pixels,
            draft_inputs=pixels,
        )
        assert sd.output_ids == ar.output_ids
        with torch.no_grad():  # the cached decode agrees with a full forward pass over prompt + images
            assert int(target(input_ids=prompt[None], **pixels).logits[0, -1].argmax()) == ar.output_ids[0]


def test_llava_target_with_text_only_batched_draft(llava_pair):
    """A text-only Llama draft on two drafting inputs (images dropped, images as '\\n') for a LLaVA target."""
    target, _ = llava_pair
    draft = random_llama(vocab_size=64, hidden_size=16, layers=1, seed=4)
    prompt = torch.tensor([1, IMAGE, IMAGE, IMAGE, IMAGE, 5, 9, 12, 30])
    pixels = {"pixel_values": torch.randn(1, 3, 32, 32)}
    rows = lambda p: [p[p != IMAGE], torch.where(p == IMAGE, torch.tensor(10), p)]  # noqa: E731
    ar = autoregressive(target, prompt, max_new_tokens=20, eos_token_id=[], target_inputs=pixels)
    sd = generate(
        target,
        prompt,
        ModelDrafter(draft, make_rows=rows, weights=[0.5, 0.5]),
        gamma=3,
        max_new_tokens=20,
        eos_token_id=[],
        target_inputs=pixels,
    )
    assert sd.output_ids == ar.output_ids
