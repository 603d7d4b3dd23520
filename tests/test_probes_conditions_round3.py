"""Bad-input probes (issue 45) of the measured validity conditions of issue 44's third round (``cos.conditions``,
``multilingual.conditions``, ``aasd.conditions``, the engine's): a foreign frame, a wrong type, an impossible number,
nothing to measure; each gives one clear answer."""

import math

import pandas as pd
import pytest

from specdec import engine_findings as ef
from specdec.aasd import conditions as aasd_c
from specdec.cos import conditions as cos_c
from specdec.cos import findings as cf
from specdec.multilingual import conditions as ml_c
from specdec.multilingual import findings as mf

FOREIGN = pd.DataFrame({"x": [1]})


def test_cos_frames_lacking_their_columns_name_the_column():
    for call in (
        lambda: cos_c.acceptance(FOREIGN),
        lambda: cos_c.acceptance_check(FOREIGN, cf.paper_regimes(), "w", "partly"),
        lambda: cos_c.lambda_check(FOREIGN, "w", "partly"),
    ):
        with pytest.raises(ValueError, match="column"):
            call()


def test_cos_numbers_out_of_range_are_refused():
    with pytest.raises(ValueError, match="α"):
        cos_c.thm36_speedup(1.5, 1, 1.0)
    with pytest.raises(ValueError, match="positive"):
        cos_c.paper_acceptance_floor(0.0, 1.0)
    with pytest.raises(ValueError, match="unknown set"):
        cos_c.set_floor("opt", cf.paper_regimes())
    assert cos_c.paper_acceptance_floor(5.0, 1.0) == math.inf  # no γ reaches it: an honest infinity


def test_cos_nothing_to_measure():
    assert cos_c.similar_size_check(None, "w", "partly")[0] == "partly"
    assert cos_c.gpu_rows_check(None)[0] == "no"
    with pytest.raises(TypeError, match="train seed"):
        cos_c.validities([], None, None, cf.paper_regimes(), ("w",), "partly", {})


def test_cos_measured_validity_of_an_empty_folder(tmp_path):
    empty = {0: {t: pd.DataFrame(columns=["method", "set", "lam", "mu"]) for t in cf.TABLES}}
    with pytest.raises(ValueError, match="column"):
        cf.measured_validity(empty, tmp_path, "tiny")


def test_multilingual_wrong_types_and_empty_inputs():
    with pytest.raises(TypeError, match="train seed"):
        ml_c.specialized_check([FOREIGN], ("de",), "w", "partly")
    with pytest.raises(TypeError, match="train seed"):
        ml_c.trained_f_check(FOREIGN, 0.0, "w", "partly")
    with pytest.raises(TypeError, match="train seed"):
        ml_c.stages_check({0: FOREIGN}, None, "w", "partly")
    with pytest.raises(ValueError, match="parameter counts"):
        ml_c.size_check(-1, 10, "w", "partly")
    with pytest.raises(TypeError, match="translatable_set"):
        ml_c.translatable_check("all", "w", "partly")
    with pytest.raises(ValueError, match="column"):
        ml_c.pooled_tau(FOREIGN, "sps-f")
    assert ml_c.trained_f_check({}, 0.0, "w", "partly")[0] == "partly"
    assert ml_c.size_check(0, 10, "w", "partly")[0] == "partly"


def test_multilingual_board_reading_and_validity_refuse_foreign_input():
    with pytest.raises(ValueError):
        mf.board_reading(["M4-τ T=0"], "no-such-profile")
    with pytest.raises(TypeError, match="train seed"):
        mf.measured_validity(mf.Drafters("tiny"), [FOREIGN])


def test_aasd_budgets_of_missing_or_malformed_configs(tmp_path):
    assert aasd_c.module_budget(tmp_path) is None
    (tmp_path / "config.json").write_text('{"training": {}}')
    assert aasd_c.module_budget(tmp_path) is None
    assert aasd_c.budgets("aasd-target-p8", (0,), tmp_path) == {}
    with pytest.raises(TypeError, match="budgets"):
        aasd_c.a3_validity([1600], "w")
    with pytest.raises(TypeError, match="names"):
        aasd_c.paper_validities("A3")


def test_engine_efficiency_of_foreign_rows():
    with pytest.raises((ValueError, KeyError, AttributeError)):
        ef.efficiency_validity([{"x": 1}], 5)
    level, why = ef.efficiency_validity([], 5)
    assert level == "no" and "nan" in why  # no SD rows: nothing was drafted, never a made-up count
