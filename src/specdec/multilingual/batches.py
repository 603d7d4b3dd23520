"""The batches of the multilingual recipe, both profiles: pretraining windows and answer-only conversations.

``windows`` draws next-token windows from token streams (the tiny zoo's pretraining). ``Conversations`` holds
prompt + answer sequences flat on the CPU (millions at paper scale) and builds the one batch format of answer-only
finetuning, the input of ``specdec.zoo.training.answer_loss``; ``EpochBatches`` deals its positions in seeded
epochs.
"""

from __future__ import annotations

import torch

from specdec import validate


def windows(streams: dict, mix: dict, batch_size: int, seq_len: int, g: torch.Generator) -> torch.Tensor:
    """``LongTensor[batch_size, seq_len + 1]`` windows, kinds drawn by ``mix`` (CPU, seeded by ``g``)."""
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


class Conversations:
    """Prompt + answer sequences on the CPU, stored flat: ``tokens`` (``IntTensor[total]``), ``offsets``
    (``LongTensor[N + 1]``), ``prompt_len`` (``LongTensor[N]``). ``order`` (``LongTensor[n]``, default all in turn)
    is the sequence in which they are used: position ``i`` is conversation ``order[i]``; ``n``, ``answer_len``
    (``LongTensor[n]``, by position: what ``EpochBatches`` counts), ``head(k)`` / ``select(positions)`` (a subset
    in that order) and ``batch(positions, device)``."""

    def __init__(self, tokens, offsets, prompt_len, pad_id: int = 0, order=None):
        self.tokens, self.offsets, self.prompt_len, self.pad_id = tokens, offsets, prompt_len, pad_id
        self.order = torch.arange(len(prompt_len)) if order is None else order
        self.n = len(self.order)
        self.answer_len = (offsets[1:] - offsets[:-1] - prompt_len)[self.order]

    @classmethod
    def from_pairs(cls, pairs, max_length: int | None = None, pad_id: int = 0) -> Conversations:
        """From ``(prompt ids, answer ids)`` pairs, in their order, each cut to ``max_length`` tokens (``None``:
        kept whole)."""
        seqs = [(p + a)[:max_length] for p, a in pairs]
        offsets = torch.tensor([0] + [len(x) for x in seqs]).cumsum(0)
        tokens = torch.tensor([t for x in seqs for t in x], dtype=torch.int32)
        prompt_len = torch.tensor([len(p) if max_length is None else min(len(p), max_length) for p, _ in pairs])
        return cls(tokens, offsets, prompt_len.long(), pad_id)

    def head(self, k: int) -> Conversations:
        """The first ``k`` conversations of the order (the paper's budgets of Fig. 4)."""
        return self.select(torch.arange(k))

    def select(self, positions) -> Conversations:
        """The conversations at ``positions`` of the order, in that order (the tiny zoo's Fig. 4 sets)."""
        positions = torch.as_tensor(positions, dtype=torch.long)
        return Conversations(self.tokens, self.offsets, self.prompt_len, self.pad_id, self.order[positions])

    def prompt(self, position: int) -> list[int]:
        """The prompt ids of the conversation at ``position``."""
        r = int(self.order[position])
        start = int(self.offsets[r])
        return self.tokens[start : start + int(self.prompt_len[r])].tolist()

    def batch(self, positions: torch.Tensor, device) -> dict:
        """The answer-only batch of ``positions``: ``labels`` (``LongTensor[B, T]``, the ids on answer positions
        and -100 elsewhere: prompt, padding) and ``input_ids`` (``LongTensor[B, T - 1]``: the right-padded ids
        without the last column, which predicts nothing), ``T`` the longest sequence of the batch. No attention
        mask: the padding is on the right, where a causal model's real positions never look.
        ``specdec.zoo.training.answer_loss`` scores it."""
        rows = self.order[positions].tolist()
        seqs = [self.tokens[self.offsets[r] : self.offsets[r + 1]].long() for r in rows]
        width = max(len(x) for x in seqs)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), -100, dtype=torch.long)
        for k, (r, seq) in enumerate(zip(rows, seqs)):
            start = int(self.prompt_len[r])
            ids[k, : len(seq)] = seq
            labels[k, start : len(seq)] = seq[start:]
        return {"input_ids": ids[:, :-1].to(device), "labels": labels.to(device)}


class EpochBatches:
    """Positions (CPU ``LongTensor[batch_size]``) of ``conversations`` in epochs of seeded permutations; an
    epoch's rest that does not fill a batch is carried into the next permutation. ``tokens`` counts the answer
    tokens drawn so far. Called as ``batches(generator)`` by ``training.train``."""

    def __init__(self, conversations: Conversations, batch_size: int):
        self.conversations, self.batch_size = conversations, validate.integer("batch_size", batch_size, minimum=1)
        self.order, self.cursor, self.tokens = None, 0, 0

    def __call__(self, g: torch.Generator) -> torch.Tensor:
        n = self.conversations.n
        if self.order is None:
            self.order = torch.randperm(n, generator=g)
        if self.cursor + self.batch_size > n:
            self.order, self.cursor = torch.cat([self.order[self.cursor :], torch.randperm(n, generator=g)]), 0
        rows = self.order[self.cursor : self.cursor + self.batch_size]
        self.cursor += self.batch_size
        self.tokens += int(self.conversations.answer_len[rows].sum())
        return rows


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["EpochBatches"]
