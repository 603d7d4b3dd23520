"""The multilingual zoo: a tiny "Vicuna" target and specialised drafters (pretrain → self-distil → finetune).

Reproduces the training recipe of *Towards Fast Multilingual LLM Inference: Speculative Decoding and
Specialized Drafters* (Yi et al.) with tiny models on the foundation tokenizer (``data/models/tokenizer``,
4096 ids) and the parallel corpus of ``specdec.multilingual.parallel``. Two steps, so the training can run on a machine
without Django, Sphinx or the corpus sources (e.g. a GPU box):

    python -m specdec.multilingual.train data --out .gpu/ml_data.pt        # here: tokenise text + prompts
    python -m specdec.multilingual.train train --data .gpu/ml_data.pt --device cuda --out data/models

``python -m specdec.multilingual.train`` (step ``all``) does both on this machine.

**Data step** (``build_data``; needs the corpus sources): token streams ``<s> doc </s>`` of general English
text (corpus kinds ``prose`` + ``code``) and general multilingual text (corpus kind ``translation``, the
Django phrasebook pages, with every entry whose English string is held out in ``specdec.multilingual.parallel`` removed,
so no model ever trains on a held-out pair); and translation examples ``<s> prompt`` + ``reference </s>``
built with ``parallel.translation_prompt`` in both directions for every language: the train split of
source A (``django``) are the instruction documents of the target and the prompts that self-distillation
answers; the held-out split of A and all of source B (``sphinx``) are the evaluation prompts. Prompt and
reference are tokenised separately, as a decoder sees them (``tasks.encode`` layout: ``<s>`` + prompt ids).

**Train step** (``train_all``; reads only the data file and the tokenizer), in order:

a. ``ml-target`` (size of ``zoo.TINY_ZOO["tiny-target"]``, ~2.6 M parameters): next-token loss on windows of
   general text (English + multilingual) and of the instruction documents (every language, both
   directions). Its held-out report: answer-token loss on the reference translations with the right source
   sentence and with the sources shuffled among the rows (the "chance" level: a model that ignores the
   source scores the same on both), and greedy exact match / chrF against the references (and against a
   shuffled reference).
b. Self-distillation: the target answers every training prompt of each pair X→En at temperatures
   ``{0, 0.3, 0.7, 1.0}`` (``max_new_tokens`` 48, stop at ``</s>`` = id 2). The decoding engine of this repo
   runs at batch size 1; distillation instead calls transformers' batched ``model.generate`` (left padding
   with an attention mask, so positions are those of the unpadded prompt; ``do_sample`` with pure temperature
   scaling, no top-k / top-p) for throughput: the same distributions as ``specdec.engine`` with
   ``SamplingConfig(temperature=t)``. The outputs (ids and text) are saved as ``ml_distilled.jsonl``.
c. Drafters (~0.37 M parameters, size of ``zoo.TINY_ZOO["tiny-draft-s"]``, same tokenizer):
   ``ml-draft-generic`` (pretrained on general English text only, like vicuna-68m);
   ``ml-draft-pretrained`` (pretrained on general English + multilingual text; the shared P checkpoint);
   per pair X→En (X in de fr ru ja zh) ``ml-draft-f-<x>`` (finetune only, from scratch) and
   ``ml-draft-pf-<x>`` (``ml-draft-pretrained`` finetuned), both on the target's distilled X→En outputs with
   the loss on the answer tokens (and ``</s>``) only; for the tokens-vs-speedup figure, F and P-F drafters for
   ``de`` at four log-spaced finetune budgets (``ml-draft-f-de-b<N>`` / ``ml-draft-pf-de-b<N>``, N = answer
   tokens; the largest equals the main budget, so it is the same model as ``ml-draft-(p)f-de``); and
   ``ml-draft-large-pf-de`` (hidden 192, 3 layers, ~2.1 M parameters: 5.7x the drafter, 12x its
   non-embedding parameters) with the P-F recipe on de, for the drafter-size study.
   Every drafter is evaluated on the held-out X→En prompts of every language (source A held-out and
   source B): answer-token loss and top-1 agreement with the target's greedy answer, teacher forced (the
   per-token greedy acceptance of speculative decoding).

A finetune budget counts answer tokens seen (``</s>`` included): steps = budget / (batch x mean answer
length of the pair's distilled data). ``--steps-scale`` multiplies every step count and budget and (below 1)
the number of prompts per set; below ``SMOKE_SCALE`` (0.01) it also shrinks batches, windows and answer
lengths (``SMOKE``): CI smoke runs. All seeds are fixed (a CRC of the model name). Weights are
saved as float16 with a float32 config (``specdec.zoo.training.save_half``) together with the tokenizer and a
``training_log.json``; the output directory also gets ``ml_training.csv`` (one row per model),
``ml_distilled.jsonl`` and ``ml_run.json`` (configuration, phase timings, sizes).
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import json
import math
import pathlib
import random
import re
import time
import zlib

import torch

from specdec import zoo
from specdec.multilingual import parallel
from specdec.multilingual.parallel import english_key
from specdec.zoo import corpus as corpus_lib
from specdec.zoo import training
from specdec.zoo.training import save_half

TARGET = "ml-target"
GENERIC = "ml-draft-generic"
PRETRAINED = "ml-draft-pretrained"
LARGE = "ml-draft-large-pf-de"
BUDGET_LANG = "de"
DISTIL_DIRECTION = "xx-en"

SIZES = {
    "target": zoo.TINY_ZOO["tiny-target"],
    "draft": zoo.TINY_ZOO["tiny-draft-s"],
    "large": dict(
        hidden_size=192, intermediate_size=512, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=6
    ),
}
# Weights of the kinds of training windows (``instruct``: the translation instruction documents).
MIXES = {
    "target": {"prose": 0.25, "code": 0.15, "translation": 0.15, "instruct": 0.45},
    "english": {"prose": 0.55, "code": 0.45},
    "multilingual": {"prose": 0.25, "code": 0.15, "translation": 0.60},
}
TRAIN = dict(
    target_steps=3000,
    pretrain_steps=2000,
    large_pretrain_steps=2000,  # window (pre)training steps
    batch_size=32,
    seq_len=256,
    lr=3e-3,
    ft_batch_size=64,
    ft_lr=2e-3,
    ft_budget=409_600,
    budget_factor=4,
    n_budgets=4,  # finetuning
    temperatures=(0.0, 0.3, 0.7, 1.0),
    max_new_tokens=48,
    gen_batch_size=1024,  # self-distillation
    max_prompt_tokens=160,  # longer prompts (a few long Sphinx messages) are left out of distillation / eval
    eval_windows=64,
    eval_batch_size=256,
    min_prompts=8,
)
# CI smoke runs (``steps_scale < SMOKE_SCALE``) also use these smaller batches, windows and answers.
SMOKE_SCALE = 0.01
SMOKE = dict(batch_size=8, seq_len=128, ft_batch_size=16, eval_windows=8, max_new_tokens=16, gen_batch_size=64)


# ------------------------------------------------------------------------------------------------ data step
def _drop_heldout_entries(doc: dict, heldout_keys: set[str], languages: dict[str, str]) -> tuple[str, int]:
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

    docs = corpus_lib.build_corpus()
    general: dict[str, dict] = {"train": {}, "heldout": {}}
    dropped = 0
    for split in general:
        for kind in ("prose", "code", "translation"):
            texts = [d for d in docs if d["split"] == split and d["kind"] == kind][:max_docs]
            if kind == "translation" and split == "train":
                filtered = []
                for doc in texts:
                    text, n = _drop_heldout_entries(doc, heldout_keys, corpus_lib.LANGUAGES)
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


# ----------------------------------------------------------------------------------------------- models
def llama_config(size: dict):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=zoo.VOCAB_SIZE,
        max_position_embeddings=zoo.MAX_POSITIONS,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        **size,
    )


def new_model(size: dict, seed: int, device):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_config(size)).to(device)
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = 1, 2, 0
    return model


def model_seed(name: str) -> int:
    """A fixed seed per model name (stable across runs and machines)."""
    return zlib.crc32(name.encode()) % 100_000


def _schedule(opt, steps: int):
    warmup = max(1, steps // 20)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))
    )


def _optimizer(model, lr: float, device):
    fused = str(device).startswith("cuda")
    return torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1, **({"fused": True} if fused else {})
    )


def _windows(streams: dict, mix: dict, batch_size: int, seq_len: int, g: torch.Generator) -> torch.Tensor:
    """``batch_size`` windows of ``seq_len + 1`` tokens, kinds drawn by ``mix`` (CPU, seeded)."""
    kinds = [k for k in mix if mix[k] > 0 and k in streams and len(streams[k]) > seq_len + 1]
    weights = torch.tensor([float(mix[k]) for k in kinds])
    picks = torch.multinomial(weights, batch_size, replacement=True, generator=g)
    out = torch.empty(batch_size, seq_len + 1, dtype=torch.long)
    offsets = torch.arange(seq_len + 1)
    for k, kind in enumerate(kinds):
        rows = (picks == k).nonzero().squeeze(1)
        if len(rows):
            stream = streams[kind]
            starts = torch.randint(0, len(stream) - seq_len - 1, (len(rows),), generator=g)
            out[rows] = stream[starts[:, None] + offsets]
    return out


@torch.no_grad()
def window_loss(model, streams: dict, kind: str, n_windows: int, seq_len: int = 128, seed: int = 1234) -> float:
    """Mean next-token loss (nats) on fixed windows of one held-out stream."""
    model.eval()
    device = next(model.parameters()).device
    stream = streams[kind]
    seq_len = min(seq_len, len(stream) - 2)
    batch = _windows({kind: stream}, {kind: 1.0}, n_windows, seq_len, torch.Generator().manual_seed(seed))
    losses = []
    for chunk in batch.to(device).split(32):
        logits = model(input_ids=chunk[:, :-1]).logits.float()
        losses.append(
            torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1)).item()
        )
    return round(sum(losses) / len(losses), 4)


def pretrain(
    model,
    streams: dict,
    mix: dict,
    steps: int,
    batch_size: int,
    seq_len: int,
    lr: float,
    seed: int,
    name: str = "",
    heldout: dict | None = None,
    eval_windows: int = 64,
) -> list[dict]:
    """Next-token training on windows (AdamW, linear warm-up, cosine decay); returns the log rows."""
    device = next(model.parameters()).device
    opt = _optimizer(model, lr, device)
    sched = _schedule(opt, steps)
    g = torch.Generator().manual_seed(seed + 1)
    log_every = max(1, steps // 10)
    log, t0 = [], time.perf_counter()
    for step in range(steps):
        model.train()
        batch = _windows(streams, mix, batch_size, seq_len, g).to(device, non_blocking=True)
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % log_every == 0 or step + 1 == steps:
            row = {
                "model": name,
                "phase": "pretrain",
                "step": step + 1,
                "train_loss": round(loss.item(), 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if heldout and ((step + 1) % (log_every * 5) == 0 or step + 1 == steps):
                row["heldout_loss"] = {k: window_loss(model, heldout, k, eval_windows) for k in mix if k in heldout}
            log.append(row)
            print(json.dumps(row), flush=True)
    model.eval()
    return log


class Examples:
    """Prompt + answer sequences on a device, right-padded; the loss covers the answer tokens only."""

    def __init__(self, prompts: list[list[int]], answers: list[list[int]], device):
        self.n = len(prompts)
        self.lengths = torch.tensor([len(p) + len(a) for p, a in zip(prompts, answers)])
        self.prompt_len = torch.tensor([len(p) for p in prompts])
        self.answer_len = self.lengths - self.prompt_len
        ids = torch.zeros(self.n, int(self.lengths.max()) if self.n else 1, dtype=torch.long)
        for i, (p, a) in enumerate(zip(prompts, answers)):
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
        self.ids = ids.to(device)
        self._lengths, self._prompt_len = self.lengths.to(device), self.prompt_len.to(device)

    def batch(self, rows: torch.Tensor):
        """``(input_ids, target ids, mask of answer positions)`` for CPU row indices ``rows``."""
        width = int(self.lengths[rows].max())
        rows_d = rows.to(self.ids.device)
        ids = self.ids[rows_d, :width]
        pos = torch.arange(1, width, device=ids.device)[None]  # the position each target token sits at
        mask = (pos < self._lengths[rows_d, None]) & (pos >= self._prompt_len[rows_d, None])
        return ids[:, :-1], ids[:, 1:], mask


def _answer_loss(model, examples: Examples, rows: torch.Tensor):
    inputs, targets, mask = examples.batch(rows)
    logits = model(input_ids=inputs).logits.float()
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    ).view_as(targets)
    return loss, (logits.argmax(-1) == targets) & mask, mask


def finetune(
    model,
    examples: Examples,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    name: str = "",
    heldout: Examples | None = None,
    eval_batch_size: int = 256,
) -> tuple[list[dict], int]:
    """Answer-only training on ``examples`` (epochs of seeded permutations); returns (log rows, tokens seen)."""
    device = next(model.parameters()).device
    opt = _optimizer(model, lr, device)
    sched = _schedule(opt, steps)
    g = torch.Generator().manual_seed(seed + 2)
    order, cursor, tokens = torch.randperm(examples.n, generator=g), 0, 0
    log_every = max(1, steps // 10)
    log, t0 = [], time.perf_counter()
    for step in range(steps):
        model.train()
        if cursor + batch_size > examples.n:
            order, cursor = torch.cat([order[cursor:], torch.randperm(examples.n, generator=g)]), 0
        rows = order[cursor : cursor + batch_size]
        cursor += batch_size
        tokens += int(examples.answer_len[rows].sum())
        loss_tok, _, mask = _answer_loss(model, examples, rows)
        loss = (loss_tok * mask).sum() / mask.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % log_every == 0 or step + 1 == steps:
            row = {
                "model": name,
                "phase": "finetune",
                "step": step + 1,
                "tokens": tokens,
                "train_loss": round(loss.item(), 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            if heldout is not None and heldout.n and ((step + 1) % (log_every * 5) == 0 or step + 1 == steps):
                row["heldout"] = answer_metrics(model, heldout, eval_batch_size)
            log.append(row)
            print(json.dumps(row), flush=True)
    model.eval()
    return log, tokens


@torch.no_grad()
def answer_metrics(model, examples: Examples, batch_size: int = 256) -> dict:
    """Teacher-forced answer-token loss (nats) and top-1 agreement with the answers (all rows)."""
    model.eval()
    if not examples.n:
        return {"loss": None, "agree": None, "tokens": 0}
    order = torch.argsort(examples.lengths)
    total = correct = count = 0.0
    for rows in order.split(batch_size):
        loss, right, mask = _answer_loss(model, examples, rows)
        total += float((loss * mask).sum())
        correct += float(right.sum())
        count += float(mask.sum())
    return {"loss": round(total / count, 4), "agree": round(correct / count, 4), "tokens": int(count)}


@torch.no_grad()
def generate_batched(
    model,
    prompts: list[list[int]],
    temperature: float,
    max_new_tokens: int,
    batch_size: int,
    seed: int,
    eos_id: int = 2,
    pad_id: int = 0,
) -> list[list[int]]:
    """Continue every prompt with transformers' batched ``generate`` (left padding + attention mask).

    ``temperature`` 0 is greedy; otherwise samples ``softmax(logits / temperature)`` (no top-k / top-p), the
    distribution ``specdec.engine`` samples with ``SamplingConfig(temperature)``. Each output is cut after its
    first ``eos_id`` (kept); an output without one has ``max_new_tokens`` tokens. Prompts are batched by
    length (sorted); each batch is seeded with ``seed + batch index``.
    """
    from transformers import GenerationConfig

    model.eval()
    device = next(model.parameters()).device
    sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else {}
    config = GenerationConfig(
        max_new_tokens=max_new_tokens, eos_token_id=eos_id, pad_token_id=pad_id, bos_token_id=1, **sampling
    )
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))
    outputs: list[list[int]] = [[] for _ in prompts]
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start : start + batch_size]
        width = max(len(prompts[i]) for i in idx)
        ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, width - len(prompts[i]) :] = torch.tensor(prompts[i])
            mask[r, width - len(prompts[i]) :] = 1
        torch.manual_seed(seed + b)
        out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=config)
        for i, row in zip(idx, out[:, width:].tolist()):
            outputs[i] = row[: row.index(eos_id) + 1] if eos_id in row else row
    return outputs


# ----------------------------------------------------------------------------------------------- metrics
def chrf(hypothesis: str, reference: str, n: int = 6, beta: float = 2.0) -> float:
    """Character n-gram F-score (chrF, n = 1..6, β = 2, whitespace removed), 0..100."""
    hyp, ref = "".join(hypothesis.split()), "".join(reference.split())
    precisions, recalls = [], []
    for k in range(1, n + 1):
        h = _ngrams(hyp, k)
        r = _ngrams(ref, k)
        if not h or not r:
            continue
        overlap = sum(min(c, r.get(g, 0)) for g, c in h.items())
        precisions.append(overlap / sum(h.values()))
        recalls.append(overlap / sum(r.values()))
    if not precisions:
        return 100.0 if hyp == ref else 0.0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    return 0.0 if p + r == 0 else round(100 * (1 + beta**2) * p * r / (beta**2 * p + r), 2)


def _ngrams(text: str, k: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in range(len(text) - k + 1):
        out[text[i : i + k]] = out.get(text[i : i + k], 0) + 1
    return out


# ------------------------------------------------------------------------------------------------ train step
def _select(examples: dict, keep, limit: int | None, max_prompt_tokens: int) -> list[int]:
    """Indices of the rows for which ``keep(row)`` holds, prompt at most ``max_prompt_tokens``, first ``limit``
    per (source, lang, direction)."""
    counts: dict[tuple, int] = {}
    out = []
    for i, row in enumerate(examples["rows"]):
        key = (row["source"], row["lang"], row["direction"])
        if keep(row) and int(examples["prompt_len"][i]) <= max_prompt_tokens and counts.get(key, 0) < (limit or 10**9):
            counts[key] = counts.get(key, 0) + 1
            out.append(i)
    return out


def _budget_name(recipe: str, budget: int) -> str:
    return f"ml-draft-{recipe}-{BUDGET_LANG}-b{budget}"


def budgets(cfg: dict, steps_scale: float = 1.0) -> list[int]:
    """The finetune budgets (answer tokens) of the tokens-vs-speedup grid, smallest first; the last is the main."""
    main = max(1, int(cfg["ft_budget"] * steps_scale))
    return [max(1, main // cfg["budget_factor"] ** k) for k in range(cfg["n_budgets"] - 1, -1, -1)]


def model_names(langs=None, cfg: dict | None = None, steps_scale: float = 1.0) -> list[str]:
    """Every model ``train_all`` saves, in training order."""
    cfg = dict(TRAIN, **(cfg or {}))
    langs = list(langs or ["de", "fr", "ru", "ja", "zh"])
    grid = budgets(cfg, steps_scale)
    names = [TARGET, GENERIC, PRETRAINED]
    for lang in langs:
        for recipe in ("f", "pf"):
            names += [f"ml-draft-{recipe}-{lang}"] + ([_budget_name(recipe, grid[-1])] if lang == BUDGET_LANG else [])
    if BUDGET_LANG in langs:
        names += [_budget_name(r, b) for b in grid[:-1] for r in ("f", "pf")] + [LARGE]
    return names


def train_all(
    data: dict,
    out_dir: pathlib.Path,
    device: str = "cpu",
    steps_scale: float = 1.0,
    langs=None,
    prompts_per_set: int | None = None,
    tokenizer_dir: pathlib.Path = zoo.TOKENIZER_DIR,
    **overrides,
) -> list[dict]:
    """Run steps a-c of the module docstring; save every model under ``out_dir/<name>``; returns summary rows.

    ``overrides`` replace entries of ``TRAIN`` (e.g. ``batch_size`` for a CPU test); a smoke run
    (``steps_scale < SMOKE_SCALE``) starts from ``TRAIN`` updated with ``SMOKE``. ``prompts_per_set``: at most
    this many prompts per (source, language, direction) for distillation and evaluation (default: all, or
    ``max(min_prompts, n x steps_scale)`` when ``steps_scale < 1``).
    """
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    cfg = {**TRAIN, **(SMOKE if steps_scale < SMOKE_SCALE else {}), **overrides}
    unknown = set(overrides) - set(TRAIN)
    if unknown:
        raise ValueError(f"unknown training settings {sorted(unknown)}; known: {sorted(TRAIN)}")
    if str(device).startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if data["meta"]["tokenizer_sha256"] != tokenizer_digest(tokenizer_dir):
        raise ValueError(f"{tokenizer_dir} is not the tokenizer the data file was built with")
    meta_langs = list(data["meta"]["languages"])
    langs = list(langs or meta_langs)
    device_name = training.device_name(device)
    scale = lambda n: max(1, int(n * steps_scale))  # noqa: E731
    if prompts_per_set is None and steps_scale < 1:
        n_max = max(collections_count(data["train"]["rows"]).values())
        prompts_per_set = max(cfg["min_prompts"], math.ceil(n_max * steps_scale))
    phases: dict[str, float] = {}
    t_run = time.perf_counter()

    general_train = {k: v.long() for k, v in data["general"]["train"].items()}
    general_heldout = {k: v.long() for k, v in data["general"]["heldout"].items()}
    # the instruction documents: every train-split example (both directions), <s> … </s> each, in a fixed
    # shuffled order (so a window does not hold a pair in both directions side by side)
    offsets = data["train"]["offsets"].tolist()
    order = torch.randperm(len(offsets) - 1, generator=torch.Generator().manual_seed(0)).tolist()
    instruct = torch.cat([data["train"]["ids"][offsets[i] : offsets[i + 1]] for i in order]).long()
    target_streams = {**general_train, "instruct": instruct}
    target_heldout = {**general_heldout}

    rows_out: list[dict] = []

    def save(model, name: str, info: dict, log: list, extra: dict | None = None):
        path = out_dir / name
        save_half(copy.deepcopy(model).cpu(), path)
        tokenizer.save_pretrained(path)
        info = {"model": name, "parameters": sum(p.numel() for p in model.parameters()), "device": device_name, **info}
        (path / "training_log.json").write_text(
            json.dumps({"summary": info, **(extra or {}), "log": log}, indent=0, ensure_ascii=False) + "\n"
        )
        rows_out.append(info)
        print(json.dumps({k: v for k, v in info.items() if not isinstance(v, dict)}), flush=True)

    def general_losses(model):
        return {
            k: window_loss(model, general_heldout, k, cfg["eval_windows"])
            for k in general_heldout
            if len(general_heldout[k]) > 8
        }

    # ---- a. the target ------------------------------------------------------------------------------------
    t0 = time.perf_counter()
    target = new_model(SIZES["target"], model_seed(TARGET), device)
    steps = scale(cfg["target_steps"])
    log = pretrain(
        target,
        target_streams,
        MIXES["target"],
        steps,
        cfg["batch_size"],
        cfg["seq_len"],
        cfg["lr"],
        model_seed(TARGET),
        TARGET,
        target_heldout,
        cfg["eval_windows"],
    )
    train_seconds = time.perf_counter() - t0
    phases["target_train"] = train_seconds

    t0 = time.perf_counter()
    heldout = data["heldout"]
    eval_idx = _select(heldout, lambda r: True, prompts_per_set, cfg["max_prompt_tokens"])
    eval_prompts = [example_ids(heldout, i)[0] for i in eval_idx]
    eval_refs = [example_ids(heldout, i)[1] for i in eval_idx]
    greedy = generate_batched(
        target, eval_prompts, 0.0, cfg["max_new_tokens"], cfg["gen_batch_size"], model_seed(TARGET)
    )
    quality = _target_quality(target, heldout, eval_idx, eval_prompts, eval_refs, greedy, tokenizer, cfg, device)
    phases["target_eval"] = time.perf_counter() - t0
    save(
        target,
        TARGET,
        {
            "role": "target",
            "recipe": "pretrain (general + instructions)",
            "lang": "all",
            "pretrain_steps": steps,
            "batch_size": cfg["batch_size"],
            "seq_len": cfg["seq_len"],
            "lr": cfg["lr"],
            "mix": MIXES["target"],
            "seconds": round(train_seconds, 1),
            "heldout_general": general_losses(target),
            "heldout_summary": quality["summary"],
        },
        log,
        {"heldout_translation": quality["detail"]},
    )

    # ---- b. self-distillation -----------------------------------------------------------------------------
    t0 = time.perf_counter()
    train = data["train"]
    idx = _select(
        train,
        lambda r: r["lang"] in langs and r["direction"] == DISTIL_DIRECTION,
        prompts_per_set,
        cfg["max_prompt_tokens"],
    )
    prompts = [example_ids(train, i)[0] for i in idx]
    distilled: dict[str, tuple[list, list]] = {lang: ([], []) for lang in langs}
    jsonl = []
    for k, temperature in enumerate(cfg["temperatures"]):  # every pair in one batched pass per temperature
        outs = generate_batched(
            target,
            prompts,
            float(temperature),
            cfg["max_new_tokens"],
            cfg["gen_batch_size"],
            model_seed("distil") + 1000 * k,
        )
        for i, p, o in zip(idx, prompts, outs):
            row = train["rows"][i]
            if not o:
                continue
            distilled[row["lang"]][0].append(p)
            distilled[row["lang"]][1].append(o)
            jsonl.append(
                {
                    "id": row["id"],
                    "lang": row["lang"],
                    "direction": DISTIL_DIRECTION,
                    "temperature": float(temperature),
                    "prompt": row["prompt"],
                    "output": tokenizer.decode([t for t in o if t != tokenizer.eos_token_id]),
                    "stop": "eos" if o[-1] == tokenizer.eos_token_id else "max_new_tokens",
                    "output_ids": o,
                }
            )
    jsonl.sort(key=lambda r: (langs.index(r["lang"]), r["temperature"]))
    with (out_dir / "ml_distilled.jsonl").open("w", encoding="utf-8") as f:
        for row in jsonl:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    phases["distil"] = time.perf_counter() - t0
    distil_stats = {
        lang: {
            "examples": len(a),
            "answer_tokens": sum(map(len, a)),
            "eos_fraction": round(sum(o[-1] == 2 for o in a) / max(1, len(a)), 3),
        }
        for lang, (_, a) in distilled.items()
    }
    print(json.dumps({"distilled": distil_stats}), flush=True)

    # held-out X→En sets for every drafter: the target's greedy answers (what greedy SD must reproduce)
    drafter_eval: dict[str, Examples] = {}
    for source in ("django", "sphinx"):
        for lang in meta_langs:
            sel = [
                j
                for j, i in enumerate(eval_idx)
                if heldout["rows"][i]["source"] == source
                and heldout["rows"][i]["lang"] == lang
                and heldout["rows"][i]["direction"] == DISTIL_DIRECTION
                and greedy[j]
            ]
            drafter_eval[f"{source}-{lang}"] = Examples(
                [eval_prompts[j] for j in sel], [greedy[j] for j in sel], device
            )

    def drafter_metrics(model):
        return {key: answer_metrics(model, ex, cfg["eval_batch_size"]) for key, ex in drafter_eval.items()}

    def ft_examples(lang):
        return Examples(*distilled[lang], device)

    def ft_steps(lang, budget):
        ex = distilled[lang][1]
        mean_answer = sum(map(len, ex)) / max(1, len(ex))
        return max(1, round(budget / (cfg["ft_batch_size"] * mean_answer)))

    # ---- c. drafters ----------------------------------------------------------------------------------------
    def pretrained_drafter(name, size, mix, steps_key, save_as=None):
        t0 = time.perf_counter()
        model = new_model(SIZES[size], model_seed(name), device)
        steps = scale(cfg[steps_key])
        log = pretrain(
            model,
            general_train,
            MIXES[mix],
            steps,
            cfg["batch_size"],
            cfg["seq_len"],
            cfg["lr"],
            model_seed(name),
            name,
            general_heldout,
            cfg["eval_windows"],
        )
        seconds = time.perf_counter() - t0
        phases[f"pretrain {name}"] = seconds
        if save_as:
            save(
                model,
                save_as,
                {
                    "role": "drafter",
                    "recipe": "P",
                    "lang": "none",
                    "pretrain_steps": steps,
                    "mix": MIXES[mix],
                    "seconds": round(seconds, 1),
                    "heldout_general": general_losses(model),
                    "heldout_xx_en": drafter_metrics(model),
                },
                log,
            )
        return model, log, steps, seconds

    generic, *_ = pretrained_drafter(GENERIC, "draft", "english", "pretrain_steps", save_as=GENERIC)
    del generic
    base, base_log, base_steps, base_seconds = pretrained_drafter(
        PRETRAINED, "draft", "multilingual", "pretrain_steps", save_as=PRETRAINED
    )

    def finetuned(
        name,
        lang,
        recipe,
        budget,
        init=None,
        init_name="scratch",
        init_steps=0,
        init_seconds=0.0,
        size="draft",
        save_names=(),
        init_log=(),
    ):
        t0 = time.perf_counter()
        model = copy.deepcopy(init) if init is not None else new_model(SIZES[size], model_seed(name), device)
        steps = ft_steps(lang, budget)
        examples = ft_examples(lang)
        log, tokens = finetune(
            model,
            examples,
            steps,
            cfg["ft_batch_size"],
            cfg["ft_lr"],
            model_seed(name),
            name,
            drafter_eval.get(f"django-{lang}"),
            cfg["eval_batch_size"],
        )
        seconds = time.perf_counter() - t0
        phases[f"finetune {name}"] = seconds
        metrics = drafter_metrics(model)
        general = general_losses(model)
        for k, save_name in enumerate(save_names or (name,)):
            save(
                model,
                save_name,
                {
                    "role": "drafter",
                    "recipe": recipe,
                    "lang": lang,
                    "init": init_name,
                    "pretrain_steps": init_steps,
                    "finetune_steps": steps,
                    "finetune_budget": budget,
                    "finetune_tokens": tokens,
                    "finetune_examples": examples.n,
                    "ft_batch_size": cfg["ft_batch_size"],
                    "ft_lr": cfg["ft_lr"],
                    "seconds": round(init_seconds + seconds, 1),
                    **({"same_as": save_names[0]} if k else {}),
                    "heldout_general": general,
                    "heldout_xx_en": metrics,
                },
                [*init_log, *log],
            )
        return model

    grid = budgets(cfg, steps_scale)
    main_budget = grid[-1]
    for lang in langs:
        extra = (_budget_name("f", main_budget),) if lang == BUDGET_LANG else ()
        finetuned(f"ml-draft-f-{lang}", lang, "F", main_budget, save_names=(f"ml-draft-f-{lang}", *extra))
        extra = (_budget_name("pf", main_budget),) if lang == BUDGET_LANG else ()
        finetuned(
            f"ml-draft-pf-{lang}",
            lang,
            "P-F",
            main_budget,
            init=base,
            init_name=PRETRAINED,
            init_steps=base_steps,
            init_seconds=base_seconds,
            save_names=(f"ml-draft-pf-{lang}", *extra),
        )
    if BUDGET_LANG in langs:
        for budget in grid[:-1]:
            finetuned(_budget_name("f", budget), BUDGET_LANG, "F", budget)
            finetuned(
                _budget_name("pf", budget),
                BUDGET_LANG,
                "P-F",
                budget,
                init=base,
                init_name=PRETRAINED,
                init_steps=base_steps,
                init_seconds=base_seconds,
            )
        large, large_log, large_steps, large_seconds = pretrained_drafter(
            "ml-draft-large-pretrained", "large", "multilingual", "large_pretrain_steps"
        )
        finetuned(
            LARGE,
            BUDGET_LANG,
            "P-F",
            main_budget,
            init=large,
            init_name="ml-draft-large-pretrained (not saved)",
            init_steps=large_steps,
            init_seconds=large_seconds,
            size="large",
            init_log=large_log,
        )

    # ---- summary ------------------------------------------------------------------------------------------
    weights = {r["model"]: (out_dir / r["model"] / "model.safetensors").stat().st_size for r in rows_out}
    dirs = {r["model"]: sum(p.stat().st_size for p in (out_dir / r["model"]).iterdir()) for r in rows_out}
    _write_csv(out_dir / "ml_training.csv", rows_out)
    run = {
        "device": device_name,
        "steps_scale": steps_scale,
        "langs": langs,
        "prompts_per_set": prompts_per_set,
        "config": cfg,
        "sizes": SIZES,
        "mixes": MIXES,
        "budgets": grid,
        "distilled": distil_stats,
        "seconds_total": round(time.perf_counter() - t_run, 1),
        "phase_seconds": {k: round(v, 1) for k, v in phases.items()},
        "weights_bytes_total": sum(weights.values()),
        "model_dirs_bytes_total": sum(dirs.values()),
        "distilled_jsonl_bytes": (out_dir / "ml_distilled.jsonl").stat().st_size,
        "weights_bytes": weights,
        "data_meta": data["meta"],
    }
    (out_dir / "ml_run.json").write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")
    print(
        f"{len(rows_out)} models, float16 weights {sum(weights.values()) / 1e6:.2f} MB "
        f"(model directories with tokenizer files {sum(dirs.values()) / 1e6:.2f} MB), distilled jsonl "
        f"{run['distilled_jsonl_bytes'] / 1e6:.2f} MB, {run['seconds_total']:.0f} s on {device_name}",
        flush=True,
    )
    return rows_out


def collections_count(rows: list[dict]) -> dict[tuple, int]:
    counts: dict[tuple, int] = {}
    for r in rows:
        key = (r["source"], r["lang"], r["direction"])
        counts[key] = counts.get(key, 0) + 1
    return counts


@torch.no_grad()
def _target_quality(target, heldout, eval_idx, eval_prompts, eval_refs, greedy, tokenizer, cfg, device) -> dict:
    """Reference loss with the right / shuffled sources, greedy exact match and chrF, per set."""
    groups: dict[str, list[int]] = {}
    for j, i in enumerate(eval_idx):
        row = heldout["rows"][i]
        groups.setdefault(f"{row['source']}-{row['lang']}-{row['direction']}", []).append(j)
    detail, summary = {}, {}
    for key, js in groups.items():
        rng = random.Random(zlib.crc32(key.encode()))
        perm = _derangement(len(js), rng)
        right = Examples([eval_prompts[j] for j in js], [eval_refs[j] for j in js], device)
        # shuffled: each reference after another row's prompt (same language and direction)
        wrong = Examples([eval_prompts[js[p]] for p in perm], [eval_refs[j] for j in js], device)
        hyps = [tokenizer.decode([t for t in greedy[j] if t != tokenizer.eos_token_id]).strip() for j in js]
        refs = [heldout["rows"][eval_idx[j]]["reference"].strip() for j in js]
        m_right = answer_metrics(target, right, cfg["eval_batch_size"])
        m_wrong = answer_metrics(target, wrong, cfg["eval_batch_size"])
        detail[key] = {
            "n": len(js),
            "ref_loss": m_right["loss"],
            "ref_loss_shuffled_source": m_wrong["loss"],
            "ref_agree": m_right["agree"],
            "exact_match": round(sum(h == r for h, r in zip(hyps, refs)) / len(js), 4),
            "chrf": round(sum(chrf(h, r) for h, r in zip(hyps, refs)) / len(js), 2),
            "chrf_shuffled_reference": round(sum(chrf(hyps[k], refs[p]) for k, p in enumerate(perm)) / len(js), 2),
        }
    for source in ("django", "sphinx"):
        for direction in ("xx-en", "en-xx"):
            keys = [k for k in detail if k.startswith(source + "-") and k.endswith(direction)]
            if not keys:
                continue
            n = sum(detail[k]["n"] for k in keys)
            for metric in ("ref_loss", "ref_loss_shuffled_source", "exact_match", "chrf", "chrf_shuffled_reference"):
                vals = [(detail[k][metric], detail[k]["n"]) for k in keys if detail[k][metric] is not None]
                if vals:
                    summary[f"{source}_{direction}_{metric}"] = round(sum(v * w for v, w in vals) / n, 4)
    print(json.dumps({"target_heldout": summary}), flush=True)
    return {"detail": detail, "summary": summary}


def _derangement(n: int, rng: random.Random) -> list[int]:
    """A permutation with no fixed point (the identity for n < 2)."""
    if n < 2:
        return list(range(n))
    shift = rng.randrange(1, n)
    order = list(range(n))
    rng.shuffle(order)
    perm = [0] * n
    for k in range(n):  # rotate along a random cycle: no element maps to itself
        perm[order[k]] = order[(k + shift) % n]
    return perm


def _write_csv(path: pathlib.Path, rows: list[dict]) -> None:
    flat = []
    for r in rows:
        row = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
        for k, v in (r.get("heldout_general") or {}).items():
            row[f"loss_{k}"] = v
        for k, v in (r.get("heldout_summary") or {}).items():
            row[k] = v
        for key, m in (r.get("heldout_xx_en") or {}).items():
            row[f"agree_{key}"] = m["agree"]
            row[f"loss_{key}"] = m["loss"]
        flat.append(row)
    header: list[str] = []
    for row in flat:
        header += [k for k in row if k not in header]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(flat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="?", choices=["data", "train", "all"], default="all")
    parser.add_argument(
        "--data",
        type=pathlib.Path,
        default=pathlib.Path(".gpu/ml_data.pt"),
        help="the data file (read by train, written by all)",
    )
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=None,
        help="data: the data file to write; train/all: the models directory (default data/models)",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--steps-scale",
        type=float,
        default=1.0,
        help="multiply steps and budgets (and, below 1, the prompts per set): CI smoke runs",
    )
    parser.add_argument("--langs", nargs="*", default=None, help="pairs X→En to build drafters for (default all)")
    parser.add_argument("--prompts-per-set", type=int, default=None)
    parser.add_argument("--ft-budget", type=int, default=TRAIN["ft_budget"], help="main finetune budget (tokens)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    data_path = args.out if args.step == "data" and args.out else args.data
    if args.step in ("data", "all"):
        t0 = time.perf_counter()
        data = build_data()
        data_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, data_path)
        print(
            json.dumps(
                {
                    "file": str(data_path),
                    "bytes": data_path.stat().st_size,
                    "seconds": round(time.perf_counter() - t0, 1),
                    **data_summary(data),
                }
            )
        )
    if args.step in ("train", "all"):
        data = torch.load(data_path)
        train_all(
            data,
            args.out or zoo.MODELS,
            device=args.device,
            steps_scale=args.steps_scale,
            langs=args.langs,
            prompts_per_set=args.prompts_per_set,
            ft_budget=args.ft_budget,
        )


if __name__ == "__main__":
    main()
