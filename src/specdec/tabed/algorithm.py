"""TABED (test-time adaptive batched ensemble drafting for vision-language targets), top to bottom.

Paper Sec. 3-6, App. B.2; formulas.md "TABED". One small draft LLaVA drafts from several *drafting rows* of the
same request in one batch and mixes their next-token distributions, ``q = Σ_k w_k q_k``; the weights adapt at
test time to the positions the target has already verified.

1. **Rows** (``DraftingRows``, ``METHODS``): a drafting method turns the request (prompt ids with image tokens +
   its images) into one row of the draft's batch:

   - ``M`` multimodal: the prompt with the draft's own visual embeddings of every image;
   - ``T`` text-only: each image (its run of image tokens) replaced by the ids of ``"\\n"``;
   - ``C`` caption: each image replaced by the ids of ``"image: <caption>"`` (``captioner(images) -> captions``,
     ``specdec.tabed.captioners``, runs once per request, at the draft's prefill, beside the target's prefill);
   - ``P`` pooled: each image's visual tokens 2 x 2 average-pooled *before* the projector (16 -> 4 here,
     576 -> 144 for LLaVA-1.5).

   The target may be of another LLaVA family than the draft: a LLaVA-NeXT target's prompt holds each image as
   its base view plus any-resolution tiles (more tokens, a count per image size); the rows re-expand every image
   to the draft's own tokens (``vlm.llava.image_spans``) and the draft sees the base view (``draft_pixels``).
   ``ModelDrafter`` (the core) runs the rows as one left-padded batch whose KV cache rolls back together after
   each verification.

2. **History** (``History``): for every *verified* draft position (the bonus position has no draft distribution
   and is never recorded) each row's distribution ``q_k [m, V]``, the target's ``p [V]`` and the token the
   target kept there.

3. **Policies** turn the last ``window`` positions of the history into mixture weights ``w [m]``:

   - ``grid_weights`` (MT*): candidates ``[1 − j/n, j/n]``, j = 0..n (two methods); criterion ``"hard"``
     (most argmax matches with the kept tokens), ``"kl"`` (least Σ KL(p ‖ q_w)), ``"tvd"`` (least Σ TV(p, q_w)),
     or ``"hard+kl"`` (matches, KL breaking ties). Remaining ties go to the most balanced candidate;
     divergences equal up to float32 rounding are ties.
   - ``softmax_weights`` (MTCP*): ``e_k = Σ D(p, q_k)``; ``w = softmax([1/e_1 … 1/e_m] / τ)``.

   With no history yet, both return uniform weights.

4. **Drafters** (``ENSEMBLES``): static ``MT`` / ``MTCP`` (equal weights) are plain ``ModelDrafter`` s; dynamic
   ``MT*`` / ``MTCP*`` are ``AdaptiveEnsembleDrafter`` s, which re-choose the weights before every block from
   the history. ``make_drafter(draft, "MT*", tokenizer)`` returns any of them; they plug into
   ``engine.generate`` like every other drafter, and one per request into ``batching.generate_batch`` (the
   requests' rows in one draft batch; ``begin_block`` / ``draft_token`` / ``observe`` keep each request's own
   arithmetic, ``specdec.batch_ensemble``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from specdec import validate
from specdec.drafters import ModelDrafter, mixing_probs
from specdec.sampling import SamplingConfig
from specdec.vlm.llava import draft_pixels, image_spans, tokens_per_image, visual_features

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
_EPS = 1e-10
_TIE_ATOL = 1e-5  # per scored position: float32 rounding of one divergence is ~1e-7
_TIE_RTOL = 1e-5


# ------------------------------------------------------------------------------------------------- 1. drafting rows
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


# ------------------------------------------------------------------------------------------ 2. the verified history
@dataclass
class History:
    """The verified history an ``AdaptiveEnsembleDrafter`` fills and its policy (section 3) reads."""

    row_probs: list[torch.Tensor] = field(default_factory=list)  # each [m, V]
    target_probs: list[torch.Tensor] = field(default_factory=list)  # each [V]
    tokens: list[int] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # per-position policy statistics, computed once per position

    def add(self, row_probs: torch.Tensor, target_probs: torch.Tensor, tokens: list[int]) -> None:
        """Record ``n`` verified positions: ``row_probs [n, m, V]``, ``target_probs [n, V]``, ``tokens [n]``."""
        if not (len(row_probs) == len(target_probs) == len(tokens)):
            raise ValueError("row_probs, target_probs and tokens must cover the same verified positions")
        self.row_probs += list(row_probs)
        self.target_probs += list(target_probs)
        self.tokens += list(tokens)

    def window(self, h: int | None):
        """The last ``h`` positions (all when ``h`` is None) as tensors ``[h, m, V]``, ``[h, V]``, ``[h]``."""
        start = 0 if h is None else max(0, len(self.tokens) - h)
        return (
            torch.stack(self.row_probs[start:]),
            torch.stack(self.target_probs[start:]),
            torch.tensor(self.tokens[start:]),
        )

    def __len__(self) -> int:
        return len(self.tokens)

    def per_position(self, key, fn, h: int | None) -> torch.Tensor:
        """``fn(row_probs [m, V], target_probs [V], token) -> Tensor[...]`` for the last ``h`` positions, stacked.

        Each position is scored once and kept under ``key``: a policy consulted before every block then costs
        O(h) small additions instead of re-mixing the whole window's ``[h, m, V]`` distributions."""
        done = self.stats.setdefault(key, [])
        for t in range(len(done), len(self.tokens)):
            done.append(fn(self.row_probs[t].float(), self.target_probs[t].float(), self.tokens[t]))
        start = 0 if h is None else max(0, len(done) - h)
        return torch.stack(done[start:])


