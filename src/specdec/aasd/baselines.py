"""The paper's four one-size baselines on the tiny proxy (Table 1): FT-/DT-LLaMA and FT-/DT-LLaVA.

- text-only (LLaMA) drafts see every image replaced by ``"\\n"`` (``text_rows``, as TABED's T row): they are
  trained on ``text_only`` rows and draft with ``text_drafter``;
- LLaVA drafts see the images (``ModelDrafter`` with the request's ``pixel_values``);
- FT: finetuned on the task answers; DT: sequence-level distillation (Kim & Rush 2016) on the target's greedy
  answers to ``n`` training prompts (``distilled``).

Data transforms work on a split of the TABED data file (``specdec.vlm.data.build_data``: flat ``input_ids``
with ``offsets``, ``prompt_len``, ``image_ids`` with ``image_offsets``, ``scenario``, ``turn``).
"""

from __future__ import annotations

import torch

from specdec.drafters import ModelDrafter
from specdec.engine import autoregressive
from specdec.vlm import batches
from specdec.vlm.data import IMAGE_TOKEN_ID, IMAGE_TOKENS
from specdec.vlm.llava import image_runs

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


def split_rows(split: dict) -> list[tuple[list[int], int, list[int]]]:
    """``(ids, prompt_len, image_ids)`` per row of a data-file split."""
    off, img = split["offsets"], split["image_offsets"]
    flat = split["input_ids"].long()
    return [
        (
            flat[off[i] : off[i + 1]].tolist(),
            int(split["prompt_len"][i]),
            split["image_ids"][img[i] : img[i + 1]].long().tolist(),
        )
        for i in range(len(off) - 1)
    ]


def pack_split(rows, scenario: list[str], turn) -> dict:
    """The inverse of ``split_rows``: a data-file split from ``(ids, prompt_len, image_ids)`` rows."""
    ids, offsets, images, image_offsets = [], [0], [], [0]
    for row_ids, _, row_images in rows:
        ids += row_ids
        offsets.append(len(ids))
        images += row_images
        image_offsets.append(len(images))
    return {
        "input_ids": torch.tensor(ids, dtype=torch.int16),
        "offsets": torch.tensor(offsets),
        "prompt_len": torch.tensor([r[1] for r in rows], dtype=torch.int32),
        "image_ids": torch.tensor(images, dtype=torch.int32),
        "image_offsets": torch.tensor(image_offsets),
        "scenario": list(scenario),
        "turn": torch.as_tensor(turn, dtype=torch.int8),
    }


def text_only(data: dict, newline_ids: list[int]) -> dict:
    """A copy of the data file whose rows have no images (each image -> ``newline_ids``; prompt lengths follow)."""
    out = dict(data)
    for name in ("train", "heldout"):
        split = data[name]
        rows = []
        for ids, prompt_len, _ in split_rows(split):
            prompt = replace_images(torch.tensor(ids[:prompt_len]), newline_ids).tolist()
            rows.append((prompt + ids[prompt_len:], len(prompt), []))
        out[name] = pack_split(rows, split["scenario"], split["turn"])
    return out


def distill_rows(n: int, n_train: int, seed: int = 0) -> torch.Tensor:
    """The ``n`` training rows (of ``n_train``) the targets answer for the DT baselines (a seeded draw)."""
    return torch.randperm(n_train, generator=torch.Generator().manual_seed(seed))[:n].sort().values


@torch.no_grad()
def distilled(data: dict, target, rows: torch.Tensor, max_new_tokens: int, eos_token_id: int = 2) -> dict:
    """A copy of the data file whose train split is ``rows`` with the answers replaced by ``target``'s greedy
    output (EOS kept; an answer cut at ``max_new_tokens`` gets none)."""
    train, _, images = batches.load_splits(data)
    packed = split_rows(data["train"])
    out_rows = []
    for r in rows.tolist():
        batch = batches.batch_inputs(train, images, torch.tensor([r]))
        ids, prompt_len, image_ids = packed[r]
        inputs = {"pixel_values": batch["pixel_values"]} if batch["pixel_values"] is not None else {}
        res = autoregressive(
            target,
            torch.tensor(ids[:prompt_len]),
            max_new_tokens=max_new_tokens,
            eos_token_id=eos_token_id,
            target_inputs=inputs,
        )
        out_rows.append((ids[:prompt_len] + res.output_ids, prompt_len, image_ids))
    out = dict(data)
    out["train"] = pack_split(
        out_rows, [data["train"]["scenario"][r] for r in rows.tolist()], data["train"]["turn"][rows]
    )
    return out
