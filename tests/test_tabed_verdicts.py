"""TABED findings T1-T5 as Verdicts, on small hand-built run frames (no model runs, not the committed results)."""

import numpy as np
import pandas as pd
import pytest

from conftest import tabed_runs
from specdec import verdict
from specdec.tabed import findings as tf
from specdec.tabed import tables
from specdec.tabed import windows as tw
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE


def _by_name(verdicts):
    return {v.name: v for v in verdicts}


# ------------------------------------------------------------------------------------------------- T1
PAPER_PATTERN = {
    ("describe", 1): dict(M=3.0, T=2.5),
    ("magicbrush", 1): dict(M=2.8, T=2.4),
    ("describe", 2): dict(M=2.0, T=2.6),
    ("gsm8k", 2): dict(M=2.2, T=2.5),
    ("psv", 1): dict(M=1.2, T=2.0),
    ("nq", 1): dict(M=2.0, T=2.0),  # text-only first turn: not part of any T1 cell
}


def test_t1_holds_when_all_three_parts_hold_and_n_counts_requests():
    parts = tf.verdict_t1_parts(tabed_runs(PAPER_PATTERN, n=8))
    assert [p.name for p in parts] == ["T1a", "T1b", "T1c"]
    assert [p.status for p in parts] == [HOLDS] * 3
    t1a, t1b, t1c = parts
    assert t1a.estimate == pytest.approx(0.45, abs=0.05) and t1a.n == 16  # two first-turn benchmark cells x 8
    assert t1b.estimate == pytest.approx(0.45, abs=0.05) and t1b.n == 16  # describe t2 + gsm8k t2
    assert t1c.estimate == pytest.approx(0.8, abs=0.05) and t1c.n == 8 and t1c.low > 0
    t1 = tf.verdict_t1(tabed_runs(PAPER_PATTERN, n=8))
    assert t1.status == HOLDS and t1.n == 40
    assert t1.estimate == pytest.approx(min(p.estimate for p in parts)) and t1.low == min(p.low for p in parts)


def test_two_row_ids_of_one_request_count_as_one_request():
    frame = tabed_runs(PAPER_PATTERN, n=8)
    frame["request"] = frame.row  # every row its own request: as without the column
    assert [p.n for p in tf.verdict_t1_parts(frame)] == [16, 16, 8]
    frame.loc[frame.row == "psv-t1-001", "request"] = "psv-t1-000"  # a story drawn twice (same prompt, same images)
    frame.loc[frame.row == "psv-t1-001", "block_efficiency"] = frame.loc[
        frame.row == "psv-t1-000"
    ].block_efficiency.to_numpy()
    parts = tf.verdict_t1_parts(frame)
    assert [p.n for p in parts] == [16, 16, 7]


def test_t1_does_not_hold_when_m_leads_ood_and_says_so_the_right_way_round():
    m_ood = dict(PAPER_PATTERN)
    m_ood[("psv", 1)] = dict(M=2.0, T=1.5)
    verdicts = _by_name(tf.findings(tabed_runs(m_ood)))
    assert verdicts["T1c"].status == FAILS and verdicts["T1c"].estimate == pytest.approx(-0.5, abs=0.05)
    assert "τ(T) − τ(M) > 0" in verdicts["T1c"].claim  # a negative value reads: T behind M
    assert verdicts["T1a"].status == HOLDS and verdicts["T1"].status == FAILS
    assert "T1c does not hold" in verdicts["T1"].detail


def test_t1_is_inconclusive_with_too_few_requests_or_a_straddling_part():
    few = tf.verdict_t1(tabed_runs(PAPER_PATTERN, n=2))
    assert few.status == INCONCLUSIVE and few.n == 10
    t1c = tf.verdict_t1_parts(tabed_runs(PAPER_PATTERN, n=2))[2]
    assert t1c.n == 2 and t1c.low > 0 and t1c.status == INCONCLUSIVE and "too few" in t1c.detail  # 2 < 3
    straddle = dict(PAPER_PATTERN)
    straddle[("describe", 2)] = dict(M=2.0, T=2.0)
    straddle[("gsm8k", 2)] = dict(M=2.0, T=2.0)
    parts = _by_name(tf.verdict_t1_parts(tabed_runs(straddle, n=8, noise=0.1)))
    assert parts["T1b"].status == INCONCLUSIVE and parts["T1b"].low < 0 < parts["T1b"].high
    assert tf.verdict_t1(tabed_runs(straddle, n=8, noise=0.1)).status == INCONCLUSIVE