# ----------------------------------------------------------------------------------------------- 3. weight policies
def divergence(p: torch.Tensor, q: torch.Tensor, kind: str = "kl") -> torch.Tensor:
    """Row-wise ``KL(p ‖ q)`` or total variation ``½ Σ |p − q|`` over the last dimension."""
    if kind == "kl":
        return (p * ((p + _EPS).log() - (q + _EPS).log())).sum(-1)
    if kind == "tvd":
        return 0.5 * (p - q).abs().sum(-1)
    raise ValueError(f"divergence must be 'kl' or 'tvd', got {kind!r}")


def grid_candidates(n: int = 10) -> torch.Tensor:
    """``[[1 − j/n, j/n] for j = 0..n]`` as ``[n+1, 2]``."""
    n = validate.integer("grid_n", n, minimum=1, hint="the grid has n + 1 candidates [1 - j/n, j/n]")
    j = torch.arange(n + 1, dtype=torch.float32) / n
    return torch.stack([1 - j, j], dim=1)


def grid_weights(history: History, n: int = 10, criterion: str = "hard+kl", window: int | None = None) -> torch.Tensor:
    """The grid candidate that best explains the window (two drafting methods)."""
    validate.choice("criterion", criterion, ("hard", "kl", "tvd", "hard+kl"))
    _check_window(window)
    candidates = grid_candidates(n)
    if len(history) == 0:
        return torch.tensor([0.5, 0.5])
    if history.row_probs[0].shape[0] != 2:
        raise ValueError(f"the grid policy mixes two drafting methods, the history has {history.row_probs[0].shape[0]}")
    kind = "tvd" if criterion == "tvd" else "kl"

    def score(rows, p, token):  # [candidates, 2]: argmax match with the kept token, divergence from p
        mixed = candidates @ rows  # [candidates, V]
        return torch.stack([(mixed.argmax(-1) == token).float(), divergence(p[None], mixed, kind)], dim=1)

    per_position = history.per_position(("grid", n, kind), score, window)  # [h, candidates, 2]
    matches, errors = per_position.sum(0).unbind(1)
    keep = torch.ones(len(candidates), dtype=torch.bool)
    if criterion in ("hard", "hard+kl"):
        keep &= matches == matches.max()  # counts: exact
    if criterion != "hard":
        keep &= _within_noise(errors, keep, n_positions=len(per_position))
    balance = (candidates[:, 0] - 0.5).abs().masked_fill(~keep, float("inf"))
    return candidates[int(balance.argmin())]  # remaining ties: the most balanced candidate


def _check_window(window) -> None:
    if window is not None:
        validate.integer("window", window, minimum=1, hint="the last h verified positions; None = all")


