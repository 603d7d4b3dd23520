"""Bad-input probes (issue 45) of TABED's measured validity conditions (``specdec.tabed.conditions``, issue 44): a
missing or malformed training log, an empty frame, no condition at all; each gives one clear answer."""

import pandas as pd
import pytest

from specdec.tabed import conditions
from specdec.tabed import findings as tf


def test_a_missing_training_log_is_none_and_a_bad_one_a_clear_error(tmp_path):
    assert conditions.draft_heldout(tmp_path / "nowhere") is None
    (tmp_path / "training_log.json").write_text("{not json")
    with pytest.raises(ValueError):
        conditions.draft_heldout(tmp_path)


def test_a_held_out_block_that_is_no_dict_is_refused():
    with pytest.raises(TypeError, match="held-out block"):
        conditions.reads_images("describe-t1", ["describe"])
    with pytest.raises(TypeError, match="held-out block"):
        conditions.t1a_validity(["describe-t1"], "w")


def test_a_log_without_the_scenarios_or_without_a_log_measures_nothing():
    real, blank, tokens = conditions.reads_images({"summary": {}}, ["describe"])
    assert tokens == 0 and real != real and blank != blank  # NaN, never a made-up loss
    assert conditions.reads_images_check({"summary": {}}, ["describe"], "w", "partly", "x")[0] == "no"
    level, why = conditions.reads_images_check(None, ["describe"], "w", "partly", "x")
    assert level == "partly" and conditions.NOT_MEASURED in why


def test_the_paper_thresholds_are_table_10s():
    assert conditions.paper_leads() == (5, 13, 18)
    assert 0 < conditions.t2_minority_threshold() < 0.5 and 0 < conditions.t3a_gap_threshold() < 0.5


def test_combined_needs_a_condition():
    with pytest.raises(ValueError, match="at least one"):
        conditions.combined(why="w")


def test_validities_of_a_foreign_or_empty_frame():
    foreign = pd.DataFrame({"x": [1]})
    with pytest.raises(ValueError, match="column"):
        tf.validities(foreign, foreign, True)
    empty = tf.validities(pd.DataFrame(), pd.DataFrame(), False)
    assert set(empty) == set(tf.NAMES) and all(conditions.NOT_MEASURED in w for _, w in empty.values())
