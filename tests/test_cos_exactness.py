"""C2's experiment (``specdec.cos.exactness``) on small random models: exact cells, CoS's draws pass, a wrong
sampler's fail."""

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import random_llama
from specdec import verdict
from specdec.cos import exactness as ex
from specdec.cos import findings as cf
from specdec.cos import theory_verdicts as theory
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
    assert theory.c2_verdict(rows).status == HOLDS  # μ = 1: r far enough from the expert for 300 draws to tell
    # a deliberately wrong sampler: CoS with the expert alone as the target, tabulated against r
    wrong_pairs, _ = ex.draw_pairs(sharp_duo, PROMPT, Combination.weighted(0.0), "cos", gamma, 300, 0)
    cells = ex.exact_cells(sharp_duo, PROMPT, combine, draws=300)
    wrong = pd.DataFrame(ex.tabulate(wrong_pairs, cells)).assign(set="x", role_swaps=0)
    assert theory.c2_verdict(wrong).status == FAILS


def test_chi2_pvalue_rules():
    assert verdict.chi2_pvalue([50, 50], [0.5, 0.5]) == pytest.approx(1.0)
    assert verdict.chi2_pvalue([0, 0], [0.5, 0.5]) != verdict.chi2_pvalue([0, 0], [0.5, 0.5])  # no draws: nan
    assert verdict.chi2_pvalue([90, 10, 1], [0.9, 0.1, 0.0]) == 0.0  # an impossible draw
    assert verdict.chi2_pvalue([100, 0], [0.5, 0.5]) < 1e-10
    assert verdict.total_variation([30, 70], [0.5, 0.5]) == pytest.approx(0.2)
    assert np.isclose(verdict.chi2_pvalue([100], [1.0]), 1.0)


def test_the_most_distinct_prompt_is_the_farthest_from_either_model(sharp_duo):
    combine = Combination.weighted(0.5)
    prompts = {"a": PROMPT, "b": torch.tensor([2, 3]), "c": torch.tensor([7, 7, 7, 1])}
    best = ex.most_distinct_prompt(sharp_duo, combine, prompts)
    assert ex.prompt_distance(sharp_duo, prompts[best], combine) == max(
        ex.prompt_distance(sharp_duo, p, combine) for p in prompts.values()
    )


@pytest.mark.parametrize("set_name", ["we", "cd"])
def test_the_committed_c2_rows_recompute(set_name):
    """The committed draws (notebook 22) are what the code draws: same prompt pick, cells, counts and probabilities."""
    from specdec import results
    from specdec.cos import tasks as cos_tasks
    from specdec.zoo.models import load_collab, model_weights

    committed = pd.read_csv(results.COMMITTED / "tiny" / "cos_c2.csv", dtype={"cell": str, "weights": str})
    committed = committed[(committed.set == set_name) & (committed.draws == cf.C2_DRAWS) & (committed.seed == 0)]
    key = committed.iloc[0]
    models, tokenizer, kind = load_collab("tiny", set_name)
    assert key.weights == model_weights(*models)
    candidates = {t: cos_tasks.load_task(t, 16) for t in ("humaneval", "gsm8k", "mmlu", "cnndm")}
    texts = {r["id"]: r["prompt"] for rows in candidates.values() for r in rows}
    combine = ex.make_combination(kind, len(models), temperature=1.0)
    pid = ex.most_distinct_prompt(models, combine, {i: ex.encode(tokenizer, t) for i, t in texts.items()})
    assert pid == key.prompt and ex.text_digest(texts[pid]) == key.request
    prompt = texts[pid]
    fresh = pd.DataFrame(
        ex.c2_rows(models, ex.encode(tokenizer, prompt), combine, gamma=int(key.gamma), draws=cf.C2_DRAWS, seed=0)
    )
    assert fresh[["test", "cell", "observed", "role_swaps"]].astype(str).values.tolist() == (
        committed[["test", "cell", "observed", "role_swaps"]].astype(str).values.tolist()
    )
    assert np.allclose(fresh.r, committed.r, atol=1e-5) and np.allclose(fresh.expert, committed.expert, atol=1e-5)