def _within_noise(errors: torch.Tensor, keep: torch.Tensor, n_positions: int) -> torch.Tensor:
    """The kept candidates whose summed divergence is the least up to float32 rounding.

    Two drafting rows that give the same distribution (M and T of a text-only request) make every mixture
    the same distribution; their divergences then differ only in the last bits, which depend on the CPU's
    vector width. Those are ties, decided by balance, so that the chosen weights are the same on every
    machine."""
    best = errors[keep].min()
    tolerance = _TIE_ATOL * n_positions + _TIE_RTOL * best.abs()
    return keep & (errors <= best + tolerance)


def softmax_weights(
    history: History, kind: str = "kl", temperature: float = 1.0, window: int | None = None, m: int | None = None
) -> torch.Tensor:
    """``softmax([1/e_1 … 1/e_m] / temperature)`` with ``e_k = Σ_window D(p, q_k)``."""
    temperature = validate.number("temperature", temperature, positive=True, hint="the MTCP* softmax temperature")
    validate.choice("divergence", kind, ("kl", "tvd"))
    _check_window(window)
    if len(history) == 0:
        if m is None:
            raise ValueError("with an empty history, pass the number of drafting methods m")
        return torch.full((m,), 1.0 / m)
    errors = history.per_position(("softmax", kind), lambda rows, p, _: divergence(p[None], rows, kind), window).sum(
        0
    )  # [m]
    return (1.0 / (errors + _EPS) / temperature).softmax(-1)


# ------------------------------------------------------------------------------------------------------ 4. drafters
class AdaptiveEnsembleDrafter(ModelDrafter):
    """``ModelDrafter`` whose mixture weights are re-chosen before every block from the verified history
    (TABED's test-time adaptation). ``policy(history) -> weights [m]``, e.g.
    ``functools.partial(grid_weights, criterion="hard+kl", window=None)``.
    ``weight_log`` keeps the weights used for each block."""

    def __init__(self, model, make_rows, policy):
        super().__init__(model, make_rows=make_rows)
        self.policy = policy
        self.history = History()
        self.weight_log: list[list[float]] = []

    def start(self, prompt_ids, **model_inputs):
        self.history = History()
        self.weight_log = []
        self.weights = None
        return super().start(prompt_ids, **model_inputs)

    def begin_block(self) -> None:
        """Re-choose the weights from the verified history (uniform before any) and log them."""
        super().begin_block()
        if len(self.history):
            self.set_weights(self.policy(self.history))
        m = self.m
        self.weight_log.append((self.weights if self.weights is not None else torch.full((m,), 1 / m)).tolist())

    def observe(self, target_logits: torch.Tensor, kept_tokens: list[int], sampling: SamplingConfig) -> None:
        """Record the verified positions of the last block (the engine excludes the bonus position)."""
        n = len(kept_tokens)
        target_probs = mixing_probs(target_logits, sampling)
        self.history.add(self.last_row_probs[:n].cpu(), target_probs[:n].cpu(), kept_tokens)


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

    Static ensembles use ``weights`` (default equal). ``MT*``: ``grid_weights`` (``grid_n``,
    ``criterion`` "kl" as in the paper's Algorithm 1, or "hard", "tvd", "hard+kl"); ``MTCP*``:
    ``softmax_weights`` (``divergence`` "kl"/"tvd", ``temperature``). ``window``: the last ``h``
    verified positions (``None`` = ALL). The drafter's ``make_rows.active`` / ``weight_log`` say what was used.
    """
    validate.choice("TABED method", method, list(ENSEMBLES))
    methods = ENSEMBLES[method]
    if method.endswith("*") and len(methods) == 2:  # checked here, not at the first block's policy call
        grid_candidates(grid_n)
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
        policy = functools.partial(grid_weights, n=grid_n, criterion=criterion, window=window)
    else:
        policy = functools.partial(softmax_weights, kind=divergence, temperature=temperature, window=window)
    return AdaptiveEnsembleDrafter(draft, rows, policy)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "CAPTION_PREFIX",
    "DraftingRows",
    "ENSEMBLES",
    "History",
    "METHODS",
    "NEWLINE",
    "divergence",
    "grid_weights",
    "make_drafter",
    "softmax_weights",
]
