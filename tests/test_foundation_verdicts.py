"""Notebook 01's findings as verdicts (``engine_findings.iid_verdict``, ``engine_findings.engine_verdict``) on
hand-built rows, and the store keeping hex digests as strings."""

import numpy as np
import pandas as pd
import pytest

from specdec import bench, engine_findings
from specdec.results import ResultStore
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE


def sweep_rows(betas_per_prompt: list[dict], calls: int = 1000, draft: str = "d") -> pd.DataFrame:
    """Per-prompt rows whose τ at each γ is the i.i.d. τ of the given β (``{gamma: beta}`` per prompt)."""
    rows = []
    for i, betas in enumerate(betas_per_prompt):
        for gamma, beta in betas.items():
            tau = bench.expected_block_efficiency(beta, gamma)
            rows.append(
                {"draft": draft, "gamma": gamma, "prompt": i, "new_tokens": round(tau * calls), "target_calls": calls}
            )
    return pd.DataFrame(rows)


def test_iid_verdict_holds_when_beta_is_level_across_gamma():
    v = engine_findings.iid_verdict(sweep_rows([{1: 0.5, 3: 0.5, 6: 0.5}] * 10))
    assert v.status == HOLDS and v.estimate == pytest.approx(0, abs=1e-3) and v.n == 10


def test_iid_verdict_fails_when_beta_moves_with_gamma():
    v = engine_findings.iid_verdict(sweep_rows([{1: 0.3, 3: 0.5, 6: 0.7}] * 10))
    assert v.status == FAILS and v.estimate == pytest.approx(0.4, abs=1e-3)


def test_iid_verdict_takes_the_worst_draft_and_is_inconclusive_on_mixed_prompts():
    level = sweep_rows([{1: 0.5, 3: 0.5}] * 6, draft="a")
    mixed = sweep_rows([{1: 0.5, 3: 0.5}] * 6 + [{1: 0.2, 3: 0.8}] * 2, draft="b")  # one resample in ~20 is level
    v = engine_findings.iid_verdict(pd.concat([level, mixed]))
    assert v.status == INCONCLUSIVE and v.low < engine_findings.IID_TOLERANCE < v.high


def speed_rows(efficiencies: list[float]) -> list[dict]:
    """Per-prompt rows at γ 1 with τ 2 where T_q/T_p 0 and verify cost 1 predict a 2x speedup: prompt ``i``'s
    measured speedup is ``2 * efficiencies[i]``."""
    rows = []
    for i, e in enumerate(efficiencies):
        for rep in range(3):
            rows.append(
                {
                    "prompt": i,
                    "repeat": rep,
                    "method": "autoregressive",
                    "total_time": 2.0 * e,
                    "new_tokens": 10,
                    "target_calls": 10,
                }
            )
            rows.append(
                {
                    "prompt": i,
                    "repeat": rep,
                    "method": "speculative",
                    "total_time": 1.0,
                    "new_tokens": 10,
                    "target_calls": 5,
                }
            )
    return rows


@pytest.mark.parametrize(
    "efficiencies, status",
    [([1.0] * 8, HOLDS), ([0.5] * 8, FAILS), ([0.6, 1.4] * 4, INCONCLUSIVE)],
)
def test_engine_verdict(efficiencies, status):
    v = engine_findings.engine_verdict(speed_rows(efficiencies), gamma=1, latency_ratio_value=0.0, verify_cost=1.0)
    assert v.status == status and v.n == len(efficiencies)
    assert v.estimate == pytest.approx(sum(efficiencies) / len(efficiencies) if status != INCONCLUSIVE else 1.0)


def test_pool_acceptance_sums_over_prompts():
    rows = [
        {"draft": "d", "gamma": 2, "prompt": 0, "new_tokens": 6, "target_calls": 3, "accepted": 3, "drafted": 6},
        {"draft": "d", "gamma": 2, "prompt": 1, "new_tokens": 4, "target_calls": 2, "accepted": 1, "drafted": 4},
    ]
    (pooled,) = bench.pool_acceptance(rows)
    assert pooled["block_efficiency"] == 2.0 and pooled["acceptance_rate"] == 0.4 and pooled["new_tokens"] == 10


@pytest.mark.parametrize("digest", ["123456789012", "12e456789012", "0000000000ab"])
def test_a_digest_key_stays_a_string(tmp_path, digest):
    store = ResultStore("tiny", "demo", key=["weights", "prompts"], root=tmp_path)
    store.append([{"weights": digest, "prompts": digest, "value": 1}])
    frame = store.frame()
    assert frame.weights.tolist() == [digest] and frame.prompts.tolist() == [digest]
    layered = ResultStore("tiny", "demo", key=["weights", "prompts"], root=tmp_path / "fresh", base=tmp_path)
    assert layered.frame().weights.tolist() == [digest]


