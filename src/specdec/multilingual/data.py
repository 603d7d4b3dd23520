"""The data step of the multilingual zoo (``python -m specdec.multilingual.train data``; needs the corpus sources).

``build_data`` tokenises token streams ``<s> doc </s>`` of general English text (corpus kinds ``prose`` +
``code``) and general multilingual text (corpus kind ``translation``, the Django phrasebook pages, with every
entry whose English string is held out in ``specdec.multilingual.parallel`` removed, so no model ever trains on
a held-out pair); and translation examples ``<s> prompt`` + ``reference </s>`` built with
``parallel.translation_prompt`` in both directions for every language: the train split of source A
(``django``) are the instruction documents of the target and the prompts that self-distillation answers; the
held-out split of A and all of source B (``sphinx``) are the evaluation prompts. Prompt and reference are
tokenised separately, as a decoder sees them (``tasks.encode`` layout: ``<s>`` + prompt ids). The train step
(``specdec.multilingual.zoo_run.train_all``) reads only the saved data and the tokenizer.
"""

from __future__ import annotations

import hashlib
import pathlib
import re

import torch

from specdec import zoo
from specdec.multilingual import parallel
from specdec.multilingual.parallel import english_key
from specdec.zoo import corpus as corpus_lib


def drop_heldout_entries(doc: dict, heldout_keys: set[str], languages: dict[str, str]) -> tuple[str, int]:
    """Remove the phrasebook entries (``"English: …\\n<Language>: …"``) whose English string is held out."""
    language = languages[doc["name"].split(":")[1]]
    kept, dropped = [], 0
    for entry in re.split(r"\n\n(?=English: )", doc["text"]):
        sep = f"\n{language}: "
        en = entry[len("English: ") : entry.find(sep)] if entry.startswith("English: ") and sep in entry else None
        if en is not None and english_key(en) in heldout_keys:
            dropped += 1
        else:
            kept.append(entry)
    return "\n\n".join(kept), dropped


def _stream(tokenizer, texts) -> torch.Tensor:
    texts = list(texts)
    ids: list[int] = []
    for row in tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []:
        ids += [tokenizer.bos_token_id, *row, tokenizer.eos_token_id]
    return torch.tensor(ids, dtype=torch.int16)  # vocabulary 4096 fits


def encode_examples(tokenizer, prompts: list[dict]) -> dict:
    """Pack translation prompts: ``<s>`` + prompt ids, then reference ids + ``</s>`` (the answer).

    Returns ``{"ids": int16[total], "offsets": long[n+1], "prompt_len": int32[n], "rows": [prompt dicts]}``.
    """
    prompt_ids = tokenizer([p["prompt"] for p in prompts], add_special_tokens=False)["input_ids"] if prompts else []
    answer_ids = tokenizer([p["reference"] for p in prompts], add_special_tokens=False)["input_ids"] if prompts else []
    ids, offsets, prompt_len = [], [0], []
    for p_ids, a_ids in zip(prompt_ids, answer_ids):
        row = [tokenizer.bos_token_id, *p_ids]
        prompt_len.append(len(row))
        ids += row + a_ids + [tokenizer.eos_token_id]
        offsets.append(len(ids))
    keys = ("id", "source", "lang", "direction", "prompt", "reference")
    return {
        "ids": torch.tensor(ids, dtype=torch.int16),
        "offsets": torch.tensor(offsets, dtype=torch.long),
        "prompt_len": torch.tensor(prompt_len, dtype=torch.int32),
        "rows": [{k: p[k] for k in keys} for p in prompts],
    }


def example_ids(examples: dict, i: int) -> tuple[list[int], list[int]]:
    """``(prompt_ids, answer_ids)`` of example ``i`` of an ``encode_examples`` pack."""
    a, b = int(examples["offsets"][i]), int(examples["offsets"][i + 1])
    ids = examples["ids"][a:b].long().tolist()
    n = int(examples["prompt_len"][i])
    return ids[:n], ids[n:]