def _by_rest(prev, text, image=None, n: int = 8):
    """Second turns: describe (rests on the first answer) with T − M = ``prev``, gsm8k (a text task) with ``text``,
    pope (rests on the image) with ``image`` (default ``prev``) (scalars, or one value per request); and their kinds,
    as ``tabed.data.rests_on`` gives them."""
    image = prev if image is None else image
    keys = [("describe", 2), ("gsm8k", 2), ("pope", 2)]
    if np.isscalar(prev):
        cells = {k: dict(M=2.0, T=2.0 + d) for k, d in zip(keys, (prev, text, image))}
    else:  # per-request T − M, taken as they are
        cells = {k: dict(M=[2.0] * n, T=[2.0 + d for d in v]) for k, v in zip(keys, (prev, text, image))}
    frame = tabed_runs(cells, n=n, noise=0.05, difficulty=0.3)
    kinds = {"describe": "previous answer", "gsm8k": "text task", "pope": "image"}
    return frame, {row: kinds[row.split("-")[0]] for row in frame.row}


def test_t1b_by_rest_holds_fails_and_is_inconclusive_per_kind_of_follow_up():
    frame, rests = _by_rest(prev=0.5, text=-0.5)
    prev, text = tf.verdict_t1b_by_rest(frame, rests)
    assert (prev.name, prev.status, prev.n) == ("T1b-prev", HOLDS, 16) and prev.estimate == pytest.approx(0.5, abs=0.1)
    assert (text.name, text.status, text.n) == ("T1b-text", FAILS, 8) and text.estimate == pytest.approx(-0.5, abs=0.1)
    assert "Table 10" in text.paper and "no number" in prev.paper
    tied, _ = tf.verdict_t1b_by_rest(*_by_rest(prev=[-0.1, 0.1] * 4, text=[0.0] * 8))
    assert tied.status == INCONCLUSIVE and tied.low < 0 < tied.high
    untested = tf.verdict_t1b_by_rest(frame, None)
    assert [(v.status, v.n) for v in untested] == [(INCONCLUSIVE, 0)] * 2 and "not tested" in untested[0].detail


def test_t1b_prev_counts_follow_ups_about_the_image_too():
    """The paper's 'tasks dependent on prior responses': a gain on answer-bound follow-ups is cancelled by a loss
    on image-bound ones; each kind's mean is in the detail."""
    prev, _ = tf.verdict_t1b_by_rest(*_by_rest(prev=0.5, text=0.0, image=-2.5))
    assert prev.status == FAILS and prev.n == 16 and prev.estimate == pytest.approx(-1.0, abs=0.1)
    assert "previous answer +0.5" in prev.detail and "image -2.4" in prev.detail


# ------------------------------------------------------------------------------------------------- T2
def _t2_cells(mt_star: float, scenarios=("describe", "pope", "psv")):
    return {(s, 1): dict(M=3.0, T=2.0, MT=2.5, **{"MT*": mt_star}) for s in scenarios} | {
        ("nq", 1): dict(M=2.0, T=2.0, MT=2.0, **{"MT*": 1.0})  # left out: would make MT* last
    }


def test_t2_holds_when_mt_star_is_top_two_in_every_cell():
    v = tf.verdict_t2(tabed_runs(_t2_cells(2.8)))
    assert v.status == HOLDS and (v.estimate, v.low, v.high) == (1.0, 1.0, 1.0)
    assert v.n == 24 and "3 cells" in v.detail  # 3 cells x 8 requests; nq first turn left out
    assert "100%" in v.paper  # the paper's Table 10 share


def test_t2_does_not_hold_when_mt_star_is_third_or_last():
    v = tf.verdict_t2(tabed_runs(_t2_cells(2.2)))
    assert v.status == FAILS and v.estimate == 0.0 and v.high < 1.0


