"""TABED drafting for vision-language targets: several drafting inputs, one batched draft, adaptive weights.

A drafting *method* turns the request (prompt ids with image tokens + its images) into one row of the draft
model's batch (formulas.md "TABED", paper Sec. 3-6):

- ``M`` multimodal: the prompt with the draft's own visual embeddings of every image;
- ``T`` text-only: each image (its run of image tokens) replaced by the ids of ``"\\n"``;
- ``C`` caption: each image replaced by the ids of ``"image: <caption>"`` (``captioner(images) -> captions``
  runs once per request, at the draft's prefill, beside the target's prefill);
- ``P`` pooled: each image's visual tokens 2 x 2 average-pooled *before* the projector (16 -> 4 here,
  576 -> 144 for LLaVA-1.5).

The target may be of another LLaVA family than the draft: a LLaVA-NeXT target's prompt holds each image as its
base view plus any-resolution tiles (more tokens, a count per image size); the rows re-expand every image to the
draft's own tokens (``image_spans``) and the draft sees the base view (``draft_pixels``).

``DraftingRows`` builds the rows and their visual embeddings; ``ModelDrafter`` runs them as one left-padded
batch whose KV cache rolls back together after each verification and mixes the rows' next-token
distributions (``q = Σ_k w_k q_k``). Ensembles (``ENSEMBLES``): static ``MT`` / ``MTCP`` (equal weights) and
dynamic ``MT*`` (grid policy over ``[1 - j/n, j/n]``) / ``MTCP*`` (softmax of inverse errors), whose weights
``AdaptiveEnsembleDrafter`` re-chooses before every block from the verified history
(``specdec.tabed.ensemble``). ``make_drafter(draft, "MT*", tokenizer)`` returns any of them; they plug into
``engine.generate`` like every other drafter.
"""

from __future__ import annotations

import contextlib
import functools
import io
import pathlib
import warnings
from collections.abc import Callable

import torch

from specdec import validate
from specdec.drafters import AdaptiveEnsembleDrafter, ModelDrafter
from specdec.engine import autoregressive
from specdec.hub import ModelNotAvailableError, resolve
from specdec.tabed import ensemble
from specdec.tabed.scenes import ASSISTANT, USER

METHODS = ("M", "T", "C", "P")
ENSEMBLES: dict[str, tuple[str, ...]] = {
    "M": ("M",),
    "T": ("T",),
    "C": ("C",),
    "P": ("P",),
    "MT": ("M", "T"),
    "MT*": ("M", "T"),
    "MTCP": ("M", "T", "C", "P"),
    "MTCP*": ("M", "T", "C", "P"),
}
NEWLINE = "\n"
CAPTION_PREFIX = "image: "


# ------------------------------------------------------------------------------------------------- visual tokens
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