def counted_rows(sd_calls: list[int], sd_time: float = 2.0) -> list[dict]:
    """Per prompt: plain decoding 10 tokens in 10 calls (1 s); SD 10 tokens in ``sd_calls[i]`` target calls with
    2 draft calls each (``sd_time`` s: slower, as on a CPU)."""
    rows = []
    for i, calls in enumerate(sd_calls):
        for rep in range(3):
            base = {"prompt": i, "repeat": rep, "new_tokens": 10}
            rows.append({**base, "method": "autoregressive", "total_time": 1.0, "target_calls": 10, "draft_calls": 0})
            rows.append(
                {
                    **base,
                    "method": "speculative",
                    "total_time": sd_time,
                    "target_calls": calls,
                    "draft_calls": 2 * calls,
                }
            )
    return rows


@pytest.mark.parametrize("calls, status", [([4] * 8, HOLDS), ([10] * 8, FAILS), ([2, 16] * 4, INCONCLUSIVE)])
def test_engine_speed_projection_prices_the_counts(calls, status):
    from specdec import costs

    regime = costs.Regime("test", {"draft": 0.1}, 1.0, "hand-set")
    v = engine_findings.projected_speed_verdict(counted_rows(calls), regime=regime)
    assert v.status == status and v.n == len(calls) and v.regime.startswith("projection: ")
    assert v.estimate == pytest.approx(10 * len(calls) / sum(c * 1.2 for c in calls))
    m = engine_findings.measured_speed_verdict(counted_rows(calls), machine="cpu test")
    assert m.estimate == pytest.approx(0.5) and m.status == FAILS and m.regime == "cpu test"


def gpu_units(ratios, predicted=1.3, c=0.06):
    """``gpu_speed_units`` rows: a (run, prompt) unit per ratio, of one early-exit pair with Eq. (1)'s ``predicted``."""
    pair = {"run": "r", "device": "GPU X; bf16; torch", "draft": "early-exit", "c": c, "tau": 1.8}
    return pd.DataFrame({**pair, "prompt": range(len(ratios)), "ratio": ratios, "predicted": predicted})


@pytest.mark.parametrize(
    "ratios, predicted, status, level",
    [
        ([1.2, 1.25, 1.15, 1.3] * 3, 1.3, HOLDS, "partly"),  # measured faster where the costs leave room
        ([0.8, 0.85, 0.9, 0.75] * 3, 1.3, FAILS, "partly"),  # room for a speedup, yet measured slower: a finding
        ([0.7, 1.4, 0.8, 1.3] * 3, 1.3, INCONCLUSIVE, "partly"),
        ([0.6, 0.62, 0.64, 0.6] * 3, 0.6, NOT_TESTABLE, "no"),  # no pair with room (the tiny pair on a CPU)
    ],
)
def test_engine_speed_is_decided_on_measured_rows_where_the_costs_leave_room(ratios, predicted, status, level):
    """Issue 44 point 1: the measured rows decide, never the projection; a proxy without the condition (Eq. (1) at
    the measured c predicts > 1) is not testable, with the CPU's measured speed and c on the row."""
    from specdec.verdict import judge_all

    units = gpu_units(ratios, predicted)
    cpu = engine_findings.measured_speed_verdict(counted_rows([4] * 8), machine="cpu; c 0.51")
    projection = engine_findings.projected_speed_verdict(counted_rows([4] * 8))
    v = engine_findings.engine_speed_verdict(units, cpu, 0.57, projection)
    got = judge_all([v], {"engine speed": engine_findings.speed_validity(units, 0.57)})[0]
    assert got.status == status and got.validity == level
    assert got.machine.estimate == pytest.approx(0.5) and "slower than plain decoding" in got.detail
    assert "Projection, not a measurement" in got.detail and "0.57x" in got.detail
    if level == "partly":
        assert got.estimate == pytest.approx(float(np.exp(np.mean(np.log(ratios))))) and got.n == len(ratios)


def test_peer_speed_is_decided_at_the_stated_goal():
    from specdec import peer

    frame = pd.DataFrame(
        {"same_text": True, "new_tokens": 10, "hf_seconds": 1.15, "specdec_seconds": 1.0, "device": "cpu"},
        index=range(6),
    )
    same, speed = peer.peer_verdicts(frame)
    assert same.section == "sanity" and speed.estimate == pytest.approx(1.15)
    assert speed.status == FAILS and "1.2" in speed.claim and "not other runs" in speed.detail


