"""Bad input to what this round added: each study's zoo per profile (``zoo_for``, ``Drafters``, ``at_seed``), the
TABED and AASD conditions and board readings, the figures' readability and the one not-computed rule. Each call gives
one clear error naming what was wrong, before anything is loaded or written."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from specdec import papers, plots, verdict
from specdec.aasd import findings as af
from specdec.aasd import zoo as az
from specdec.cos import zoo as cz
from specdec.multilingual import drafters as md
from specdec.realmodel import ColumnHead, ScatterHead
from specdec.tabed import conditions as tc
from specdec.tabed import findings as tf
from specdec.tabed import sources as ts
from specdec.tabed import windows as tw

ZOOS = {"AASD": az.zoo_for, "CoS": cz.zoo_for, "TABED": ts.zoo_for, "Multilingual": md.Drafters}
CLASSES = [az.HubAASD, az.ShippedAASD, cz.HubCollabs, cz.ShippedCollabs, ts.HubPairs, ts.ShippedPairs]
CLASSES += [md.HubDrafters, md.ShippedDrafters]


def test_every_registered_paper_has_its_zoo_probed_here():
    registered = {s.name for s in papers.PAPERS.values() if s.zoo}
    assert set(ZOOS) == registered, f"{__file__}: ZOOS must name every paper of specdec.papers with a zoo"


@pytest.mark.parametrize("study", sorted(ZOOS))
def test_a_zoo_of_an_unknown_profile_names_the_known_ones(study):
    with pytest.raises(ValueError, match=r"unknown profile 'nope'; known profiles: \['paper', 'real', 'tiny'\]"):
        ZOOS[study]("nope")


@pytest.mark.parametrize("study", sorted(ZOOS))
def test_a_zoo_the_real_profile_lacks_names_the_study_and_its_sources(study):
    with pytest.raises(ValueError, match=f"study {study} has no models from a 'package' source"):
        ZOOS[study]("real")


@pytest.mark.parametrize("study", sorted(ZOOS))
@pytest.mark.parametrize("seed", [-1, 99])
def test_a_training_seed_the_zoo_lacks_is_refused(study, seed):
    with pytest.raises(ValueError, match=rf"{study} training seed {seed} is not one of this zoo's \(1, 2\)"):
        ZOOS[study]("tiny").at_seed(seed)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_zoo_class_on_an_unknown_profile_is_refused(cls):
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        cls("nope")


def test_tabed_lookups_refuse_bad_names():
    with pytest.raises(ValueError, match="unknown profile"):
        tw.has_window_pair("nope")
    with pytest.raises(ValueError, match="no LLaVA pair 'nope'"):
        ts.llava_pair(ts.zoo_for("paper").profile, "nope")


@pytest.mark.parametrize("board_reading", [tf.board_reading, af.board_reading], ids=["tabed", "aasd"])
def test_a_board_reading_on_an_unknown_profile_is_refused(board_reading):
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        board_reading([], "nope")


def test_conditions_on_frames_without_their_columns_name_them():
    for condition in (tc.t1b_validity, tc.t4_validity, tc.t1b_measured, tc.t4_measured):
        with pytest.raises(ValueError, match=r"t(1b|4)_(measured|validity) reads the column '.+', which this frame"):
            condition(pd.DataFrame({"x": [1]}), *(["why"] if condition.__name__.endswith("validity") else []))


def test_struggle_threshold_is_the_papers_lowest_module_acceptance():
    assert 0 < af.struggle_threshold() < 1


def test_readability_needs_a_figure_and_reads_an_empty_one():
    with pytest.raises(AttributeError):
        plots.readability("a figure")
    fig = plt.figure(figsize=(4, 3))
    assert plots.readability(fig)["readable"]  # nothing drawn: nothing to misread
    plt.close(fig)


def test_overlapping_ticks_needs_axes_and_a_renderer():
    with pytest.raises(AttributeError):
        plots.overlapping_ticks("an axes", None)


def test_not_computed_needs_a_callable():
    with pytest.raises(TypeError, match="not callable"):
        verdict.or_not_computed("F", 3, strict=False)  # type: ignore[arg-type]


def test_scatter_head_refuses_ids_outside_the_vocabulary():
    import torch

    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        ScatterHead(torch.zeros(8, 4), torch.tensor([0, 9]))


def test_column_head_refuses_an_output_layer_with_a_bias():
    import torch

    with pytest.raises(ValueError, match="bias-free torch.nn.Linear"):
        ColumnHead.of(torch.nn.Linear(4, 8))
    with pytest.raises(ValueError, match="bias-free torch.nn.Linear"):
        ColumnHead.of(torch.nn.Embedding(8, 4))  # type: ignore[arg-type]
