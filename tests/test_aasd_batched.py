"""AASD's plain decoding and its LLaMA / LLaVA baselines on the batch path (``batching.generate_batch`` with one
drafter per request, ``aasd.baselines.batch_member``): every row is its batch-1 ``engine.generate`` run with the
drafter the notebooks use (``experiments.make_drafter``).

The shipped tiny target ``tabed-target`` on six requests of the AASD tasks (both turns, prompts of different
lengths, one image each; a text-only draft sees each image as a newline), the FT-/DT-LLaMA and FT-/DT-LLaVA drafts
at the tables' γ 3 and 5 and 48 new tokens: tokens, accepted counts per block, stop reason, τ, α and the calls /
tokens fed of both models equal the batch-1 run's. The experiment's rows at ``batch_size=4`` equal the B = 1 rows
but for the empty walltime columns; the AASD module's rows are decoded alone (``Method.decode_batch`` is ``None``).
"""

import pytest
import torch

from specdec.aasd import baselines, experiments
from specdec.batching import generate_batch
from specdec.cache import CachedLM
from specdec.engine import generate
from specdec.results import ResultStore

TARGET = "tabed-target"
ROWS = ("pope-t1-test-0-00000", "describe-t2-test-0-00000", "mmvet-t2-test-0-00000", "describe-t1-test-0-00000",
        "mmvet-t1-test-0-00000", "mmvet-t1-test-0-00001")  # fmt: skip
MAX_NEW = 48


@pytest.fixture(scope="module")
def loaded():
    torch.set_num_threads(1)
    return experiments.load_target(TARGET)


@pytest.fixture(scope="module")
def requests(loaded):
    target, processor = loaded
    by_id = {r["id"]: r for r in experiments.load_requests(3)}
    return experiments.requests_of([by_id[i] for i in ROWS], processor, target)


@pytest.mark.parametrize(
    ("draft", "gamma"), [("FT-LLaMA", 3), ("FT-LLaMA", 5), ("DT-LLaMA", 3), ("FT-LLaVA", 5), ("DT-LLaVA", 3)]
)
def test_batched_baseline_rows_equal_their_batch_one_runs(loaded, requests, draft, gamma):
    target, processor = loaded
    drafter, uses_images = experiments.make_drafter(draft, TARGET, target, CachedLM(target), processor)
    options = dict(gamma=gamma, max_new_tokens=MAX_NEW, eos_token_id=processor.tokenizer.eos_token_id)
    inputs = [dict(r.target_inputs) for r in requests]
    members = [baselines.batch_member(drafter, uses_images) for _ in requests]
    batch = generate_batch(
        target,
        [r.prompt_ids for r in requests],
        members,
        seeds=[0] * len(requests),
        target_inputs=inputs,
        draft_inputs=inputs if uses_images else None,
        **options,
    )
    for i, (row, x) in enumerate(zip(batch.rows, inputs)):
        one = generate(CachedLM(target), requests[i].prompt_ids, drafter, target_inputs=x,
                       draft_inputs=x if uses_images else {}, **options)  # fmt: skip
        assert row.output_ids == one.output_ids, (draft, gamma, i)
        assert row.accepted_per_block == one.accepted_per_block and row.drafted_per_block == one.drafted_per_block
        assert (row.stop_reason, row.block_efficiency, row.target_calls) == (
            one.stop_reason,
            one.block_efficiency,
            one.target_calls,
        )
        assert row.acceptance_rate == one.acceptance_rate
        counts = ("target_tokens_fed", "draft_calls", "draft_tokens_fed")
        assert [getattr(row, c) for c in counts] == [getattr(one, c) for c in counts], (draft, gamma, i)
    assert batch.steps == max(r.target_calls for r in batch.rows) < sum(r.target_calls for r in batch.rows)
    assert {r.stop_reason for r in batch.rows} == {"eos", "max_new_tokens"}  # rows leave at EOS, others go on


def test_experiment_rows_batched_equal_the_rows_decoded_alone(loaded, requests, tmp_path):
    rows = [r.data for r in requests]
    frames = {}
    for b in (1, 4):
        store = ResultStore("tiny", "aasd_runs", experiments.KEY, root=tmp_path / f"b{b}")
        drafts = ["DT-LLaMA", "FT-LLaVA", "AASD"]
        exp = experiments.experiment(store, "tiny", "table1", TARGET, rows, drafts, [3], 24, loaded, batch_size=b)
        assert (exp.methods["AASD γ=3"].decode_batch is None) and exp.methods["AR"].decode_batch is not None
        frames[b] = exp.run().set_index(["draft", "row"]).sort_index()
    one, batched = frames[1], frames[4]
    assert len(one) == 4 * len(rows) and one.lossless.astype(bool).all()
    same = [c for c in one.columns if c not in experiments.WALLTIME]
    assert one[same].astype(str).equals(batched[same].astype(str))
    in_batch = batched.drop(index="AASD", level="draft")  # 3 methods: 4 of 6 requests in a batch, 2 in one
    assert in_batch.seconds.isna().sum() == 3 * 6 and batched.loc["AASD"].seconds.notna().all()