def test_t2_is_inconclusive_when_second_place_is_a_coin_flip():
    cells = _t2_cells(2.8, ("describe", "pope")) | {("psv", 1): dict(M=3.0, T=2.0, MT=2.5, **{"MT*": 2.5})}
    v = tf.verdict_t2(tabed_runs(cells, noise=0.15, seed=3))
    assert v.status == INCONCLUSIVE and v.low < 1.0 and v.high == 1.0
    assert v.estimate in (pytest.approx(2 / 3), 1.0)
    # a lower bar (the threshold is a parameter) decides the same numbers the other way
    assert tf.verdict_t2(tabed_runs(cells, noise=0.15, seed=3), min_share=0.5).status == HOLDS


# ------------------------------------------------------------------------------------------------- T3
def _t3_cells(mt, mt_star, n_scen=("psv", "vist")):
    return {(s, 1): dict(M=1.2, T=2.0, MT=mt, **{"MT*": mt_star}) for s in n_scen} | {
        ("describe", 1): dict(M=3.0, T=2.0, MT=1.0, **{"MT*": 0.5})  # not OOD: never looked at
    }


def test_t3_holds_when_mt_star_beats_mt_and_matches_the_best_single_method_on_ood():
    parts = tf.verdict_t3_parts(tabed_runs(_t3_cells(1.6, 2.05)))
    assert [p.status for p in parts] == [HOLDS, HOLDS]
    assert parts[0].estimate == pytest.approx(0.45, abs=0.03) and parts[0].n == 16
    assert parts[1].estimate == pytest.approx(0.05 / 2.0, abs=0.01)  # relative to T, the best single method
    assert tf.verdict_t3(tabed_runs(_t3_cells(1.6, 2.05))).status == HOLDS


def test_t3_does_not_hold_when_the_static_mt_is_as_good_or_mt_star_falls_far_behind():
    worse_than_mt = tf.verdict_t3_parts(tabed_runs(_t3_cells(2.0, 1.8)))
    assert worse_than_mt[0].status == FAILS and worse_than_mt[1].status == FAILS  # 10% behind T
    assert tf.verdict_t3(tabed_runs(_t3_cells(2.0, 1.8))).status == FAILS


def test_t3_is_inconclusive_with_too_few_ood_requests_and_untested_without_ood():
    v = tf.verdict_t3(tabed_runs(_t3_cells(1.6, 2.05), n=1))
    assert v.status == INCONCLUSIVE and v.n == 2
    none = tf.verdict_t3_parts(tabed_runs({("describe", 1): dict(M=3.0, T=2.0, MT=2.5, **{"MT*": 2.8})}))
    assert all(p.status == INCONCLUSIVE and p.n == 0 and "not tested" in p.detail for p in none)


# ------------------------------------------------------------------------------------------------- T4
def test_t4_holds_fails_and_is_inconclusive_on_the_paired_difference():
    cells = {("describe", 1): {"MT*": 2.0, "MTCP*": 2.3}, ("psv", 1): {"MT*": 1.5, "MTCP*": 1.8}}
    holds = tf.verdict_t4(tabed_runs(cells | {("nq", 1): {"MT*": 2.0, "MTCP*": 0.0}}))  # nq first turn left out
    assert holds.status == HOLDS and holds.estimate == pytest.approx(0.3, abs=0.06) and holds.n == 16
    fails = tf.verdict_t4(tabed_runs({k: {"MT*": v["MTCP*"], "MTCP*": v["MT*"]} for k, v in cells.items()}))
    assert fails.status == FAILS and fails.estimate == pytest.approx(-0.3, abs=0.06)
    mixed = {("describe", 1): {"MT*": [2.0, 2.0, 2.0, 2.0, 2.0, 2.0], "MTCP*": [2.4, 1.7, 2.3, 1.6, 2.2, 1.9]}}
    straddling = tf.verdict_t4(tabed_runs(mixed))
    assert straddling.status == INCONCLUSIVE and straddling.low < 0 < straddling.high and straddling.n == 6


def test_t4_weighs_cells_alike_as_the_paper_does():
    """Six requests gain 0.3, two lose 0.5: over requests +0.1, over the two cells −0.1 (the paper's weighting)."""
    cells = {
        ("describe", 1): {"MT*": [2.0] * 6, "MTCP*": [2.3] * 6},
        ("psv", 1): {"MT*": [2.0] * 2, "MTCP*": [1.5] * 2},
    }
    v = tf.verdict_t4(tabed_runs(cells))
    assert v.estimate == pytest.approx(-0.1) and v.n == 8 and "over all 8 requests: +0.100" in v.detail


