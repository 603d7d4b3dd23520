"""TABED tables on hand-built result frames, its requests and the keys of its experiments' rows."""

import json

import pandas as pd
import pytest

from conftest import tabed_runs
from specdec.tabed import data as td
from specdec.tabed import experiments as tx
from specdec.tabed import tables as tt
from specdec.vlm import prompts


def _frame(taus: dict) -> pd.DataFrame:
    """taus: {(scenario, turn): {method: τ}} -> stored-run rows, one request per cell with τ exactly."""
    return tabed_runs(taus, n=1, noise=0.0, difficulty=0.0)


CELLS = {
    ("describe", 1): dict(M=3.0, T=2.0, MT=2.5, **{"MT*": 2.9}),
    ("pope", 1): dict(M=2.0, T=2.2, MT=2.1, **{"MT*": 2.15}),
    ("psv", 1): dict(M=1.2, T=2.0, MT=1.6, **{"MT*": 1.9}),
    ("describe", 2): dict(M=2.0, T=2.4, MT=2.1, **{"MT*": 1.0}),
}


def test_block_table_averages_the_benchmark_cells_per_turn():
    table = tt.block_table(_frame(CELLS), tt.TABLE1)
    assert table.loc[(1, "benchmark", "Avg."), "M"] == pytest.approx(2.5)
    assert table.loc[(1, "ood", "PSV"), "T"] == pytest.approx(2.0)
    assert list(table.index.get_level_values(2)[:3]) == ["LLaVA-W", "POPE", "Avg."]


def test_block_table_lays_out_only_the_turns_asked_for():
    both = tt.block_table(_frame(CELLS), tt.TABLE1)
    assert set(both.index.get_level_values(0)) == {1, 2}
    first = tt.block_table(_frame(CELLS), tt.TABLE1, turns=(1,))
    assert set(first.index.get_level_values(0)) == {1}  # the frame's second turn is left out
    pd.testing.assert_frame_equal(first, both.loc[[1]])
    first_only = {k: v for k, v in CELLS.items() if k[1] == 1}
    padded = tt.block_table(_frame(first_only), tt.TABLE1)  # a turn asked for but not run: the paper's rows, empty
    second = padded.loc[2]
    assert len(second) == len(tt.paper_table(tt.TABLE1).loc[2]) and second.isna().all().all()
    assert set(tt.block_table(_frame(first_only), tt.TABLE1, turns=(1,)).index.get_level_values(0)) == {1}
    second_asked = tt.block_table(_frame(first_only), tt.TABLE1, turns=(2,))
    assert set(second_asked.index.get_level_values(0)) == {2} and second_asked.isna().all().all()
    with pytest.raises(ValueError, match="turns"):
        tt.block_table(_frame(CELLS), tt.TABLE1, turns=(3,))


def test_rank_counts_count_second_place():
    table = tt.block_table(_frame(CELLS), tt.TABLE1)
    assert tt.rank_counts(table, "MT*") == (3, 4)  # last on describe t2


# T1-T5 as Verdicts: tests/test_tabed_verdicts.py


def test_weight_series_expands_blocks_to_tokens():
    row = dict(
        method="MT*",
        accepted=json.dumps([2, 0, 5]),
        weights=json.dumps([[0.5, 0.5], [0.8, 0.2], [0.1, 0.9]]),
        new_tokens=10,
    )
    weights, from_draft = tt.weight_series(row)
    assert weights == [0.5] * 3 + [0.8] + [0.1] * 6
    assert from_draft == [True, True, False, False] + [True] * 5 + [False]
    static = dict(method="T", accepted=json.dumps([1]), weights="[]", new_tokens=3)
    assert tt.weight_series(static) == ([0.0, 0.0, 0.0], [True, False, False])


def test_paper_tables_match_the_papers_own_averages():
    groups = tt.paper_group_table(["M", "T", "MTCP*"])
    assert groups.loc["M", "benchmark t1"] == pytest.approx(2.24)  # Table 2, Benchmark / First
    assert groups.loc["T", "ood"] == pytest.approx(2.05)  # Table 2, OOD / Avg.
    window = tt.paper_window_table()
    assert window.loc["LLaVA-W", "1"] == pytest.approx(2.26)


