"""Captioners for TABED's caption drafting row ``C``: ``images -> captions``, one caption per image.

``draft_captioner`` asks a LLaVA (the draft itself or the tiny zoo's captioner) to describe each image;
``hf_captioner`` runs BLIP from the local Hugging Face cache (the paper's alternative to Florence-2, App. D);
``make_captioner(kind, draft, processor)`` picks one by name for the experiments, memoised per image.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from specdec.engine import autoregressive
from specdec.hub import ModelNotAvailableError, resolve
from specdec.vlm import scenes
from specdec.vlm.llava import draft_pixels, tokens_per_image
from specdec.vlm.scenes import ASSISTANT, USER
from specdec.zoo import models


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


# the captioner of caption drafting C (the paper: Florence-2, a separate small model): the tiny zoo's own
CAPTIONER = "tabed-captioner"


def captioner_model(kind: str, draft):
    """The LLaVA that captions for ``kind``: the draft itself (``"draft"``) or the zoo name / folder ``kind``
    (e.g. ``CAPTIONER``), loaded on the draft's device; ``ValueError`` naming the choices otherwise."""
    if kind == "draft":
        return draft
    try:
        model, _ = models.load(kind, kind="llava", device=draft.device, with_tokenizer=False)
    except Exception as err:  # noqa: BLE001 - one message for every way a name can fail to be a LLaVA
        raise ValueError(
            f"captioner must be 'draft', 'oracle', 'blip' or a LLaVA zoo name / folder (e.g. {CAPTIONER!r}); "
            f"{kind!r} failed to load: {type(err).__name__}: {err}"
        ) from err
    return model


@functools.lru_cache(maxsize=4)  # one per (kind, draft, processor): its captions are memoised across runs
def make_captioner(kind: str, draft, processor):
    """A captioner ``images -> captions`` for caption drafting C: ``"tabed-captioner"`` (``CAPTIONER``, the tiny
    zoo's captioning LLaVA; any LLaVA zoo name or folder works the same way), ``"draft"`` (the draft LLaVA itself
    describes each image), ``"oracle"`` (the generator's ground-truth captions, tiny only) or ``"blip"``
    (``captioners.hf_captioner``: BLIP from the local Hugging Face cache, paper profile). LLaVA captioners are greedy,
    keep the first sentence and are memoised per image (every caption method of a request asks for the same
    captions)."""
    if kind == "oracle":
        return scenes.render_caption
    if kind == "blip":
        return hf_captioner(device=str(draft.device))
    model = captioner_model(kind, draft)

    def to_pixels(images):  # the draft's view of each image (a LLaVA-NeXT processor's base tile)
        return draft_pixels(processor.image_processor(images, return_tensors="pt")["pixel_values"])

    caption_one = draft_captioner(model, processor.tokenizer, to_pixels)

    captions: dict[str, str] = {}  # image_key -> caption

    def caption(images) -> list[str]:
        if torch.is_tensor(images):
            return caption_one(images)
        for image in images:
            key = scenes.image_key(image)
            if key not in captions:
                captions[key] = caption_one(to_pixels([image]))[0]
        return [captions[scenes.image_key(image)] for image in images]

    return caption


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["CAPTIONER", "make_captioner"]
