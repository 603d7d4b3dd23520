"""Pixels of the synthetic TABED scenarios: rendering, captions and the models' pixel normalisation.

``IMAGE_SIZE`` x ``IMAGE_SIZE`` = 64 x 64 RGB. A CLIP vision tower with ``PATCH_SIZE`` 16 sees a 4 x 4 grid, so
every image becomes ``PATCHES_PER_IMAGE`` = 16 image tokens (the CLS token is dropped, LLaVA's
``vision_feature_select_strategy="default"``). Every pixel has one of the ``PALETTE`` colours (no
anti-aliasing; text uses PIL's built-in bitmap font, the one ``ImageFont.load_default()`` returns without
FreeType, 6 x 11 px per character, so rendering is identical on every platform).

``render_caption(images)`` is the "captioner" of caption drafting: it maps each PIL image made here to its
ground-truth short caption. Rendering stores the caption in ``image.info["caption"]`` (kept by ``copy()`` and
pickling) and in a registry keyed by the sha256 of the pixels, so copies or re-created images with identical
pixels are captioned too; an image never rendered in this process and without the info entry raises
``KeyError``.
"""

from __future__ import annotations

import hashlib

from specdec.vlm.groundtruth import POSITIONS, document_caption, scene_caption

IMAGE_SIZE = 64
PATCH_SIZE = 16
PATCHES_PER_IMAGE = (IMAGE_SIZE // PATCH_SIZE) ** 2  # 16 image tokens per image

# Every pixel of every image has one of these colours (index = palette index, stored by train_llava's data).
PALETTE: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "gray": (128, 128, 128),
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 70, 220),
    "yellow": (240, 200, 20),
    "purple": (140, 60, 180),
    "orange": (245, 130, 20),
}

_CAPTIONS: dict[str, str] = {}  # sha256(mode, size, pixels) -> caption, filled by every render


# -------------------------------------------------------------------------------------------------- rendering
def _font():
    from PIL import ImageFont

    # The built-in bitmap font (what load_default() returns without FreeType): identical on every platform.
    loader = getattr(ImageFont, "load_default_imagefont", None)
    return loader() if loader is not None else ImageFont.load_default()


def image_key(image) -> str:
    return hashlib.sha256(f"{image.mode}{image.size}".encode() + image.tobytes()).hexdigest()


def _register(image, caption: str):
    image.info["caption"] = caption
    _CAPTIONS[image_key(image)] = caption
    return image


def _cell_box(pos: str, size: int = 14) -> tuple[int, int, int, int]:
    row, col = divmod(POSITIONS.index(pos), 3)
    cx = round((col + 0.5) * IMAGE_SIZE / 3)
    cy = round((row + 0.5) * IMAGE_SIZE / 3)
    half = size // 2
    return cx - half, cy - half, cx + half, cy + half


def _draw_shape(draw, shape: str, color: str, pos: str) -> None:
    x0, y0, x1, y1 = _cell_box(pos)
    fill = PALETTE[color]
    if shape == "circle":
        draw.ellipse((x0, y0, x1, y1), fill=fill)
    elif shape == "square":
        draw.rectangle((x0 + 1, y0 + 1, x1 - 1, y1 - 1), fill=fill)
    elif shape == "triangle":
        draw.polygon([((x0 + x1) // 2, y0), (x0, y1), (x1, y1)], fill=fill)
    elif shape == "diamond":
        cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
        draw.polygon([(cx, y0), (x1, cy), (cx, y1), (x0, cy)], fill=fill)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def render_scene(gt: dict, border: bool = False):
    """A shape scene ``{"shapes": [[shape, color, position], ...]}`` as a 64 x 64 RGB image (``border``:
    the gray frame of story pictures)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), PALETTE["white"])
    draw = ImageDraw.Draw(image)
    if border:
        draw.rectangle((0, 0, IMAGE_SIZE - 1, IMAGE_SIZE - 1), outline=PALETTE["gray"], width=1)
    for shape, color, pos in gt["shapes"]:
        _draw_shape(draw, shape, color, pos)
    return _register(image, scene_caption(gt))


def render_document(gt: dict):
    """A document ``{"lines": [top, middle, bottom]}`` as black bitmap text on white."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), PALETTE["white"])
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"
    font = _font()
    for line, y in zip(gt["lines"], (4, 26, 48)):
        draw.text((4, y), line, fill=PALETTE["black"], font=font)
    return _register(image, document_caption(gt))


def render_caption(images) -> list[str]:
    """The ground-truth short caption of each image (one PIL image or a list): the caption-drafting captioner."""
    if not isinstance(images, (list, tuple)):
        images = [images]
    out = []
    for image in images:
        caption = image.info.get("caption") or _CAPTIONS.get(image_key(image))
        if caption is None:
            raise KeyError(
                "image not rendered by specdec.vlm.scenes in this process (no caption registered); "
                "render it with scenario_suite / render_scene / render_document first"
            )
        out.append(caption)
    return out


def palette_indices(image):
    """``uint8`` array ``[H * W]``: the palette index (position in ``PALETTE``) of every pixel, row-major;
    raises ``ValueError`` on a colour outside the palette."""
    import numpy as np

    rgb = np.asarray(image.convert("RGB"), dtype=np.int64).reshape(-1, 3)
    codes = rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]
    palette = np.array([r << 16 | g << 8 | b for r, g, b in PALETTE.values()])
    order = np.argsort(palette)
    pos = np.clip(np.searchsorted(palette[order], codes), 0, len(palette) - 1)
    if not np.array_equal(palette[order][pos], codes):
        raise ValueError("image has a pixel colour outside the palette")
    return order[pos].astype(np.uint8)


def images_to_pixels(images):
    """``FloatTensor[n, 3, 64, 64]``: the pixel normalisation of 64 x 64 RGB images (what the saved processor's
    image processor computes: rescale by 1/255, then (x - IMAGE_MEAN) / IMAGE_STD; no resize for 64 x 64 input).
    White (the background) maps to 0."""
    import numpy as np
    import torch

    arr = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) for im in images]) / 255.0
    x = torch.from_numpy(arr).permute(0, 3, 1, 2)
    mean = torch.tensor(IMAGE_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGE_STD).view(1, 3, 1, 1)
    return (x - mean) / std


# Pixel normalisation of the tiny LLaVA models: white -> 0, black -> -2 in every channel. NOT the CLIP mean / std
# (0.48, 0.46, 0.41) / (0.27, 0.26, 0.28): under it the white background (~90% of every pixel) becomes a large
# constant input (+1.9..+2.1 in every channel) that the bias-free patch embedding turns into the same big vector
# for every patch; after CLIP's pre-layernorm the content and position parts are a small remainder, training
# shrinks them further within ~40 steps, the vision features become constant and the text model learns to
# ignore the images (trained tabed-target: loss with blank images == loss with the real ones). With white at 0
# an empty patch contributes nothing and only the shapes / text move the patch embeddings.
IMAGE_MEAN = (1.0, 1.0, 1.0)
IMAGE_STD = (0.5, 0.5, 0.5)
