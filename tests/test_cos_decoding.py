"""CoS and its baselines: lossless against the combined distribution r, and the APF bookkeeping."""

import pytest
import torch

from conftest import chi2_pvalue, random_llama
from specdec.cos import algorithm as cos_algorithm
from specdec.cos import tables as cos_tables
from specdec.cos.algorithm import decode
from specdec.cos.combine import Combination
from specdec.sampling import SamplingConfig

V = 16


@pytest.fixture(scope="module")
def sharp_trio():
    """Three 16-token random models with peaked (not one-hot) next-token distributions."""
    models = [random_llama(V, 16, 1, seed=11), random_llama(V, 32, 2, seed=12), random_llama(V, 24, 1, seed=13)]
    with torch.no_grad():
        for m in models:
            m.lm_head.weight.mul_(6)
    return models


def _next_logits(models, ids):
    with torch.no_grad():
        return torch.stack([m(ids[None]).logits[0, -1] for m in models])


def _r_first_two(models, combine, prompt):
    """Enumerate r(x1 | prompt) and the marginal r(x2 | prompt) = Σ_x1 r(x1) r(x2 | prompt, x1)."""
    r1 = combine(_next_logits(models, prompt))
    r2 = sum(r1[x] * combine(_next_logits(models, torch.cat([prompt, torch.tensor([x])]))) for x in range(V))
    return r1, r2


@pytest.mark.width_independent
@pytest.mark.parametrize(
    "method, n_models, kind, gamma",
    [("naive", 2, "we", 2), ("cos", 2, "we", 1), ("cos", 2, "cd", 2), ("naive", 2, "cd", 1), ("cos", 3, "we", 1)],
)
def test_stochastic_tokens_follow_r(sharp_trio, method, n_models, kind, gamma):
    """First and second new tokens follow r exactly (T = 1); the second token often comes from a bonus token
    that the other model proposed (APF), so both verification directions are exercised."""
    models = sharp_trio[:n_models]
    combine = (
        Combination.weighted(0.4)
        if kind == "we" and n_models == 2
        else (Combination.weighted(n_models=3) if kind == "we" else Combination("cd", mu=0.5, temperature=1.0))
    )
    prompt = torch.tensor([1, 5, 9])
    r1, r2 = _r_first_two(models, combine, prompt)
    firsts, seconds, swaps = [], [], 0
    for seed in range(800):
        res = decode(
            models,
            prompt,
            combine,
            method,
            gamma=gamma,
            max_new_tokens=2,
            sampling=SamplingConfig(1.0),
            eos_token_id=[],
            seed=seed,
        )
        firsts.append(res.output_ids[0])
        seconds.append(res.output_ids[1])
        swaps += res.role_swaps
    assert chi2_pvalue(firsts, r1) > 1e-3
    assert chi2_pvalue(seconds, r2) > 1e-3
    # Control: the same samples are far from what the largest model alone would give.
    p1 = torch.softmax(_next_logits(models, prompt)[1], -1)
    assert chi2_pvalue(firsts, p1) < 1e-3
    if method == "naive":
        assert swaps == 0
    elif gamma == 1:
        assert swaps > 0  # the second token was often the other model's bonus proposal


@pytest.fixture(scope="module")
def cos_zoo():
    from specdec.zoo.models import load_collab

    return {name: load_collab("tiny", name) for name in ("we", "we3", "cd")}


