"""TABED's LLaVA requests decoded together (``batching.generate_batch`` with one drafter per request,
``batch_ensemble.BatchEnsembleDrafter``): every row is its batch-1 ``engine.generate`` run.

The shipped tiny LLaVA pair on five requests of the tiny suite (0, 1, 2 and 5 images, a second turn; prompts of
different lengths), methods M, T, MT* (adaptive, grid policy) and MTCP* (adaptive, four rows with C and P), γ 1, 3
and 5 (MT* at each): tokens, accepted counts per block, τ, α, the weights chosen per block, the drafting rows kept
and the calls / tokens fed of both models equal the batch-1 run's; rows stop at EOS while others go on. The
experiments' rows (``tabed.experiments.setting(batch_size=...)``) equal the B = 1 rows but for the empty
``seconds``.
"""

import json

import pytest
import torch

from specdec.batching import batchable, generate_batch
from specdec.drafters import ModelDrafter
from specdec.engine import generate
from specdec.results import ResultStore
from specdec.tabed import algorithm, experiments
from specdec.vlm import prompts

ROWS = ("describe-t1-test-0-00000", "iedit-t1-test-0-00000", "psv-t1-test-0-00000", "nq-t1-test-0-00000",
        "describe-t2-test-0-00000")  # fmt: skip
MAX_NEW = 24


@pytest.fixture(scope="module")
def pair():
    torch.set_num_threads(1)
    return experiments.Pair.load("tiny")


@pytest.fixture(scope="module")
def suite(pair):
    by_id = {r["id"]: r for r in pair.suite(1)}
    return [by_id[i] for i in ROWS]


def caption(images):  # a fixed captioner: the C row's text does not matter here
    return ["a small picture"] * len(images)


def run_pair(pair, rows, method, gamma):
    """``(batch rows, their drafters, batch-1 results, their drafters)`` of ``method`` on ``rows``."""
    make = lambda: algorithm.make_drafter(pair.draft, method, pair.tokenizer, captioner=caption)  # noqa: E731
    requests = [prompts.encode(pair.processor, r["prompt"], r["images"]) for r in rows]
    draft_inputs = [{**inputs, "images": r["images"]} if inputs else {} for (_, inputs), r in zip(requests, rows)]
    options = dict(gamma=gamma, max_new_tokens=MAX_NEW, eos_token_id=pair.tokenizer.eos_token_id)
    batched = [make() for _ in rows]
    batch = generate_batch(
        pair.target,
        [ids for ids, _ in requests],
        batched,
        seeds=[0] * len(rows),
        target_inputs=[inputs for _, inputs in requests],
        draft_inputs=draft_inputs,
        **options,
    )
    alone = [make() for _ in rows]
    ones = [
        generate(pair.target, ids, d, target_inputs=inputs, draft_inputs=x, **options)
        for (ids, inputs), x, d in zip(requests, draft_inputs, alone)
    ]
    return batch, batched, ones, alone


@pytest.mark.parametrize(
    ("method", "gamma"), [("M", 1), ("M", 5), ("T", 3), ("MT*", 1), ("MT*", 3), ("MT*", 5), ("MTCP*", 5)]
)
def test_batched_tabed_rows_equal_their_batch_one_runs(pair, suite, method, gamma):
    batch, batched, ones, alone = run_pair(pair, suite, method, gamma)
    for i, (row, one) in enumerate(zip(batch.rows, ones)):
        assert row.output_ids == one.output_ids, (method, gamma, i)
        assert row.accepted_per_block == one.accepted_per_block and row.drafted_per_block == one.drafted_per_block
        assert row.stop_reason == one.stop_reason
        assert (row.block_efficiency, row.target_calls) == (one.block_efficiency, one.target_calls)
        assert row.acceptance_rate == one.acceptance_rate or (row.acceptance_rate != row.acceptance_rate)
        counts = ("target_tokens_fed", "draft_calls", "draft_tokens_fed")
        assert [getattr(row, c) for c in counts] == [getattr(one, c) for c in counts], (method, gamma, i)
        assert batched[i].make_rows.active == alone[i].make_rows.active
        logged, own = getattr(batched[i], "weight_log", []), getattr(alone[i], "weight_log", [])
        if method == "MTCP*":
            # softmax weights of summed divergences move with the float32 rounding of the batched forwards (seen:
            # ~1e-6); rows store them to 3 decimals, so half a stored unit bounds what a row may show
            assert len(logged) == len(own) and torch.allclose(torch.tensor(logged), torch.tensor(own), atol=5e-4)
        else:  # grid candidates j/n: chosen, not computed, so exactly the same
            assert logged == own
    assert batch.steps == max(r.target_calls for r in batch.rows) < sum(r.target_calls for r in batch.rows)
    reasons = {r.stop_reason for r in batch.rows}
    assert reasons == {"eos", "max_new_tokens"}, reasons  # rows leave the batch at EOS while others go on


def test_experiment_rows_batched_equal_the_rows_decoded_alone(pair, suite, tmp_path):
    """``setting(batch_size=4)``: every stored column but ``seconds`` is the B = 1 row's (the weights and active
    rows too); ``seconds`` is empty in rows decoded in a batch (a batch's walltime is not one request's)."""
    frames = {}
    for b in (1, 4):
        store = ResultStore("tiny", "tabed_runs", experiments.KEY, root=tmp_path / f"b{b}")
        exp = experiments.setting(store, pair, suite, ["T", "MT*"], gamma=3, max_new_tokens=16, batch_size=b)
        frames[b] = exp.run().set_index(["method", "row"]).sort_index()
    one, batched = frames[1], frames[4]
    assert len(one) == 3 * len(suite) and one.lossless.astype(bool).all()
    same = [c for c in one.columns if c != "seconds"]
    assert one[same].astype(str).equals(batched[same].astype(str))
    assert one.seconds.notna().all() and batched.seconds.isna().sum() == 3 * 4  # 4 of 5 per method in a batch
    assert any(json.loads(w) for w in batched.loc["MT*"].weights)


def test_llava_next_tiles_run_at_batch_size_one(pair, suite):
    pixels = torch.zeros((1, 3, 64, 64))
    assert batchable({}) and batchable({"pixel_values": pixels})
    assert not batchable({"pixel_values": pixels[:, None]}) and not batchable(
        {"pixel_values": pixels, "image_sizes": 1}
    )
    ids, inputs = prompts.encode(pair.processor, suite[0]["prompt"], suite[0]["images"])
    with pytest.raises(ValueError, match="batch size 1"):
        generate_batch(pair.target, [ids], None, target_inputs=[{**inputs, "image_sizes": [(64, 64)]}])

    class Reworked(ModelDrafter):  # a subclass that changes a step (AASD's padded vocabulary, the timed drafter)
        def propose(self, generated, gamma, sampling, generator=None):
            return super().propose(generated, gamma, sampling, generator)

    with pytest.raises(ValueError, match="batch size 1"):  # the batch would bypass its propose
        generate_batch(pair.target, [ids], [Reworked(pair.draft)], target_inputs=[inputs])
    with pytest.raises(ValueError, match="one drafter per prompt"):
        generate_batch(pair.target, [ids], pair.draft, target_inputs=[inputs], draft_inputs=[inputs])
