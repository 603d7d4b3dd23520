"""The verdicts and measured validity conditions of issue 44 (TABED T1b / T3 / T4 / T5 / T-speed, AASD A1 / A5 / A2's
seeds) on hand-built frames: holds, does not hold, inconclusive, and not testable where a planted proxy lacks the
condition."""

import numpy as np
import pandas as pd
import pytest
from test_tabed_verdicts import _windows  # MT* runs at h = ALL and at the windows given

from conftest import tabed_runs
from specdec.aasd import findings as af
from specdec.tabed import conditions, speed
from specdec.tabed import findings as tf
from specdec.tabed import window_findings as wf
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, SANITY, Verdict, judge_all, over_seeds

TINY = "tiny"


# ------------------------------------------------------------------------------------------------- T5 (signed)
def test_t5_is_sign_aware_a_window_below_all_keeps_the_default():
    below = wf.verdict_t5(_windows({"1": [-0.3] * 8, "16": [0.0] * 8}))
    assert below.status == HOLDS and below.estimate == pytest.approx(0.0, abs=1e-9)
    assert "ood: h=1 -17.3%, h=16 +0.0%" in below.detail and "Best: ALL" in below.detail
    assert "furthest below ALL: h=1 in ood (-17.3%)" in below.detail


def test_t5_does_not_hold_when_a_window_clearly_beats_all():
    v = wf.verdict_t5(_windows({"1": [0.0] * 8, "4": [0.3] * 8}))
    assert v.status == FAILS and v.estimate == pytest.approx(0.15, rel=0.2) and v.low > 0.0099
    assert v.paper.startswith("+0.99%") and "no clear winner" in v.paper


def test_t5_is_inconclusive_near_the_papers_margin_and_untested_without_windows():
    noisy = wf.verdict_t5(_windows({"1": [0.1, -0.1] * 4}))
    assert noisy.status == INCONCLUSIVE and noisy.low < 0.0099 < noisy.high
    assert wf.verdict_t5(_windows({})).n == 0


def test_t5_is_not_testable_where_the_window_pair_lacks_its_condition():
    v = wf.verdict_t5(_windows({"1": [-0.3] * 8}))
    judged = judge_all([v], {"T5": ("no", "no: h = 16 covers every past position")})[0]
    assert judged.status == NOT_TESTABLE


# ------------------------------------------------------------------------------------------------- T1b condition
def _second_turns(added_image: bool, answer_tokens: int) -> pd.DataFrame:
    cells = {("describe", 1): dict(M=3.0, T=2.5), ("describe", 2): dict(M=2.0, T=2.6), ("gsm8k", 2): dict(M=2, T=2.4)}
    cells[("psv", 1)] = dict(M=1.2, T=2.0)
    f = tabed_runs(cells)
    turn = f.turn.astype(int)
    return f.assign(n_images=np.where((turn == 2) & added_image, 2, 1), new_tokens=answer_tokens)


@pytest.mark.parametrize(
    "added, tokens, level",
    [(True, 60, "partly"), (False, 60, "no"), (True, 16, "no")],
    ids=["paper-kinds", "no-added-image", "short-answers"],
)
def test_t1b_validity_is_measured_on_the_second_turns(added, tokens, level):
    got, why = conditions.t1b_validity(_second_turns(added, tokens), TINY)
    assert got == level and f"{tokens:.1f} tokens" in why
    frame = _second_turns(added, tokens)
    found = [v for v in tf.findings(frame) if v.name in ("T1b", "T1")]
    judged = judge_all(found, dict.fromkeys(("T1b", "T1"), (got, why)))
    assert {v.status for v in judged} == ({NOT_TESTABLE} if level == "no" else {HOLDS})


# ------------------------------------------------------------------------------------------------- T4 condition
def _oracle(c_minus_t: float) -> pd.DataFrame:
    cells = {(s, 1): {"T": 2.5, "C": 2.5 + c_minus_t} for s in ("describe", "pope", "psv")}
    f = tabed_runs(cells, noise=0.02)
    return f.assign(captioner=np.where(f.method == "C", "oracle", "-"))


@pytest.mark.parametrize("gain, level", [(0.2, "partly"), (-0.23, "no")], ids=["uses-captions", "cannot-use"])
def test_t4_validity_needs_true_captions_to_reach_t(gain, level):
    got, why = conditions.t4_validity(_oracle(gain), TINY)
    assert got == level and f"{gain:+.3f}"[:4] in why
    t4 = tf.verdict_t4(tabed_runs({("describe", 1): {"MT*": 2.0, "MTCP*": 2.5}}))
    assert judge_all([t4], {"T4": (got, why)})[0].status == (HOLDS if level == "partly" else NOT_TESTABLE)


def test_t4_validity_without_oracle_rows_is_no():
    f = _oracle(0.2)
    assert conditions.t4_validity(f[f.captioner != "oracle"], TINY)[0] == "no"


# ------------------------------------------------------------------------------------------------- T3 by construction
def _t3(mt_star_equals_t: bool) -> pd.DataFrame:
    taus = np.linspace(1.8, 2.2, 8)
    cells = {(s, 1): {"M": 1.2, "T": taus, "MT": taus - 0.2, "MT*": taus + (0 if mt_star_equals_t else 0.05)}
             for s in ("psv", "vist")}  # fmt: skip
    return tabed_runs(cells)


@pytest.mark.parametrize("equal, section", [(True, SANITY), (False, "finding")], ids=["by-construction", "uncertain"])
def test_t3b_and_t3_are_sanity_only_where_mt_star_equals_t_everywhere(equal, section):
    frame = _t3(equal)
    assert conditions.t3_by_construction(frame) == ((16 if equal else 0), 16)
    found = tf.by_construction(tf.verdict_t3_parts(frame) + [tf.verdict_t3(frame)], frame)
    assert {v.name: v.section for v in found} == {"T3a": "finding", "T3b": section, "T3": section}
    assert all(v.status == HOLDS for v in found)


