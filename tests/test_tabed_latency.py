"""TABED latency (notebook 14): Eq. (1) table, Fig. 9 split, batched-drafting cost, caption tables."""

import pandas as pd
import pytest
import torch

from specdec.engine import autoregressive
from specdec.tabed import data, experiments
from specdec.tabed import latency as tl


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    target, draft, processor = experiments.load_vlm_pair("tiny")
    suite = data.load_suite("tiny", n_per_scenario=1, scenarios=["docvqa", "spot"])
    requests = tl.encode_requests(processor, suite, counts=(1, 2), per_count=1)
    return target, draft, processor, requests


def test_eq1_table_reproduces_the_papers_headline():
    tau = tl.paper_tau(["M", "T", "MT", "MT*"])
    assert tau["MT*"] == pytest.approx(2.29)
    table = tl.expected_speedup_table(tau, ratio_measured=0.5, ratio_paper=0.063, gamma=5)
    assert round(table.loc["MT*", "Eq.(1), paper T_q/T_p = 0.063"], 2) == 1.74
    assert table.loc["MT*", "Eq.(1), measured T_q/T_p"] == pytest.approx(2.29 / 3.5)
    assert table["rows m"].tolist() == [1, 1, 2, 2]


def test_eq1_batch_cost_charges_the_rows():
    tau = pd.Series({"M": 3.0, "MTCP": 3.0})
    table = tl.expected_speedup_table(tau, 0.1, gamma=5, batch_cost={1: 1.0, 4: 2.0})
    charged = table["Eq.(1), measured T_q/T_p × cost(m)"]
    assert charged["M"] == pytest.approx(3.0 / 1.5) and charged["MTCP"] == pytest.approx(3.0 / 2.0)


def test_tau_by_method_averages_turns_then_methods():
    frame = pd.DataFrame(
        {
            "method": ["M", "M", "M", "T"],
            "turn": [1, 1, 2, 1],
            "group": ["benchmark"] * 3 + ["ood"],
            "block_efficiency": [2.0, 4.0, 5.0, 9.0],
        }
    )
    tau = tl.tau_by_method(frame, ["M", "T"])
    assert tau["M"] == pytest.approx((3.0 + 5.0) / 2) and pd.isna(tau["T"])


def test_component_split_sums_to_total_and_decodes_like_the_engine(tiny):
    target, _, _, requests = tiny
    request = requests[1]
    split = tl.generation_components(target, request, max_new_tokens=12)
    parts = sum(split[c] for c in tl.COMPONENTS)
    assert all(split[c] > 0 for c in tl.COMPONENTS)
    assert parts <= split["total"] and split["total"] - parts < 0.05 * split["total"] + 2e-3
    reference = autoregressive(
        target,
        request["ids"],
        max_new_tokens=12,
        eos_token_id=[],
        target_inputs={"pixel_values": request["pixel_values"]},
    )
    assert split["tokens"] == reference.output_ids  # the split path computes the same generation


def test_component_table_shares():
    rows = [
        {"request": f"r{n}", "n_images": n, "repeat": 0, "component": c, "seconds": s}
        for n in (1, 2)
        for c, s in zip(tl.COMPONENTS + ["total"], (1.0, 1.0, 2.0, 4.0))
    ]
    table = tl.component_table(pd.DataFrame(rows))
    assert table.loc[1, "decode share"] == pytest.approx(0.5)
    assert table.filter(like="share").sum(axis=1).tolist() == pytest.approx([1.0, 1.0])


def test_batched_draft_cost_rows_and_ratio(tiny):
    target, draft, processor, requests = tiny
    captioner = lambda images: ["a red square"] * len(images)  # noqa: E731
    frame = pd.DataFrame(
        tl.decode_step_times(
            target, draft, processor.tokenizer, requests[:1], (1, 2, 4), repeats=2, captioner=captioner, warmup=1
        )
    )
    assert len(frame) == 2 * 4 and (frame.seconds > 0).all() and (frame.load >= 0).all()
    assert set(frame[frame.model == "draft"].m) == {1, 2, 4}
    table = tl.batch_cost_table(frame)
    assert table.loc[1, "T_q(m) / T_q(1)"] == 1.0
    assert table.loc[4, "rows"] == "M,T,C,P"
    assert tl.measured_ratio(frame) == pytest.approx(table.loc[1, "T_q(m) / T_p"])