# ------------------------------------------------------------------------------------------------- T5
def _windows(deltas: dict, n: int = 8, seed: int = 0) -> pd.DataFrame:
    """MT* runs at h = ALL and at the windows of ``deltas`` ({h: per-request τ(h) − τ(ALL), a list of n})."""
    rng = np.random.default_rng(seed)
    frames = []
    for scenario, base in (("describe", 3.0), ("psv", 2.0)):
        tau_all = base + rng.normal(0, 0.3, n)
        for h, delta in {"ALL": np.zeros(n), **deltas}.items():
            f = tabed_runs({(scenario, 1): {"MT*": tau_all + np.asarray(delta, dtype=float)}}, n=n)
            frames.append(f.assign(window=h))
    return pd.concat(frames)


def test_t5_holds_when_no_window_moves_tau():
    v = tf.verdict_t5(_windows({"1": [0.0] * 8, "4": [0.001] * 8}))
    assert v.status == HOLDS and v.estimate == pytest.approx(0.001 / 2.0, rel=0.2) and v.n == 16
    assert v.paper.startswith("+0.99%")  # Table 3: the most an h beats ALL by there


def test_t5_does_not_hold_when_one_window_is_clearly_better_and_holds_when_worse():
    v = tf.verdict_t5(_windows({"1": [0.3] * 8, "16": [0.0] * 8}))
    assert v.status == FAILS and v.estimate == pytest.approx(0.3 / 2.0, rel=0.2) and v.low > 0.0099
    assert tf.verdict_t5(_windows({"1": [-0.3] * 8, "16": [0.0] * 8})).status == HOLDS  # the default wins: signed


def test_t5_is_inconclusive_when_noisy_or_untested():
    noisy = tf.verdict_t5(_windows({"1": [0.1, -0.1] * 4}))
    assert noisy.status == INCONCLUSIVE and noisy.estimate == pytest.approx(0.0, abs=1e-9)
    assert noisy.low < 0.0099 < noisy.high
    only_all = tf.verdict_t5(_windows({}))
    assert only_all.status == INCONCLUSIVE and only_all.n == 0 and "not tested" in only_all.detail


def test_t5_over_seeds_holds_fails_or_turns_inconclusive_when_a_seed_reverses():
    flat = {"1": [0.0] * 8, "4": [0.001] * 8}
    holds = tf.verdict_t5_over_seeds({k: _windows(flat, seed=k) for k in range(3)})
    assert holds.status == HOLDS and "pooled over training seeds" in holds.claim and "seed 2:" in holds.detail
    better = tf.verdict_t5_over_seeds({k: _windows({"1": [0.3] * 8}, seed=k) for k in range(3)})
    assert better.status == FAILS
    # seeds 0 and 1 flat, seed 2 far off: the pooled spread is clear of the tolerance, but seed 0 alone reverses it
    # (seed 2 at both windows too: a seed lacking one is left out, test_t5_pools_only_the_seeds_with_every_window)
    far = _windows({"1": [0.9] * 8, "4": [0.001] * 8}, seed=2)
    mixed = {0: _windows(flat, seed=0), 1: _windows(flat, seed=1), 2: far}
    verdict = tf.verdict_t5_over_seeds(mixed)
    assert verdict.status == INCONCLUSIVE and "reverse the pooled verdict" in verdict.detail
    assert tf.verdict_t5_over_seeds({0: _windows(flat)}).claim == tf.verdict_t5(_windows(flat)).claim


