"""The method of *Towards Fast Multilingual LLM Inference: Speculative Decoding and Specialized Drafters* (Yi et al.),
top to bottom: drafters specialised to one language pair by pretraining and finetuning on the target's own answers.
Decoding is plain speculative decoding with the drafter of the request's pair (``specdec.engine``); what the paper
contributes is how that drafter is trained, in these stages, one function each:

1. ``new_model`` / ``pretrain``: the target and P (the generic drafter) by next-token training on windows of general
   text (the tiny profile trains both; the paper profile loads Vicuna 7B and vicuna-68m as published);
2. self-distillation, ``answer_prompts``: the target answers every training prompt X→En at every temperature with
   batched ``generate`` (``generate_batched``), rows written as JSON lines (``write_jsonl``);
3. ``load_distilled``: those files → ``Conversations`` per language (``specdec.multilingual.batches``), the one batch
   format of answer-only finetuning (``distilled_stats`` sums them up);
4. F / P-F, ``finetune``: ``zoo.training.train`` with ``zoo.training.answer_loss`` on ``EpochBatches`` of the
   conversations, from P (P-F) or from random weights (F);
5. ``save_model``: float16 weights in git (tiny) | ``save_pretrained``, gathered under accelerate (paper).

Each profile's settings are ``specdec.multilingual.recipe``; ``zoo_run`` (tiny) and ``hub_run`` (paper) put the
stages in order with each profile's data.
"""

from __future__ import annotations

import copy
import gzip
import json
import pathlib
import zlib

import torch

from specdec import zoo
from specdec.multilingual.batches import Conversations, EpochBatches, windows
from specdec.multilingual.metrics import answer_metrics, window_loss
from specdec.zoo import training


# ----------------------------------------------------------------------------------------------- models
def new_model(size: dict, seed: int, device):
    """A Llama of ``size`` (``zoo.llama_config`` fields) with weights seeded ``seed``, float32 on ``device``."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(zoo.llama_config(size)).to(device)
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = 1, 2, 0
    return model


def save_model(model, tokenizer, path: pathlib.Path, log: dict, *, half: bool = False, accelerator=None) -> None:
    """Weights (``half``: float16 tensors with a float32 config, ``training.save_half``; under accelerate gathered
    from every process), the tokenizer, then ``training_log.json`` last: its presence marks a finished model."""
    if accelerator is not None:
        state = accelerator.get_state_dict(model)
        if accelerator.is_main_process:
            accelerator.unwrap_model(model).save_pretrained(path, state_dict=state)
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return
    elif half:
        training.save_half(copy.deepcopy(model).cpu(), path)
    else:
        model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    (path / "training_log.json").write_text(json.dumps(log, indent=0, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------------------------- pretraining
def pretrain(
    model,
    streams: dict,
    mix: dict,
    steps: int,
    batch_size: int,
    seq_len: int,
    lr: float,
    seed: int,
    name="",
    heldout: dict | None = None,
    eval_windows: int = 64,
    accelerator=None,
) -> list:
    """Next-token training on windows (``training.train``: AdamW, linear warm-up, cosine decay, clip 1, fused AdamW
    on CUDA); windows drawn by ``mix`` with a CPU generator seeded ``seed + 1``; returns the log rows. The tiny
    profile's target and P (the paper's are published). ``accelerator``: ``training.train``'s."""
    device = next(model.parameters()).device

    def evaluate(m):
        return {"heldout_loss": {k: window_loss(m, heldout, k, eval_windows) for k in mix if k in heldout}}

    log = training.train(
        model,
        lambda g: windows(streams, mix, batch_size, seq_len, g).to(device, non_blocking=True),
        training.next_token_loss,
        steps=steps,
        lr=lr,
        seed=seed + 1,
        fused=str(device).startswith("cuda"),
        name=name,
        fields={"phase": "pretrain"},
        evaluate=evaluate if heldout else None,
        accelerator=accelerator,
    )
    return log.rows


# ----------------------------------------------------------------------------------------------- self-distillation
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