def test_encode_rejects_a_placeholder_count_that_does_not_match():
    class Processor:  # never reached: the count is checked first
        tokenizer = None

    with pytest.raises(ValueError, match="one <image> in the prompt per image"):
        prompts.encode(Processor(), "USER: <image>\n<image>\nHi ASSISTANT:", [])


def test_paper_profile_fails_offline_with_clear_errors(monkeypatch):
    from specdec.hub import DatasetNotAvailableError, ModelNotAvailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="download"):
        tx.load_vlm_pair("paper")
    with pytest.raises(DatasetNotAvailableError, match="lmms-lab/POPE"):
        td.load_suite("paper", scenarios=[("pope", 1)])
    with pytest.raises(ValueError, match="pass target= and processor="):  # second turns need the target's answers
        td.load_suite("paper", scenarios=["pope"])


def test_paper_rows_load_stand_ins_through_the_same_datasets_path(tmp_path, monkeypatch):
    """Local copies in the paper datasets' format go through ``datasets.load_dataset`` like the hub ids."""
    import datasets
    from PIL import Image

    from specdec.vlm import scenes

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    pope = tmp_path / "pope"
    pope.mkdir()
    images = [Image.new("RGB", (80, 60), (255, 0, 0)), Image.new("RGB", (64, 64), (0, 0, 255))]
    data = datasets.Dataset.from_dict(
        {
            "question": ["Is there a red car in the image?", " Is there a dog? "],
            "image": images,
            "answer": ["yes", "no"],
        }
    )
    data.cast_column("image", datasets.Image()).to_parquet(str(pope / "test-00000-of-00001.parquet"))
    nq = tmp_path / "nq"
    nq.mkdir()
    datasets.Dataset.from_dict({"question": ["who wrote hamlet"], "answer": [["Shakespeare"]]}).to_parquet(
        str(nq / "validation-00000-of-00001.parquet")
    )

    rows = td.load_suite(
        "paper", n_per_scenario=5, scenarios=["pope", "nq"], sources={"pope": str(pope), "nq": str(nq)}, turns=(1,)
    )
    assert [r["id"] for r in rows] == ["pope-t1-paper-00000", "pope-t1-paper-00001", "nq-t1-paper-00000"]
    assert rows[1]["prompt"] == scenes.chat_prompt([(f"<image>\n{td.APP_I_INSTRUCTION} Is there a dog?", None)])
    nq = "Who wrote hamlet. Provide a comprehensive and detailed explanation, including the reasoning and background"
    assert rows[2]["prompt"].startswith(f"USER: {nq}") and rows[2]["images"] == []
    assert rows[0]["images"][0].size == (80, 60)
    with pytest.raises(ValueError, match="report none for PSV"):
        td.load_suite("paper", scenarios=[("psv", 2)])


def test_an_unknown_llava_pair_names_the_known_ones():
    with pytest.raises(ValueError, match=r"no LLaVA pair 'default'.*llava-13b"):
        tx.load_vlm_pair("paper", "default")  # a text-only pair


def test_first_turn_answers_are_cached_and_never_claim_an_image(tmp_path, monkeypatch):
    """The target's first answers: computed once per key (a second call reads them back), keyed by the max tokens
    too, and a literal "<image>" in an answer is dropped (it would otherwise count as an image placeholder)."""
    import types

    from specdec import results

    target, _, processor = tx.load_vlm_pair("tiny")
    row = td.load_suite("tiny", 1, scenarios=[("describe", 1)])[0]
    text_ids = processor.tokenizer("A red <image> square.", add_special_tokens=False)["input_ids"]
    calls = []

    def fake_autoregressive(model, ids, max_new_tokens, **_):
        calls.append(max_new_tokens)
        return types.SimpleNamespace(output_ids=text_ids)

    monkeypatch.setattr(td, "autoregressive", fake_autoregressive)
    store = results.ResultStore("paper", "answers", td.ANSWER_KEY, root=tmp_path)
    first = td.first_turn_answers(target, processor, [row], 8, store)
    again = td.first_turn_answers(target, processor, [row], 8, store)
    longer = td.first_turn_answers(target, processor, [row], 9, store)
    assert first == again == longer and "<image>" not in first[row["id"]] and "square" in first[row["id"]]
    assert calls == [8, 9]  # the second call with 8 tokens read the cache


