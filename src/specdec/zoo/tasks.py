"""Prompts to decode: the held-out prompts of the embedded corpus (tiny profile).

``data/prompts/heldout.jsonl`` holds ``{"id", "kind", "source", "prompt"}`` rows cut from held-out documents
(English prose, Python code, translation phrasebooks). The corpus is split by content (``corpus.build_corpus``):
no prompt occurs verbatim in the tiny zoo's training text, and ``make models`` refuses to write one that does.
"""

from __future__ import annotations

import hashlib
import json

import torch

from specdec import zoo


def heldout_prompts(kinds: list[str] | None = None, n: int | None = None) -> list[dict]:
    """Held-out prompts, optionally filtered by ``kinds`` and capped at ``n`` per kind (file order)."""
    with zoo.PROMPTS.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    if kinds:
        unknown = set(kinds) - {r["kind"] for r in rows}
        if unknown:
            raise ValueError(f"unknown prompt kinds {sorted(unknown)}; known: {sorted({r['kind'] for r in rows})}")
        rows = [r for r in rows if r["kind"] in kinds]
    if n is not None:
        counts: dict[str, int] = {}
        kept = []
        for r in rows:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1
            if counts[r["kind"]] <= n:
                kept.append(r)
        rows = kept
    return rows


def text_digest(*texts: str) -> str:
    """The ``prompts`` key of a result row: 12 hex digits of the sha256 of the prompt texts, in order (a prompt id
    names a different text once the held-out prompts are regenerated)."""
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]


def encode(tokenizer, text: str) -> torch.Tensor:
    """``<s>`` + the text's token ids, as ``LongTensor[L]`` (the layout the tiny models were trained on)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    return torch.tensor(bos + ids, dtype=torch.long)


def distinct_ngram_fraction(ids: list[int], n: int = 8) -> float:
    """Distinct n-grams / all n-grams of one sequence (1.0 = no repetition; loops drive it to 0)."""
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 1.0
