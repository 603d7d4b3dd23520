"""CoS result rows are keyed by the weights they were decoded with and by the text of their prompt; the notebook
tables are experiments on the one harness."""

import pytest

from specdec.cos import experiments as cx
from specdec.cos import tasks as cos_tasks
from specdec.harness.profile import Profile
from specdec.results import ResultStore
from specdec.zoo.models import load_collab, model_weights
from specdec.zoo.tasks import text_digest


def test_recompute_writes_todays_weights_and_text_so_a_retrained_set_or_a_new_text_makes_committed_rows_stale():
    key = dict(set="we", weights="000000000000", task="gsm8k", method="sd", gamma=1, temperature=0.0, lam=0.5)
    key |= dict(mu=0.1, max_new_tokens=4, seed=0, device="cpu")
    row = cos_tasks.load_task("gsm8k", 1)[0]
    key |= dict(prompt=row["id"], request="000000000000")  # the same id, once another text
    (fresh,) = cx.recompute([key]).to_dict("records")
    models, _, _ = load_collab("tiny", "we")
    assert fresh["weights"] == model_weights(*models) != key["weights"]
    assert fresh["request"] == text_digest(row["prompt"]) != key["request"]


def test_a_cell_is_an_experiment_whose_rows_recompute_and_whose_greedy_texts_are_lossless(tmp_path):
    store = ResultStore("tiny", "cos_cell", cx.ROW_KEY, root=tmp_path)
    models = cx.ModelSet.load(Profile.load("tiny"), "cd")
    rows = cos_tasks.load_task("gsm8k", 2)
    methods = [("standard", 0), ("sd", 2), ("cos", 2)]
    exp = cx.cell(store, models, task="gsm8k", rows=rows, methods=methods, label="cd", max_new_tokens=6)
    frame = exp.run()
    assert len(frame) == 6 and list(frame.method[:3]) == ["standard", "sd", "cos"]
    assert frame.lossless.all()  # greedy: every method decodes argmax r
    assert list(frame.columns[: len(cx.ROW_KEY)]) == cx.ROW_KEY and "lossless" not in store.frame()
    fresh = cx.recompute(frame[cx.ROW_KEY].to_dict("records"))
    assert list(fresh.text) == list(frame.text)
    assert exp.check(by=["method"], columns=cx.EXACT_COLUMNS) == []


def test_collab_of_refuses_an_unknown_label():
    assert cx.collab_of("we/proposer1") == ("we", None, 1)
    assert cx.collab_of("cd+we") == ("cd", "we", 0)
    with pytest.raises(ValueError, match="unknown CoS set label"):
        cx.collab_of("zz")
