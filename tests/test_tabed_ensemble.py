"""TABED weight policies on hand-built histories, the window, and mixtures that stay distributions."""

import pytest
import torch

from specdec.tabed.algorithm import History, grid_candidates, grid_weights, softmax_weights


def one_hot(i, v=4):
    return torch.nn.functional.one_hot(torch.tensor(i), v).float()


def history_where_method_0_is_right(n=6):
    h = History()
    for t in range(n):
        right, wrong = t % 4, (t + 1) % 4
        q0 = 0.7 * one_hot(right) + 0.1  # method 0 puts its mass on the kept token
        q1 = 0.7 * one_hot(wrong) + 0.1  # method 1 on another token
        p = 0.85 * one_hot(right) + 0.05
        h.add(torch.stack([q0, q1])[None] / 1.0, p[None], [right])
    return h


def test_grid_candidates():
    c = grid_candidates(10)
    assert c.shape == (11, 2) and torch.allclose(c.sum(1), torch.ones(11))


@pytest.mark.parametrize("criterion", ["hard", "kl", "tvd", "hard+kl"])
def test_grid_policy_picks_the_method_that_matches(criterion):
    w = grid_weights(history_where_method_0_is_right(), criterion=criterion)
    assert w[0] > 0.5, w


def test_softmax_policy_prefers_lower_error_and_sums_to_one():
    w = softmax_weights(history_where_method_0_is_right(), kind="kl")
    assert w[0] > w[1] and torch.isclose(w.sum(), torch.tensor(1.0))
    assert torch.allclose(softmax_weights(History(), m=3), torch.full((3,), 1 / 3))


def test_window_uses_only_the_latest_positions():
    h = history_where_method_0_is_right(8)
    # append two positions where method 1 is right: a window of 2 follows them, ALL does not
    for _t in range(2):
        q0, q1 = 0.7 * one_hot(0) + 0.1, 0.7 * one_hot(3) + 0.1
        h.add(torch.stack([q0, q1])[None], (0.85 * one_hot(3) + 0.05)[None], [3])
    assert grid_weights(h, criterion="hard+kl", window=2)[1] > 0.5
    assert grid_weights(h, criterion="hard+kl", window=None)[0] > 0.5


def test_empty_history_is_uniform_and_bad_criterion_is_named():
    assert grid_weights(History()).tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match="criterion"):
        grid_weights(history_where_method_0_is_right(), criterion="best")


def test_adaptive_drafter_is_lossless_and_logs_weights(random_pair):
    from functools import partial

    from specdec.engine import autoregressive, generate
    from specdec.tabed.algorithm import AdaptiveEnsembleDrafter

    target, draft = random_pair
    prompt = torch.tensor([3, 4, 5, 6, 7])
    rows = lambda p: [p, p[2:]]  # noqa: E731  two drafting inputs of different lengths
    for criterion in ("hard+kl", "tvd"):
        drafter = AdaptiveEnsembleDrafter(draft, rows, partial(grid_weights, criterion=criterion, window=4))
        sd = generate(target, prompt, drafter, gamma=3, max_new_tokens=24, eos_token_id=[])
        assert sd.output_ids == autoregressive(target, prompt, max_new_tokens=24, eos_token_id=[]).output_ids
        assert len(drafter.weight_log) == len(sd.drafted_per_block)
        assert drafter.weight_log[0] == [0.5, 0.5]
        assert len(drafter.history) == sum(min(a + 1, d) for a, d in zip(sd.accepted_per_block, sd.drafted_per_block))
        assert all(abs(sum(w) - 1) < 1e-6 for w in drafter.weight_log)
