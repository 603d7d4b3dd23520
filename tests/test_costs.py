"""The one cost model (``specdec.costs``): Eq. (1) of speculative decoding, hand-built rows, the regimes' sources."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from specdec import costs
from specdec.results import paper_numbers


def regime(c, verify=1.0):
    return costs.Regime("test", {"draft": c}, verify, "hand-set")


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.62, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [1, 3, 5])
@pytest.mark.parametrize("c", [0.0, 0.063, 0.45, 1.0])
def test_expected_counts_of_one_block_give_eq1(alpha, gamma, c):
    """Per SD step: τ tokens, one target call, γ draft calls → (1 − α^(γ+1)) / ((1 − α)(γ c + 1))."""
    tau = gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)
    got = costs.sd_speedup(tau, 1, gamma, regime(c))
    assert got == pytest.approx(costs.eq1_speedup(alpha, gamma, c))
    if alpha < 1:
        assert got == pytest.approx((1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c + 1)))


def test_simulated_iid_runs_converge_to_eq1():
    """Hand-built rows from i.i.d. acceptance: summed counts priced at c = 0.063 give Eq. (1)."""
    rng = np.random.default_rng(0)
    alpha, gamma, c = 0.7, 4, 0.063
    tokens = calls = drafts = 0
    for _ in range(20000):
        accepted = 0
        while accepted < gamma and rng.random() < alpha:
            accepted += 1
        tokens, calls, drafts = tokens + accepted + 1, calls + 1, drafts + gamma
    assert costs.sd_speedup(tokens, calls, drafts, regime(c)) == pytest.approx(
        costs.eq1_speedup(alpha, gamma, c), rel=0.01
    )


def test_hand_built_rows_are_priced_elementwise_with_the_verification_cost():
    rows = pd.DataFrame({"new_tokens": [48, 40], "target_calls": [20, 40], "draft_calls": [95, 0]})
    got = costs.sd_speedup(rows.new_tokens, rows.target_calls, rows.draft_calls, regime(0.063))
    assert got == pytest.approx([48 / (20 + 95 * 0.063), 1.0])
    slow = costs.sd_speedup(rows.new_tokens, rows.target_calls, rows.draft_calls, regime(0.063, verify=1.5))
    assert slow == pytest.approx([48 / (30 + 95 * 0.063), 40 / 60])
    # free drafts (prompt lookup): only the target calls count
    assert costs.sd_speedup(48, 20, 95, regime(0.0)) == pytest.approx(2.4)


def test_speedup_of_a_collaborative_method_over_its_baseline():
    """Standard collaborative decoding calls both models per token; a method with fewer calls is faster."""
    same = costs.Regime("same", {"m0": 1.0, "m1": 1.0})
    std, cos = {"m0": 40, "m1": 40}, {"m0": 60, "m1": 15}
    assert costs.speedup(cos, std, same) == pytest.approx(80 / 75)
    small = costs.Regime("cd", {"m0": 0.063, "m1": 1.0})
    assert costs.speedup(cos, std, small) == pytest.approx((40 * 0.063 + 40) / (60 * 0.063 + 15))
    wide = costs.Regime("cd", {"m0": 0.063, "m1": 1.0}, verify=2.0)
    assert costs.speedup(cos, std, wide, method_verify={"m1": 15}) == pytest.approx(
        (40 * 0.063 + 40) / (60 * 0.063 + 30)
    )


def test_implied_cost_inverts_eq1():
    tau = 2.176
    assert costs.implied_cost(tau, costs.sd_speedup(tau, 1, 3, regime(0.12)), 3) == pytest.approx(0.12)


def test_regimes_name_their_source_and_read_it():
    t6 = paper_numbers("tabed_table6_latency_ratio")
    r = costs.paper_table6_regime("7B", "68M")
    row = t6[(t6.target_size == "7B") & (t6.draft_size == "68M")]
    assert r.cost("draft") == float(row.latency_ratio_Tq_over_Tp.iloc[0])
    assert r.cost("target") == 1.0 and r.verify == 1.0 and "Table 6" in r.label()
    h = costs.h100_regime("draft-68m", "llava-1.5-7b", gamma=5)
    assert 0.05 < h.cost("draft") < 0.2 and 0.9 < h.verify < 1.5 and "latency_real_sizes" in h.label()
    assert costs.same_size_regime(("m0", "m1")).cost("m1") == 1.0
