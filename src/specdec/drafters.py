"""Drafters: anything that proposes ``γ`` tokens given the tokens generated so far.

The decode loop (``specdec.engine``) talks to a drafter (the ``Drafter`` protocol) through three calls::

    drafter.prefill(prompt_ids, **inputs)            # start a sequence
    tokens, probs = drafter.propose(generated, γ, sampling, generator)
        # tokens: LongTensor[γ]; probs: Tensor[γ, V], the distribution each token was drawn from
    drafter.rollback(generated)                      # the engine kept ``generated``; forget the rest

and reads ``drafter.calls`` / ``drafter.tokens_fed``. ``ModelDrafter`` is the standard small-LM
drafter; it runs ``m`` drafting inputs as one batch and mixes their distributions with ``weights``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch

from specdec.cache import CachedLM
from specdec.sampling import SamplingConfig, logits_to_probs, sample


@runtime_checkable
class Drafter(Protocol):
    """What ``engine.generate`` calls on a drafter (one sequence; ``V`` = the drafter's vocabulary size).

    - ``prefill(prompt_ids, **inputs)``: start a sequence; ``prompt_ids`` is ``LongTensor[L]``, ``inputs`` are the
      caller's ``draft_inputs`` (e.g. ``pixel_values``).
    - ``propose(generated, gamma, sampling, generator) -> (tokens, probs)``: ``generated`` is every token kept
      after the prompt so far (``list[int]``); returns up to ``gamma`` tokens ``LongTensor[k]`` (``k ≤ gamma``)
      and ``probs [k, V']`` (``V' ≤ V`` of the target), the distribution token ``i`` was drawn from (one-hot
      for a deterministic drafter).
    - ``rollback(generated)``: the engine kept ``generated``; forget every position after it.
    - ``calls`` / ``tokens_fed``: forward calls and token positions run so far (reported in the result).

    A drafter may also have ``vocab_size`` (checked against the target's) and ``observe`` (``AdaptiveDrafter``).
    """

    calls: int
    tokens_fed: int

    def prefill(self, prompt_ids: torch.Tensor, **inputs) -> None: ...

    def propose(
        self, generated: list[int], gamma: int, sampling: SamplingConfig, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def rollback(self, generated: list[int]) -> None: ...


@runtime_checkable
class AdaptiveDrafter(Drafter, Protocol):
    """A drafter that learns from verification: after each block the engine calls
    ``observe(target_logits [n, V], kept_tokens [n], sampling)`` for the ``n`` verified draft positions (the
    bonus position, which has no draft distribution, is never observed)."""

    def observe(self, target_logits: torch.Tensor, kept_tokens: list[int], sampling: SamplingConfig) -> None: ...


class ModelDrafter:
    """Draft with a causal LM (the draft model) from ``m`` drafting inputs that share its weights.

    make_rows: ``(prompt_ids, **model_inputs) -> list of m LongTensor rows`` (default: the prompt itself,
        ``m = 1``), or ``(rows, row_features)`` when the rows carry their own visual embeddings (see
        ``CachedLM.prefill``; the model inputs are then consumed by ``make_rows``). TABED-style drafters build
        several prompt variants here (``specdec.tabed.DraftingRows``). Rows are left-padded into one batch.
    weights: mixture weights over the ``m`` rows (``q = Σ_k w_k q_k``), non-negative, summing to one;
        default uniform. ``set_weights`` may change them between blocks (test-time adaptation).
    """

    def __init__(self, model, make_rows: Callable | None = None, weights=None):
        self.lm = CachedLM(model)
        self.make_rows = make_rows or (lambda prompt_ids, **_: [prompt_ids])
        self.weights = None if weights is None else _check_weights(weights)
        self.last_row_probs = None  # [γ, m, V] distributions of each row for the last block (for adaptation)

    @property
    def model(self):
        return self.lm.model

    @property
    def vocab_size(self) -> int:
        return self.lm.vocab_size

    @property
    def calls(self) -> int:
        return self.lm.calls

    @property
    def tokens_fed(self) -> int:
        return self.lm.tokens_fed

    def set_weights(self, weights) -> None:
        self.weights = _check_weights(weights)

    def prefill(self, prompt_ids: torch.Tensor, **model_inputs) -> None:
        made = self.make_rows(prompt_ids, **model_inputs) if model_inputs else self.make_rows(prompt_ids)
        rows, row_features = made if isinstance(made, tuple) else (made, None)
        if self.weights is not None and len(self.weights) != len(rows):
            raise ValueError(
                f"got {len(self.weights)} mixture weights for {len(rows)} drafting inputs; "
                f"pass one weight per drafting method"
            )
        if row_features is not None:
            self.lm.prefill(rows, row_features=row_features)
        else:
            self.lm.prefill(rows, **model_inputs)

    @torch.no_grad()
    def propose(
        self, generated: list[int], gamma: int, sampling: SamplingConfig, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        tokens, probs, row_probs = [], [], []
        sequence = list(generated)
        for _ in range(gamma):
            logits = self.lm.extend(sequence)[:, -1]  # [m, V]
            per_row = mixing_probs(logits, sampling)
            mixed = self._mix(per_row)
            token = int(mixed.argmax()) if sampling.greedy else int(sample(mixed, generator))
            tokens.append(token)
            probs.append(mixed)
            row_probs.append(per_row)
            sequence.append(token)
        self.last_row_probs = torch.stack(row_probs) if row_probs else None
        device = self.lm.device
        vocab = self.vocab_size
        draft_probs = torch.stack(probs) if probs else torch.zeros((0, vocab), device=device)
        return torch.tensor(tokens, dtype=torch.long, device=device), draft_probs

    def rollback(self, generated: list[int]) -> None:
        self.lm.rollback(generated)

    def _mix(self, per_row: torch.Tensor) -> torch.Tensor:
        if per_row.shape[0] == 1:
            return per_row[0]
        weights = self.weights
        if weights is None:
            weights = torch.full((per_row.shape[0],), 1.0 / per_row.shape[0])
        return (weights.to(per_row.device, per_row.dtype)[:, None] * per_row).sum(0)


def mixing_probs(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """Distributions that ensembles mix and compare: the warped ones, or softmax at temperature 1 under
    greedy decoding (where the warped distribution would be one-hot)."""
    return logits.float().softmax(-1) if sampling.greedy else logits_to_probs(logits, sampling)


def _check_weights(weights) -> torch.Tensor:
    from specdec import validate

    weights = torch.as_tensor(validate.numbers_list("mixture weights", weights), dtype=torch.float32)
    if len(weights) == 0 or bool((weights < 0).any()) or abs(float(weights.sum()) - 1.0) > 1e-4:
        raise ValueError(f"mixture weights must be non-negative and sum to one, got {weights.tolist()}")
    return weights


class PromptLookupDrafter:
    """Prompt lookup decoding (PLD): no model; propose the tokens that followed the most recent earlier
    occurrence of the context's last n-gram (n from ``max_ngram`` down to ``min_ngram``).

    It may propose fewer than γ tokens (none when no n-gram matches); its ``probs`` are one-hot, so
    stochastic verification accepts token x with probability p(x) and stays exact.
    """

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.calls = 0
        self.tokens_fed = 0

    def prefill(self, prompt_ids: torch.Tensor, **_) -> None:
        self.prompt = prompt_ids.tolist()
        self.device = prompt_ids.device

    def propose(self, generated, gamma, sampling, generator=None):
        context = self.prompt + list(generated)
        tokens = lookup(context, gamma, self.max_ngram, self.min_ngram)
        vocab = max(context + tokens) + 1
        probs = torch.zeros((len(tokens), vocab), device=self.device)
        if tokens:
            probs[torch.arange(len(tokens)), torch.tensor(tokens)] = 1.0
        return torch.tensor(tokens, dtype=torch.long, device=self.device), probs

    def rollback(self, generated) -> None:
        pass


def lookup(context: list[int], gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    """The (up to) γ tokens after the latest earlier match of ``context``'s last n-gram, longest n first."""
    for n in range(min(max_ngram, len(context) - 1), min_ngram - 1, -1):
        tail = context[-n:]
        for start in range(len(context) - n - 1, -1, -1):
            if context[start : start + n] == tail:
                return context[start + n : start + n + gamma]
    return []


@dataclass
class History:
    """The verified history an ``AdaptiveEnsembleDrafter`` fills and its policy reads (``specdec.tabed.ensemble``)."""

    row_probs: list[torch.Tensor] = field(default_factory=list)  # each [m, V]
    target_probs: list[torch.Tensor] = field(default_factory=list)  # each [V]
    tokens: list[int] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # per-position policy statistics, computed once per position

    def add(self, row_probs: torch.Tensor, target_probs: torch.Tensor, tokens: list[int]) -> None:
        """Record ``n`` verified positions: ``row_probs [n, m, V]``, ``target_probs [n, V]``, ``tokens [n]``."""
        if not (len(row_probs) == len(target_probs) == len(tokens)):
            raise ValueError("row_probs, target_probs and tokens must cover the same verified positions")
        self.row_probs += list(row_probs)
        self.target_probs += list(target_probs)
        self.tokens += list(tokens)

    def window(self, h: int | None):
        """The last ``h`` positions (all when ``h`` is None) as tensors ``[h, m, V]``, ``[h, V]``, ``[h]``."""
        start = 0 if h is None else max(0, len(self.tokens) - h)
        return (
            torch.stack(self.row_probs[start:]),
            torch.stack(self.target_probs[start:]),
            torch.tensor(self.tokens[start:]),
        )

    def __len__(self) -> int:
        return len(self.tokens)

    def per_position(self, key, fn, h: int | None) -> torch.Tensor:
        """``fn(row_probs [m, V], target_probs [V], token) -> Tensor[...]`` for the last ``h`` positions, stacked.

        Each position is scored once and kept under ``key``: a policy consulted before every block then costs
        O(h) small additions instead of re-mixing the whole window's ``[h, m, V]`` distributions."""
        done = self.stats.setdefault(key, [])
        for t in range(len(done), len(self.tokens)):
            done.append(fn(self.row_probs[t].float(), self.target_probs[t].float(), self.tokens[t]))
        start = 0 if h is None else max(0, len(done) - h)
        return torch.stack(done[start:])


class AdaptiveEnsembleDrafter(ModelDrafter):
    """``ModelDrafter`` whose mixture weights are re-chosen before every block from the verified history
    (TABED's test-time adaptation). ``policy(history) -> weights [m]``, e.g.
    ``functools.partial(specdec.tabed.ensemble.grid_weights, criterion="hard+kl", window=None)``.
    ``weight_log`` keeps the weights used for each block."""

    def __init__(self, model, make_rows, policy):
        super().__init__(model, make_rows=make_rows)
        self.policy = policy
        self.history = History()
        self.weight_log: list[list[float]] = []

    def prefill(self, prompt_ids, **model_inputs):
        self.history = History()
        self.weight_log = []
        self.weights = None
        super().prefill(prompt_ids, **model_inputs)

    def propose(self, generated, gamma, sampling, generator=None):
        if len(self.history):
            self.set_weights(self.policy(self.history))
        m = self.lm.m
        self.weight_log.append((self.weights if self.weights is not None else torch.full((m,), 1 / m)).tolist())
        return super().propose(generated, gamma, sampling, generator)

    def observe(self, target_logits: torch.Tensor, kept_tokens: list[int], sampling: SamplingConfig) -> None:
        """Record the verified positions of the last block (the engine excludes the bonus position)."""
        n = len(kept_tokens)
        target_probs = mixing_probs(target_logits, sampling)
        self.history.add(self.last_row_probs[:n].cpu(), target_probs[:n].cpu(), kept_tokens)