def test_t5_pools_only_the_seeds_with_every_window():
    """A window only seed 0 ran (notebook 12 with windows [2, 8, ALL]): seeds 1 and 2 have rows at h = ALL alone, so
    pooling them would set their τ(ALL) against seed 0's τ(2); T5 is seed 0's verdict, naming the seeds left out."""
    seed0 = _windows({"2": [-0.1] * 8}, seed=0)
    frames = {0: seed0, 1: _windows({}, seed=1), 2: _windows({}, seed=2)}  # other draws of τ(ALL)
    pooled = tf.verdict_t5_over_seeds(frames)
    alone = tf.verdict_t5(seed0)
    assert (pooled.estimate, pooled.low, pooled.high, pooled.status) == (
        alone.estimate,
        alone.low,
        alone.high,
        alone.status,
    )
    assert (
        "seed(s) 0 only" in pooled.detail and "1 (lacks 16 of the method/row/window rows seed 0 has)" in pooled.detail
    )
    complete, lacking = verdict.complete_seeds(frames, ["method", "row", "window"])
    assert list(complete) == [0] and lacking == {1: 16, 2: 16}
    # every seed with the window: all pooled, the detail unchanged
    full = {k: _windows({"2": [-0.1] * 8}, seed=k) for k in range(3)}
    assert "only" not in tf.verdict_t5_over_seeds(full).detail and len(verdict.complete_seeds(full, ["row"])[0]) == 3


@pytest.mark.parametrize(
    "answers, covered, level",
    [((95.0, 98.0), 0.10, "partly"), ((95.0, 60.0), 0.10, "no"), ((95.0, 98.0), 0.76, "no")],
    ids=["built", "answers-short", "window-covers"],
)
def test_t5_validity_reads_the_condition_rows(tmp_path, answers, covered, level):
    rows = [
        dict(condition="T5", quantity="mean answer tokens", subset=f"seed 0: {g}", value=v, n=20, paper=48)
        for g, v in zip(("benchmark turn 1", "ood"), answers)
    ]
    rows.append(dict(condition="T5", quantity=tw.COVER_QUANTITY,
                     subset="seed 0: h=16", value=covered, n=40, paper=None))  # fmt: skip
    (tmp_path / "tiny").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "tiny" / "proxy_conditions.csv", index=False)
    got, why = tw.t5_validity(tmp_path)
    assert got == level and why.startswith(level) and f"{min(answers):.1f} tokens" in why
    pd.DataFrame(rows[:0], columns=list(rows[0])).to_csv(tmp_path / "tiny" / "proxy_conditions.csv", index=False)
    assert tw.t5_validity(tmp_path)[0] == "no"


# ------------------------------------------------------------------------------------------------- all
def test_findings_are_in_order_and_seeded():
    frame = tabed_runs(
        PAPER_PATTERN | {k: dict(v, MT=2.0, **{"MT*": 2.5, "MTCP*": 2.6}) for k, v in PAPER_PATTERN.items()}
    )
    first = tf.findings(frame)
    names = ["T1a", "T1b", "T1c", "T1", "T1b-prev", "T1b-text", "T2", "T3a", "T3b", "T3", "T4", "T5", "T-speed"]
    assert [v.name for v in first] == names
    assert _by_name(first)["T1b-prev"].n == 0  # no follow-up kinds given: untested
    assert str([v.row() for v in first]) == str([v.row() for v in tf.findings(frame)])  # nan != nan
    assert _by_name(first)["T5"].status == INCONCLUSIVE  # one window only


def test_paper_thresholds_come_from_the_papers_tables():
    assert tables.paper_top_two_share() == 1.0  # Table 10: MT* best or second best in all 18 cells
    assert tables.paper_max_shortfall() == pytest.approx(0.04 / 2.40)  # Spot, first turn: MT 2.40, MT* 2.36
    assert tables.paper_window_tolerance() == pytest.approx(0.02 / 2.03)  # OOD means, h = 1 / 4 vs ALL


