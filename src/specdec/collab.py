"""Combination functions of collaborative decoding (CoS paper; formulas.md "CoS — combination functions").

All return a distribution ``r [..., V]`` that collaborative decoding samples from (or takes the argmax of):

- weighted ensemble (WE): ``r = Σ_i w_i p_i`` with each ``p_i = softmax(l_i / T_i)`` already computed;
- contrastive decoding (CD): ``r = softmax((l_expert − μ · l_amateur) / T)``, ``T = 0`` meaning argmax.
"""

from __future__ import annotations

from typing import Sequence

import torch

from specdec.verify import check_probs


def weighted_ensemble(probs: Sequence[torch.Tensor] | torch.Tensor, weights: Sequence[float]) -> torch.Tensor:
    """``Σ_i weights[i] · probs[i]``; ``probs``: n tensors ``[..., V]`` (or one ``[n, ..., V]``) of probabilities,
    ``weights``: n non-negative numbers summing to one."""
    probs = list(probs)
    weights = torch.as_tensor(weights, dtype=torch.float32).flatten()
    if len(probs) != len(weights):
        raise ValueError(f"got {len(weights)} weights for {len(probs)} distributions")
    if bool((weights < 0).any()) or abs(float(weights.sum()) - 1) > 1e-4:
        raise ValueError(f"ensemble weights must be non-negative and sum to one, got {weights.tolist()}")
    shapes = {tuple(p.shape) for p in probs}
    if len(shapes) != 1:
        raise ValueError(f"distributions differ in shape {sorted(shapes)}: do the models share one vocabulary?")
    for i, p in enumerate(probs):
        check_probs(p, f"probs[{i}]")
    return sum(w * p.float() for w, p in zip(weights.tolist(), probs))


def uniform_average(probs: Sequence[torch.Tensor]) -> torch.Tensor:
    """The n-model ensemble with weights ``1/n`` each (the paper's three-model setting)."""
    probs = list(probs)
    return weighted_ensemble(probs, [1.0 / len(probs)] * len(probs))


def contrastive(expert_logits: torch.Tensor, amateur_logits: torch.Tensor, mu: float = 0.1,
                temperature: float = 1.0) -> torch.Tensor:
    """``softmax((l_expert − μ l_amateur) / T)`` on raw logits, no plausibility mask; ``T = 0``: one-hot argmax."""
    if mu < 0:
        raise ValueError(f"the contrastive coefficient mu must be >= 0, got {mu}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 = argmax), got {temperature}")
    if expert_logits.shape != amateur_logits.shape:
        raise ValueError(f"expert logits {list(expert_logits.shape)} and amateur logits "
                         f"{list(amateur_logits.shape)} differ: the models must share one vocabulary")
    scores = expert_logits.float() - mu * amateur_logits.float()
    if temperature == 0:
        return torch.nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).float()
    return (scores / temperature).softmax(-1)
