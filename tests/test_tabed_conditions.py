"""TABED's measured validity conditions of issue 44, round two (T1a, T1c, T1b-text, T2, T3a, T-speed) on hand-built
frames: for each finding a run where its condition holds and the claim holds, does not hold or is inconclusive, and
a planted proxy that lacks the condition, which reads "not testable on this proxy" whatever its estimate. Last, the
paper profile's reading: measured on its own rows, never the tiny proxies' sentence."""

import numpy as np
import pandas as pd
import pytest

from conftest import tabed_runs
from specdec import verdict
from specdec.tabed import conditions, speed
from specdec.tabed import findings as tf
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all
from specdec.vlm.dialogues import TEXT_TASK

WHY = "tiny"
SCENARIOS = ("describe", "docvqa", "pope", "mmvet", "iedit", "magicbrush", "spot", "psv", "vist", "nq", "gsm8k")


def _log(reads: bool = True, max_images: int = 1) -> dict:
    """A draft's held-out block (``conditions.draft_heldout``): the images lower the loss where ``reads``."""
    loss = dict(loss=0.4, loss_blank_images=0.7 if reads else 0.35, tokens=100)
    return {**{f"{s}-t1": loss for s in SCENARIOS}, "summary": dict(max_images=max_images)}


def _runs(cells: dict, noise: float = 0.05, tokens: int = 40, images: int = 1) -> pd.DataFrame:
    """``conftest.tabed_runs`` with the columns the conditions read: OOD rows carry five images, others ``images``."""
    f = tabed_runs(cells, noise=noise)
    return f.assign(n_images=np.where(f.group == "ood", 5, images), new_tokens=tokens)


def _vals(mean: float, spread: float = 0.0, n: int = 8) -> list[float]:
    """``n`` per-request τ around ``mean``, ``± spread`` alternating: a wide spread leaves a small mean inconclusive."""
    return [mean + spread * (-1) ** i + 0.01 * i for i in range(n)]


def _judged(v, condition) -> str:
    return judge_all([v], {v.name: condition})[0].status


# ------------------------------------------------------------------------------------------------- T1a
def _t1a(m_minus_t: float, noise: float = 0.05) -> pd.DataFrame:
    return _runs({(s, 1): {"M": _vals(2.5 + m_minus_t, noise), "T": _vals(2.5)} for s in ("describe", "pope")})


