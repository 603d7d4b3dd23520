"""Captioners for TABED's caption drafting row ``C``: ``images -> captions``, one caption per image.

``draft_captioner`` asks a LLaVA (the draft itself or the tiny zoo's captioner) to describe each image;
``hf_captioner`` runs BLIP from the local Hugging Face cache (the paper's alternative to Florence-2, App. D).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from specdec.engine import autoregressive
from specdec.hub import ModelNotAvailableError, resolve
from specdec.vlm.llava import tokens_per_image
from specdec.vlm.scenes import ASSISTANT, USER


def draft_captioner(
    draft, tokenizer, to_pixels: Callable, question: str = "Describe the image.", max_new_tokens: int = 24
) -> Callable:
    """A captioner that asks the draft LLaVA itself (greedy) to describe each image, keeping the first
    sentence: ``images -> captions``. ``to_pixels(images) -> pixel_values`` is the draft's image processor."""
    eos = tokenizer.eos_token_id
    prompt = tokenizer(USER, add_special_tokens=False)["input_ids"]
    tail = tokenizer(f"\n{question}{ASSISTANT}", add_special_tokens=False)["input_ids"]
    ids = torch.tensor(
        [tokenizer.bos_token_id] + prompt + [draft.config.image_token_id] * tokens_per_image(draft) + tail
    )

    def caption(images) -> list[str]:
        pixels = images if torch.is_tensor(images) else to_pixels(images)
        out = []
        for k in range(pixels.shape[0]):
            res = autoregressive(
                draft,
                ids,
                max_new_tokens=max_new_tokens,
                eos_token_id=eos,
                target_inputs={"pixel_values": pixels[k : k + 1]},
            )
            text = tokenizer.decode(res.output_ids, skip_special_tokens=True).strip()
            out.append(text.split(". ")[0].rstrip(".") if text else "")
        return out

    return caption


def hf_captioner(
    model_id: str = "Salesforce/blip-image-captioning-base", device: str = "cpu", max_new_tokens: int = 30
) -> Callable:
    """A BLIP captioner from the local Hugging Face cache (the paper's alternative to Florence-2, App. D):
    ``images (PIL) -> captions``. Raises ``hub.ModelNotAvailableError`` naming the download command when
    the weights are not cached (this project never downloads at run time)."""
    from transformers import AutoProcessor, BlipForConditionalGeneration

    source = resolve(model_id)
    try:
        processor = AutoProcessor.from_pretrained(source, local_files_only=True)
        model = BlipForConditionalGeneration.from_pretrained(source, local_files_only=True).to(device).eval()
    except OSError:
        raise ModelNotAvailableError(
            f"captioner {model_id!r} is not in the local Hugging Face cache; on a machine "
            f"with internet run `hf download {model_id}` and copy the cache here, or use "
            "captioner='draft'"
        ) from None

    @torch.no_grad()
    def caption(images) -> list[str]:
        inputs = processor(images=list(images), return_tensors="pt").to(device)
        out = model.generate(**inputs, max_new_tokens=max_new_tokens)
        return [text.strip() for text in processor.batch_decode(out, skip_special_tokens=True)]

    return caption