def tokenizer_digest(tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR) -> str:
    return hashlib.sha256((pathlib.Path(tokenizer_dir) / "tokenizer.json").read_bytes()).hexdigest()


def build_data(
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR, max_docs: int | None = None, max_pairs: int | None = None
) -> dict:
    """Tokenise general text and translation examples (see the module docstring).

    ``max_docs``: at most this many corpus documents per (kind, split); ``max_pairs``: at most this many
    pairs per (source, language, split). Both are for tests; ``None`` keeps everything.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    languages = {lang: spec[0] for lang, spec in parallel.LANGUAGES.items()}
    rows = {
        (source, lang, split): parallel.pairs(source, lang, split)[:max_pairs]
        for source, splits in parallel.SPLITS.items()
        for split in splits
        for lang in languages
    }
    heldout_keys = {
        parallel.english_key(r["en"]) for (_, _, split), rs in rows.items() if split == "heldout" for r in rs
    }
    if max_pairs is not None:  # a cut list must not let a held-out string into the general text
        heldout_keys |= {
            parallel.english_key(r["en"])
            for lang in languages
            for source, split in (("django", "heldout"), ("sphinx", "heldout"))
            for r in parallel.pairs(source, lang, split)
        }

    docs = corpus_lib.build_corpus(
        split="name"
    )  # the split the shipped zoo was trained on; held-out strings dropped below
    general: dict[str, dict] = {"train": {}, "heldout": {}}
    dropped = 0
    for split in general:
        for kind in ("prose", "code", "translation"):
            texts = [d for d in docs if d["split"] == split and d["kind"] == kind][:max_docs]
            if kind == "translation" and split == "train":
                filtered = []
                for doc in texts:
                    text, n = drop_heldout_entries(doc, heldout_keys, corpus_lib.LANGUAGES)
                    dropped += n
                    if text:
                        filtered.append({**doc, "text": text})
                texts = filtered
            general[split][kind] = _stream(tokenizer, (d["text"] for d in texts))

    def prompts(keys):
        return [
            parallel.translation_prompt(r, direction)
            for key in keys
            for r in rows[key]
            for direction in parallel.DIRECTIONS
        ]

    train_keys = [("django", lang, "train") for lang in languages]
    heldout_keys_list = [(source, lang, "heldout") for source in ("django", "sphinx") for lang in languages]
    data = {
        "format": 1,
        "general": general,
        "train": encode_examples(tokenizer, prompts(train_keys)),
        "heldout": encode_examples(tokenizer, prompts(heldout_keys_list)),
        "meta": {
            "languages": languages,
            "directions": list(parallel.DIRECTIONS),
            "sources": parallel.source_versions(),
            "corpus_sources": corpus_lib.source_versions(),
            "vocab_size": len(tokenizer),
            "tokenizer_sha256": tokenizer_digest(tokenizer_dir),
            "heldout_entries_dropped_from_translation_text": dropped,
            "pairs": {f"{s}:{lang}:{split}": len(rs) for (s, lang, split), rs in rows.items()},
            "max_docs": max_docs,
            "max_pairs": max_pairs,
        },
    }
    return data


def data_summary(data: dict) -> dict:
    return {
        "general": {split: {k: len(v) for k, v in s.items()} for split, s in data["general"].items()},
        **{
            split: {"examples": len(data[split]["rows"]), "tokens": len(data[split]["ids"])}
            for split in ("train", "heldout")
        },
        "heldout_entries_dropped": data["meta"]["heldout_entries_dropped_from_translation_text"],
    }


def collections_count(rows: list[dict]) -> dict[tuple, int]:
    """Number of examples per (source, lang, direction)."""
    counts: dict[tuple, int] = {}
    for r in rows:
        key = (r["source"], r["lang"], r["direction"])
        counts[key] = counts.get(key, 0) + 1
    return counts


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