@pytest.mark.parametrize("set_name", ["we", "we3", "cd"])
def test_greedy_cos_equals_greedy_combined_decoding(cos_zoo, set_name):
    """Greedy CoS (and every baseline) emits argmax r at every step, id for id, on 50 task prompts."""
    from specdec.cos import tasks as cos_tasks
    from specdec.zoo.tasks import encode

    models, tokenizer, kind = cos_zoo[set_name]
    combine = cos_algorithm.make_combination(kind, len(models), temperature=0.0)
    n_prompts = 20 if set_name == "cd" else 50  # the issue asks 50 for the 2- and 3-model WE sets
    rows = [r for task in ("humaneval", "gsm8k", "mmlu", "cnndm") for r in cos_tasks.load_task(task, 13)][:n_prompts]
    accepted = swaps = 0
    for i, row in enumerate(rows):
        prompt = encode(tokenizer, row["prompt"])
        ref = decode(models, prompt, combine, "standard", max_new_tokens=12).output_ids
        for gamma in (1, 3, 5):
            methods = ["cos"] + (["naive", "sd"] if i % 10 == 0 else [])
            for method in methods:
                res = decode(models, prompt, combine, method, gamma=gamma, max_new_tokens=12)
                assert res.output_ids == ref, (row["id"], method, gamma)
                accepted += sum(res.accepted)
                swaps += res.role_swaps
    assert accepted > 0 and swaps > 0  # the runs did exercise acceptance and role swaps


def test_apf_bookkeeping_with_identical_models():
    """Two copies of one model agree on every token: each CoS call verifies one token and proposes the next,
    the roles alternate, and every token after the first is a reused bonus token."""
    a, b = random_llama(64, 16, 1, seed=3), random_llama(64, 16, 1, seed=3)
    combine = Combination.weighted(0.5)
    prompt = torch.tensor([1, 7, 8])
    res = decode([a, b], prompt, combine, "cos", gamma=1, max_new_tokens=10, eos_token_id=[])
    assert res.new_tokens == 10
    assert res.calls == [6, 5]
    assert res.accepted == [5, 5] and res.proposed == [5, 5]
    assert res.role_swaps == 5 and res.bonus_reused == 9
    assert res.rejections == 0 and res.wasted == 0
    naive = decode([a, b], prompt, combine, "naive", gamma=3, max_new_tokens=9, eos_token_id=[])
    assert naive.output_ids == res.output_ids[:9]
    assert naive.calls == [9, 3] and naive.role_swaps == 0 and naive.bonus_reused == 0
    assert naive.accepted == [9, 0]


def test_rejections_clear_pending_tokens(random_pair):
    """Disagreeing models: rejected proposals are discarded (counted as wasted), caches roll back and the
    output still equals standard collaborative decoding."""
    target, draft = random_pair
    combine = Combination("cd", mu=0.2, temperature=1.0)
    prompt = torch.tensor([1, 4, 4, 9])
    ref = decode([draft, target], prompt, combine, "standard", max_new_tokens=20, eos_token_id=[])
    res = decode([draft, target], prompt, combine, "cos", gamma=4, max_new_tokens=20, eos_token_id=[])
    assert res.output_ids == ref.output_ids
    assert res.rejections > 0 and res.wasted > 0
    assert sum(res.proposed) == sum(res.accepted) + res.rejections
    assert ref.calls == [20, 20]


def test_bad_inputs_give_clear_errors(random_pair):
    target, draft = random_pair
    prompt = torch.tensor([1, 2, 3])
    with pytest.raises(ValueError, match="combines 2 models, got 3"):
        decode([draft, target, target], prompt, Combination.weighted(0.5), "cos")
    with pytest.raises(ValueError, match="gamma must be an integer >= 1"):
        decode([draft, target], prompt, Combination.weighted(0.5), "cos", gamma=0)
    with pytest.raises(ValueError, match="unknown method"):
        decode([draft, target], prompt, Combination.weighted(0.5), "speculative")
    with pytest.raises(ValueError, match="vocabularies differ"):
        decode([draft, random_llama(32, 16, 1)], prompt, Combination.weighted(0.5), "cos")
    with pytest.raises(ValueError, match="sum to one"):
        Combination("we", 2, weights=(0.7, 0.7))
    with pytest.raises(ValueError, match="mu must be >= 0"):
        Combination("cd", mu=-1)
    with pytest.raises(ValueError, match="exactly two models"):
        Combination("cd", n_models=3)


