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


def test_llava_next_target_with_a_llava_draft_stays_lossless(tmp_path):
    """A LLaVA-NeXT target (any-resolution tiles: more image tokens per image than the draft's, a different count
    per image size) drafted by a LLaVA-1.5-class draft through TABED's rows: greedy SD == the target's greedy output,
    for one and two images; the target loads by its config's class through ``models.load(kind="llava")``."""
    import importlib.util

    from PIL import Image

    from specdec import zoo
    from specdec.tabed import algorithm as tabed
    from specdec.vlm import llava, prompts
    from specdec.zoo import models

    spec = importlib.util.spec_from_file_location("standin_hub", zoo.ROOT / "scripts" / "standin_hub.py")
    standin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(standin)
    tokenizer, _ = standin.tokenizer_for("llava-hf/llava-1.5-7b-hf", standin.build_tokenizer("llava"))
    standin.model_for("llava-hf/llava-v1.6-vicuna-7b-hf", tokenizer).save_pretrained(tmp_path / "next")
    standin.llava_next_processor(tokenizer).save_pretrained(tmp_path / "next")
    target, processor = models.load(tmp_path / "next", kind="llava")
    draft = standin.model_for("mjbooo/lvlm68m", tokenizer)
    assert type(target).__name__ == "LlavaNextForConditionalGeneration"
    images = [Image.new("RGB", (60, 40), (200, 30, 30)), Image.new("RGB", (30, 50), (20, 90, 220))]
    for n_images in (1, 2):
        prompt = "USER: " + "<image>\n" * n_images + "What is shown? ASSISTANT:"
        ids, inputs = prompts.encode(processor, prompt, images[:n_images])
        assert set(inputs) == {"pixel_values", "image_sizes"} and inputs["pixel_values"].dim() == 5
        spans = llava.image_spans(ids, target.config.image_token_id, llava.tokens_per_image(draft), n_images)
        assert len(spans) == n_images and all(length > llava.tokens_per_image(draft) for _, length in spans)
        reference = autoregressive(target, ids, max_new_tokens=12, eos_token_id=[], target_inputs=inputs)
        for method in ("M", "P", "MT*", "MTCP*"):
            caption = lambda imgs: ["a picture"] * len(imgs)  # noqa: E731
            drafter = tabed.make_drafter(draft, method, processor.tokenizer, captioner=caption)
            sd = generate(
                target,
                ids,
                drafter,
                gamma=3,
                max_new_tokens=12,
                eos_token_id=[],
                target_inputs=inputs,
                draft_inputs={**inputs, "images": images[:n_images]},
            )
            assert sd.output_ids == reference.output_ids, (n_images, method)
