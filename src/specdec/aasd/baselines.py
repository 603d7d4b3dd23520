"""The paper's four one-size baselines (Table 1) as drafters: FT-/DT-LLaMA and FT-/DT-LLaVA.

- text-only (LLaMA) drafts see every image replaced by ``"\\n"`` (``text_rows``, as TABED's T row), in training
  (``rows.text_only_batch``) and when drafting (``text_drafter``); a Llama draft whose vocabulary is a prefix of
  the target's drafts through ``PrefixVocabularyDrafter``;
- LLaVA drafts see the images (``ModelDrafter`` with the request's ``pixel_values``);
- FT: finetuned on the task answers; DT: sequence-level distillation (Kim & Rush 2016) on the target's greedy
  answers. Both are trained by ``specdec.aasd.draft_training``.
"""

from __future__ import annotations

import torch

from specdec.drafters import ModelDrafter
from specdec.vlm.data import IMAGE_TOKEN_ID, IMAGE_TOKENS
from specdec.vlm.llava import image_runs, visual_features

NEWLINE = "\n"


def replace_images(
    ids: torch.Tensor, newline_ids: list[int], image_token_id: int = IMAGE_TOKEN_ID, image_tokens: int = IMAGE_TOKENS
) -> torch.Tensor:
    """``ids`` with each run of ``image_tokens`` image tokens replaced by ``newline_ids`` (defaults: the tiny
    proxy's; LLaVA-1.5: its ``image_token_id`` and 576)."""
    starts = image_runs(ids.cpu(), image_token_id, image_tokens)
    out, previous, flat = [], 0, ids.tolist()
    for start in starts:
        out += flat[previous:start] + list(newline_ids)
        previous = start + image_tokens
    out += flat[previous:]
    return torch.tensor(out, dtype=torch.long, device=ids.device)


def text_rows(newline_ids: list[int], image_token_id: int = IMAGE_TOKEN_ID, image_tokens: int = IMAGE_TOKENS):
    """``make_rows`` for a text-only draft: the prompt with every image replaced by ``newline_ids``."""
    return lambda prompt_ids, **_: [replace_images(prompt_ids, newline_ids, image_token_id, image_tokens)]


def image_rows(model):
    """``make_rows`` for a LLaVA draft that sees the request's images: the prompt as its one row, with the visual
    embeddings the draft's own tower and projector make of ``pixel_values`` (``visual_features``: what its forward
    computes from them), so that requests with different images share one batch (``batch_ensemble``); a request
    without images has none."""

    def rows(prompt_ids, pixel_values=None, **_):
        if pixel_values is None:
            return [prompt_ids], [None]
        return [prompt_ids], [visual_features(model, pixel_values).flatten(0, 1)]

    return rows


def batch_member(drafter, uses_images: bool) -> ModelDrafter | None:
    """A fresh drafter for one request of a batch (``batching.generate_batch`` with one drafter per request) on
    ``drafter``'s draft model: a LLaVA draft with ``image_rows``, a text draft with its own rows; ``None`` for a
    drafter that runs at batch size 1 (the AASD module reads its request's target cache; a prefix-vocabulary
    draft pads its distributions in ``propose``, which the batch would bypass)."""
    if type(drafter) is not ModelDrafter:
        return None
    return ModelDrafter(drafter.model, make_rows=image_rows(drafter.model) if uses_images else drafter.make_rows)


class PrefixVocabularyDrafter(ModelDrafter):
    """A draft whose vocabulary is the first ``V'`` ids of the target's ``V`` (LLaVA-1.5's tokenizer is Llama's
    32000 entries plus ``<image>`` and ``<pad>``; a Llama draft has the 32000): its distributions are padded with
    zeros to ``V``, so verification sees the target's vocabulary and nothing changes for the shared ids."""

    def __init__(self, model, vocab_size: int, make_rows=None):
        rows = make_rows or (lambda prompt_ids, **_: [prompt_ids])
        super().__init__(model, make_rows=lambda prompt_ids, **kw: [self._known(r) for r in rows(prompt_ids, **kw)])
        if vocab_size < self.lm.vocab_size:
            raise ValueError(f"target vocabulary {vocab_size} is smaller than the draft's {self.lm.vocab_size}")
        self._vocab_size = vocab_size

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def _known(self, ids):
        """Target ids the draft has no entry for (``<image>``, ``<pad>``) read as id 0 (``<unk>``)."""
        if isinstance(ids, torch.Tensor):
            return ids.masked_fill(ids >= self.lm.vocab_size, 0)
        return [t if t < self.lm.vocab_size else 0 for t in ids]

    def propose(self, generated, gamma, sampling, generator=None):
        tokens, probs = super().propose(self._known(generated), gamma, sampling, generator)
        return tokens, torch.nn.functional.pad(probs, (0, self._vocab_size - probs.shape[-1]))

    def rollback(self, generated) -> None:
        super().rollback(self._known(generated))


def text_drafter(
    model, tokenizer, vocab_size: int | None = None, image_token_id: int = IMAGE_TOKEN_ID,
    image_tokens: int = IMAGE_TOKENS,
) -> ModelDrafter:  # fmt: skip
    """A text-only Llama draft as a drafter for LLaVA requests (pass no ``draft_inputs``); ``vocab_size``: the
    target's, when the draft's vocabulary is a prefix of it (``PrefixVocabularyDrafter``)."""
    rows = text_rows(tokenizer(NEWLINE, add_special_tokens=False)["input_ids"], image_token_id, image_tokens)
    if vocab_size is not None and vocab_size != model.config.vocab_size:
        return PrefixVocabularyDrafter(model, vocab_size, make_rows=rows)
    return ModelDrafter(model, make_rows=rows)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["NEWLINE", "batch_member", "image_rows"]
