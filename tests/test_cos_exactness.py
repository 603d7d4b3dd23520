"""C2's experiment (``specdec.cos.exactness``) on small random models: exact cells, CoS's draws pass, a wrong
sampler's fail."""

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import random_llama
from specdec.cos import exactness as ex
from specdec.cos import findings as cf
from specdec.cos.combine import Combination
from specdec.verdict import FAILS, HOLDS

V = 16
PROMPT = torch.tensor([1, 5, 9])


@pytest.fixture(scope="module")
def sharp_duo():
    models = [random_llama(V, 16, 1, seed=11), random_llama(V, 32, 2, seed=12)]
    with torch.no_grad():
        for m in models:
            m.lm_head.weight.mul_(6)
    return models


@pytest.mark.parametrize("combine", [Combination.weighted(0.4), Combination("cd", mu=0.5, temperature=1.0)])
def test_cells_partition_every_pair(sharp_duo, combine):
    cells = ex.exact_cells(sharp_duo, PROMPT, combine, draws=300)
    for labels, r, expert, _key in cells.values():
        assert len(set(labels)) == len(labels) and labels[-1] == "rest"
        assert r.sum() == pytest.approx(1.0, abs=1e-5) and expert.sum() == pytest.approx(1.0, abs=1e-5)
        assert (r >= 0).all() and (expert >= 0).all()
    # unmerged, the pair cells' probabilities are r(x1) r(x2 | x1): summed over x2 they give the first token's
    every = ex.exact_cells(sharp_duo, PROMPT, combine, draws=300, min_expected=-1.0)
    first, pair = every["first"], every["pair"]
    assert len(first[0]) == V + 1 and first[1][-1] == pytest.approx(0.0, abs=1e-5)
    for x1, p1 in zip(first[0][:-1], first[1]):
        joint = sum(p for label, p in zip(pair[0], pair[1]) if label.split()[0] == x1)
        assert joint == pytest.approx(p1, abs=1e-5)
    assert pair[3](int(pair[0][0].split()[0]), 3) == f"{pair[0][0].split()[0]} 3"


@pytest.mark.parametrize(
    "combine, gamma", [(Combination.weighted(0.4), 1), (Combination("cd", mu=1.0, temperature=1.0), 2)]
)
def test_cos_draws_pass_and_a_wrong_sampler_fails(sharp_duo, combine, gamma):
    rows = pd.DataFrame(ex.c2_rows(sharp_duo, PROMPT, combine, gamma=gamma, draws=300, seed=0)).assign(set="x")
    assert rows.groupby("test")["observed"].sum().tolist() == [300, 300]
    assert cf.c2_verdict(rows).status == HOLDS  # μ = 1: r far enough from the expert for 300 draws to tell
    # a deliberately wrong sampler: CoS with the expert alone as the target, tabulated against r
    wrong_pairs, _ = ex.draw_pairs(sharp_duo, PROMPT, Combination.weighted(0.0), "cos", gamma, 300, 0)
    cells = ex.exact_cells(sharp_duo, PROMPT, combine, draws=300)
    wrong = pd.DataFrame(ex.tabulate(wrong_pairs, cells)).assign(set="x", role_swaps=0)
    assert cf.c2_verdict(wrong).status == FAILS


def test_chi2_pvalue_rules():
    assert ex.chi2_pvalue([50, 50], [0.5, 0.5]) == pytest.approx(1.0)
    assert ex.chi2_pvalue([0, 0], [0.5, 0.5]) != ex.chi2_pvalue([0, 0], [0.5, 0.5])  # no draws: nan
    assert ex.chi2_pvalue([90, 10, 1], [0.9, 0.1, 0.0]) == 0.0  # an impossible draw
    assert ex.chi2_pvalue([100, 0], [0.5, 0.5]) < 1e-10
    assert ex.total_variation([30, 70], [0.5, 0.5]) == pytest.approx(0.2)
    assert np.isclose(ex.chi2_pvalue([100], [1.0]), 1.0)


def test_the_most_distinct_prompt_is_the_farthest_from_either_model(sharp_duo):
    combine = Combination.weighted(0.5)
    prompts = {"a": PROMPT, "b": torch.tensor([2, 3]), "c": torch.tensor([7, 7, 7, 1])}
    best = ex.most_distinct_prompt(sharp_duo, combine, prompts)
    assert ex.prompt_distance(sharp_duo, prompts[best], combine) == max(
        ex.prompt_distance(sharp_duo, p, combine) for p in prompts.values()
    )
