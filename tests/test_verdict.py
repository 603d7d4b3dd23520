"""The shared rule for findings: an interval decides, a point estimate does not."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from specdec import verdict
from specdec.verdict import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Verdict,
    bootstrap_ci,
    decide,
    paired_difference,
    pooled_over_seeds,
)


@pytest.mark.parametrize(
    "low,high,greater,expected",
    [
        (0.1, 0.5, True, HOLDS),
        (-0.5, -0.1, True, FAILS),
        (-0.1, 0.3, True, INCONCLUSIVE),
        (0.0, 0.3, True, INCONCLUSIVE),  # touching the threshold is not enough
        (-0.5, -0.1, False, HOLDS),
        (0.1, 0.5, False, FAILS),
        (float("nan"), 1.0, True, INCONCLUSIVE),
    ],
)
def test_decide(low, high, greater, expected):
    assert decide(low, high, 0.0, greater) == expected


def test_bootstrap_is_seeded_and_covers_the_mean():
    rng = np.random.default_rng(1)
    units = list(rng.normal(1.0, 1.0, 200))
    est, low, high = bootstrap_ci(units, np.mean)
    assert (est, low, high) == bootstrap_ci(units, np.mean)
    assert low < 1.0 < high and high - low == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.25)


def test_a_paired_difference_decides_only_with_enough_units():
    small = paired_difference([2.1, 1.9, 2.2], [2.0, 2.0, 2.0])
    large = paired_difference([2.1, 1.9, 2.2] * 40, [2.0, 2.0, 2.0] * 40)
    assert decide(small[1], small[2]) == INCONCLUSIVE and decide(large[1], large[2]) == HOLDS


def test_markdown_names_the_interval_and_n():
    v = Verdict("T1", "M leads T on first turns", 0.4, 0.1, 0.7, 60, HOLDS, paper="+0.1")
    assert "95% CI 0.100 to 0.700, n = 60" in v.markdown() and v.row()["verdict"] == HOLDS


def test_per_request_counts_a_repeated_input_once_in_row_order():
    import pandas as pd

    from specdec.verdict import per_request

    frame = pd.DataFrame(
        dict(row=["b", "a", "c", "b", "a", "c"], request=["x", "y", "y", "x", "y", "y"], method=list("MMMTTT"),
             tau=[1.0, 2.0, 2.0, 3.0, 4.0, 4.0])
    )  # fmt: skip
    wide, first = per_request(frame, "method", "tau")
    assert list(wide.index) == ["y", "x"] and list(first.row) == ["a", "b"]  # the order of the row ids
    assert wide.loc["y"].tolist() == [2.0, 4.0] and wide.loc["x"].tolist() == [1.0, 3.0]
    by_row, _ = per_request(frame.drop(columns="request"), "method", "tau")  # no digests: one unit per row id
    assert list(by_row.index) == ["a", "b", "c"]


def test_judge_all_records_validity_and_refuses_a_finding_without_one():
    from specdec.verdict import NOT_TESTABLE, judge_all

    a = Verdict("A", "claim", 1.0, 0.5, 1.5, 10, HOLDS)
    b = Verdict("B", "claim", 1.0, 0.5, 1.5, 10, HOLDS)
    ja, jb = judge_all([a, b], {"A": ("partly", "why a"), "B": ("no", "why b")})
    assert (ja.status, ja.validity, ja.validity_why) == (HOLDS, "partly", "why a")
    assert jb.status == NOT_TESTABLE and jb.estimate == 1.0
    with pytest.raises(KeyError):
        judge_all([a, b], {"A": ("yes", "why")})
    assert judge_all([a, b], {"A": ("yes", "why")}, strict=False)[1] == b
    with pytest.raises(ValueError):
        judge_all([a], {"A": ("maybe", "why")})


def test_a_speed_finding_carries_both_regimes_on_the_board():
    from specdec.verdict import sanity, two_regimes

    paper = Verdict("S", "faster", 1.6, 1.5, 1.7, 12, HOLDS)
    cpu = Verdict("S", "faster", 0.5, 0.45, 0.55, 12, FAILS)
    v = two_regimes(paper, cpu, "paper regime: c 0.063", "cpu, c 0.5")
    row = v.board_row()
    assert row["verdict"] == HOLDS and row["regime"] == "paper regime: c 0.063"
    assert (row["machine_estimate"], row["machine_verdict"], row["machine_regime"]) == (0.5, FAILS, "cpu, c 0.5")
    assert "This machine (cpu, c 0.5): 0.500" in v.markdown() and list(v.row()) == list(paper.row())
    assert sanity(paper).board_row()["section"] == "sanity" and paper.board_row()["machine_estimate"] == ""


def test_verdicts_on_the_standin_hub_are_labelled_not_testable(tmp_path, monkeypatch):
    """A paper-profile run on random-weight stand-ins prints no 'holds' or 'does not hold' (issue 29 §5)."""
    from specdec import hub, verdict

    config = tmp_path / "hub" / "models--org--m" / "snapshots" / "abc" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(f'{{"note": "{hub.STANDIN_MARK}"}}')
    holds = verdict.Verdict("X1", "a claim", 1.0, 0.5, 1.5, 10, verdict.HOLDS)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    (row,) = verdict.judge_all([holds], {}, strict=False)
    assert row.status == verdict.NOT_TESTABLE and row.validity == "no" and "stand-in" in row.validity_why
    config.write_text("{}")  # a real cache: another profile's verdict passes unjudged
    (row,) = verdict.judge_all([holds], {}, strict=False)
    assert row.status == verdict.HOLDS


def _mean_gain(frame: pd.DataFrame) -> Verdict:
    """A claim "the gain is > 0" on a runs frame (one row per prompt and seed): mean gain per prompt, bootstrapped
    over prompts (a prompt's seeds stay together)."""
    per_prompt = frame.groupby("prompt").gain.mean()
    est, low, high = bootstrap_ci(list(per_prompt), np.mean)
    return Verdict("G", "gain > 0", est, low, high, len(per_prompt), decide(low, high))


def _seed_frames(means: dict[int, float], n: int = 60, sd: float = 0.3) -> dict[int, pd.DataFrame]:
    """Per seed, ``n`` prompts whose gains have mean exactly ``means[seed]`` (noise of mean 0, a fixed shuffle)."""
    half = np.random.default_rng(7).normal(0, sd, n // 2)
    noise = np.concatenate([half, -half])
    return {
        k: pd.DataFrame({"prompt": range(n), "train_seed": k, "gain": m + np.random.default_rng(k).permutation(noise)})
        for k, m in means.items()
    }


@pytest.mark.parametrize(
    "means,expected",
    [
        ({0: 0.5, 1: 0.4, 2: 0.6}, HOLDS),  # every seed and the pool agree
        ({0: -0.5, 1: -0.4, 2: -0.6}, FAILS),  # the claim is reversed by every seed and the pool
        ({0: 0.8, 1: 0.7, 2: -0.1}, INCONCLUSIVE),  # the pool holds, one seed's estimate reverses it
        ({0: 0.01, 1: -0.01, 2: 0.0}, INCONCLUSIVE),  # the pool itself straddles 0
    ],
)
def test_pooled_over_seeds_holds_only_if_no_seed_reverses_the_pool(means, expected):
    frames = _seed_frames(means)
    seeds = {k: _mean_gain(f) for k, f in frames.items()}
    pooled = _mean_gain(pd.concat(frames.values()))
    v = pooled_over_seeds(pooled, seeds)
    assert v.status == expected
    assert (v.estimate, v.low, v.high, v.n) == (pooled.estimate, pooled.low, pooled.high, pooled.n)
    assert all(f"seed {k}: {s.estimate:.3f}" in v.detail for k, s in seeds.items())
    assert v.seeds == tuple(seeds.items())  # the same, as data (the docs' seed tables read it)
    if means[2] == -0.1:  # the pool alone holds: the reversing seed decides
        assert pooled.status == HOLDS and seeds[2].estimate < 0 and "Seed(s) 2 reverse" in v.detail
        assert v.reversed_by == (2,)
    else:
        assert v.reversed_by == ()


def test_pooled_over_seeds_takes_the_findings_own_rule():
    band = lambda low, high: HOLDS if -1 < low and high < 1 else FAILS if low >= 1 or high <= -1 else INCONCLUSIVE  # noqa: E731
    pooled = Verdict("L", "|bend| < 1", 0.5, 0.2, 0.8, 30, HOLDS)
    inside = Verdict("L", "|bend| < 1", 0.6, -0.5, 1.6, 30, INCONCLUSIVE)
    outside = replace(inside, estimate=1.2)
    assert pooled_over_seeds(pooled, {0: inside, 1: inside}, band).status == HOLDS
    assert pooled_over_seeds(pooled, {0: inside, 1: outside}, band).status == INCONCLUSIVE


@pytest.mark.parametrize("n", [1, 2, 7, 64, 129, 189])
def test_paired_difference_is_the_bootstrap_of_the_mean_to_the_bit(n):
    """The vectorised resamples of ``paired_difference`` are ``bootstrap_ci``'s: the same generator calls, the same
    means (a row's mean is the same pairwise sum as a vector's), so every committed interval stays as it was."""
    from specdec.verdict import bootstrap_ci, paired_difference

    rng = np.random.default_rng(n)
    a, b = rng.normal(size=n) * 3.0, rng.normal(size=n)
    if n > 2:
        a[1] = np.nan  # a missing pair: NaN resamples, which the percentiles skip
    for seed in (0, 5):
        generic = bootstrap_ci(list(a - b), lambda d: float(np.mean(d)), seed=seed)
        np.testing.assert_array_equal(paired_difference(a, b, seed=seed), generic)
    assert np.isnan(paired_difference([], [])).all()


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_bootstrap_rows_is_bootstrap_ci_over_the_row_indices_to_the_bit(n):
    """``bootstrap_rows`` draws each resample as an index array, not a list: the same generator calls and the same
    statistic values as ``bootstrap_ci`` over ``range(len(values))``, so every committed interval stays as it was."""
    from specdec.verdict import bootstrap_ci, bootstrap_rows

    values = np.random.default_rng(n).normal(size=(n, 3))
    if n > 2:
        values[1, 0] = np.nan
    statistic = lambda v: float(np.exp(np.nanmean(v, axis=0).min()))  # noqa: E731 (C4-λ's: a min over columns)
    for seed in (0, 5):
        generic = bootstrap_ci(range(n), lambda idx: statistic(values[np.asarray(idx, dtype=int)]), seed=seed)
        np.testing.assert_array_equal(bootstrap_rows(values, statistic, seed=seed), generic)
    assert np.isnan(bootstrap_rows(np.empty((0, 3)), statistic)).all()


def test_a_partial_table_is_not_computed_outside_the_tiny_profile_and_an_error_on_it(capsys):
    """The one not-computed rule (notebook 90 and the notebooks printing the board's verdicts): a finding whose rows
    are missing is skipped with one line naming it on a partial run, and raises on the strict (tiny) profile."""
    found = verdict.Verdict("F", "claim", 1.0, 0.5, 1.5, 3, verdict.HOLDS)

    def missing():
        raise KeyError("gamma")

    assert verdict.or_not_computed("F", lambda: [found], strict=True) == [found]
    assert verdict.or_not_computed("F", missing, strict=False) == []
    printed = capsys.readouterr().out
    assert printed.startswith("F: not computed") and "KeyError: 'gamma'" in printed
    with pytest.raises(KeyError, match="gamma"):
        verdict.or_not_computed("F", missing, strict=True)
    with pytest.raises(TypeError):  # a bug in the finding is no partial table
        verdict.or_not_computed("F", lambda: [1 + "x"], strict=False)  # type: ignore[operator]