def test_tiny_second_turns_continue_the_targets_own_greedy_first_answer(tmp_path):
    """Issue 26, T1b: a tiny second turn is its first turn, the target's greedy answer to it (decoded here, not read
    from a cache) and the follow-up unchanged; the scripted answers stay as reference text only."""
    from specdec import results
    from specdec.engine import autoregressive
    from specdec.vlm.prompts import encode

    target, _, processor = tx.load_vlm_pair("tiny")
    store = results.ResultStore("tiny", "answers", td.ANSWER_KEY, root=tmp_path)
    wanted = [("docvqa", 2), ("pope", 2), ("nq", 2)]
    rows = td.load_suite("tiny", 2, scenarios=wanted, target=target, processor=processor, answers=store)
    scripted = {r["id"]: r for r in td.scenes.scenario_suite("test", 2, scenarios=wanted)}
    tok = processor.tokenizer
    for r in rows:
        ids, inputs = encode(processor, td.scenes.chat_prompt([(r["first_user"], None)]), r["images"])
        out = autoregressive(target, ids, max_new_tokens=128, eos_token_id=tok.eos_token_id, target_inputs=inputs)
        own = tok.decode(out.output_ids, skip_special_tokens=True).strip()
        assert r["prompt"] == td.scenes.chat_prompt([(r["first_user"], own), (r["second_user"], None)]), r["id"]
        assert r["first_turn"] == f"{r['id']}/first" and r["images"] == scripted[r["id"]]["images"]
        assert (r["answer"], r["first_answer"]) == (scripted[r["id"]]["answer"], scripted[r["id"]]["first_answer"])
    assert any(r["prompt"] != scripted[r["id"]]["prompt"] for r in rows)  # the target does not say the script
    assert len(store.rows()) == len(rows)  # one cached answer per second turn, read back on the next load
    again = td.load_suite("tiny", 2, scenarios=wanted, target=target, processor=processor, answers=store)
    assert [r["prompt"] for r in again] == [r["prompt"] for r in rows]


def test_each_pair_compares_with_its_own_table_of_the_paper():
    """Notebook 10's default ``paper_setting``: the tiny zoo stands in for Table 10's pair, each paper.yaml pair
    with a ``setting`` gets its table (11-14), the others none (an all-NaN table in Table 10's layout)."""
    assert tt.pair_setting("tiny") == tt.PAPER_SETTING and tt.paper_table_name(tt.PAPER_SETTING) == "Table 10"
    named = {p: tt.paper_table_name(tt.pair_setting("paper", p)) for p in ("llava-7b", "llava-next-7b-160m")}
    assert named == {"llava-7b": "Table 10", "llava-next-7b-160m": "Table 12"}
    assert tt.paper_table_name(tt.pair_setting("paper", "llava-next-7b-ov")) == "Table 13"
    assert tt.paper_table_name(tt.pair_setting("paper", "llava-next-13b-as-authors")) == "Table 14"
    assert tt.pair_setting("paper") == tt.PAPER_SETTING  # default pair llava-7b
    assert tt.pair_setting("paper", "llava-13b") is None and tt.paper_table_name(None) is None
    next7b = tt.pair_paper_table(tt.TABLE1, tt.pair_setting("paper", "llava-next-7b"))
    assert next7b.loc[(1, "ood", "PSV"), "M"] == pytest.approx(1.19)  # Table 11
    empty = tt.pair_paper_table(tt.TABLE1, None)
    assert empty.index.equals(tt.paper_table(tt.TABLE1).index) and empty.isna().all().all()
    with pytest.raises(ValueError, match="no LLaVA pair"):
        tt.pair_setting("paper", "default")


