"""Where a kept library does the job, ours agrees with it: the bootstrap interval of every verdict
(``verdict.bootstrap_ci``, a loop over a seeded generator so that a verdict's interval is the same every run) against
``scipy.stats.bootstrap``'s percentile interval, and the one chrF (sacrebleu's) that the multilingual recipe and
experiments share."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specdec import verdict
from specdec.multilingual import experiments as ml_experiments
from specdec.multilingual import metrics


@pytest.mark.parametrize("statistic", [np.mean, np.median])
@pytest.mark.parametrize("n", [20, 200])
def test_our_bootstrap_interval_agrees_with_scipys(statistic, n):
    sample = np.random.default_rng(n).gamma(2.0, 1.0, n)  # skewed, as per-request ratios are
    estimate, low, high = verdict.bootstrap_ci(list(sample), lambda u: float(statistic(u)), n_boot=4000, seed=0)
    ref = stats.bootstrap(
        (sample,), statistic, n_resamples=4000, method="percentile", random_state=np.random.default_rng(1)
    ).confidence_interval
    assert estimate == pytest.approx(float(statistic(sample)))
    width = ref.high - ref.low
    # two Monte Carlo estimates of the same percentiles: within a tenth of the interval's width of each other
    assert abs(low - ref.low) < 0.1 * width and abs(high - ref.high) < 0.1 * width


def test_one_chrf():
    pairs = [("the cat sat on the mat", "the cat sat on a mat"), ("Guten Tag", "good day"), ("", "x"), ("a b", "a b")]
    assert ml_experiments.chrf is metrics.chrf  # the experiments score with the recipe's: one chrF in the repository
    for hyp, ref in pairs:
        assert 0 <= metrics.chrf(hyp, ref) <= 100
