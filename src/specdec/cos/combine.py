"""Combination functions of collaborative decoding (CoS paper; formulas.md "CoS — combination functions").

All return a distribution ``r [..., V]`` that collaborative decoding samples from (or takes the argmax of):

- weighted ensemble (WE): ``r = Σ_i w_i p_i`` with each ``p_i = softmax(l_i / T_i)`` already computed;
- contrastive decoding (CD): ``r = softmax((l_expert − μ · l_amateur) / T)``, ``T = 0`` meaning argmax.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec import validate
from specdec.verify import check_probs


def weighted_ensemble(probs: Sequence[torch.Tensor] | torch.Tensor, weights: Sequence[float]) -> torch.Tensor:
    """``Σ_i weights[i] · probs[i]``; ``probs``: n tensors ``[..., V]`` (or one ``[n, ..., V]``) of probabilities,
    ``weights``: n non-negative numbers summing to one."""
    probs = list(probs)
    weights = torch.as_tensor(validate.numbers_list("ensemble weights", weights), dtype=torch.float32)
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


def contrastive(
    expert_logits: torch.Tensor, amateur_logits: torch.Tensor, mu: float = 0.1, temperature: float = 1.0
) -> torch.Tensor:
    """``softmax((l_expert − μ l_amateur) / T)`` on raw logits, no plausibility mask; ``T = 0``: one-hot argmax."""
    mu = validate.number("the contrastive coefficient mu", mu, minimum=0)
    temperature = validate.number("temperature", temperature, minimum=0, hint="0 = argmax")
    if expert_logits.shape != amateur_logits.shape:
        raise ValueError(
            f"expert logits {list(expert_logits.shape)} and amateur logits "
            f"{list(amateur_logits.shape)} differ: the models must share one vocabulary"
        )
    scores = expert_logits.float() - mu * amateur_logits.float()
    if validate.broken_scores(scores) and not validate.broken_scores(torch.stack([expert_logits, amateur_logits])):
        raise ValueError(
            f"the contrastive scores l_expert - mu * l_amateur overflow float32 at mu={mu:g} (NaN or inf would decode "
            "token 0): use a coefficient on the logits' scale (the CD paper's mu is 0.1 to 1)"
        )
    if temperature == 0:
        return torch.nn.functional.one_hot(scores.argmax(-1), scores.shape[-1]).float()
    return (scores / temperature).softmax(-1)


@dataclass(frozen=True)
class Combination:
    """How n models' next-token logits become the one distribution ``r`` that collaborative decoding follows.

    kind ``"we"``: ``r = Σ_i weights[i] · softmax(l_i / temperature)`` (weights default to ``1/n``).
    kind ``"cd"``: two models, ``models[0]`` the small amateur and ``models[1]`` the large expert:
    ``r = softmax((l_expert − mu · l_amateur) / temperature)``, ``temperature = 0`` giving the one-hot argmax.
    Calling it on logits ``[n, ..., V]`` (or a list of n ``[..., V]`` tensors) returns ``r [..., V]``.
    """

    kind: str = "we"
    n_models: int = 2
    weights: tuple[float, ...] | None = None
    mu: float = 0.1
    temperature: float = 1.0

    def __post_init__(self):
        validate.choice("combination", self.kind, ("we", "cd"), hint="'we' weighted ensemble, 'cd' contrastive")
        if isinstance(self.n_models, bool) or not isinstance(self.n_models, int) or self.n_models < 2:
            raise ValueError(f"collaborative decoding needs at least two models, got n_models={self.n_models!r}")
        for name in ("mu", "temperature"):
            if isinstance(getattr(self, name), bool) or not isinstance(getattr(self, name), (int, float)):
                raise ValueError(f"{name} must be a finite number, got {getattr(self, name)!r}")
        if self.kind == "cd" and self.n_models != 2:
            raise ValueError("contrastive decoding combines exactly two models: (amateur, expert)")
        if not math.isfinite(self.mu) or not math.isfinite(self.temperature):
            raise ValueError(f"mu and temperature must be finite numbers, got mu={self.mu}, T={self.temperature}")
        if self.kind == "cd" and self.mu < 0:
            raise ValueError(f"the contrastive coefficient mu must be >= 0, got {self.mu}")
        if self.temperature < 0 or (self.kind == "we" and self.temperature == 0):
            raise ValueError(f"temperature must be > 0 for a weighted ensemble and >= 0 for CD, got {self.temperature}")
        if self.weights is not None:
            w = torch.as_tensor(validate.numbers_list("ensemble weights", self.weights), dtype=torch.float64)
            if len(w) != self.n_models:
                raise ValueError(f"got {len(w)} ensemble weights for {self.n_models} models")
            if bool((w < 0).any()) or abs(float(w.sum()) - 1) > 1e-6:
                raise ValueError(f"ensemble weights must be non-negative and sum to one, got {list(self.weights)}")

    @classmethod
    def weighted(cls, lam: float = 0.5, n_models: int = 2, temperature: float = 1.0) -> Combination:
        """The paper's WE: ``r = λ q + (1 − λ) p`` for two models (q = ``models[0]``); ``1/n`` each for n > 2."""
        if n_models == 2:
            lam = validate.number("the ensemble weight λ", lam, minimum=0, maximum=1)
            return cls("we", 2, (lam, 1.0 - lam), temperature=temperature)
        # n > 2 models take 1/n each (the paper's setting): a λ other than the default would be silently ignored
        if lam != 0.5:
            raise ValueError(
                f"λ={lam!r} weights two models; {n_models} models take 1/{n_models} each: leave lam at its default "
                f"or pass explicit weights, Combination('we', {n_models}, weights=(...))"
            )
        return cls("we", n_models, None, temperature=temperature)

    @property
    def label(self) -> str:
        if self.kind == "cd":
            return f"CD(mu={self.mu:g}, T={self.temperature:g})"
        w = self.weights or (1 / self.n_models,) * self.n_models
        return "WE(" + ", ".join(f"{x:.2g}" for x in w) + f", T={self.temperature:g})"

    def __call__(self, logits) -> torch.Tensor:
        logits = list(logits)
        if len(logits) != self.n_models:
            raise ValueError(f"{self.label} combines {self.n_models} models, got logits of {len(logits)}")
        shapes = {tuple(x.shape) for x in logits}
        if len(shapes) != 1:
            raise ValueError(f"logits differ in shape {sorted(shapes)}: do the models share one vocabulary?")
        if self.kind == "cd":
            return contrastive(logits[1], logits[0], self.mu, self.temperature)
        w = self.weights or (1 / self.n_models,) * self.n_models
        return sum(wi * (x.float() / self.temperature).softmax(-1) for wi, x in zip(w, logits))


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["Combination", "contrastive", "weighted_ensemble"]
