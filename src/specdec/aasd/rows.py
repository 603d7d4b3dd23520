"""What the AASD recipe trains on: rows of (prompt, answer) and their right-padded batches.

A ``Rows`` is ``n`` prompts, each ``(prompt ids [L], pixel inputs)`` made when asked for (``prompt(i)``), with
their answers (token ids, EOS kept) once known. Two sources make them, and the recipe does not know which one it
reads:

- ``file_rows``: the TABED data file (``specdec.vlm.data.build_data``; the tiny zoo), answers included;
- ``request_rows``: requests ``{"id", "prompt", "images"}`` through a hub LLaVA's processor (the paper profile's
  ``aasd.training`` datasets, ``training_requests``), answered later by the target (``distill.distill``).

``make_batch`` pads rows on the right (pad id, attention mask 0, labels -100 outside the answer); a text-only
draft sees each image's run of image tokens as ``"\\n"`` (``text_only_batch``, as at inference:
``baselines.text_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from specdec import hub
from specdec.aasd import baselines
from specdec.aasd.algorithm import config_for
from specdec.vlm import batches, scenes
from specdec.vlm.data import IMAGE_TOKEN_ID, IMAGE_TOKENS
from specdec.vlm.prompts import encode


@dataclass
class Rows:
    """Training rows: ``ids`` (their names: the keys of stored answers), ``prompt(i) -> (ids LongTensor[L],
    inputs)`` (``inputs``: ``{"pixel_values": [n_images, 3, H, W]}``, or ``{}`` without images) and ``answers``
    (``answers[i]``: token ids; ``None`` until known). ``pad_id`` / ``eos_id`` of the tokenizer; images as runs of
    ``image_tokens`` copies of ``image_token_id``. ``files``: the processor files a fresh model of these rows is
    saved with (the data file's; ``None`` for hub rows, whose drafts bring their own)."""

    ids: list[str]
    prompt: Callable[[int], tuple[torch.Tensor, dict]]
    answers: list[list[int]] | None
    pad_id: int
    eos_id: int
    image_token_id: int
    image_tokens: int
    files: dict | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, index) -> Rows:
        """The rows ``index`` (a list of positions), in that order."""
        index = [int(i) for i in index]
        answers = None if self.answers is None else [self.answers[i] for i in index]
        return replace(self, ids=[self.ids[i] for i in index], prompt=lambda i: self.prompt(index[i]), answers=answers)

    def with_answers(self, answers: dict[str, list[int]]) -> Rows:
        """The same prompts with the answers ``{row id: answer ids}`` (``KeyError`` for a row without one)."""
        return replace(self, answers=[answers[i] for i in self.ids])

    def batch(self, picks: torch.Tensor, device=None, dtype=None) -> dict:
        """``make_batch`` of the rows ``picks`` (a CPU ``LongTensor[B]``) on ``device``, pixels in ``dtype``."""
        picks = picks.tolist()
        batch = make_batch([self.prompt(i) for i in picks], [self.answers[i] for i in picks], self.pad_id, device)
        if dtype is not None and batch["pixel_values"] is not None:
            batch["pixel_values"] = batch["pixel_values"].to(dtype)
        return batch


def pick_rows(n_rows: int, n: int | None, seed: int = 0) -> list[int]:
    """``n`` of ``n_rows`` rows, a seeded draw in increasing order; ``None`` (or ``n >= n_rows``): every row."""
    if n is None or n >= n_rows:
        return list(range(n_rows))
    return torch.randperm(n_rows, generator=torch.Generator().manual_seed(seed))[:n].sort().values.tolist()


# ---------------------------------------------------------------------------------------------- sources
def file_rows(data: dict, split: str = "train", blank: bool = False) -> Rows:
    """The rows of a split (``"train"`` / ``"heldout"``) of the TABED data file with their answers (the tokens
    after the prompt, ``</s>`` included); ``blank``: every image all white (the held-out check that a draft reads
    its images)."""
    rows, images = batches.Split(data[split], "cpu"), batches.Images(data, "cpu")
    prompt_len, lengths = rows.prompt_len.tolist(), rows.lengths_cpu.tolist()

    def prompt(i: int):
        image_ids = rows.table[i][rows.table[i] >= 0]
        inputs = {"pixel_values": images.pixels(image_ids, blank)} if image_ids.numel() else {}
        return rows.ids[i, : prompt_len[i]], inputs

    answers = [rows.ids[i, prompt_len[i] : lengths[i]].tolist() for i in range(len(lengths))]
    return Rows(
        ids=[f"row-{i:06d}" for i in range(len(lengths))],
        prompt=prompt,
        answers=answers,
        pad_id=0,
        eos_id=2,
        image_token_id=IMAGE_TOKEN_ID,
        image_tokens=int(data.get("image_tokens", IMAGE_TOKENS)),  # 64 in a ``vlm.data.with_patch_size(.., 8)`` file
        files=data["processor_files"],
    )