# ------------------------------------------------------------------------------------------------- T-speed
def _speed(gain: float, noise: float = 0.02, n: int = 8) -> pd.DataFrame:
    cells = {(s, t): {"M": 2.0, "T": 2.2, "MT*": 2.1 * (1 + gain)} for s in ("describe", "pope") for t in (1, 2)}
    return tabed_runs(cells, n=n, noise=noise)


@pytest.mark.parametrize(
    "gain, noise, expected",
    [(0.10, 0.02, HOLDS), (0.0, 0.02, FAILS), (0.048, 0.6, INCONCLUSIVE)],
    ids=["holds", "fails", "inconclusive"],
)
def test_t_speed_against_the_papers_own_gain(gain, noise, expected):
    v = speed.verdict_speed(_speed(gain, noise))
    assert v.status == expected and v.estimate == pytest.approx(gain, abs=0.03 if noise < 0.1 else 0.5)
    assert v.paper.startswith("+4.8%, MT* 1.74x")  # Table 10's benchmark cells at Table 6's c
    assert "TABED Table 6" in speed.regime_label() and "Remark 3" in speed.regime_label()


def test_t_speed_priced_alike_is_the_tau_gain_and_untested_without_methods():
    assert speed.gain([np.array([[2.0, 2.2, 2.205]])], c=0.063) == pytest.approx(2.205 / 2.1 - 1)
    none = speed.verdict_speed(_speed(0.1).query("method != 'MT*'"))
    assert none.n == 0 and none.status == INCONCLUSIVE and "not tested" in none.detail
    assert judge_all([none], {"T-speed": ("no", "no: x")})[0].status == NOT_TESTABLE


def test_findings_end_with_the_speed_row_in_its_regime():
    frame = _speed(0.1)
    names = [v.name for v in tf.findings(frame)]
    assert names[-2:] == ["T5", "T-speed"] and "T-speed" in tf.NAMES
    assert tf.findings(frame)[-1].regime.startswith("projection: paper regime (68M on 7B): c draft 0.063")


# ------------------------------------------------------------------------------------------------- AASD A1 / A5
def _table1(llava_alpha: float) -> pd.DataFrame:
    rows = []
    for target in ("tabed-target", "aasd-target-s"):
        for gamma in (3, 5):
            for draft, alpha in (
                ("AASD", 0.3),
                ("FT-LLaVA", llava_alpha),
                ("DT-LLaVA", llava_alpha),
                ("FT-LLaMA", 0.3),
            ):
                one = dict(target=target, gamma=gamma, draft=draft, acceptance_rate=alpha)
                rows += [dict(one, row=f"r{i}") for i in range(4)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("alpha, level", [(0.28, "partly"), (0.90, "no")], ids=["struggles", "replicates"])
def test_the_small_multimodal_draft_must_struggle(alpha, level):
    got, why = af.struggle_validity(_table1(alpha))
    assert got == level and f"{alpha:.2f}" in why and "below 0.62" in why
    a5 = Verdict("A5", "c", -1.0, -1.2, -0.8, 12, FAILS)
    combined = af.both(af.VALIDITY["A1-tau"], (got, why))
    assert combined[0] == level and "100 x 16" in combined[1] and "struggle" in combined[1]
    assert judge_all([a5], {"A5": combined})[0].status == (FAILS if level == "partly" else NOT_TESTABLE)


def test_struggle_validity_without_llava_rows_is_no():
    f = _table1(0.2)
    assert af.struggle_validity(f[~f.draft.str.endswith("LLaVA")])[0] == "no"


def _seed_verdicts(statuses: dict) -> Verdict:
    frames = {k: pd.DataFrame({"s": [k]}) for k in statuses}

    def make(frame):
        k = int(frame.s.iloc[0]) if frame.s.nunique() == 1 else -1
        status = statuses.get(k, HOLDS)
        est = {HOLDS: (0.03, 0.02, 0.04), INCONCLUSIVE: (0.01, -0.01, 0.03)}[status]
        return [Verdict("A2", "c", *est, 10, status, detail="Of 4 comparisons 0 hold and 0 do not; weakest: x.")]

    return over_seeds(make, frames)[0]


def test_a_pooled_holds_names_the_seeds_it_rests_on():
    through = af.with_seed_note(_seed_verdicts({0: INCONCLUSIVE, 1: HOLDS, 2: HOLDS}))
    assert through.status == HOLDS
    assert "Holds pooled only through seeds 1, 2: seed 0 alone is inconclusive (of 4 comparisons 0 hold" in (
        through.detail
    )
    assert through.claim.endswith("(holds only through seeds 1, 2; seed 0 alone inconclusive)")
    every = af.with_seed_note(_seed_verdicts({0: HOLDS, 1: HOLDS, 2: HOLDS}))
    assert "only through" not in every.detail


# ------------------------------------------------------------------------------------------------- board reading
def test_a_notebooks_verdicts_are_judged_as_the_board_judges_them():
    from specdec import results

    t4 = tf.verdict_t4(tabed_runs({("describe", 1): {"MT*": 2.0, "MTCP*": 2.5}}))
    judged = tf.board_reading([t4], "tiny", root=results.COMMITTED)[0]
    assert judged.status == NOT_TESTABLE and "true captions" in judged.validity_why  # the committed oracle rows
    a2 = Verdict("A2", "c", 0.03, 0.02, 0.04, 10, HOLDS)
    assert af.board_reading([a2], "tiny", root=results.COMMITTED)[0].validity == "partly"