def test_quoted_paper_numbers_follow_the_model_pair():
    """Each pair's findings quote its own table of the paper (Table 11: LLaVA-1.5 68M -> LLaVA-NeXT 7B) and draw
    their default thresholds from it; a pair the paper has no table for says so, with Table 10's thresholds."""
    frame = tabed_runs(
        PAPER_PATTERN | {k: dict(v, MT=2.0, **{"MT*": 2.5, "MTCP*": 2.6}) for k, v in PAPER_PATTERN.items()}
    )
    next7b = {"draft_type": "LLaVA-1.5", "draft_size": "68M", "target": "LLaVA-NeXT 7B"}
    assert tables.paper_max_shortfall(setting=next7b) == pytest.approx(0.06 / 1.93)  # Spot, second turn: T, MT*
    own = _by_name(tf.findings(frame, setting=next7b, n_boot=50))
    assert own["T1c"].paper == "+0.68 τ (Table 11, cell mean)"  # OOD T − M: PSV 1.79 − 1.19, VIST 1.90 − 1.15
    assert own["T1"].paper == "T1a +0.02, T1b +0.20, T1c +0.68"
    assert own["T2"].paper == "100% of the 18 cells of Table 11"
    assert own["T3a"].paper == "+0.06 τ (Table 11)" and "(Table 11; T is the best single there)" in own["T3b"].paper
    assert "within 3.1%" in own["T3b"].claim  # the threshold follows the pair's table too
    assert own["T4"].paper.endswith("τ (Table 11, cell mean)")
    assert own["T5"].paper == tf.NO_NUMBER  # Table 3 (windows) is Table 10's pair only
    assert not any("Table 10" in v.paper for v in own.values())
    default = _by_name(tf.findings(frame, n_boot=50))
    assert default["T1c"].paper == "+0.87 τ (Table 10, cell mean)" and "within 1.7%" in default["T3b"].claim
    assert default["T5"].paper.startswith("+0.99% (Table 3")
    none = _by_name(tf.findings(frame, setting=None, n_boot=50))
    assert all(v.paper == tf.NO_NUMBER for v in none.values())
    assert "within 1.7%" in none["T3b"].claim and "at least 100%" in none["T2"].claim  # Table 10's thresholds
    assert "Threshold: the share in Table 10." in none["T2"].detail
    assert [v.status for v in none.values()] == [v.status for v in default.values()]


def test_findings_over_draft_seeds_hold_fail_or_turn_inconclusive():
    """``seeds.findings_over_seeds``: T1a per seed and pooled; it holds when every seed agrees, does not hold when
    every seed reverses the paper, and is inconclusive when one seed's estimate reverses the pooled verdict."""
    from specdec.tabed import seeds

    def t1a(f):
        return [tf.verdict_t1_parts(f)[0]]

    reversed_pattern = {k: dict(M=v["T"], T=v["M"]) for k, v in PAPER_PATTERN.items()}
    same = {k: tabed_runs(PAPER_PATTERN, n=8, seed=k) for k in (1, 2)}
    holds = seeds.findings_over_seeds(t1a, tabed_runs(PAPER_PATTERN, n=8), same, None)[0]
    assert holds.status == HOLDS and "seed 2:" in holds.detail and holds.claim.endswith("pooled over training seeds")
    fails = seeds.findings_over_seeds(
        t1a, tabed_runs(reversed_pattern, n=8), {k: tabed_runs(reversed_pattern, n=8, seed=k) for k in (1, 2)}, None
    )[0]
    assert fails.status == FAILS
    far = {k: dict(M=v["M"] + 2.0, T=v["T"]) for k, v in PAPER_PATTERN.items()}  # seed 2: M far ahead
    mixed = {1: tabed_runs(reversed_pattern, n=8, seed=1), 2: tabed_runs(far, n=8, seed=2)}
    verdict = seeds.findings_over_seeds(t1a, tabed_runs(reversed_pattern, n=8), mixed, None)[0]
    assert verdict.status == INCONCLUSIVE and "reverse the pooled verdict" in verdict.detail
    # a seed's rows outside seed 0's (method, request) pairs are not read
    extra = tabed_runs({("spot", 1): dict(M=9.0, T=1.0)}, n=8, seed=3)
    padded = {k: pd.concat([f, extra]) for k, f in same.items()}
    assert seeds.findings_over_seeds(t1a, tabed_runs(PAPER_PATTERN, n=8), padded, None)[0].n == holds.n


def test_a_retrained_seed_is_read_on_its_new_rows_only():
    """``windows.latest_weights``: per (training seed, method) the weights stored last; older rows of a retrained
    model are dropped, other seeds and methods keep theirs."""
    stored = pd.DataFrame(
        {
            "train_seed": [0, 0, 0, 0, 1, 1],
            "method": ["MT*", "MT*", "AR", "MT*", "MT*", "AR"],
            "model_weights": ["old", "old", "target", "new", "s1", "target"],
            "row": ["a", "b", "a", "a", "a", "a"],
        }
    )
    kept = tw.latest_weights(stored)
    assert kept.model_weights.tolist() == ["target", "new", "s1", "target"]