# ------------------------------------------------------------------------------------------------- drafting rows
class DraftingRows:
    """``make_rows`` for ``ModelDrafter``: ``(prompt_ids, pixel_values=None, images=None) -> (rows, features)``.

    methods: a subset of ``METHODS`` in row order. tokenizer: encodes ``"\\n"`` and the captions.
    captioner: ``images -> list of captions`` (one per image; PIL images, or ``pixel_values`` when no PIL
    images are passed); needed by ``C``. If it raises or returns the wrong number of captions, the C row is
    dropped for that request with a warning and drafting goes on with the other methods. ``active`` holds
    the methods of the last request's rows.
    """

    def __init__(self, model, methods, tokenizer, captioner: Callable | None = None, pool: int = 2):
        unknown = [m for m in methods if m not in METHODS]
        if unknown or not methods:
            raise ValueError(f"drafting methods must be among {METHODS}, got {list(methods)}")
        if "P" in methods:  # pool 1 would make P the very M row
            pool = validate.integer("pool", pool, minimum=2, hint="P average-pools the image tokens pool x pool")
        if "C" in methods and captioner is None:
            raise ValueError("caption drafting (C) needs a captioner: images -> list of captions")
        self.model, self.methods, self.tokenizer = model, tuple(methods), tokenizer
        self.captioner, self.pool = captioner, pool
        self.image_token_id = getattr(model.config, "image_token_id", None)
        self.per_image = tokens_per_image(model) if self.image_token_id is not None else 0
        self.newline_ids = self._ids(NEWLINE)
        self.active: tuple[str, ...] = self.methods
        self.captions: list[str] | None = None

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def __call__(
        self, prompt_ids: torch.Tensor, pixel_values: torch.Tensor | None = None, images=None, image_sizes=None
    ):
        pixel_values = draft_pixels(pixel_values)  # image_sizes: the target's (any-resolution tiles), unused here
        n_images = 0 if pixel_values is None else int(pixel_values.shape[0])
        spans = []
        if self.image_token_id is not None:
            spans = image_spans(prompt_ids.cpu(), self.image_token_id, self.per_image, n_images)
        if len(spans) != n_images:
            raise ValueError(
                f"the prompt has {len(spans)} <image> placeholders but {n_images} images were given; "
                "pass one image per <image>"
            )
        if n_images and sum(spans[-1]) >= len(prompt_ids):
            raise ValueError("the prompt ends with an image: put the question text after the last <image>")
        per = self.per_image
        self.active = tuple(m for m in self.methods if m != "C" or self._caption(images, pixel_values, n_images))
        self.active = self.active or ("T",)  # C alone and its captioner failed: draft from the text
        rows, features = [], []
        for method in self.active:
            if method == "M":  # the draft's own image tokens (the target's prompt may hold more per image)
                rows.append(self._replace(prompt_ids, spans, lambda k: [self.image_token_id] * per))
                features.append(visual_features(self.model, pixel_values).flatten(0, 1) if n_images else None)
            elif method == "P":
                pooled = visual_features(self.model, pixel_values, self.pool) if n_images else None
                n_pooled = 0 if pooled is None else pooled.shape[1]
                rows.append(self._replace(prompt_ids, spans, lambda k, n=n_pooled: [self.image_token_id] * n))
                features.append(pooled.flatten(0, 1) if n_images else None)
            elif method == "T":
                rows.append(self._replace(prompt_ids, spans, lambda k: self.newline_ids))
                features.append(None)
            else:  # C
                captions = [self._ids(CAPTION_PREFIX + c) for c in self.captions]
                rows.append(self._replace(prompt_ids, spans, lambda k, captions=captions: captions[k]))
                features.append(None)
        return rows, features

    def _caption(self, images, pixel_values, n_images: int) -> bool:
        self.captions = []
        if n_images == 0:
            return True
        try:
            captions = list(self.captioner(images if images is not None else pixel_values))
            if len(captions) != n_images or not all(isinstance(c, str) for c in captions):
                raise ValueError(f"returned {len(captions)} captions for {n_images} images")
        except Exception as err:  # noqa: BLE001 - any captioner failure degrades to the other methods
            others = [m for m in self.methods if m != "C"] or ["T"]
            warnings.warn(
                f"captioner failed ({type(err).__name__}: {err}); drafting without the caption row (methods {others})",
                RuntimeWarning,
                stacklevel=3,
            )
            self.captions = None
            return False
        self.captions = captions
        return True

    def _replace(self, prompt_ids: torch.Tensor, spans: list[tuple[int, int]], fill) -> torch.Tensor:
        ids, out, previous = prompt_ids.tolist(), [], 0
        for k, (start, length) in enumerate(spans):
            out += ids[previous:start] + list(fill(k))
            previous = start + length
        out += ids[previous:]
        return torch.tensor(out, dtype=torch.long, device=prompt_ids.device)


# ------------------------------------------------------------------------------------------------- drafters
def make_drafter(
    draft,
    method: str,
    tokenizer,
    *,
    captioner: Callable | None = None,
    pool: int = 2,
    criterion: str = "kl",
    window: int | None = None,
    divergence: str = "kl",
    temperature: float = 1.0,
    grid_n: int = 10,
    weights=None,
):
    """A drafter for ``method`` in ``ENSEMBLES`` (``M``, ``T``, ``C``, ``P``, ``MT``, ``MT*``, ``MTCP``, ``MTCP*``).

    Static ensembles use ``weights`` (default equal). ``MT*``: ``ensemble.grid_weights`` (``grid_n``,
    ``criterion`` "kl" as in the paper's Algorithm 1, or "hard", "tvd", "hard+kl"); ``MTCP*``:
    ``ensemble.softmax_weights`` (``divergence`` "kl"/"tvd", ``temperature``). ``window``: the last ``h``
    verified positions (``None`` = ALL). The drafter's ``make_rows.active`` / ``weight_log`` say what was used.
    """
    validate.choice("TABED method", method, list(ENSEMBLES))
    methods = ENSEMBLES[method]
    if method.endswith("*") and len(methods) == 2:  # checked here, not at the first block's policy call
        ensemble.grid_candidates(grid_n)
    elif method.endswith("*"):
        validate.number("temperature", temperature, positive=True, hint="the MTCP* softmax temperature")
        validate.choice("divergence", divergence, ("kl", "tvd"))
    if weights is not None and method.endswith("*"):
        raise ValueError(f"{method} adapts its weights at test time; weights={weights!r} would be ignored: drop them")
    if weights is not None:
        weights = validate.numbers_list("weights", weights)
    rows = DraftingRows(draft, methods, tokenizer, captioner=captioner, pool=pool)
    if not method.endswith("*"):
        if weights is not None and len(weights) != len(methods):
            raise ValueError(f"{method} mixes {len(methods)} drafting methods {methods}; got {len(weights)} weights")
        return ModelDrafter(draft, make_rows=rows, weights=weights)
    if len(methods) == 2:
        policy = functools.partial(ensemble.grid_weights, n=grid_n, criterion=criterion, window=window)
    else:
        policy = functools.partial(ensemble.softmax_weights, kind=divergence, temperature=temperature, window=window)
    return AdaptiveEnsembleDrafter(draft, rows, policy)


# ------------------------------------------------------------------------------------------------- captioners
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
