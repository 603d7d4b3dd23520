"""CoS combination functions: the formulas, and one clear error per kind of bad input."""

import pytest
import torch

from specdec.cos.combine import contrastive, uniform_average, weighted_ensemble


def test_weighted_ensemble_mixes_probabilities():
    p = torch.tensor([[0.7, 0.2, 0.1]])
    q = torch.tensor([[0.1, 0.1, 0.8]])
    r = weighted_ensemble([p, q], [0.25, 0.75])
    torch.testing.assert_close(r, 0.25 * p + 0.75 * q)
    torch.testing.assert_close(uniform_average([p, q, q]), (p + 2 * q) / 3)


@pytest.mark.parametrize(
    "weights, match", [([0.5, 0.6], "sum to one"), ([1.2, -0.2], "non-negative"), ([1.0], "2 distributions")]
)
def test_weighted_ensemble_rejects_bad_weights(weights, match):
    p = torch.tensor([0.5, 0.5])
    with pytest.raises(ValueError, match=match):
        weighted_ensemble([p, p], weights)


def test_weighted_ensemble_rejects_mismatched_vocabularies_and_logits():
    with pytest.raises(ValueError, match="vocabulary"):
        weighted_ensemble([torch.tensor([0.5, 0.5]), torch.tensor([0.2, 0.3, 0.5])], [0.5, 0.5])
    with pytest.raises(ValueError, match="not logits"):
        weighted_ensemble([torch.tensor([2.0, -1.0]), torch.tensor([0.5, 0.5])], [0.5, 0.5])


def test_contrastive():
    expert = torch.tensor([2.0, 1.0, 0.0])
    amateur = torch.tensor([3.0, 0.0, 0.0])
    torch.testing.assert_close(
        contrastive(expert, amateur, mu=0.5, temperature=1.0), torch.tensor([0.5, 1.0, 0.0]).softmax(-1)
    )
    assert contrastive(expert, amateur, mu=0.5, temperature=0).tolist() == [0.0, 1.0, 0.0]
    assert contrastive(expert, amateur, mu=0.0, temperature=0).tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="mu must be a finite number >= 0"):
        contrastive(expert, amateur, mu=-0.1)
    with pytest.raises(ValueError, match="share one vocabulary"):
        contrastive(expert, torch.zeros(4))
