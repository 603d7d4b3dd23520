"""The paper's four one-size baselines on the tiny proxy (Table 1): FT-/DT-LLaMA and FT-/DT-LLaVA.

- text-only (LLaMA) drafts see every image replaced by ``"\\n"`` (``text_rows``, as TABED's T row): they are
  trained on ``text_only`` rows and draft with ``text_drafter``;
- LLaVA drafts see the images (``ModelDrafter`` with the request's ``pixel_values``);
- FT: finetuned on the task answers; DT: sequence-level distillation (Kim & Rush 2016) on the target's greedy
  answers to ``n`` training prompts (``distilled``).

Data transforms work on a split of the TABED data file (``specdec.tabed.data.build_data``: flat ``input_ids``
with ``offsets``, ``prompt_len``, ``image_ids`` with ``image_offsets``, ``scenario``, ``turn``).
"""

from __future__ import annotations

import torch

from specdec.drafters import ModelDrafter
from specdec.engine import autoregressive
from specdec.tabed import train as tabed_train
from specdec.tabed.data import IMAGE_TOKEN_ID, IMAGE_TOKENS
from specdec.tabed.drafting import image_runs

NEWLINE = "\n"


def replace_images(ids: torch.Tensor, newline_ids: list[int]) -> torch.Tensor:
    """``ids`` with each run of ``IMAGE_TOKENS`` image tokens replaced by ``newline_ids``."""
    starts = image_runs(ids.cpu(), IMAGE_TOKEN_ID, IMAGE_TOKENS)
    out, previous, flat = [], 0, ids.tolist()
    for start in starts:
        out += flat[previous:start] + list(newline_ids)
        previous = start + IMAGE_TOKENS
    out += flat[previous:]
    return torch.tensor(out, dtype=torch.long, device=ids.device)


def text_rows(newline_ids: list[int]):
    """``make_rows`` for a text-only draft: the prompt with every image replaced by ``newline_ids``."""
    return lambda prompt_ids, **_: [replace_images(prompt_ids, newline_ids)]


def text_drafter(model, tokenizer) -> ModelDrafter:
    """A text-only Llama draft as a drafter for LLaVA requests (pass no ``draft_inputs``)."""
    return ModelDrafter(model, make_rows=text_rows(tokenizer(NEWLINE, add_special_tokens=False)["input_ids"]))


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
    train, _, images = tabed_train.load_splits(data)
    packed = split_rows(data["train"])
    out_rows = []
    for r in rows.tolist():
        batch = tabed_train.batch_inputs(train, images, torch.tensor([r]))
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


def text_loss(model, batch: dict) -> torch.Tensor:
    """Mean answer-token cross-entropy of a text-only Llama on a ``tabed.train.batch_inputs`` batch."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1].float()
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), batch["labels"][:, 1:].reshape(-1), ignore_index=-100
    )