def test_runs_are_keyed_by_the_weights_of_the_models_they_used(tmp_path):
    import shutil

    from specdec import hub
    from specdec.zoo.models import load

    target, draft, _ = tx.load_vlm_pair("tiny")
    ar, m = tx.run_weights(target, draft, "AR"), tx.run_weights(target, draft, "M")
    assert len({ar, m, tx.run_weights(target, draft, "C")}) == 3  # C adds the captioner's weights
    assert tx.run_weights(target, draft, "C", "draft") == tx.run_weights(target, draft, "C", "oracle") == m
    assert tx.run_weights(target, draft, "T", "draft") == m  # T uses no captioner
    copy = tmp_path / "draft"
    shutil.copytree(hub.resolve("tabed-draft"), copy)
    data = bytearray((copy / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (copy / "model.safetensors").write_bytes(bytes(data))
    retrained, _ = load(copy, kind="llava", with_tokenizer=False)
    assert tx.run_weights(target, retrained, "M") != m and tx.run_weights(target, retrained, "AR") == ar


def test_a_row_id_that_names_another_request_is_run_again(tmp_path):
    from PIL import ImageOps

    from specdec import results
    from specdec.vlm.prompts import load_images

    pair = tx.Pair.load("tiny")
    row = td.load_suite("tiny", 1, scenarios=[("pope", 1)])[0]
    store = results.ResultStore("tiny", "runs", tx.KEY, root=tmp_path)
    tx.setting(store, pair, [row], ["M"], gamma=2, max_new_tokens=4).run()
    tx.setting(store, pair, [row], ["M"], gamma=2, max_new_tokens=4).run()  # the same request: done
    assert len(store.frame()) == 2  # AR and M
    reworded = {**row, "prompt": row["prompt"].replace("?", " ?", 1)}
    flipped = {**row, "images": [ImageOps.mirror(load_images(row["images"])[0])]}
    assert len({prompts.request_digest(r) for r in (row, reworded, flipped)}) == 3
    for edited in (reworded, flipped):  # same row id, another request: its rows are computed, not read back
        tx.setting(store, pair, [edited], ["M"], gamma=2, max_new_tokens=4).run()
    frame = store.frame()
    assert len(frame) == 6 and frame.row.nunique() == 1 and frame.request.nunique() == 3
    assert frame.request.map(len).eq(16).all()
    rerun = results.ResultStore("tiny", "runs", tx.KEY, root=tmp_path)  # a later run of the flipped request only
    tx.setting(rerun, pair, [flipped], ["M"], gamma=2, max_new_tokens=4).run()
    mine = rerun.frame(requested=True)  # its table: its own rows, none of the two older requests'
    assert sorted(mine.method) == ["AR", "M"] and set(mine.request) == {prompts.request_digest(flipped)}


def test_the_ood_story_sets_can_hold_more_requests_than_the_other_cells():
    base = td.load_suite("tiny", 2)
    more = td.load_suite("tiny", 2, n_ood=5)
    assert [r["id"] for r in base] == [r["id"] for r in td.load_suite("tiny", 2, n_ood=2)]
    count = {}
    for r in more:
        count[r["scenario"], r["turn"]] = count.get((r["scenario"], r["turn"]), 0) + 1
    assert {k: v for k, v in count.items() if v != 2} == {("psv", 1): 5, ("vist", 1): 5}
    same = {r["id"]: r["prompt"] for r in base}  # the first requests of a cell do not depend on its n
    assert all(same[r["id"]] == r["prompt"] for r in more if r["id"] in same)
    assert [(r["scenario"], r["turn"]) for r in more] == sorted(
        [(r["scenario"], r["turn"]) for r in more], key=list(td.scenes.SCENARIOS).index
    )  # still in the order of SCENARIOS


def test_second_turn_cells_can_hold_more_requests_and_keep_their_first_ones():
    base = td.load_suite("tiny", 2, n_ood=3)
    more = td.load_suite("tiny", 2, n_ood=3, n_second=4)
    assert [r["id"] for r in base] == [r["id"] for r in td.load_suite("tiny", 2, n_ood=3, n_second=2)]
    count = {}
    for r in more:
        count[r["scenario"], r["turn"]] = count.get((r["scenario"], r["turn"]), 0) + 1
    second = {(s, t) for s, t in td.scenes.SCENARIOS if t == 2}
    assert {k: v for k, v in count.items() if v != 2} == {**dict.fromkeys(second, 4), ("psv", 1): 3, ("vist", 1): 3}
    same = {r["id"]: r["prompt"] for r in base}
    assert all(same[r["id"]] == r["prompt"] for r in more if r["id"] in same)
    assert {r["rests_on"] for r in more if r["turn"] == 2} == {"image", "previous answer", "text task"}
