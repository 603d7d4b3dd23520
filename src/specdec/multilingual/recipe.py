"""The multilingual zoo's models, batch sources, losses, training stages and metrics (used by
``specdec.multilingual.train``): window pretraining and answer-only finetuning through the one loop of the zoos,
``specdec.zoo.training.train``; teacher-forced answer metrics; batched generation; chrF."""

from __future__ import annotations

import json
import random
import zlib

import torch

from specdec import zoo
from specdec.zoo import training


# ----------------------------------------------------------------------------------------------- models
def new_model(size: dict, seed: int, device):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(zoo.llama_config(size)).to(device)
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = 1, 2, 0
    return model


def model_seed(name: str) -> int:
    """A fixed seed per model name (stable across runs and machines)."""
    return zlib.crc32(name.encode()) % 100_000


def windows(streams: dict, mix: dict, batch_size: int, seq_len: int, g: torch.Generator) -> torch.Tensor:
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
    batch = windows({kind: stream}, {kind: 1.0}, n_windows, seq_len, torch.Generator().manual_seed(seed))
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
    accelerator=None,
) -> list[dict]:
    """Next-token training on windows (``training.train``: AdamW, linear warm-up, cosine decay, clip 1, fused AdamW
    on CUDA); windows drawn by ``mix`` with a CPU generator seeded ``seed + 1``; returns the log rows.
    ``accelerator``: ``training.train``'s (``accelerate launch``: each process trains on its slice of the windows)."""
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


def answer_loss(model, examples: Examples, rows: torch.Tensor):
    inputs, targets, mask = examples.batch(rows)
    logits = model(input_ids=inputs).logits.float()
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    ).view_as(targets)
    return loss, (logits.argmax(-1) == targets) & mask, mask


class EpochBatches:
    """Row indices (CPU ``LongTensor[batch_size]``) of ``examples`` in epochs of seeded permutations; an epoch's
    rest that does not fill a batch is carried into the next permutation. ``tokens`` counts the answer tokens
    drawn so far. Called as ``batches(generator)`` by ``training.train``."""

    def __init__(self, examples: Examples, batch_size: int):
        self.examples, self.batch_size = examples, batch_size
        self.order, self.cursor, self.tokens = None, 0, 0

    def __call__(self, g: torch.Generator) -> torch.Tensor:
        n = self.examples.n
        if self.order is None:
            self.order = torch.randperm(n, generator=g)
        if self.cursor + self.batch_size > n:
            self.order, self.cursor = torch.cat([self.order[self.cursor :], torch.randperm(n, generator=g)]), 0
        rows = self.order[self.cursor : self.cursor + self.batch_size]
        self.cursor += self.batch_size
        self.tokens += int(self.examples.answer_len[rows].sum())
        return rows


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
    accelerator=None,
) -> tuple[list[dict], int]:
    """Answer-only training on ``examples`` (``training.train``; ``EpochBatches`` seeded ``seed + 2``; the loss is
    the mean over the answer tokens of the batch); returns (log rows, answer tokens seen). ``accelerator``:
    ``training.train``'s; each process takes a slice of the rows and its loss is the mean over its own answer
    tokens, so the averaged gradient weights the processes' tokens equally (DDP's usual approximation)."""
    device = next(model.parameters()).device
    batches = EpochBatches(examples, batch_size)

    def loss_fn(m, rows):
        loss_tok, _, mask = answer_loss(m, examples, rows)
        return (loss_tok * mask).sum() / mask.sum().clamp(min=1)

    log = training.train(
        model,
        batches,
        loss_fn,
        steps=steps,
        lr=lr,
        seed=seed + 2,
        fused=str(device).startswith("cuda"),
        name=name,
        fields={"phase": "finetune"},
        counters=lambda: {"tokens": batches.tokens},
        evaluate=(lambda m: {"heldout": answer_metrics(m, heldout, eval_batch_size)})
        if heldout is not None and heldout.n
        else None,
        accelerator=accelerator,
    )
    return log.rows, batches.tokens


@torch.no_grad()
def answer_metrics(model, examples: Examples, batch_size: int = 256) -> dict:
    """Teacher-forced answer-token loss (nats) and top-1 agreement with the answers (all rows)."""
    model.eval()
    if not examples.n:
        return {"loss": None, "agree": None, "tokens": 0}
    order = torch.argsort(examples.lengths)
    total = correct = count = 0.0
    for rows in order.split(batch_size):
        loss, right, mask = answer_loss(model, examples, rows)
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


def chrf(hypothesis: str, reference: str) -> float:
    """Sentence chrF (n = 6, β = 2), 0..100: sacrebleu's, the one chrF of this repository."""
    import sacrebleu

    return float(sacrebleu.sentence_chrf(hypothesis, [reference.strip()]).score)


@torch.no_grad()
def target_quality(target, heldout, eval_idx, eval_prompts, eval_refs, greedy, tokenizer, cfg, device) -> dict:
    """Reference loss with the right / shuffled sources, greedy exact match and chrF, per set."""
    groups: dict[str, list[int]] = {}
    for j, i in enumerate(eval_idx):
        row = heldout["rows"][i]
        groups.setdefault(f"{row['source']}-{row['lang']}-{row['direction']}", []).append(j)
    detail, summary = {}, {}
    for key, js in groups.items():
        rng = random.Random(zlib.crc32(key.encode()))
        perm = derangement(len(js), rng)
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


def derangement(n: int, rng: random.Random) -> list[int]:
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