def test_theorems_and_we_acceptance_bound():
    # Thm 3.1 with γ = 1 is never a speedup (one proposal + one verification per token); Thm 3.6 with
    # γq = γp = 1 never slows down (Cor. 3.7).
    for alpha in (0.1, 0.5, 0.9):
        for c in (0.05, 0.5, 1.0):
            assert cos_algorithm.theorem_3_1(alpha, 1, c) == pytest.approx(1.0)
            assert cos_algorithm.theorem_3_6(alpha, 1, 1, c) >= 1.0
    assert cos_algorithm.theorem_3_6(0.8, 5, 1, 0.1) > cos_algorithm.theorem_3_1(0.8, 5, 0.1)
    q = torch.softmax(torch.randn(200, 50) * 3, -1)
    p = torch.softmax(torch.randn(200, 50) * 3, -1)
    for lam in (0.1, 0.5, 0.9):
        alpha = cos_algorithm.we_acceptance(q, p, lam)
        assert bool((alpha >= lam - 1e-6).all())
        assert bool(
            (torch.maximum(alpha, cos_algorithm.we_acceptance(p, q, 1 - lam)) >= max(lam, 1 - lam) - 1e-6).all()
        )


def _row(method, gamma, prompt, tps, calls0, calls1, proposed=0, accepted=0):
    return dict(
        set="we",
        task="gsm8k",
        method=method,
        gamma=gamma,
        temperature=1.0,
        lam=0.5,
        mu=0.1,
        prompt=prompt,
        new_tokens=10,
        total_time=10 / tps + 0.5,
        prefill_time=0.5,
        tokens_per_second=tps,
        calls_0=calls0,
        calls_1=calls1,
        proposed_0=proposed,
        accepted_0=accepted,
        proposed_1=0,
        accepted_1=0,
    )


def test_speedup_table_is_the_median_of_side_by_side_ratios():
    import pandas as pd

    frame = pd.DataFrame(
        [
            _row("standard", 0, "a", 10, 10, 10),
            _row("standard", 0, "b", 20, 10, 10),
            _row("standard", 0, "c", 10, 10, 10),
            _row("cos", 1, "a", 15, 6, 5, 8, 6),
            _row("cos", 1, "b", 50, 6, 5, 8, 6),
            _row("cos", 1, "c", 30, 6, 5, 8, 6),
        ]
    )
    table = cos_tables.speedup_table(frame, costs={"we": [1.0, 1.0]}).set_index("method")
    assert table.loc["cos", "speedup"] == pytest.approx(2.5)  # ratios 1.5, 2.5, 3.0
    assert table.loc["cos", "calls_per_token"] == pytest.approx(1.1)
    assert table.loc["cos", "acceptance"] == pytest.approx(0.75)
    assert table.loc["cos", "cost_speedup"] == pytest.approx(20 / 11)
    assert table.loc["standard", "speedup"] == pytest.approx(1.0)


def test_gamma_trend_shapes_and_theory_direction():
    import pandas as pd

    def curve(name, speedups, alpha):
        return pd.DataFrame(dict(curve=name, gamma=range(1, len(speedups) + 1), speedup=speedups, acceptance=alpha))

    curves = pd.concat(
        [
            curve("cd/a", [1.0, 1.3, 1.6, 1.4, 1.1], 0.8),
            curve("cd/b", [1.2, 1.25, 1.5, 1.7, 1.8], 0.95),
            curve("we/c", [1.6, 1.3, 1.2, 1.0, 1.02], 0.7),
            curve("we/d", [1.0, 1.5, 0.8, 1.6, 1.0], 0.5),
        ]
    )
    shapes = cos_tables.gamma_trend(curves, {"cd": [0.1, 1.0], "we": [1.0, 1.0]}).set_index("curve")
    assert shapes.loc["cd/a", "shape"] == "interior optimum" and shapes.loc["cd/a", "explained"]
    assert shapes.loc["cd/b", "shape"] == "increasing" and shapes.loc["cd/b", "theory_predicts"] == "increasing"
    assert shapes.loc["we/c", "shape"] == "decreasing" and shapes.loc["we/c", "explained"]  # c = 1: short proposals win
    assert shapes.loc["we/d", "shape"] == "no clear trend" and not shapes.loc["we/d", "explained"]
