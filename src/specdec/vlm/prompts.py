"""A request's prompt and images as a LLaVA reads them, and the digest that names a request in stored rows.

A request is ``{"prompt": text with one <image> per image, "images": PIL images, paths or bytes, ...}``
(``vlm.scenes`` and the papers' dataset loaders make them). ``encode`` turns it into ``(prompt_ids, pixel
inputs)`` through the model's processor; ``request_digest`` keys stored rows by the prompt and the pixels;
``conversation_prompt`` writes a multi-turn conversation in the processor's chat template.
"""

from __future__ import annotations

import hashlib
import io
import pathlib

import torch

from specdec.vlm import scenes


def load_images(images) -> list:
    """PIL images from PIL images, file paths or encoded bytes; an image that cannot be decoded raises one
    ``ValueError`` naming which one and why."""
    from PIL import Image, UnidentifiedImageError

    out = []
    for k, image in enumerate(images):
        if isinstance(image, Image.Image):
            out.append(image)
            continue
        try:
            source = io.BytesIO(image) if isinstance(image, (bytes, bytearray)) else pathlib.Path(image)
            with Image.open(source) as opened:
                opened.load()
                out.append(opened.convert("RGB"))
        except (UnidentifiedImageError, OSError, TypeError, ValueError) as err:
            raise ValueError(
                f"image {k} cannot be decoded ({type(err).__name__}: {err}); pass a PIL image, "
                "the path of a PNG/JPEG file or its bytes"
            ) from None
    return out


def encode(processor, prompt: str, images) -> tuple[torch.Tensor, dict]:
    """``(prompt_ids [L], pixel inputs)`` of one request through the model's processor (``pixel_values``, and
    ``image_sizes`` for LLaVA-NeXT, whose processor expands each ``<image>`` to its base view plus any-resolution
    tiles, the target's count; the drafting rows re-expand each image for the draft: ``vlm.llava.image_spans``).

    ``<image>`` placeholders must match the images one to one (else a ``ValueError`` naming the fix); images
    may be PIL images, paths or bytes (``load_images``). ``<s>`` is put in front if the processor does
    not add it.
    """
    images = load_images(images or [])
    n_placeholders = prompt.count(scenes.IMAGE_PLACEHOLDER)
    if n_placeholders != len(images):
        raise ValueError(
            f"the prompt has {n_placeholders} {scenes.IMAGE_PLACEHOLDER} placeholders but "
            f"{len(images)} images were given: put one {scenes.IMAGE_PLACEHOLDER} in the prompt per image"
        )
    tokenizer = processor.tokenizer
    image_token = getattr(processor, "image_token", scenes.IMAGE_PLACEHOLDER)
    text = prompt.replace(scenes.IMAGE_PLACEHOLDER, image_token)
    if images:
        out = processor(text=text, images=images, return_tensors="pt")
        inputs = {k: out[k] for k in ("pixel_values", "image_sizes") if k in out}  # image_sizes: LLaVA-NeXT tiles
    else:
        out = processor.tokenizer(text, return_tensors="pt")
        inputs = {}
    ids = out["input_ids"][0]
    if tokenizer.bos_token_id is not None and (len(ids) == 0 or int(ids[0]) != tokenizer.bos_token_id):
        ids = torch.cat([torch.tensor([tokenizer.bos_token_id]), ids])
    return ids, inputs


def request_digest(request: dict) -> str:
    """SHA-256 (16 hex digits) of a request's prompt and image pixels: a cached answer of an edited request (a
    changed prompt, another dataset revision) is never reused."""
    digest = hashlib.sha256(request["prompt"].encode())
    for image in load_images(request["images"] or []):
        digest.update(scenes.image_key(image).encode())
    return digest.hexdigest()[:16]


def conversation_prompt(processor, turns: list[tuple[str, str | None]]) -> str:
    """The conversation ``[(user, reply), ..., (user, None)]`` in the processor's chat template (each user text
    holds its own ``<image>`` placeholders, as the authors pass multi-image questions), generation prompt open.
    For the LLaVA-1.5 template: ``USER: <u1> ASSISTANT: <a1> USER: <u2> ASSISTANT:``."""
    if getattr(processor, "chat_template", None) is None:
        raise ValueError(
            f"{type(processor).__name__} has no chat template: second turns are written in the model's own "
            "template (the hub's llava-hf processors ship one)"
        )
    messages = []
    for user, reply in turns:
        messages.append({"role": "user", "content": [{"type": "text", "text": user}]})
        if reply is not None:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": reply}]})
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
