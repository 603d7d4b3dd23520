"""TABED benchmarks: drafting methods x scenarios x turns, tables beside the paper's, and the findings T1-T5.

``run(store, ...)`` decodes every suite row with every method (greedy, γ = 5, as in the paper) on one
LLaVA target / draft pair and stores one tidy row per (method, settings, request): block efficiency τ
(new tokens per target call, bonus token included), acceptance rate, whether the output equals the
target's own greedy output (it must: ``lossless``) and the per-block weights of adaptive ensembles.
``block_table`` averages τ per scenario and turn in the layout of the paper's Tables 1 / 10-14;
``paper_table`` reads the paper's numbers (``tabed_block_efficiency.csv``); ``findings`` decides T1-T5
(``specdec.verdict.Verdict``: estimate, 95% bootstrap interval over requests, n, status).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import torch

from specdec import results
from specdec.engine import autoregressive, generate
from specdec.hub import DatasetNotAvailableError, load_dataset
from specdec.tabed import drafting as tabed
from specdec.tabed import scenes
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, Verdict, decide, paired_difference
from specdec.zoo import models

GROUP = {
    "describe": "benchmark",
    "docvqa": "benchmark",
    "pope": "benchmark",
    "mmvet": "benchmark",
    "iedit": "benchmark",
    "magicbrush": "benchmark",
    "spot": "benchmark",
    "psv": "ood",
    "vist": "ood",
    "nq": "nlp",
    "gsm8k": "nlp",
}
TABLE1 = ["M", "T", "MT", "MT*"]
ALL_METHODS = ["M", "T", "C", "P", "MT", "MT*", "MTCP", "MTCP*"]
# every parameter that changes a stored run (walltime depends on the device, the rest does not)
KEY = ["method", "gamma", "window", "criterion", "captioner", "max_new_tokens", "device", "row"]
PAPER_SETTING = dict(draft_type="LLaVA-1.5", draft_size="68M", target="LLaVA-1.5 7B")
# Paper datasets (App. J) for the paper profile, first turns: (id, config, split, question field, image field).
# Loading them needs the local Hugging Face cache (or ``sources``: local copies in the same format).
PAPER_DATASETS = {
    "describe": ("lmms-lab/llava-bench-in-the-wild", None, "train", "question", "image"),
    "docvqa": ("lmms-lab/DocVQA", "DocVQA", "validation", "question", "image"),
    "pope": ("lmms-lab/POPE", None, "test", "question", "image"),
    "mmvet": ("lmms-lab/MMVet", None, "test", "question", "image"),
    "nq": ("nq_open", None, "validation", "question", None),
    "gsm8k": ("gsm8k", "main", "test", "question", None),
}
# Multi-image sets come from the LLaVA-Interleave bench; no loader is built for them (nor for second turns).
PAPER_NOT_BUILT = {
    "iedit": "IEdit",
    "magicbrush": "MagicBrush",
    "spot": "Spot-the-Diff",
    "psv": "PororoSV",
    "vist": "VIST",
}


# ------------------------------------------------------------------------------------------------- models, data
def load_pair(profile: str = "tiny", device: str = "cpu"):
    """``(target, draft, processor)``: tiny ``tabed-target`` / ``tabed-draft``; paper: the ``llava-7b`` pair."""
    if profile == "tiny":
        target_name, draft_name = "tabed-target", "tabed-draft"
    else:
        pair = models.load_profile(profile)["pairs"]["llava-7b"]
        target_name, draft_name = pair["target"], pair["draft"]
    dtype = None if profile == "tiny" else torch.float16
    target, processor = models.load(target_name, kind="llava", device=device, dtype=dtype)
    draft, _ = models.load(draft_name, kind="llava", device=device, dtype=dtype, with_tokenizer=False)
    return target, draft, processor


def load_suite(
    profile: str = "tiny", n_per_scenario: int = 8, seed: int = 0, scenarios=None, sources: dict | None = None
) -> list[dict]:
    """Requests ``{"id", "scenario", "turn", "prompt", "images", ...}``: the synthetic suite (tiny) or, for the
    paper profile, the first turns of the App. J datasets in ``PAPER_DATASETS`` with the App. I chat prompt
    (``DatasetNotAvailableError`` naming the id when one is not cached; ``sources``: ``{scenario: local path
    or id}`` to load instead). Scenarios without a paper loader (``PAPER_NOT_BUILT``) raise when asked for
    by name and are skipped with a warning otherwise."""
    if profile == "tiny":
        return scenes.scenario_suite("test", n_per_scenario, seed=seed, scenarios=scenarios)

    names = (
        [s for s, t in scenes.SCENARIOS if t == 1]
        if scenarios is None
        else list(dict.fromkeys(x if isinstance(x, str) else x[0] for x in scenarios))
    )
    missing = [s for s in names if s in PAPER_NOT_BUILT]
    if missing and scenarios is not None:
        raise DatasetNotAvailableError(
            f"no paper-profile loader is built for {[PAPER_NOT_BUILT[s] for s in missing]} (LLaVA-Interleave bench, "
            "multi-image): prepare rows with the fields of scenes.scenario_suite on a machine that has them and "
            "pass them to tabed_bench.run(rows=...)"
        )
    if missing:
        import warnings

        warnings.warn(
            f"paper profile: skipping {[PAPER_NOT_BUILT[s] for s in missing]} (no loader built)", stacklevel=2
        )
    rows = []
    for scenario in (s for s in names if s not in PAPER_NOT_BUILT):
        rows += paper_rows(scenario, n_per_scenario, (sources or {}).get(scenario))
    return rows


def paper_rows(scenario: str, n: int, source: str | None = None) -> list[dict]:
    """First-turn requests of one paper dataset: ``USER: <image>\\n<question> ASSISTANT:`` (text-only sets
    without the image)."""
    dataset_id, config, split, question, image = PAPER_DATASETS[scenario]
    data = load_dataset(source or dataset_id, None if source else config, split, n)
    rows = []
    for i, example in enumerate(data):
        images = [] if image is None else [example[image].convert("RGB")]
        text = example[question].strip()
        user = f"{scenes.IMAGE_PLACEHOLDER}\n{text}" if images else text
        rows.append(
            {
                "id": f"{scenario}-t1-paper-{i:05d}",
                "scenario": scenario,
                "turn": 1,
                "split": split,
                "images": images,
                "prompt": scenes.chat_prompt([(user, None)]),
                "answer": "",
                "caption": None,
            }
        )
    return rows


def encode(processor, prompt: str, images) -> tuple[torch.Tensor, dict]:
    """``(prompt_ids [L], pixel inputs)`` of one request through the model's processor.

    ``<image>`` placeholders must match the images one to one (else a ``ValueError`` naming the fix); images
    may be PIL images, paths or bytes (``tabed.load_images``). ``<s>`` is put in front if the processor does
    not add it.
    """
    images = tabed.load_images(images or [])
    n_placeholders = prompt.count(scenes.IMAGE_PLACEHOLDER)
    if n_placeholders != len(images):
        raise ValueError(
            f"the prompt has {n_placeholders} {scenes.IMAGE_PLACEHOLDER} placeholders but "
            f"{len(images)} images were given: put one {scenes.IMAGE_PLACEHOLDER} in the prompt per image"
        )
    tokenizer = processor.tokenizer
    image_token = getattr(processor, "image_token", scenes.IMAGE_PLACEHOLDER)
    text = prompt.replace(scenes.IMAGE_PLACEHOLDER, image_token)
    if images:
        out = processor(text=text, images=images, return_tensors="pt")
        inputs = {"pixel_values": out["pixel_values"]}
    else:
        out = processor.tokenizer(text, return_tensors="pt")
        inputs = {}
    ids = out["input_ids"][0]
    if tokenizer.bos_token_id is not None and (len(ids) == 0 or int(ids[0]) != tokenizer.bos_token_id):
        ids = torch.cat([torch.tensor([tokenizer.bos_token_id]), ids])
    return ids, inputs


def make_captioner(kind: str, draft, processor):
    """``"draft"`` (the draft LLaVA describes each image; memoised per image, since every caption method of a
    request asks for the same captions), ``"oracle"`` (the generator's ground-truth captions, tiny only) or
    ``"blip"`` (``tabed.hf_captioner``: BLIP from the local Hugging Face cache, paper profile)."""
    if kind == "oracle":
        return scenes.render_caption
    if kind == "blip":
        return tabed.hf_captioner(device=str(draft.device))
    if kind != "draft":
        raise ValueError(f"captioner must be 'draft', 'oracle' or 'blip', got {kind!r}")
    to_pixels = lambda images: processor.image_processor(images, return_tensors="pt")["pixel_values"]  # noqa: E731
    caption_one = tabed.draft_captioner(draft, processor.tokenizer, to_pixels)

    captions: dict[str, str] = {}  # image_key -> caption

    def caption(images) -> list[str]:
        if torch.is_tensor(images):
            return caption_one(images)
        for image in images:
            key = scenes.image_key(image)
            if key not in captions:
                captions[key] = caption_one(to_pixels([image]))[0]
        return [captions[scenes.image_key(image)] for image in images]

    return caption


# ------------------------------------------------------------------------------------------------- running
def run(
    store,
    target,
    draft,
    processor,
    rows,
    methods,
    *,
    gamma: int = 5,
    max_new_tokens: int = 128,
    window: int | None = None,
    criterion: str = "kl",
    captioner: str = "draft",
    desc: str = "",
) -> None:
    """Decode every request of ``rows`` with every method; one stored row per (method, settings, request).

    The target's plain greedy output of each request is computed once (stored as method ``AR``) and every
    speculative output is compared with it (column ``lossless``). ``window`` (h, ``None`` = ALL) and
    ``criterion`` configure the adaptive ensembles (``criterion`` of MTCP* is its divergence, "kl" or "tvd").
    """
    if target.device.type == "cpu":
        torch.set_num_threads(1)
    store.provenance.update(results.model_provenance(target=target, draft=draft))
    tokenizer = processor.tokenizer
    eos = tokenizer.eos_token_id
    requests = {r["id"]: r for r in rows}
    encoded = {rid: encode(processor, r["prompt"], r["images"]) for rid, r in requests.items()}
    caption = make_captioner(captioner, draft, processor) if any("C" in tabed.ENSEMBLES[m] for m in methods) else None
    w_key = "ALL" if window is None else window
    setting = dict(max_new_tokens=max_new_tokens, device=target.device.type)

    def reference(rid):
        key = dict(method="AR", gamma=0, window="-", criterion="-", captioner="-", **setting, row=rid)
        if not store.done(**key):
            ids, inputs = encoded[rid]
            res = autoregressive(target, ids, max_new_tokens=max_new_tokens, eos_token_id=eos, target_inputs=inputs)
            store.append([{**key, **_row(requests[rid], res, res.output_ids), "weights": ""}])
        return json.loads(store.get(**key)["output"])

    def compute(method, gamma, window, criterion, captioner, row, **_):
        ids, inputs = encoded[row]
        request = requests[row]
        options = {}
        if method.endswith("*"):
            options["window"] = None if window == "ALL" else int(window)
        if method == "MTCP*":
            options["divergence"] = criterion
        elif method == "MT*":
            options["criterion"] = criterion
        drafter = tabed.make_drafter(draft, method, tokenizer, captioner=caption, **options)
        draft_inputs = {**inputs, "images": request["images"]} if inputs else {}
        res = generate(
            target,
            ids,
            drafter,
            gamma=gamma,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            target_inputs=inputs,
            draft_inputs=draft_inputs,
        )
        out = _row(request, res, reference(row))
        out["weights"] = json.dumps([[round(w, 3) for w in ws] for ws in getattr(drafter, "weight_log", [])])
        out["active"] = "".join(drafter.make_rows.active)
        return out

    keys = [run_key(m, gamma, w_key, criterion, captioner, setting, rid) for rid in requests for m in methods]
    store.run(keys, compute, desc=desc or "tabed")


def run_key(method: str, gamma: int, window, criterion: str, captioner: str, setting: dict, row: str) -> dict:
    """The stored key of one run: settings a method does not use are ``"-"`` (so they never split its rows)."""
    adaptive = method.endswith("*")
    return dict(
        method=method,
        gamma=gamma,
        window=window if adaptive else "-",
        criterion=criterion if adaptive else "-",
        captioner=captioner if "C" in tabed.ENSEMBLES[method] else "-",
        **setting,
        row=row,
    )


def _row(request: dict, res, reference_ids) -> dict:
    return dict(
        scenario=request["scenario"],
        turn=request["turn"],
        group=GROUP[request["scenario"]],
        n_images=len(request["images"]),
        new_tokens=res.new_tokens,
        target_calls=res.target_calls,
        block_efficiency=res.block_efficiency,
        acceptance_rate=res.acceptance_rate,
        lossless=res.output_ids == list(reference_ids),
        seconds=res.total_time,
        accepted=json.dumps(res.accepted_per_block),
        output=json.dumps(res.output_ids),
        active="",
    )


def store(profile: str, table: str = "tabed_runs"):
    return results.ResultStore(profile, table, KEY)


# ------------------------------------------------------------------------------------------------- tables
def runs(frame: pd.DataFrame, *, gamma: int = 5, window="ALL", criterion: str = "kl", captioner: str = "draft"):
    """The rows of one setting (non-adaptive methods ignore window / criterion, non-caption ones the captioner)."""
    frame = frame[frame.method != "AR"]
    adaptive = frame.method.str.endswith("*")
    caption = frame.method.str.contains("C")
    keep = frame.gamma.astype(int) == gamma
    keep &= ~adaptive | ((frame.window.astype(str) == str(window)) & (frame.criterion == criterion))
    keep &= ~caption | (frame.captioner == captioner)
    return frame[keep]


def block_table(frame: pd.DataFrame, methods) -> pd.DataFrame:
    """Mean τ per (turn, dataset) x method, with the paper's dataset names and an ``Avg.`` of the benchmark
    datasets per turn (as in the paper's Table 10)."""
    frame = frame[frame.method.isin(methods)].copy()
    frame["dataset"] = frame.scenario.map(scenes.PAPER_NAME)
    table = frame.pivot_table(
        index=["turn", "group", "dataset"], columns="method", values="block_efficiency", aggfunc="mean"
    )[list(methods)]
    averages = []
    for turn in sorted(frame.turn.unique()):
        bench = table.loc[(turn, "benchmark")] if (turn, "benchmark") in table.index.droplevel(2) else None
        if bench is not None:
            averages.append(
                pd.DataFrame([bench.mean()], index=pd.MultiIndex.from_tuples([(turn, "benchmark", "Avg.")]))
            )
    table = pd.concat([table, *averages]).sort_index(level=[0, 1], sort_remaining=False)
    order = {name: i for i, name in enumerate(list(scenes.PAPER_NAME.values()) + ["Avg."])}
    return table.iloc[
        sorted(
            range(len(table)),
            key=lambda i: (table.index[i][0], table.index[i][1] != "benchmark", order[table.index[i][2]]),
        )
    ]


def paper_table(methods, **setting) -> pd.DataFrame:
    """The paper's block efficiencies (Table 10 by default: LLaVA-1.5 68M draft, LLaVA-1.5 7B target) in the
    layout of ``block_table``."""
    paper = results.paper_numbers("tabed_block_efficiency")
    setting = {**PAPER_SETTING, **setting}
    for k, v in setting.items():
        paper = paper[paper[k] == v]
    paper = paper[paper.method.isin(methods)].copy()
    paper["turn"] = paper.turn.map({"first": 1, "second": 2})
    paper["group"] = paper.dataset_group
    paper["block_efficiency"] = paper.block_efficiency.astype(float)
    table = paper.pivot_table(index=["turn", "group", "dataset"], columns="method", values="block_efficiency")
    return table[list(methods)]


def paper_group_table(methods, **setting) -> pd.DataFrame:
    """The paper's group means in the layout of ``group_means`` (Table 2 = the Table 10 averages: benchmark
    ``Avg.`` per turn, OOD = mean of PSV and VIST, NLP = mean of NQ and GSM8K)."""
    paper = paper_table(methods, **setting)
    out = {}
    for turn in (1, 2):
        if (turn, "benchmark", "Avg.") in paper.index:
            out[f"benchmark t{turn}"] = paper.loc[(turn, "benchmark", "Avg.")]
    for group in ("nlp", "ood"):
        rows = [i for i in paper.index if i[1] == group]
        if rows:
            out[group] = paper.loc[rows].mean()
    return pd.DataFrame(out).reindex(methods)


def paper_window_table(**setting) -> pd.DataFrame:
    """The paper's Table 3 (MT*, first turn): τ per dataset (rows) and window h (columns)."""
    paper = results.paper_numbers("tabed_table3_window")
    paper = paper[paper.draft_size == setting.get("draft_size", PAPER_SETTING["draft_size"])]
    paper = paper.assign(block_efficiency=paper.block_efficiency.astype(float))
    return paper.pivot_table(index="dataset", columns="h", values="block_efficiency")


def side_by_side(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One column pair per method: ``ours`` and ``paper``."""
    both = pd.concat({"ours": ours, "paper": paper.reindex(ours.index)}, axis=1)
    return both.swaplevel(0, 1, axis=1)[[(m, s) for m in ours.columns for s in ("ours", "paper")]].round(2)


def group_means(frame: pd.DataFrame, methods) -> pd.DataFrame:
    """Mean τ per method over the groups of the paper's Table 2: benchmark first / second turn, OOD, NLP."""
    frame = frame[frame.method.isin(methods)]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp")
    return (
        frame.assign(where=label)
        .pivot_table(index="method", columns="where", values="block_efficiency", aggfunc="mean")
        .reindex(methods)
    )


# ------------------------------------------------------------------------------------------------- findings
# T1-T5 as ``Verdict``s on the tidy runs frame (``runs(...)``: one row per method x request). Every method decodes
# the same requests, so methods are compared *paired by request* and the bootstrap resamples requests (``row``),
# never tokens; cell-level statistics (ranks, window spreads) resample requests within their cell.
PAPER_TABLE1 = "Table 10"  # LLaVA-1.5 68M draft, LLaVA-1.5 7B target (``PAPER_SETTING``)
T2_METHODS = ("M", "T", "MT", "MT*")
T5_GROUPS = ("benchmark t1", "ood")  # the paper's Table 3: first turns of the benchmark and OOD datasets
MIN_REQUESTS = 3  # fewer paired requests than this: inconclusive, whatever the interval says


def _cells(table: pd.DataFrame) -> pd.DataFrame:
    return table[[d != "Avg." for d in table.index.get_level_values(2)]]


def rank_counts(table: pd.DataFrame, method: str, tol: float = 0.0) -> tuple[int, int]:
    """``(cells where method is best or second best, cells)``: at most one method strictly better (by > tol)."""
    cells = _cells(table)
    better = (cells.sub(cells[method], axis=0) > tol).sum(axis=1)
    return int((better <= 1).sum()), len(cells)


def paper_scenarios(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the paper's scenarios: every cell but the text-only NQ / GSM8K *first* turns (the paper has
    them as second turns only; without an image every drafting method drafts the same tokens there)."""
    return frame[~((frame.group == "nlp") & (frame.turn.astype(int) == 1))]


def _wide(frame: pd.DataFrame, column: str = "method") -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(τ per request x method (or window), request info)``."""
    wide = frame.pivot_table(index="row", columns=column, values="block_efficiency", aggfunc="mean")
    wide.columns = [str(c) for c in wide.columns]
    info = frame.drop_duplicates("row").set_index("row")[["scenario", "turn", "group"]]
    info = info.assign(turn=info.turn.astype(int))
    info["cell"] = info.group.where(info.group != "benchmark", "benchmark t" + info.turn.astype(str))
    return wide, info.reindex(wide.index)


def _paired(frame: pd.DataFrame, a: str, b: str, n_boot: int, seed: int):
    """``(estimate, low, high, n)`` of the mean paired difference τ(a) − τ(b) over the requests run with both."""
    wide, _ = _wide(frame[frame.method.isin([a, b])])
    if a not in wide or b not in wide:
        return float("nan"), float("nan"), float("nan"), 0
    both = wide[[a, b]].dropna()
    est, low, high = paired_difference(both[a], both[b], n_boot=n_boot, seed=seed)
    return est, low, high, len(both)


def _cell_bootstrap(cells: list[np.ndarray], statistic, *, n_boot: int, seed: int) -> tuple[float, float, float]:
    """``statistic(list of per-cell arrays)`` and its 95% interval over resamples of the requests (rows of each
    array) *within* their cell, all columns of a row together (so methods or windows stay paired)."""
    if not cells:
        return float("nan"), float("nan"), float("nan")
    estimate = float(statistic(cells))
    rng = np.random.default_rng(seed)
    draws = [statistic([c[rng.integers(0, len(c), len(c))] for c in cells]) for _ in range(n_boot)]
    low, high = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
    return estimate, float(low), float(high)


def _verdict(name, claim, est, low, high, n, *, threshold=0.0, greater=True, paper="", detail="", min_n=MIN_REQUESTS):
    status = decide(low, high, threshold, greater)
    if n < min_n:
        status = INCONCLUSIVE
        detail = f"{detail} Only {n} request(s): too few to decide (at least {min_n})."
    return Verdict(name, claim, float(est), float(low), float(high), int(n), status, paper, detail.strip())


def _all_of(name: str, claim: str, parts: list[tuple[Verdict, float, bool]], n: int, paper: str = "") -> Verdict:
    """A finding made of parts ``(verdict, threshold, greater)``: it holds if every part holds, does not hold if
    one part does not, else inconclusive. Estimate and interval are the smallest margin of a part over its
    threshold (its estimate − threshold, or threshold − estimate when the claim is 'below'), so > 0 is 'holds'."""

    def margin(v, t, g):
        return (v.estimate - t, v.low - t, v.high - t) if g else (t - v.estimate, t - v.high, t - v.low)

    margins = [margin(*p) for p in parts]
    statuses = [p[0].status for p in parts]
    status = FAILS if FAILS in statuses else HOLDS if all(s == HOLDS for s in statuses) else INCONCLUSIVE
    detail = "Parts: " + "; ".join(f"{p[0].name} {p[0].status}" for p in parts) + "."
    est, low, high = (min(m[i] for m in margins) for i in range(3))
    return Verdict(name, claim, est, low, high, n, status, paper, detail)


def _paper_cells(methods) -> pd.DataFrame:
    table = paper_table(list(methods))
    table = table[[d != "Avg." for d in table.index.get_level_values(2)]]
    return table[[not (g == "nlp" and t == 1) for t, g, _ in table.index]]


def paper_top_two_share(methods=T2_METHODS, method: str = "MT*") -> float:
    """The share of the paper's Table 10 cells (benchmark and OOD first turns, benchmark and NLP second turns)
    where ``method`` is best or second best among ``methods``."""
    top2, n = rank_counts(_paper_cells(methods), method)
    return top2 / n


def paper_max_shortfall(methods=T2_METHODS, method: str = "MT*") -> float:
    """The largest relative gap ``(best − method) / best`` in any Table 10 cell: how far behind the best the
    paper still calls MT* 'close to the best' (1.7%, Spot first turn)."""
    cells = _paper_cells(methods)
    return float(((cells.max(axis=1) - cells[method]) / cells.max(axis=1)).max())


def paper_window_tolerance() -> float:
    """The paper's Table 3 spread: max over h ∈ {1, 4, 16} and the groups (benchmark, OOD) of
    ``|τ(h) − τ(ALL)| / τ(ALL)`` on the group means (0.99%: OOD, h = 1 and h = 4)."""
    table = paper_window_table()
    ood = [d for d in table.index if d in ("PSV", "VIST")]
    groups = pd.DataFrame({"benchmark": table.drop(index=ood).mean(), "ood": table.loc[ood].mean()}).T
    return float(((groups.drop(columns="ALL").sub(groups["ALL"], axis=0)).abs().div(groups["ALL"], axis=0)).max().max())


def verdict_t1_parts(frame: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> list[Verdict]:
    """T1a: M − T > 0 on first-turn benchmark requests (single- and multi-image); T1b: T − M > 0 on second
    turns (benchmark and text-only NLP follow-ups); T1c: T − M > 0 on the OOD five-image stories (PSV, VIST).
    Each is the mean paired difference of τ over the requests of its cells."""
    frame = paper_scenarios(frame)
    turn = frame.turn.astype(int)
    parts = [
        ("T1a", "M drafts better than T on first-turn benchmark tasks (τ(M) − τ(T) > 0)", "M", "T",
         (frame.group == "benchmark") & (turn == 1), [(1, "benchmark")]),
        ("T1b", "T drafts better than M on second turns (τ(T) − τ(M) > 0)", "T", "M", turn == 2,
         [(2, "benchmark"), (2, "nlp")]),
        ("T1c", "T drafts better than M on the OOD multi-image stories PSV, VIST (τ(T) − τ(M) > 0)", "T", "M",
         frame.group == "ood", [(1, "ood")]),
    ]  # fmt: skip
    paper = _paper_cells(["M", "T"])
    out = []
    for name, claim, a, b, where, paper_cells in parts:
        est, low, high, n = _paired(frame[where], a, b, n_boot, seed)
        rows = paper[[(t, g) in paper_cells for t, g, _ in paper.index]]
        p = float((rows[a] - rows[b]).mean())
        detail = "" if n else "No such requests in this frame: not tested."
        out.append(
            _verdict(name, claim, est, low, high, n, paper=f"{p:+.2f} τ ({PAPER_TABLE1}, cell mean)", detail=detail)
        )
    return out


def verdict_t1(
    frame: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0, parts: list[Verdict] | None = None
) -> Verdict:
    """T1 (scenario-specific fluctuation): T1a, T1b and T1c all hold (``verdict_t1_parts``)."""
    parts = parts or verdict_t1_parts(frame, n_boot=n_boot, seed=seed)
    return _all_of(
        "T1",
        "neither drafting method wins everywhere: M leads on first-turn benchmark tasks, T on second turns and "
        "OOD (value: the smallest of the three differences)",
        [(p, 0.0, True) for p in parts],
        sum(p.n for p in parts),
        paper=", ".join(f"{p.name} {p.paper.split()[0]}" for p in parts),
    )


def verdict_t2(
    frame: pd.DataFrame, *, min_share: float | None = None, methods=T2_METHODS, n_boot: int = 2000, seed: int = 0
) -> Verdict:
    """T2 (MT* is robust): the share of scenario cells (scenario x turn of the paper's scenarios) where MT* is
    best or second best among ``methods`` by mean τ (at most one method strictly higher), with the interval from
    resampling requests within each cell. Holds if the lower bound reaches ``min_share`` (default: the share in
    the paper's Table 10, which is 1.0: 'best or second best across all scenarios')."""
    paper_share = paper_top_two_share(methods)
    min_share = paper_share if min_share is None else min_share
    frame = paper_scenarios(frame[frame.method.isin(methods)])
    wide, info = _wide(frame)
    methods = [m for m in methods if m in wide]
    wide = wide[methods].dropna()
    by_cell = info.loc[wide.index].groupby(["scenario", "turn"]).groups if len(wide) else {}
    cells = [wide.loc[by_cell[c]].to_numpy() for c in sorted(by_cell)]
    k = methods.index("MT*") if "MT*" in methods else None

    def share(cs):
        return float(np.mean([((c.mean(0) > c.mean(0)[k]).sum() <= 1) for c in cs]))

    est, low, high = _cell_bootstrap(cells, share, n_boot=n_boot, seed=seed) if k is not None else (np.nan,) * 3
    return _verdict(
        "T2",
        f"MT* is best or second best among {', '.join(methods)} in at least {min_share:.0%} of scenario cells",
        est,
        low,
        high,
        len(wide),
        threshold=min_share - 1e-9,  # 'reaches': low ≥ min_share holds, high < min_share does not
        paper=f"{paper_share:.0%} of the {len(_paper_cells(methods))} cells of {PAPER_TABLE1}",
        detail=f"{len(cells)} cells (scenario x turn; NLP first turns left out: every method ties there).",
    )


def verdict_t3_parts(
    frame: pd.DataFrame, *, close: float | None = None, n_boot: int = 2000, seed: int = 0
) -> list[Verdict]:
    """On the OOD requests (PSV, VIST). T3a: τ(MT*) − τ(MT) > 0 (the paper: 'MT* significantly outperforms MT'
    there); T3b: MT*'s relative gap to the best single method (M or T, the better one per OOD scenario, chosen
    again in every resample), ``(τ(MT*) − τ(best)) / τ(best)`` averaged over the OOD scenarios, is above
    ``−close`` (default: ``paper_max_shortfall()``, the largest gap the paper still calls 'close to the best')."""
    close = paper_max_shortfall() if close is None else close
    ood = frame[frame.group == "ood"]
    est, low, high, n = _paired(ood, "MT*", "MT", n_boot, seed)
    paper = _paper_cells(["M", "T", "MT", "MT*"])
    paper_ood = paper[[g == "ood" for _, g, _ in paper.index]]
    none = "" if n else "No OOD requests in this frame: not tested."
    t3a = _verdict(
        "T3a",
        "on OOD, the adaptive MT* drafts better than the static MT (τ(MT*) − τ(MT) > 0)",
        est,
        low,
        high,
        n,
        paper=f"{(paper_ood['MT*'] - paper_ood['MT']).mean():+.2f} τ ({PAPER_TABLE1})",
        detail=none,
    )
    wide, info = _wide(ood[ood.method.isin(["M", "T", "MT*"])])
    wide = wide.reindex(columns=["M", "T", "MT*"]).dropna()
    groups = info.loc[wide.index].groupby("scenario").groups if len(wide) else {}
    cells = [wide.loc[groups[s]].to_numpy() for s in sorted(groups)]

    def gap(cs):
        means = [c.mean(0) for c in cs]
        return float(np.mean([(m[2] - max(m[0], m[1])) / max(m[0], m[1]) for m in means]))

    est, low, high = _cell_bootstrap(cells, gap, n_boot=n_boot, seed=seed)
    best = paper_ood[["M", "T"]].max(axis=1)
    t3b = _verdict(
        "T3b",
        f"on OOD, MT* is within {close:.1%} of the best single method (relative gap > −{close:.3f})",
        est,
        low,
        high,
        len(wide),
        threshold=-close,
        paper=f"{((paper_ood['MT*'] - best) / best).mean():+.1%} ({PAPER_TABLE1}; T is the best single there)",
        detail=none,
    )
    return [t3a, t3b]


def verdict_t3(frame: pd.DataFrame, *, close: float | None = None, n_boot: int = 2000, seed: int = 0) -> Verdict:
    """T3: T3a and T3b both hold (``verdict_t3_parts``)."""
    close = paper_max_shortfall() if close is None else close
    a, b = verdict_t3_parts(frame, close=close, n_boot=n_boot, seed=seed)
    return _all_of(
        "T3",
        "out of distribution MT* beats the static MT and stays close to the best single method "
        "(value: the smaller margin of T3a, T3b over their thresholds)",
        [(a, 0.0, True), (b, -close, True)],
        a.n,
        paper=f"T3a {a.paper.split()[0]}, T3b {b.paper.split()[0]}",
    )


def verdict_t4(frame: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> Verdict:
    """T4 (more drafting methods help): mean paired τ(MTCP*) − τ(MT*) > 0 over every request of the paper's
    scenarios."""
    frame = paper_scenarios(frame)
    est, low, high, n = _paired(frame, "MTCP*", "MT*", n_boot, seed)
    paper = _paper_cells(["MT*", "MTCP*"])
    return _verdict(
        "T4",
        "adding caption (C) and pooled (P) drafts helps: τ(MTCP*) − τ(MT*) > 0 over all requests",
        est,
        low,
        high,
        n,
        paper=f"{(paper['MTCP*'] - paper['MT*']).mean():+.3f} τ ({PAPER_TABLE1}, cell mean)",
        detail="" if n else "No request run with both MT* and MTCP* in this frame: not tested.",
    )


def verdict_t5(
    frame: pd.DataFrame,
    *,
    tolerance: float | None = None,
    method: str = "MT*",
    groups=T5_GROUPS,
    n_boot: int = 2000,
    seed: int = 0,
) -> Verdict:
    """T5 (the window h barely matters): ``max over groups and h ≠ ALL of |τ(h) − τ(ALL)| / τ(ALL)`` on the group
    means of ``method``, over the requests run at every window in ``frame`` (runs of several windows, e.g.
    ``pd.concat(runs(f, window=h) for h in ...)``), resampling requests within their group. Holds if the upper
    bound is below ``tolerance`` (default: ``paper_window_tolerance()``, the same statistic on Table 3)."""
    tolerance = paper_window_tolerance() if tolerance is None else tolerance
    frame = frame[frame.method == method]
    wide, info = _wide(frame, "window")
    windows = sorted((w for w in wide.columns if w != "ALL"), key=lambda w: (len(w), w))
    detail = ""
    if "ALL" not in wide or not windows:
        wide, cells = wide.iloc[:0], []
        detail = "This frame has no runs at h = ALL and another window: not tested."
    else:
        wide = wide[[*windows, "ALL"]].dropna()
        by_group = info.loc[wide.index].groupby("cell").groups
        cells = [wide.loc[by_group[g]].to_numpy() for g in groups if g in by_group]
        detail = f"h ∈ {{{', '.join(windows)}}} vs ALL in {', '.join(g for g in groups if g in by_group)}."

    def spread(cs):
        return float(max(np.max(np.abs(c.mean(0)[:-1] - c.mean(0)[-1])) / c.mean(0)[-1] for c in cs))

    est, low, high = _cell_bootstrap(cells, spread, n_boot=n_boot, seed=seed)
    n = sum(len(c) for c in cells)
    return _verdict(
        "T5",
        f"the window h barely matters: no h moves the mean τ of {method} by {tolerance:.2%} of τ(ALL) or more",
        est,
        low,
        high,
        n,
        threshold=tolerance,
        greater=False,
        paper=f"{tolerance:.2%} (Table 3, the largest |τ(h) − τ(ALL)| / τ(ALL) of a group mean)",
        detail=detail,
    )


def findings(frame: pd.DataFrame, window_frame: pd.DataFrame | None = None, **bootstrap) -> list[Verdict]:
    """T1a-c, T1, T2, T3a-b, T3, T4, T5 on one setting's runs (``frame``); T5 on ``window_frame`` (runs of
    several windows; default ``frame``, where it is inconclusive unless ``frame`` holds several windows)."""
    t1 = verdict_t1_parts(frame, **bootstrap)
    t3 = verdict_t3_parts(frame, **bootstrap)
    return [
        *t1,
        verdict_t1(frame, parts=t1, **bootstrap),
        verdict_t2(frame, **bootstrap),
        *t3,
        verdict_t3(frame, **bootstrap),
        verdict_t4(frame, **bootstrap),
        verdict_t5(frame if window_frame is None else window_frame, **bootstrap),
    ]


def findings_from_results(profile: str = "tiny", windows=(1, 4, 16, "ALL"), root=None) -> list[Verdict]:
    """``findings`` on the committed ``results/<profile>/tabed_runs.csv`` with the notebooks' default settings
    (γ = 5, h = ALL, criterion KL, the draft as captioner); T5 on the MT* runs at every window in ``windows``.
    ``root``: the results folder (default ``results.RESULTS``; the scoreboard passes ``results.COMMITTED``)."""
    stored = results.ResultStore(profile, "tabed_runs", KEY, root=root).frame()
    frame = runs(stored, gamma=5, window="ALL", criterion="kl", captioner="draft")
    by_window = pd.concat([runs(stored, gamma=5, window=h, criterion="kl", captioner="draft") for h in windows])
    return findings(frame, by_window[by_window.method == "MT*"])


def spread_line(table: pd.DataFrame, what: str) -> str:
    """One sentence on a settings table (rows: groups, columns: the settings compared): the best setting per
    group and how far apart the settings are."""
    spread = (table.max(axis=1) - table.min(axis=1)) / table.mean(axis=1)
    best = table.idxmax(axis=1)
    return (
        f"{what}: best per group "
        + ", ".join(f"{g}: {b}" for g, b in best.items())
        + f"; settings differ by at most {100 * spread.max():.1f}% of τ within a group."
    )


# ------------------------------------------------------------------------------------------------- weights
def weight_series(run_row) -> tuple[list[float], list[bool]]:
    """Per generated token of one stored run: the weight of the multimodal row ``w_M / (w_M + w_T)`` in force
    when it was drafted, and whether it was an accepted draft token (else the target's correction / bonus).

    Static methods: M → 1, T → 0, MT → 0.5; adaptive ones read the per-block weights they logged."""
    accepted = json.loads(run_row["accepted"])
    logged = json.loads(run_row["weights"]) if isinstance(run_row["weights"], str) and run_row["weights"] else []
    fixed = {"M": 1.0, "T": 0.0}.get(run_row["method"], 0.5)
    n_tokens = int(run_row["new_tokens"])
    weights, from_draft = [], []
    for b, n_acc in enumerate(accepted):
        w = logged[b][0] / (logged[b][0] + logged[b][1]) if b < len(logged) else fixed
        weights += [w] * (n_acc + 1)
        from_draft += [True] * n_acc + [False]
    while len(weights) < n_tokens:  # the last call may have had no room for a draft (max_new_tokens)
        weights.append(weights[-1] if weights else fixed)
        from_draft.append(False)
    return weights[:n_tokens], from_draft[:n_tokens]


def mean_weight_table(frame: pd.DataFrame, method: str = "MT*") -> pd.DataFrame:
    """Mean weight of the multimodal row over the blocks of ``method``'s runs, per scenario group and turn."""
    frame = frame[frame.method == method]
    means = [sum(w[0] for w in json.loads(ws)) / len(json.loads(ws)) for ws in frame.weights]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp t" + frame.turn.astype(str))
    return frame.assign(w_M=means, where=label).groupby("where").w_M.agg(["mean", "min", "max", "count"])


# ------------------------------------------------------------------------------------------------- re-checking
def recompute(keys: list[dict], *, profile: str = "tiny", n_per_scenario: int = 6):
    """Decode the stored runs of ``keys`` (rows of ``KEY`` columns, e.g. a sample of the committed table) again,
    into a temporary store, and return the fresh rows as a DataFrame in the order of ``keys``.

    The tests run this in a subprocess with another CPU vector width (``ATEN_CPU_CAPABILITY``,
    ``MKL_ENABLE_INSTRUCTIONS``) and demand the committed rows back: a result that depends on the machine's
    float rounding, or on code changed since the table was written, fails there instead of in nbval on CI."""
    import tempfile

    target, draft, processor = load_pair(profile)
    requests = {r["id"]: r for r in load_suite(profile, n_per_scenario, seed=0)}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = results.ResultStore(profile, "recomputed", KEY, root=pathlib.Path(tmp))
        settings = {}
        for key in keys:
            setting = (
                int(key["gamma"]),
                str(key["window"]),
                str(key["criterion"]),
                str(key["captioner"]),
                int(key["max_new_tokens"]),
            )
            settings.setdefault(setting, []).append(key)
        for (gamma, window, criterion, captioner, max_new_tokens), group in settings.items():
            for method in dict.fromkeys(k["method"] for k in group):
                rows = [requests[k["row"]] for k in group if k["method"] == method]
                run(
                    fresh,
                    target,
                    draft,
                    processor,
                    rows,
                    [method],
                    gamma=gamma,
                    max_new_tokens=max_new_tokens,
                    window=None if window in ("ALL", "-") else int(window),
                    criterion=criterion if criterion != "-" else "kl",
                    captioner=captioner if captioner != "-" else "draft",
                )
        frame = fresh.frame()
    frame = frame[frame.method != "AR"].astype({c: str for c in KEY})
    order = pd.DataFrame([{c: str(k[c]) for c in KEY} for k in keys])
    return order.merge(frame, on=KEY, how="left")
