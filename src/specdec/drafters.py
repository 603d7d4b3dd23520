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
from typing import Protocol, runtime_checkable

import torch

from specdec.cache import BatchedLM, CachedLM
from specdec.sampling import SamplingConfig, argmax, check_scores, logits_to_probs, sample


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
        self.make_rows = make_rows or prompt_only
        self.weights = None if weights is None else _check_weights(weights)
        self._row_probs: list[torch.Tensor] = []  # the last block's [m, V] per position: ``last_row_probs``

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

    @property
    def last_row_probs(self) -> torch.Tensor | None:
        """``[γ, m, V]``: each drafting row's distributions in the last block (for adaptation); stacked when read,
        as only adaptive drafters read it."""
        return torch.stack(self._row_probs) if self._row_probs else None

    def set_weights(self, weights) -> None:
        self.weights = _check_weights(weights)

    def prefill(self, prompt_ids: torch.Tensor, **model_inputs) -> None:
        rows, row_features = self.start(prompt_ids, **model_inputs)
        if row_features is not None:
            self.lm.prefill(rows, row_features=row_features)
        else:
            self.lm.prefill(rows, **model_inputs)

    def start(self, prompt_ids: torch.Tensor, **model_inputs) -> tuple[list[torch.Tensor], list | None]:
        """A new request: its ``m`` drafting rows and their visual features (``None``: the model inputs go to the
        prefill as they are), from ``make_rows``. ``prefill`` runs them through this drafter's own cache; the
        batched drafter (``batch_ensemble``) puts the rows of several requests in one cache."""
        made = self.make_rows(prompt_ids, **model_inputs) if model_inputs else self.make_rows(prompt_ids)
        rows, row_features = made if isinstance(made, tuple) else (made, None)
        if self.weights is not None and len(self.weights) != len(rows):
            raise ValueError(
                f"got {len(self.weights)} mixture weights for {len(rows)} drafting inputs; "
                f"pass one weight per drafting method"
            )
        self.m = len(rows)
        return rows, row_features

    def begin_block(self) -> None:
        """Before each block (``propose``, or the batched drafter for this request): static weights stay."""
        self._row_probs = []

    def draft_token(self, per_row: torch.Tensor, sampling: SamplingConfig, generator=None) -> tuple[int, torch.Tensor]:
        """One draft position from the rows' distributions ``per_row [m, V]`` (``mixing_probs``): the token and the
        mixture ``[V]`` it was drawn from; ``per_row`` is kept for ``last_row_probs``."""
        from specdec import validate

        validate.draft_scores(per_row, "distributions")  # one check on every path (alone, batched ensembles)
        mixed = self._mix(per_row)
        token = int(argmax(mixed)) if sampling.greedy else int(sample(mixed, generator))
        self._row_probs.append(per_row)
        return token, mixed

    @torch.no_grad()
    def propose(
        self, generated: list[int], gamma: int, sampling: SamplingConfig, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self.begin_block()
        tokens, probs = [], []
        sequence = list(generated)
        for _ in range(gamma):
            logits = self.lm.extend(sequence)[:, -1]  # [m, V]
            token, mixed = self.draft_token(mixing_probs(logits, sampling, check=False), sampling, generator)
            tokens.append(token)
            probs.append(mixed)
            sequence.append(token)
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


def prompt_only(prompt_ids, **_) -> list[torch.Tensor]:
    """``ModelDrafter``'s default drafting input: the prompt itself (one row)."""
    return [prompt_ids]


def mixing_probs(logits: torch.Tensor, sampling: SamplingConfig, *, check: bool = True) -> torch.Tensor:
    """Distributions that ensembles mix and compare: the warped ones, or softmax at temperature 1 under
    greedy decoding (where the warped distribution would be one-hot). Logits that cannot be decoded are a
    ``ValueError`` (``sampling.check_scores``); the drafters pass ``check=False`` and check the rows they draft
    from (``validate.draft_scores``), once a step."""
    if not isinstance(sampling, SamplingConfig):
        raise TypeError(f"sampling must be a SamplingConfig (e.g. SamplingConfig(temperature=1.0)), got {sampling!r}")
    if check:
        check_scores("logits", logits)
    return logits.float().softmax(-1) if sampling.greedy else logits_to_probs(logits, sampling, check=False)


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


# Batched drafting (``batching.generate_batch``): one drafter object proposes for all ``A`` rows still decoding.
# ``propose(sequences, blocks, sampling, generators, want_probs)`` gets each row's whole sequence (prompt and kept
# tokens) and its block size, and returns ``tokens [A, K]``, ``probs [A, K, V]`` (or None), and the block sizes
# it actually proposed (``K`` = their maximum; columns past a row's block are filler the engine ignores).
# Row ``r`` draws from ``generators[r]`` exactly the samples it would draw alone, so a batched row reproduces
# its batch-1 run (same seed) up to floating-point rounding.


class BatchModelDrafter:
    """A draft model for ``B`` rows in one ``BatchedLM``: one forward per draft position for the whole batch."""

    def __init__(self, model):
        self.lm = BatchedLM(model)

    @property
    def vocab_size(self) -> int:
        return self.lm.vocab_size

    def prefill(self, prompt_rows: list[torch.Tensor]) -> None:
        self.lm.prefill(prompt_rows)
        self.cached = [len(r) - 1 for r in prompt_rows]  # valid cache columns per row (mirrors lm.lengths)

    @torch.no_grad()
    def propose(self, sequences, blocks, sampling, generators, want_probs):
        width = max(blocks)
        # Pending tokens (1, or 2 after a fully accepted block: the last draft token was never fed), right-aligned;
        # a row drafting nothing (its block is 0 near the token limit) feeds nothing, as alone.
        pending = [seq[n:] if b > 0 else [] for seq, n, b in zip(sequences, self.cached, blocks)]
        ids = torch.zeros((len(pending), max(map(len, pending))), dtype=torch.long)
        for r, toks in enumerate(pending):
            if toks:
                ids[r, ids.shape[1] - len(toks) :] = torch.tensor(toks)
        device = self.lm.device
        logits = self.lm.feed(ids.to(device), _right_aligned(pending, ids.shape[1], device), last_only=True)
        tokens, probs = [], []
        for j in range(width):
            if j:  # a row past its own block goes quiet (a masked column): its calls and tokens are its batch-1 run's
                inside = torch.tensor([[j < b] for b in blocks], device=device)
                logits = self.lm.feed(tokens[-1][:, None], inside, True)
            dist = mixing_probs(logits[:, -1], sampling, check=False)  # [A, V], what ModelDrafter mixes (one row)
            tokens.append(_pick(dist, j, blocks, sampling, generators))
            if want_probs:
                probs.append(dist)
        self.cached = [n + len(toks) + b - 1 if b > 0 else n for n, toks, b in zip(self.cached, pending, blocks)]
        return torch.stack(tokens, 1), (torch.stack(probs, 1) if want_probs else None), list(blocks)

    def rollback(self, sequences) -> None:
        """Keep each row's cache for its kept ``sequence`` minus the last token (which becomes pending)."""
        self.cached = [min(n, len(seq) - 1) for n, seq in zip(self.cached, sequences)]
        self.lm.truncate(torch.tensor(self.cached, device=self.lm.device))

    def select(self, keep_rows: torch.Tensor) -> None:
        self.lm.select(keep_rows)
        self.cached = [self.cached[r] for r in keep_rows.tolist()]


def _right_aligned(pending, width, device) -> torch.Tensor:
    """``BoolTensor [A, width]``: True on the last ``len(pending[r])`` columns of row ``r``."""
    counts = torch.tensor([len(p) for p in pending], device=device)
    return torch.arange(width, device=device)[None, :] >= width - counts[:, None]


def _pick(dist, j, blocks, sampling, generators) -> torch.Tensor:
    """Draft token ``j`` of every row from ``dist [A, V]``: the argmax (greedy, and filler past a row's block), or
    one draw from ``generators[r]`` per row still inside its block (the draws ``ModelDrafter`` makes)."""
    from specdec import validate

    validate.draft_scores(dist[[r for r, block in enumerate(blocks) if j < block]], "distributions")
    tokens = dist.argmax(-1)
    if not sampling.greedy:
        for r, block in enumerate(blocks):
            if j < block:
                tokens[r] = sample(dist[r : r + 1], generators[r])[0]
    return tokens


class BatchLookupDrafter:
    """``PromptLookupDrafter`` for ``B`` rows: each row looks up its own context (no model, no forward calls)."""

    def __init__(self, drafter: PromptLookupDrafter, vocab_size: int):
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be an integer >= 1 (the target's vocabulary), got {vocab_size!r}")
        self.max_ngram, self.min_ngram, self.vocab_size = drafter.max_ngram, drafter.min_ngram, vocab_size

    def prefill(self, prompt_rows) -> None:
        self.device = prompt_rows[0].device

    def propose(self, sequences, blocks, sampling, generators, want_probs):
        found = [lookup(seq, block, self.max_ngram, self.min_ngram) for seq, block in zip(sequences, blocks)]
        tokens = torch.zeros((len(found), max(map(len, found))), dtype=torch.long)
        for r, toks in enumerate(found):
            tokens[r, : len(toks)] = torch.tensor(toks, dtype=torch.long)
        tokens = tokens.to(self.device)
        probs = torch.nn.functional.one_hot(tokens, self.vocab_size).float() if want_probs else None
        return tokens, probs, [len(t) for t in found]

    def rollback(self, sequences) -> None:
        pass

    def select(self, keep_rows) -> None:
        pass


def batch_drafter(drafter, vocab_size: int):
    """The batched form of ``drafter`` for ``batching.generate_batch``: a draft model or a plain ``ModelDrafter``
    (one drafting row, no mixture weights), or ``PromptLookupDrafter``. A drafter with per-sequence state is refused
    with the message "batch size 1": ``ModelDrafter`` s with drafting rows or weights (TABED's, adaptive ones too)
    batch when ``generate_batch`` gets one per prompt (a list: ``batch_ensemble``); AASD's module on the target's
    cache and CoS's proposers run at batch size 1."""
    if drafter is None:
        return None
    if isinstance(drafter, torch.nn.Module):
        return BatchModelDrafter(drafter)
    if type(drafter) is ModelDrafter and drafter.make_rows is prompt_only and drafter.weights is None:
        return BatchModelDrafter(drafter.model)
    if type(drafter) is PromptLookupDrafter:
        return BatchLookupDrafter(drafter, vocab_size)
    raise ValueError(
        f"{type(drafter).__name__} (with its drafting rows / state) runs at batch size 1: decode its prompts "
        "one at a time with engine.generate. generate_batch takes a draft model, a ModelDrafter with one "
        "drafting row and no weights, a PromptLookupDrafter, or a list of one ModelDrafter per prompt (each with its "
        "own rows, weights and state)."
    )