def seed_counts(sd_calls: list[int]) -> pd.DataFrame:
    """A training seed's runs of the timed prompts (``engine_seeds``): one speculative row per prompt, counts only."""
    rows = [r for r in counted_rows(sd_calls) if r["method"] == "speculative" and r["repeat"] == 0]
    return pd.DataFrame(rows).drop(columns=["total_time", "repeat"])


@pytest.mark.parametrize(
    "seeds, status",
    [
        ({1: [4] * 8, 2: [5] * 8}, HOLDS),  # every seed fast: holds pooled, none reverses it
        ({1: [10] * 8, 2: [12] * 8}, INCONCLUSIVE),  # two seeds slow, seed 0 fast: it reverses what they decide
        ({1: [4] * 8, 2: [12] * 8}, INCONCLUSIVE),  # seed 2 alone is slower than plain decoding: it reverses a hold
    ],
)
def test_engine_speed_over_training_seeds_stands_only_if_no_seed_reverses_it(seeds, status):
    from specdec import costs

    regime = costs.Regime("test", {"draft": 0.1}, 1.0, "hand-set")
    frames = {k: seed_counts(calls) for k, calls in seeds.items()}
    v = engine_findings.projected_speed_verdict(counted_rows([4] * 8), regime=regime, seeds=frames)
    assert v.status == status and v.n == 8 and "Training seeds (3" in v.detail
    per_prompt = [(4 + seeds[1][0] + seeds[2][0]) / 3 * 1.2] * 8  # a prompt's counts: the mean over its seeds
    assert v.estimate == pytest.approx(10 * 8 / sum(per_prompt))


def test_engine_speed_over_seeds_fails_when_every_seed_is_slow():
    from specdec import costs

    regime = costs.Regime("test", {"draft": 0.1}, 1.0, "hand-set")
    frames = {1: seed_counts([10] * 8), 2: seed_counts([11] * 8)}
    v = engine_findings.projected_speed_verdict(counted_rows([10] * 8), regime=regime, seeds=frames)
    assert v.status == FAILS


@pytest.mark.parametrize(
    "betas, status",
    [
        ({1: {1: 0.5, 3: 0.5, 6: 0.5}, 2: {1: 0.6, 3: 0.6, 6: 0.6}}, HOLDS),
        ({1: {1: 0.3, 3: 0.5, 6: 0.7}, 2: {1: 0.3, 3: 0.5, 6: 0.7}}, FAILS),
        ({1: {1: 0.5, 3: 0.5, 6: 0.5}, 2: {1: 0.2, 3: 0.5, 6: 0.8}}, INCONCLUSIVE),  # seed 2 reverses the pooled hold
    ],
)
def test_iid_acceptance_over_training_seeds(betas, status):
    base = {1: 0.3, 3: 0.5, 6: 0.7} if status == FAILS else {1: 0.5, 3: 0.5, 6: 0.5}
    frames = {0: sweep_rows([base] * 10), **{k: sweep_rows([b] * 10) for k, b in betas.items()}}
    v = engine_findings.iid_over_seeds(frames)
    assert v.status == status and v.n == 10 and "pooled over training seeds" in v.claim


def test_seed_frames_take_a_seed_s_rows_at_seed_0_s_settings():
    sweep = sweep_rows([{1: 0.5, 3: 0.5}] * 4).assign(prompts="p60", max_new_tokens=48)
    seeded = pd.concat(
        [
            sweep.assign(train_seed=1, method="d γ"),
            sweep.assign(train_seed=2, method="d γ", max_new_tokens=16),  # another budget: not seed 0's setting
            sweep.assign(train_seed=1, method="plain", draft=""),  # the reference: no draft
        ]
    )
    frames = engine_findings.sweep_frames(sweep, seeded)
    assert sorted(frames) == [0, 1] and len(frames[1]) == len(sweep) and set(frames[1].method) == {"d γ"}
    timed = pd.DataFrame(counted_rows([4] * 3)).assign(prompts="p12", gamma=5, max_new_tokens=48)
    counts = seed_counts([5] * 3).assign(prompts="p12", gamma=5, max_new_tokens=48, draft="d", train_seed=2)
    speeds = engine_findings.speed_frames(timed, pd.concat([counts, counts.assign(draft="other", train_seed=1)]), "d")
    assert sorted(speeds) == [0, 2] and set(speeds[2].method) == {"speculative"}
    assert engine_findings.sweep_frames(sweep, None)[0] is sweep  # no seed rows: seed 0 alone