def pad_id(tokenizer) -> int:
    """The tokenizer's padding id (Vicuna has none: its unknown id, else 0)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.unk_token_id or 0)


def answer_prompts(target, tokenizer, prompts: list[tuple], temperature: float, cfg: dict, seed: int) -> list[dict]:
    """Self-distillation: the target answers every prompt at ``temperature`` (``generate_batched``, batches of
    ``cfg["gen_batch_size"]``, at most ``cfg["max_new_tokens"]`` tokens, seeded ``seed``). ``prompts``:
    ``(prompt ids, head, tail)``; each row is ``{**head, "temperature", **tail, "output", "stop", "output_ids"}``
    (``head`` names it: id, language; ``tail`` holds the prompt), empty answers left out."""
    eos = tokenizer.eos_token_id
    outs = generate_batched(
        target,
        [p[0] for p in prompts],
        float(temperature),
        cfg["max_new_tokens"],
        cfg["gen_batch_size"],
        seed,
        eos_id=eos,
        pad_id=pad_id(tokenizer),
    )
    return [
        {
            **head,
            "temperature": float(temperature),
            **tail,
            "output": tokenizer.decode([t for t in o if t != eos]),
            "stop": "eos" if o[-1] == eos else "max_new_tokens",
            "output_ids": o,
        }
        for (_, head, tail), o in zip(prompts, outs)
        if o
    ]


def write_jsonl(rows: list[dict], path: pathlib.Path) -> None:
    """One compact JSON object per line (UTF-8 text)."""
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def load_distilled(
    paths, langs, prompt_ids=None, max_length: int | None = None, pad: int = 0, shuffle: bool = False
) -> dict[str, Conversations]:
    """The distilled conversations of each language of ``langs`` in the JSON-lines files ``paths`` (``.gz`` read
    as gzip), in file order: ``{lang: Conversations}``. A row's prompt is ``row["prompt_ids"]``, or
    ``prompt_ids(row)`` (the tiny zoo's file names its prompts by id); each conversation is cut to ``max_length``
    tokens; empty answers are left out. ``shuffle``: the order is one permutation seeded by the language (the
    paper's budgets take their first N). Files are read one at a time into flat int32 tensors (millions of
    conversations at paper scale)."""
    parts = {lang: ([], [], []) for lang in langs}  # tokens, lengths, prompt lengths
    for path in paths:
        opener = gzip.open if str(path).endswith(".gz") else open
        flat: dict[str, list[int]] = {lang: [] for lang in langs}
        with opener(path, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                if row["lang"] not in parts or not row["output_ids"]:
                    continue
                prompt = row["prompt_ids"] if prompt_ids is None else prompt_ids(row)
                seq = (prompt + row["output_ids"])[:max_length]
                flat[row["lang"]] += seq
                parts[row["lang"]][1].append(len(seq))
                parts[row["lang"]][2].append(len(prompt) if max_length is None else min(len(prompt), max_length))
        for lang in langs:
            parts[lang][0].append(torch.tensor(flat[lang], dtype=torch.int32))
    out = {}
    for lang, (tokens, lengths, prompt_len) in parts.items():
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor(lengths, dtype=torch.long).cumsum(0)])
        seed = zlib.crc32(lang.encode())
        order = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(seed)) if shuffle else None
        out[lang] = Conversations(torch.cat(tokens), offsets, torch.tensor(prompt_len, dtype=torch.long), pad, order)
    return out


def distilled_stats(distilled: dict[str, Conversations], eos_id: int = 2) -> dict:
    """Per language: conversations, answer tokens and the share of answers that end with ``eos_id``."""
    stats = {}
    for lang, conv in distilled.items():
        last = conv.tokens[conv.offsets[1:][conv.order] - 1] if conv.n else torch.zeros(0)
        stats[lang] = {
            "examples": conv.n,
            "answer_tokens": int(conv.answer_len.sum()),
            "eos_fraction": round(int((last == eos_id).sum()) / max(1, conv.n), 3),
        }
    return stats


# ----------------------------------------------------------------------------------------------- finetuning
def finetune(
    model,
    conversations: Conversations,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    name: str = "",
    betas=(0.9, 0.95),
    weight_decay: float = 0.1,
    warmup: int | None = None,
    heldout: Conversations | None = None,
    eval_batch_size: int = 256,
    accelerator=None,
) -> tuple[list[dict], int]:
    """F / P-F: answer-only training of ``model`` on ``conversations`` (``training.train`` with
    ``training.answer_loss``; ``EpochBatches`` seeded ``seed + 2``, ``seed`` the model's; AdamW ``lr``, ``betas``,
    ``weight_decay``, ``warmup`` steps then cosine decay, clip 1); returns (log rows, answer tokens seen).
    ``heldout``: ``answer_metrics`` at the evaluation rows. ``accelerator``: ``training.train``'s; each process
    takes a slice of the batch and its loss is the mean over its own answer tokens, so the averaged gradient weights
    the processes' tokens equally (DDP's usual approximation)."""
    device = next(model.parameters()).device
    order = EpochBatches(conversations, batch_size)
    evaluate = None
    if heldout is not None and heldout.n:
        evaluate = lambda m: {"heldout": answer_metrics(m, heldout, eval_batch_size)}  # noqa: E731
    log = training.train(
        model,
        lambda g: conversations.batch(order(g), device),
        training.answer_loss,
        steps=steps,
        lr=lr,
        seed=seed + 2,
        warmup=warmup,
        betas=betas,
        weight_decay=weight_decay,
        fused=str(device).startswith("cuda"),
        name=name,
        fields={"phase": "finetune"},
        counters=lambda: {"tokens": order.tokens},
        evaluate=evaluate,
        accelerator=accelerator,
    )
    return log.rows, order.tokens


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["finetune", "pretrain"]
