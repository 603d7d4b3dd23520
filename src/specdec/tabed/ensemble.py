"""Test-time adaptive ensemble weights (TABED, Sec. 4 and App. B.2; formulas.md "TABED").

The history holds, for every *verified* draft position (the bonus position has no draft distribution and is
never recorded): each drafting method's distribution ``q_k [m, V]``, the target's ``p [V]`` and the token the
target kept there. Policies turn the last ``window`` positions into mixture weights ``w [m]``:

- ``grid_weights`` (MT*): candidates ``[1 − j/n, j/n]``, j = 0..n (two methods); criterion ``"hard"``
  (most argmax matches with the kept tokens), ``"kl"`` (least Σ KL(p ‖ q_w)), ``"tvd"`` (least Σ TV(p, q_w)),
  or ``"hard+kl"`` (matches, KL breaking ties). Remaining ties go to the most balanced candidate; divergences
  equal up to float32 rounding are ties.
- ``softmax_weights`` (MTCP*): ``e_k = Σ D(p, q_k)``; ``w = softmax([1/e_1 … 1/e_m] / τ)``.

With no history yet, both return uniform weights.
"""

from __future__ import annotations

import torch

from specdec import validate
from specdec.drafters import History  # the verified history the policies read (also re-exported from here)

_EPS = 1e-10
_TIE_ATOL = 1e-5  # per scored position: float32 rounding of one divergence is ~1e-7
_TIE_RTOL = 1e-5


def divergence(p: torch.Tensor, q: torch.Tensor, kind: str = "kl") -> torch.Tensor:
    """Row-wise ``KL(p ‖ q)`` or total variation ``½ Σ |p − q|`` over the last dimension."""
    if kind == "kl":
        return (p * ((p + _EPS).log() - (q + _EPS).log())).sum(-1)
    if kind == "tvd":
        return 0.5 * (p - q).abs().sum(-1)
    raise ValueError(f"divergence must be 'kl' or 'tvd', got {kind!r}")


def grid_candidates(n: int = 10) -> torch.Tensor:
    """``[[1 − j/n, j/n] for j = 0..n]`` as ``[n+1, 2]``."""
    n = validate.integer("grid_n", n, minimum=1, hint="the grid has n + 1 candidates [1 - j/n, j/n]")
    j = torch.arange(n + 1, dtype=torch.float32) / n
    return torch.stack([1 - j, j], dim=1)


def grid_weights(history: History, n: int = 10, criterion: str = "hard+kl", window: int | None = None) -> torch.Tensor:
    """The grid candidate that best explains the window (two drafting methods)."""
    validate.choice("criterion", criterion, ("hard", "kl", "tvd", "hard+kl"))
    _check_window(window)
    candidates = grid_candidates(n)
    if len(history) == 0:
        return torch.tensor([0.5, 0.5])
    if history.row_probs[0].shape[0] != 2:
        raise ValueError(f"the grid policy mixes two drafting methods, the history has {history.row_probs[0].shape[0]}")
    kind = "tvd" if criterion == "tvd" else "kl"

    def score(rows, p, token):  # [candidates, 2]: argmax match with the kept token, divergence from p
        mixed = candidates @ rows  # [candidates, V]
        return torch.stack([(mixed.argmax(-1) == token).float(), divergence(p[None], mixed, kind)], dim=1)

    per_position = history.per_position(("grid", n, kind), score, window)  # [h, candidates, 2]
    matches, errors = per_position.sum(0).unbind(1)
    keep = torch.ones(len(candidates), dtype=torch.bool)
    if criterion in ("hard", "hard+kl"):
        keep &= matches == matches.max()  # counts: exact
    if criterion != "hard":
        keep &= _within_noise(errors, keep, n_positions=len(per_position))
    balance = (candidates[:, 0] - 0.5).abs().masked_fill(~keep, float("inf"))
    return candidates[int(balance.argmin())]  # remaining ties: the most balanced candidate


def _check_window(window) -> None:
    if window is not None:
        validate.integer("window", window, minimum=1, hint="the last h verified positions; None = all")


def _within_noise(errors: torch.Tensor, keep: torch.Tensor, n_positions: int) -> torch.Tensor:
    """The kept candidates whose summed divergence is the least up to float32 rounding.

    Two drafting rows that give the same distribution (M and T of a text-only request) make every mixture
    the same distribution; their divergences then differ only in the last bits, which depend on the CPU's
    vector width. Those are ties, decided by balance, so that the chosen weights are the same on every
    machine."""
    best = errors[keep].min()
    tolerance = _TIE_ATOL * n_positions + _TIE_RTOL * best.abs()
    return keep & (errors <= best + tolerance)


def softmax_weights(
    history: History, kind: str = "kl", temperature: float = 1.0, window: int | None = None, m: int | None = None
) -> torch.Tensor:
    """``softmax([1/e_1 … 1/e_m] / temperature)`` with ``e_k = Σ_window D(p, q_k)``."""
    temperature = validate.number("temperature", temperature, positive=True, hint="the MTCP* softmax temperature")
    validate.choice("divergence", kind, ("kl", "tvd"))
    _check_window(window)
    if len(history) == 0:
        if m is None:
            raise ValueError("with an empty history, pass the number of drafting methods m")
        return torch.full((m,), 1.0 / m)
    errors = history.per_position(("softmax", kind), lambda rows, p, _: divergence(p[None], rows, kind), window).sum(
        0
    )  # [m]
    return (1.0 / (errors + _EPS) / temperature).softmax(-1)
