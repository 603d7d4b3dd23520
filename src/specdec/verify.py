"""Pure verification rules: given a drafted block and the target's scores, how much to keep.

Conventions: ``γ = len(draft_tokens)``; row ``i`` of the target's scores is its distribution for the
position of ``draft_tokens[i]``; row ``γ`` is the bonus position after the whole block. Both rules
return ``(n_accepted, next_token)``: keep ``draft_tokens[:n_accepted]`` and append ``next_token`` (the
correction at the first rejection, or the bonus token when all ``γ`` were accepted).
"""

from __future__ import annotations

import torch

from specdec import validate
from specdec.sampling import argmax, sample

_SUM_TOLERANCE = 1e-3


def greedy(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> tuple[int, int]:
    """Accept while the draft token equals the target's argmax.

    draft_tokens: ``LongTensor[γ]``; target_logits: ``Tensor[γ+1, V]``.
    """
    gamma = _check_block(draft_tokens, target_logits, "target_logits")
    # γ + 1 ids compared as Python ints: for a handful of positions cheaper than tensor ops and their reads
    target_tokens = argmax(target_logits).tolist()
    n_accepted = next((i for i, (d, t) in enumerate(zip(draft_tokens.tolist(), target_tokens)) if d != t), gamma)
    return n_accepted, target_tokens[n_accepted]


def stochastic(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[int, int]:
    """Speculative sampling (Leviathan et al. / Chen et al.): the output follows ``target_probs`` exactly.

    draft_tokens: ``LongTensor[γ]``; draft_probs: ``[γ, V]`` (q); target_probs: ``[γ+1, V]`` (p).
    Token ``i`` is accepted with probability ``min(1, p_i(x)/q_i(x))`` (tested as ``u·q < p``, so a zero
    ``q`` is never divided by); at the first rejection the replacement is drawn from
    ``norm(max(0, p_i − q_i))``, or from ``p_i`` if that residual is all zero; if all ``γ`` are accepted the
    bonus token is drawn from ``p_γ``. ``generator`` must live on the probabilities' device.
    """
    gamma = _check_block(draft_tokens, target_probs, "target_probs")
    check_probs(target_probs, "target_probs")
    n_accepted, correction = stochastic_prefix(draft_tokens, draft_probs, target_probs[:gamma], generator)
    if correction is None:
        return gamma, int(sample(target_probs[gamma], generator))
    return n_accepted, correction


def stochastic_prefix(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[int, int | None]:
    """The accept / resample part of ``stochastic`` without a bonus position (CoS verifies this way).

    target_probs: ``[γ, V]``, one row per draft token. Returns ``(n_accepted, correction)`` where
    ``correction`` is the token resampled at the first rejection, or ``None`` when all ``γ`` are accepted.
    Each draft token may come from a different proposer: row ``i`` of ``draft_probs`` is the distribution
    token ``i`` was drawn from.
    """
    gamma = draft_tokens.shape[0] if draft_tokens.dim() == 1 else -1
    if gamma < 0 or target_probs.dim() != 2 or target_probs.shape[0] != gamma:
        raise ValueError(
            f"need draft_tokens [γ] and target_probs [γ, V]; got {list(draft_tokens.shape)} and "
            f"{list(target_probs.shape)}"
        )
    if draft_probs.shape != target_probs.shape:
        raise ValueError(
            f"draft_probs must have shape [γ, V] = {list(target_probs.shape)}, got {list(draft_probs.shape)}"
        )
    check_probs(draft_probs, "draft_probs")
    check_probs(target_probs, "target_probs")
    if gamma == 0:
        return 0, None
    rows = torch.arange(gamma, device=target_probs.device)
    tokens = draft_tokens.to(target_probs.device)
    p = target_probs[rows, tokens]
    q = draft_probs[rows, tokens].to(p.dtype)
    u = torch.rand(gamma, generator=generator, device=p.device, dtype=p.dtype)
    rejected = (u * q >= p).nonzero()
    if len(rejected) == 0:
        return gamma, None
    i = int(rejected[0, 0])
    residual = (target_probs[i] - draft_probs[i].to(target_probs.dtype)).clamp_min(0)
    total = residual.sum()
    dist = residual / total if total > 0 else target_probs[i]
    return i, int(sample(dist, generator))


def greedy_prefix(draft_tokens: torch.Tensor, target_scores: torch.Tensor) -> tuple[int, int | None]:
    """Greedy counterpart of ``stochastic_prefix``: accept while ``draft_tokens[i] == argmax target_scores[i]``;
    the correction is the argmax at the first mismatch (``None`` when all match). target_scores: ``[γ, V]``."""
    if target_scores.dim() != 2 or target_scores.shape[0] != draft_tokens.shape[0]:
        raise ValueError(
            f"need draft_tokens [γ] and target_scores [γ, V]; got {list(draft_tokens.shape)} and "
            f"{list(target_scores.shape)}"
        )
    _check_finite(target_scores, "target_scores")
    best = argmax(target_scores)
    mismatch = (draft_tokens.to(best.device) != best).nonzero()
    if len(mismatch) == 0:
        return draft_tokens.shape[0], None
    i = int(mismatch[0, 0])
    return i, int(best[i])


def check_probs(probs: torch.Tensor, name: str = "probs") -> None:
    """Raise ``ValueError`` unless every row of ``probs`` is non-negative and sums to one."""
    if not torch.is_floating_point(probs):
        raise ValueError(f"{name} must be a floating-point tensor of probabilities, got {probs.dtype}")
    if probs.numel() == 0:
        return
    if bool((probs < 0).any()) or not bool(torch.isfinite(probs).all()):
        raise ValueError(f"{name} has negative or non-finite entries; pass probabilities (softmax), not logits")
    sums = probs.sum(-1)
    worst = float((sums - 1).abs().max())
    if worst > _SUM_TOLERANCE:
        raise ValueError(
            f"{name} rows must sum to one (a row sums to {float(sums.flatten()[(sums - 1).abs().argmax()]):.4f}); "
            "pass probabilities (softmax), not logits"
        )


def _check_block(draft_tokens: torch.Tensor, target_scores: torch.Tensor, name: str) -> int:
    if draft_tokens.dim() != 1:
        raise ValueError(f"draft_tokens must be a 1-D LongTensor[γ], got shape {list(draft_tokens.shape)}")
    gamma = draft_tokens.shape[0]
    if target_scores.dim() != 2 or target_scores.shape[0] != gamma + 1:
        raise ValueError(f"{name} must have shape [γ+1, V] = [{gamma + 1}, V], got {list(target_scores.shape)}")
    if gamma and (int(draft_tokens.min()) < 0 or int(draft_tokens.max()) >= target_scores.shape[-1]):
        raise ValueError(
            f"draft token ids must lie in [0, {target_scores.shape[-1]}); do the draft and target share a vocabulary?"
        )
    _check_finite(target_scores, name)
    return gamma


def _check_finite(scores: torch.Tensor, name: str) -> None:
    # argmax of an all-NaN row is 0: a broken (overflowed) model would decode token 0 without a word
    # (-inf alone is a masked token, legal)
    if validate.broken_scores(scores):
        raise FloatingPointError(
            f"{name} hold NaN or inf: the model overflowed (float16?) or its weights are broken; "
            "run it in float32 / bfloat16 or check the checkpoint"
        )