def test_caption_vs_prefill_rows(tiny):
    target, _, _, requests = tiny
    rows = tl.caption_vs_prefill(target, lambda images: ["x"] * len(images), requests, repeats=1, name="stub")
    table = tl.caption_table(pd.DataFrame(rows))
    assert list(table.columns) == [1, 2] and "caption (stub)" in table.index
    assert (table.loc["caption / prefill"] >= 0).all()


def test_paper_caption_table_and_gpu_reference():
    paper = tl.paper_caption_table()
    assert paper.loc["LLaVA-1.5 7B", 5] == pytest.approx(0.540)
    assert paper.loc["BLIP / prefill", 1] == pytest.approx(0.054 / 0.112)
    grid = pd.DataFrame(
        [
            {"model": m, "device": "gpu", "B": b, "S": 128, "gamma": 1, "seconds": s}
            for m, b, s in [("llava-1.5-7b", 1, 0.04), ("draft-68m", 1, 0.004), ("draft-68m", 4, 0.005)]
        ]
    )
    ref = tl.gpu_reference(grid)
    assert ref.iloc[0]["T_q/T_p (draft-68m/llava-1.5-7b)"] == pytest.approx(0.1)
    assert ref.iloc[0]["draft-68m T(B=4)/T(B=1)"] == pytest.approx(1.25)


def test_the_papers_ratio_and_tau_follow_the_pair():
    """Notebooks 12 and 14 quote Table 6's T_q/T_p for the pair's sizes and the pair's own table's τ."""
    from specdec.tabed import tables as tb

    ratios = {p: tb.pair_latency_ratio("paper", p) for p in ("llava-7b", "llava-13b", "llava-7b-160m", "llava-next-7b")}
    assert ratios == {"llava-7b": 0.063, "llava-13b": 0.042, "llava-7b-160m": 0.206, "llava-next-7b": 0.063}
    assert tb.pair_latency_ratio("tiny") == 0.063 and tb.pair_sizes("paper", "llava-next-7b-160m") == ("160M", "7B")
    methods = ["M", "T", "MT", "MT*"]
    table10 = tl.paper_tau(methods)
    table11 = tl.paper_tau(methods, tb.pair_setting("paper", "llava-next-7b"))
    assert table10.notna().all() and table11.notna().all() and not table10.equals(table11)
    assert tl.paper_tau(methods, tb.pair_setting("paper", "llava-13b")).isna().all()  # the paper has no table for it


def test_eq1_tau_counts_only_the_runs_of_the_current_weights(tmp_path):
    """Rows of an older draft stored beside the current ones (same requests, another ``model_weights``) never
    enter notebook 14's τ; with no run of the current weights it falls back to its own subset."""

    def row(method, turn, weights, tau, request):
        return dict(
            method=method,
            gamma=5,
            window="ALL" if method.endswith("*") else "-",
            criterion="kl",
            captioner="-",
            model_weights=weights,
            row=request,
            group="benchmark",
            turn=turn,
            block_efficiency=tau,
        )

    rows = [row(m, t, "new", 3.0 + (m == "M") + t, f"r{t}") for m in ("M", "T") for t in (1, 2)]
    rows += [row(m, t, "old", 9.0, f"r{t}") for m in ("M", "T") for t in (1, 2)]  # a stale draft's rows
    frame = pd.DataFrame(rows)

    class Table:
        path = tmp_path / "tabed_runs.csv"

        def frame(self):
            return frame

    fallback = pd.DataFrame([row(m, 1, "x", 1.5, "f") for m in ("M", "T")])
    tau, source = tl.block_efficiencies(Table(), ["M", "T"], {"M": "new", "T": "new"}, lambda: fallback)
    assert tau.to_dict() == {"M": 5.5, "T": 4.5} and source.startswith("tabed_runs.csv")
    # no stored run of these weights (retrained): the notebook's own subset
    tau, source = tl.block_efficiencies(Table(), ["M", "T"], {"M": "retrained", "T": "retrained"}, lambda: fallback)
    assert tau.to_dict() == {"M": 1.5, "T": 1.5} and source.startswith("own subset")
