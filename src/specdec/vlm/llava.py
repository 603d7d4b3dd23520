"""Where the images sit in a LLaVA prompt, and the visual tokens a LLaVA model makes of them.

A LLaVA prompt holds each image as a run of image tokens (``image_token_id``; 16 per 64 x 64 image in the tiny
zoo, 576 for LLaVA-1.5); ``image_runs`` / ``image_spans`` find them, ``visual_features`` computes the projected
embeddings that take their place (optionally average-pooled), ``draft_pixels`` reduces a LLaVA-NeXT target's
any-resolution input to the base view a LLaVA-1.5 draft reads. Used by TABED's drafting rows and AASD's module.
"""

from __future__ import annotations

import contextlib

import torch


def _parts(model):
    """``(vision_tower, projector, config)`` of a transformers LLaVA model (4.x and 5.x layouts)."""
    inner = getattr(model, "model", model)
    tower = getattr(inner, "vision_tower", None) or getattr(model, "vision_tower", None)
    projector = getattr(inner, "multi_modal_projector", None) or getattr(model, "multi_modal_projector", None)
    if tower is None or projector is None:
        raise ValueError(
            f"{type(model).__name__} has no vision tower / projector: the M and P drafting methods "
            "need a LLaVA-style draft (use T or C with a text-only draft)"
        )
    return tower, projector, model.config


def tokens_per_image(model) -> int:
    """Image tokens one image becomes (patches, CLS dropped under the ``default`` select strategy)."""
    vision = model.config.vision_config
    return (vision.image_size // vision.patch_size) ** 2


@torch.no_grad()
def visual_features(model, pixel_values: torch.Tensor, pool: int = 1) -> torch.Tensor:
    """Projected visual embeddings ``[n_images, tokens, D]`` of ``pixel_values [n_images, 3, H, W]``.

    ``pool`` > 1 average-pools the ``s x s`` patch grid with a ``pool x pool`` kernel *before* the projector
    (the P method), so each image gives ``(s / pool)^2`` tokens. ``pool=1`` equals what the model computes
    for its own ``pixel_values`` input.
    """
    tower, projector, config = _parts(model)
    dtype = next(tower.parameters()).dtype
    hidden = tower(pixel_values.to(dtype), output_hidden_states=True).hidden_states[config.vision_feature_layer]
    if config.vision_feature_select_strategy == "default":
        hidden = hidden[:, 1:]
    if pool > 1:
        n, tokens, width = hidden.shape
        side = int(round(tokens**0.5))
        if side * side != tokens or side % pool:
            raise ValueError(f"cannot pool a {tokens}-token image with a {pool}x{pool} kernel")
        grid = hidden.transpose(1, 2).reshape(n, width, side, side)
        hidden = torch.nn.functional.avg_pool2d(grid, pool).flatten(2).transpose(1, 2)
    return projector(hidden)


def image_runs(prompt_ids: torch.Tensor, image_token_id: int, per_image: int) -> list[int]:
    """Start positions of the images in ``prompt_ids`` (each image is ``per_image`` consecutive image tokens)."""
    positions = (prompt_ids == image_token_id).nonzero().flatten().tolist()
    if len(positions) % per_image:
        raise ValueError(
            f"the prompt has {len(positions)} image tokens, not a multiple of the {per_image} "
            "tokens one image becomes: expand each <image> with the model's processor"
        )
    starts = positions[::per_image]
    for s in starts:
        if prompt_ids[s : s + per_image].tolist() != [image_token_id] * per_image:
            raise ValueError("an image's tokens are not consecutive in the prompt")
    return starts


def image_spans(prompt_ids: torch.Tensor, image_token_id: int, per_image: int, n_images: int) -> list[tuple[int, int]]:
    """``(start, length)`` of each of the ``n_images`` images in ``prompt_ids``.

    A prompt expanded for the draft itself (``per_image`` tokens per image, as LLaVA-1.5 processors do) is cut
    into runs of ``per_image`` (adjacent images allowed, ``image_runs``). A prompt expanded by a target of
    another family (LLaVA-NeXT: a base view plus any-resolution tiles and row newlines, a different count per
    image) has one maximal run of image tokens per image; ``ValueError`` if neither reading gives ``n_images``."""
    positions = (prompt_ids == image_token_id).nonzero().flatten().tolist()
    if len(positions) == n_images * per_image:
        with contextlib.suppress(ValueError):
            return [(start, per_image) for start in image_runs(prompt_ids, image_token_id, per_image)]
    spans: list[list[int]] = []
    for position in positions:
        if spans and position == spans[-1][0] + spans[-1][1]:
            spans[-1][1] += 1
        else:
            spans.append([position, 1])
    if len(spans) != n_images:
        raise ValueError(
            f"the prompt has {len(spans)} <image> placeholders but {n_images} images were given "
            f"({len(positions)} image tokens); pass one image per <image>"
        )
    return [(start, length) for start, length in spans]


def draft_pixels(pixel_values: torch.Tensor | None) -> torch.Tensor | None:
    """The draft's ``pixel_values [n_images, 3, H, W]``: as given, or from a LLaVA-NeXT target's any-resolution
    input ``[n_images, tiles, 3, H, W]`` its first tile, the whole image resized to the base resolution (the view
    a LLaVA-1.5 draft is trained on; the tiles are the target's alone)."""
    if pixel_values is not None and pixel_values.dim() == 5:
        return pixel_values[:, 0]
    return pixel_values
