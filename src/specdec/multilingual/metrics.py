"""Held-out metrics of the multilingual recipe: window loss, teacher-forced answer loss and agreement, chrF, the
tiny target's translation report."""

from __future__ import annotations

import json
import random
import zlib

import torch

from specdec.multilingual.batches import Conversations, windows


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


@torch.no_grad()
def answer_metrics(model, conversations: Conversations, batch_size: int = 256) -> dict:
    """Teacher-forced answer-token loss (nats) and top-1 agreement with the answers (every conversation, in
    batches by length): the per-token greedy acceptance of speculative decoding. The same batches and logits as
    ``training.answer_loss``, kept per token."""
    model.eval()
    if not conversations.n:
        return {"loss": None, "agree": None, "tokens": 0}
    device = next(model.parameters()).device
    lengths = (conversations.offsets[1:] - conversations.offsets[:-1])[conversations.order]
    total = correct = count = 0.0
    for positions in torch.argsort(lengths).split(batch_size):
        batch = conversations.batch(positions, device)
        logits = model(input_ids=batch["input_ids"]).logits.float()
        labels = batch["labels"][:, 1:]
        mask = labels != -100
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels.clamp(min=0).reshape(-1), reduction="none"
        ).view_as(labels)
        total += float((loss * mask).sum())
        correct += float(((logits.argmax(-1) == labels) & mask).sum())
        count += float(mask.sum())
    return {"loss": round(total / count, 4), "agree": round(correct / count, 4), "tokens": int(count)}


def chrf(hypothesis: str, reference: str) -> float:
    """Sentence chrF (n = 6, β = 2), 0..100: sacrebleu's, the one chrF of this repository."""
    import sacrebleu

    return float(sacrebleu.sentence_chrf(hypothesis, [reference.strip()]).score)


@torch.no_grad()
def target_quality(target, heldout, eval_idx, eval_prompts, eval_refs, greedy, tokenizer, cfg) -> dict:
    """Reference loss with the right / shuffled sources, greedy exact match and chrF, per set."""
    groups: dict[str, list[int]] = {}
    for j, i in enumerate(eval_idx):
        row = heldout["rows"][i]
        groups.setdefault(f"{row['source']}-{row['lang']}-{row['direction']}", []).append(j)
    detail = {}
    for key, js in groups.items():
        rng = random.Random(zlib.crc32(key.encode()))
        perm = derangement(len(js), rng)
        right = Conversations.from_pairs([(eval_prompts[j], eval_refs[j]) for j in js])
        # shuffled: each reference after another row's prompt (same language and direction)
        wrong = Conversations.from_pairs([(eval_prompts[js[p]], eval_refs[j]) for p, j in zip(perm, js)])
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
    summary = quality_summary(detail)
    print(json.dumps({"target_heldout": summary}), flush=True)
    return {"detail": detail, "summary": summary}


def quality_summary(detail: dict) -> dict:
    """``target_quality``'s per-set metrics averaged per (source, direction), weighted by the sets' sizes."""
    summary = {}
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
    return summary


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


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
