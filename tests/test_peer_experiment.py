"""Notebook 02's table (``specdec.harness.peer_experiment``): its committed rows are what the code computes (a seeded
sample of one row per method, recomputed; the seconds are measurements and are not compared), and the verdicts read
its long rows (one per prompt, pass and method) as one row per prompt and pass."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from specdec import peer
from specdec.harness import peer_experiment
from specdec.verdict import HOLDS


def test_a_sample_of_committed_peer_rows_recomputes():
    threads = torch.get_num_threads()
    try:
        exp = peer_experiment.comparison("tiny", runs=[0])  # the notebook's defaults, first pass
        stored = exp.store.frame(requested=False)
        if not (stored.device.astype(str) == exp.context["device_name"]).any():
            pytest.skip(f"no committed row was timed on a '{exp.context['device_name']}' (the device is a key column)")
        assert exp.check(by=["method"], columns=peer_experiment.EXACT_COLUMNS, n=1, seed=0) == []
    finally:
        torch.set_num_threads(threads)


def long_rows(seconds: dict, runs=(0, 1), prompts=("a", "b", "c"), output=(1, 2, 3)) -> pd.DataFrame:
    """A long peer table: every method on every prompt and pass, ``seconds[method]`` each, 3 tokens."""
    return pd.DataFrame(
        [
            dict(
                prompt_id=p,
                run=r,
                method=m,
                gamma=0 if m == "plain" else 5,
                device="cpu",
                threads=1,
                new_tokens=len(output),
                block_efficiency=1.5,
                total_time=s,
                output=json.dumps(list(output)),
            )  # fmt: skip
            for r in runs
            for p in prompts
            for m, s in seconds.items()
        ]
    )


def test_the_verdicts_pool_every_pass_and_state_their_scope():
    frame = long_rows({"plain": 0.5, "specdec": 1.0, "hf_assisted": 1.6})
    wide = peer.wide(frame)
    assert len(wide) == 6 and wide.same_text.all() and set(wide.run) == {0, 1}
    assert peer.pooled(frame)["specdec ÷ HF"][0] == pytest.approx(1.6)
    same, speed = peer.peer_verdicts(frame)
    assert same.status == HOLDS and speed.n == 3  # bootstrap units: prompts, each with both passes
    assert speed.estimate == pytest.approx(1.6) and speed.status == HOLDS
    assert "3 held-out prompts x 2 timed passes" in speed.detail and "1 thread(s)" in speed.detail


def test_a_different_text_is_not_the_same_text():
    frame = long_rows({"plain": 0.5, "specdec": 1.0, "hf_assisted": 1.6})
    frame.loc[(frame.method == "hf_assisted") & (frame.prompt_id == "b") & (frame.run == 1), "output"] = "[1, 2, 4]"
    same, _ = peer.peer_verdicts(frame)
    assert same.estimate == pytest.approx(5 / 6) and same.status != HOLDS


def test_the_scoreboard_judges_the_longest_one_thread_rows_and_keeps_gpu_rows():
    import pandas as pd

    from specdec import peer

    cpu = pd.DataFrame(
        dict(pair=["default", "default", "default", "xs"], max_new_tokens=[48, 64, 64, 64], threads=[1, 1, 2, 1])
    )
    assert peer.scoreboard_rows(cpu).index.tolist() == [1]
    smoke = pd.DataFrame(dict(pair=["default"] * 2, max_new_tokens=[16, 16], threads=[1, 1]))
    assert len(peer.scoreboard_rows(smoke)) == 2  # a smoke run's short decodes are still judged
    gpu = pd.DataFrame(dict(pair=["default"] * 2, max_new_tokens=[64, 64], threads=[float("nan")] * 2))
    assert len(peer.scoreboard_rows(gpu)) == 2  # no thread count on a GPU
