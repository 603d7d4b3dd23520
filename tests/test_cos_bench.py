"""CoS result rows are keyed by the weights they were decoded with and by the text of their prompt."""

from specdec.cos import bench as cb


def test_recompute_writes_todays_weights_and_text_so_a_retrained_set_or_a_new_text_makes_committed_rows_stale():
    key = dict(set="we", weights="000000000000", task="gsm8k", method="sd", gamma=1, temperature=0.0, lam=0.5)
    key |= dict(mu=0.1, max_new_tokens=4, seed=0, device="cpu")
    row = cb.cos_tasks.load_task("gsm8k", 1)[0]
    key |= dict(prompt=row["id"], request="000000000000")  # the same id, once another text
    (fresh,) = cb.recompute([key]).to_dict("records")
    models, _, _ = cb.load_collab("tiny", "we")
    assert fresh["weights"] == cb.model_weights(*models) != key["weights"]
    assert fresh["request"] == cb.text_digest(row["prompt"]) != key["request"]