def request_rows(requests: list[dict], processor, target) -> Rows:
    """Requests ``{"id", "prompt", "images"}`` as rows of a hub LLaVA ``target`` (encoded by its ``processor``
    when a batch asks for them), without answers."""
    tokenizer = processor.tokenizer
    return Rows(
        ids=[r["id"] for r in requests],
        prompt=lambda i: encode(processor, requests[i]["prompt"], requests[i]["images"]),
        answers=None,
        pad_id=tokenizer.pad_token_id or 0,
        eos_id=tokenizer.eos_token_id,
        image_token_id=target.config.image_token_id,
        image_tokens=config_for(target).image_tokens,
    )


def question_of(row: dict, default: str) -> str:
    """A dataset row's question (ScienceQA: with its options, as the evaluation prompt puts them)."""
    question = row.get("question") or default
    if row.get("choices"):
        question += "\nOptions: " + " ".join(f"({chr(65 + k)}) {c}" for k, c in enumerate(row["choices"]))
    return question


def image_requests(rows, prefix: str, default_question: str, n: int) -> list[dict]:
    """Up to ``n`` requests ``{"id", "prompt", "images"}`` from dataset ``rows`` that have an image (LLaVA-1.5's
    chat prompt, the image first)."""
    out = []
    for i, row in enumerate(rows):
        if len(out) == n:
            break
        if row.get("image") is None:
            continue
        prompt = scenes.chat_prompt([(f"{scenes.IMAGE_PLACEHOLDER}\n{question_of(row, default_question)}", None)])
        out.append({"id": f"{prefix}-{i:06d}", "prompt": prompt, "images": [row["image"]]})
    return out


def training_requests(spec: dict, n: int | None = None) -> list[dict]:
    """The training prompts of a profile's ``aasd.training`` (``spec``: its yaml): each entry's ``n`` rows with an
    image, or ``n`` to cap them."""
    out = []
    for entry in spec["aasd"]["training"]:
        wanted = n or entry["n"]
        revision = hub.pinned_revision(spec, entry["dataset"])
        rows = hub.load_dataset(entry["dataset"], entry.get("config"), entry["split"], revision=revision)
        prefix = entry["dataset"].split("/")[-1]
        out += image_requests(rows, prefix, entry.get("question", "Describe the image briefly."), wanted)
    return out


# ---------------------------------------------------------------------------------------------- batches
def right_pad(rows: list[torch.Tensor], labels: list[torch.Tensor], pad_id: int, device=None) -> dict:
    """``input_ids``, ``attention_mask``, ``labels`` (``LongTensor[B, longest row]`` on ``device``, default the
    CPU) of 1-D id ``rows`` and their ``labels`` (each as long as its row), right-padded: after a row's end
    ``input_ids`` is ``pad_id``, ``attention_mask`` 0 (1 on the row) and ``labels`` -100."""
    width = max(len(r) for r in rows)
    out = {
        "input_ids": torch.full((len(rows), width), pad_id, dtype=torch.long, device=device),
        "attention_mask": torch.zeros((len(rows), width), dtype=torch.long, device=device),
        "labels": torch.full((len(rows), width), -100, dtype=torch.long, device=device),
    }
    for b, (row, lab) in enumerate(zip(rows, labels)):
        out["input_ids"][b, : len(row)] = row
        out["attention_mask"][b, : len(row)] = 1
        out["labels"][b, : len(row)] = lab
    return out


def make_batch(encoded: list[tuple[torch.Tensor, dict]], answers: list[list[int]], pad_id: int, device) -> dict:
    """A right-padded batch ``input_ids``, ``attention_mask``, ``pixel_values`` (the rows' images in row order, or
    ``None``), ``labels`` (answer ids; -100 on the prompt and the padding) of ``(prompt ids [L], pixel inputs)``
    and answer ids."""
    rows, labels = [], []
    for (ids, _), answer in zip(encoded, answers):
        answer = torch.tensor(answer, dtype=torch.long)
        rows.append(torch.cat([ids.long(), answer]))
        labels.append(torch.cat([torch.full((len(ids),), -100, dtype=torch.long), answer]))
    pixels = [inputs["pixel_values"] for _, inputs in encoded if "pixel_values" in inputs]
    batch = right_pad(rows, labels, pad_id)
    batch["pixel_values"] = torch.cat(pixels) if pixels else None
    return {k: (v.to(device) if v is not None else None) for k, v in batch.items()}


def text_only_batch(batch: dict, newline_ids: list[int], image_token_id: int, image_tokens: int, vocab_size: int):
    """``batch`` with each image's run of ``image_tokens`` ids replaced by ``newline_ids`` (labels follow), no
    pixels: what the text-only baselines train on and see at inference (``baselines.text_rows``). Ids the draft's
    ``vocab_size`` lacks (the target's extra tokens) become 0 and are not trained on; padding is 0."""
    rows, labels = [], []
    for ids, lab, m in zip(batch["input_ids"], batch["labels"], batch["attention_mask"]):
        ids, lab = ids[m.bool()], lab[m.bool()]
        prompt_len = int((lab == -100).sum())
        prompt = baselines.replace_images(ids[:prompt_len], newline_ids, image_token_id, image_tokens)
        answer = ids[prompt_len:]
        outside = answer >= vocab_size
        rows.append(torch.cat([prompt, answer.masked_fill(outside, 0)]))
        labels.append(torch.cat([torch.full_like(prompt, -100), lab[prompt_len:].masked_fill(outside, -100)]))
    return right_pad(rows, labels, 0, batch["input_ids"].device)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