@pytest.mark.parametrize(
    "gap, noise, reads, expected",
    [
        (0.4, 0.05, True, HOLDS),
        (-0.4, 0.05, True, FAILS),
        (0.02, 0.8, True, INCONCLUSIVE),
        (0.4, 0.05, False, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "draft-ignores-images"],
)
def test_t1a_needs_a_draft_that_reads_its_images(gap, noise, reads, expected):
    condition = conditions.t1a_validity(_log(reads), WHY)
    assert condition[0] == ("partly" if reads else "no") and "0.400 with the real images" in condition[1]
    assert _judged(tf.verdict_t1_parts(_t1a(gap, noise))[0], condition) == expected


def test_t1a_without_a_training_log_is_not_measured():
    level, why = conditions.t1a_validity(None, WHY)
    assert level == "partly" and conditions.NOT_MEASURED in why


# ------------------------------------------------------------------------------------------------- T1c
def _t1c(t_minus_m: float, noise: float = 0.05) -> pd.DataFrame:
    return _runs({(s, 1): {"M": _vals(1.5), "T": _vals(1.5 + t_minus_m, noise)} for s in ("psv", "vist")})


@pytest.mark.parametrize(
    "gap, noise, seen, expected",
    [(0.8, 0.05, 1, HOLDS), (-0.4, 0.05, 1, FAILS), (0.02, 0.8, 1, INCONCLUSIVE), (0.8, 0.05, 5, NOT_TESTABLE)],
    ids=["holds", "fails", "inconclusive", "draft-trained-on-five-images"],
)
def test_t1c_needs_stories_beyond_the_drafts_training(gap, noise, seen, expected):
    frame = _t1c(gap, noise)
    condition = conditions.t1c_validity(frame, _log(max_images=seen), WHY)
    assert condition[0] == ("partly" if seen < 5 else "no") and f"at most {seen} per training row" in condition[1]
    assert _judged(tf.verdict_t1_parts(frame)[2], condition) == expected


# ------------------------------------------------------------------------------------------------- T1b-text
def _t1b_text(t_minus_m: float, noise: float = 0.05, tokens: int = 40) -> tuple[pd.DataFrame, dict]:
    cells = {(s, 2): {"M": _vals(2.5), "T": _vals(2.5 + t_minus_m, noise)} for s in ("nq", "gsm8k")}
    frame = _runs(cells, tokens=tokens)
    return frame, dict.fromkeys(frame.row, TEXT_TASK)


@pytest.mark.parametrize(
    "gap, noise, tokens, reads, expected",
    [
        (0.4, 0.05, 40, True, HOLDS),
        (-0.4, 0.05, 40, True, FAILS),
        (0.02, 0.8, 40, True, INCONCLUSIVE),
        (0.4, 0.05, 12, True, NOT_TESTABLE),
        (0.4, 0.05, 40, False, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "short-answers", "draft-ignores-images"],
)
def test_t1b_text_needs_long_text_answers_and_a_draft_that_reads_images(gap, noise, tokens, reads, expected):
    frame, rests = _t1b_text(gap, noise, tokens)
    condition = conditions.t1b_text_validity(frame, _log(reads), WHY)
    assert f"answer {tokens:.1f} tokens on average" in condition[1]
    assert _judged(tf.verdict_t1b_by_rest(frame, rests)[1], condition) == expected


# ------------------------------------------------------------------------------------------------- T2
CELLS = [("describe", 1), ("pope", 1), ("psv", 1), ("describe", 2)]


def _t2(mt_star: str, fluctuate: bool = True, noise: float = 0.05) -> pd.DataFrame:
    cells = {}
    for i, cell in enumerate(CELLS):
        m, t = (3.0, 2.4) if (i % 2 == 0 or not fluctuate) else (2.4, 3.0)
        star = {"best": max(m, t) + 0.3, "last": min(m, t) - 0.6, "tied": 2.7}[mt_star]
        cells[cell] = {"M": m, "T": t, "MT": 2.7, "MT*": star}
    return _runs(cells, noise=noise)


@pytest.mark.parametrize(
    "mt_star, noise, fluctuate, expected",
    [
        ("best", 0.05, True, HOLDS),
        ("last", 0.05, True, FAILS),
        ("tied", 0.3, True, INCONCLUSIVE),
        ("best", 0.05, False, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "one-method-leads-everywhere"],
)
def test_t2_needs_single_methods_that_fluctuate(mt_star, noise, fluctuate, expected):
    frame = _t2(mt_star, fluctuate, noise)
    condition = conditions.t2_validity(frame, WHY)
    assert condition[0] == ("partly" if fluctuate else "no") and "Table 10 has 5 and 13 of 18" in condition[1]
    assert conditions.t2_minority_threshold() == pytest.approx(0.5 * 5 / 18)
    assert _judged(tf.verdict_t2(frame), condition) == expected


# ------------------------------------------------------------------------------------------------- T3a
def _t3a(star_minus_mt: float, m: float = 1.2, noise: float = 0.05) -> pd.DataFrame:
    cells = {
        (s, 1): {"M": _vals(m), "T": _vals(2.0), "MT": _vals(1.8), "MT*": _vals(1.8 + star_minus_mt, noise)}
        for s in ("psv", "vist")
    }
    return _runs(cells)


@pytest.mark.parametrize(
    "gain, m, noise, expected",
    [(0.2, 1.2, 0.05, HOLDS), (-0.2, 1.2, 0.05, FAILS), (0.01, 1.2, 0.8, INCONCLUSIVE), (0.2, 1.9, 0.05, NOT_TESTABLE)],
    ids=["holds", "fails", "inconclusive", "no-method-fails-on-ood"],
)
def test_t3a_needs_a_drafting_method_that_fails_on_ood(gain, m, noise, expected):
    frame = _t3a(gain, m, noise)
    condition = conditions.t3a_validity(frame, WHY)
    assert conditions.t3a_gap_threshold() == pytest.approx(0.5 * (2.05 - 1.19) / 2.05)  # Table 10, PSV
    assert condition[0] == ("partly" if m < 1.5 else "no")
    assert _judged(tf.verdict_t3_parts(frame)[0], condition) == expected


# ------------------------------------------------------------------------------------------------- T-speed
def _speed(gain: float, fluctuate: bool = True, noise: float = 0.02) -> pd.DataFrame:
    cells = {}
    for i, cell in enumerate((s, t) for s in ("describe", "pope") for t in (1, 2)):
        m, t = ((2.4, 2.0) if i % 2 else (2.0, 2.4)) if fluctuate else (2.2, 2.2)
        cells[cell] = {"M": m, "T": t, "MT*": 2.2 * (1 + gain)}
    return _runs(cells, noise=noise)


@pytest.mark.parametrize(
    "gain, fluctuate, noise, expected",
    [
        (0.10, True, 0.02, HOLDS),
        (0.0, True, 0.02, FAILS),
        (0.048, True, 0.6, INCONCLUSIVE),
        (0.10, False, 0.02, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "no-room-to-choose"],
)
def test_t_speed_needs_room_to_choose_between_m_and_t(gain, fluctuate, noise, expected):
    frame = _speed(gain, fluctuate, noise)
    condition = conditions.t_speed_validity(frame, WHY)
    room = speed.gain([np.array([[2.0, 2.4, 2.4]]), np.array([[2.4, 2.0, 2.4]])], 0.063)
    assert room == pytest.approx(2.4 / 2.2 - 1)  # the better of M and T per cell over their mean
    assert condition[0] == ("partly" if fluctuate else "no") and "on Table 10 it gives +4.8%" in condition[1]
    assert _judged(speed.verdict_speed(frame), condition) == expected


# ------------------------------------------------------------------------------------------------- combined, profiles
def test_combined_keeps_every_reason_and_the_failing_one_first():
    ok, bad = ("partly", "partly: tiny; a holds"), ("no", "no: tiny; b fails")
    assert conditions.combined(ok, bad, why=WHY) == ("no", "no: tiny; b fails; a holds")
    assert conditions.combined(ok, ok, why=WHY) == ("partly", "partly: tiny; a holds")


def _paper_runs() -> pd.DataFrame:
    cells = {(s, 1): {"M": 2.6, "T": 2.2, "MT": 2.4, "MT*": 2.7} for s in ("describe", "pope")}
    cells |= {(s, 1): {"M": 1.2, "T": 2.0, "MT": 1.8, "MT*": 2.0} for s in ("psv", "vist")}
    cells |= {("describe", 2): {"M": 2.0, "T": 2.5, "MT": 2.3, "MT*": 2.5}}
    return _runs(cells)


def test_the_paper_profile_reads_its_own_rows_and_never_the_tiny_proxies(monkeypatch):
    monkeypatch.setattr(verdict, "_on_standins", lambda: False)  # the paper's models, not the stand-in hub
    frame = _paper_runs()
    found = tf.board_reading(tf.findings(frame), "paper", stored=frame)
    why = {v.name: v.validity_why for v in found}
    assert not any("tiny" in w.lower() for w in why.values()), why
    assert all(w.split(": ", 1)[1].startswith(tf.PAPER_MODELS_WHY) for w in why.values())
    assert {v.name: v.validity for v in found if v.name in ("T2", "T3a", "T-speed")} == dict.fromkeys(
        ("T2", "T3a", "T-speed"), "yes"
    )
    assert conditions.NOT_MEASURED in why["T1a"] and conditions.NOT_MEASURED in why["T4"]
    assert "M leads T in 2 and T leads M in 3 of 5 cells" in why["T2"]


def test_the_paper_profile_without_runs_measures_nothing_and_on_standins_says_so(monkeypatch):
    monkeypatch.setattr(verdict, "_on_standins", lambda: False)
    empty = tf.board_reading(tf.findings(_paper_runs()), "paper", stored=_paper_runs().iloc[:0])
    assert {v.validity_why for v in empty} == {f"partly: {tf.PAPER_MODELS_WHY}; {conditions.NOT_MEASURED}: no runs"}
    monkeypatch.setattr(verdict, "_on_standins", lambda: True)
    standin = tf.board_reading(tf.findings(_paper_runs()), "paper", stored=_paper_runs())
    assert {v.validity_why for v in standin} == {verdict.STANDIN_WHY} and {v.status for v in standin} == {NOT_TESTABLE}
