"""TABED latency: caption time vs the target's prefill (Table 4), where generation time goes (Fig. 9), the cost
of batched drafting (Remark 3) and the expected walltime speedup per method (Eq. (1)).

Conventions. A *request* is ``{"id", "n_images", "ids" [L], "pixel_values" [n, 3, H, W], "images"}``
(``encode_requests``). Every timing is wall time (``time.perf_counter``, synchronised on CUDA) of one call,
repeated ``repeats`` times with the compared calls *interleaved* inside one loop (so machine noise hits them
alike); tables report medians over repeats and requests. ``T_q(m)`` is one draft decode step that feeds one
new token to ``m`` drafting rows at once (the rows of ``tabed.DraftingRows``, one left-padded batch);
``T_p`` is one target decode step at batch 1 on the same request. Eq. (1): ``τ / (γ · T_q/T_p + 1)``.
"""

from __future__ import annotations

import os

import pandas as pd
import torch
from tqdm.auto import tqdm

from specdec import bench, results, zoo
from specdec.bench import timed
from specdec.cache import CachedLM
from specdec.engine import now
from specdec.tabed import algorithm as tabed
from specdec.tabed import tables
from specdec.validate import reads_frame
from specdec.vlm.llava import visual_features
from specdec.vlm.prompts import encode
from specdec.zoo.models import load_profile

# Rows of the m-row draft batch, in the order the TABED ensembles add them (m = 1: M, 2: MT, 4: MTCP).
ROWS_BY_M = {1: ("M",), 2: ("M", "T"), 3: ("M", "T", "P"), 4: ("M", "T", "C", "P")}
# Datasets of App. J.3 (ChartQA, Spot the Difference, PororoSV) mapped to the tiny suite's scenarios.
SCENARIO_BY_IMAGES = {1: "docvqa", 2: "spot", 5: "psv"}
PAPER_RATIO = 0.063  # Table 6: LLaVA-1.5 7B target, 68M draft, A6000
COMPONENTS = ["vision encoder", "prefill", "decode"]


# ------------------------------------------------------------------------------------------------- requests
def encode_requests(processor, rows, counts=(1, 2, 5), per_count: int = 2, scenarios: dict | None = None) -> list[dict]:
    """``per_count`` first-turn requests per number of images (``scenarios``: n_images -> scenario)."""
    scenarios = scenarios or SCENARIO_BY_IMAGES
    out = []
    for n in counts:
        picked = [r for r in rows if r["scenario"] == scenarios[n] and len(r["images"]) == n and r["turn"] == 1]
        if len(picked) < per_count:
            raise ValueError(
                f"only {len(picked)} first-turn {scenarios[n]} rows with {n} images; "
                f"load more rows per scenario (need {per_count})"
            )
        for row in picked[:per_count]:
            ids, inputs = encode(processor, row["prompt"], row["images"])
            out.append(
                {
                    "id": row["id"],
                    "n_images": n,
                    "ids": ids,
                    "pixel_values": inputs["pixel_values"],
                    "images": row["images"],
                }
            )
    return out


def _device(model):
    return next(model.parameters()).device


# ------------------------------------------------------------------------------------------------- Table 4
@torch.no_grad()
def caption_vs_prefill(target, captioner, requests, repeats: int = 3, name: str = "draft LLaVA") -> list[dict]:
    """Table 4 analogue: tidy rows ``{request, n_images, repeat, role, seconds}``, role ``"target prefill"``
    (the target's whole prefill call, vision tower included) or ``"caption (<name>)"`` (``captioner(images)``
    for all images of the request; it must not memoise, or repeats would time a cache lookup)."""
    device = _device(target)
    rows = []
    for rep in tqdm(range(repeats), desc="caption vs prefill", leave=False):
        for req in requests:
            lm = CachedLM(target)
            t_prefill, _ = timed(
                device,
                lambda lm=lm, req=req: lm.prefill([req["ids"].to(device)], pixel_values=req["pixel_values"].to(device)),
            )
            t_caption, _ = timed(device, lambda req=req: captioner(req["images"]))
            base = {"request": req["id"], "n_images": req["n_images"], "repeat": rep}
            rows += [
                {**base, "role": "target prefill", "seconds": t_prefill},
                {**base, "role": f"caption ({name})", "seconds": t_caption},
            ]
    return rows


@reads_frame
def caption_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Median seconds per role x n_images, plus the row ``caption / prefill``."""
    table = frame.pivot_table(index="role", columns="n_images", values="seconds", aggfunc="median")
    caption = [r for r in table.index if r.startswith("caption")]
    table.loc["caption / prefill"] = table.loc[caption[0]] / table.loc["target prefill"]
    return table


def paper_caption_table() -> pd.DataFrame:
    """The paper's Table 4 (seconds; LLaVA-1.5 7B prefill, BLIP, Florence-2) with ``caption / prefill`` rows."""
    paper = results.paper_numbers("tabed_table4_caption_latency")
    paper["latency_s"] = paper.latency_s.astype(float)
    paper["n"] = paper.n.astype(int)
    table = paper.pivot_table(index="model", columns="n", values="latency_s")
    for captioner in ("BLIP", "Florence-2"):
        table.loc[f"{captioner} / prefill"] = table.loc[captioner] / table.loc["LLaVA-1.5 7B"]
    return table.rename_axis(columns="n_images")


# ------------------------------------------------------------------------------------------------- Fig. 9
@torch.no_grad()
def generation_components(target, request, max_new_tokens: int = 100) -> dict:
    """One greedy target generation of exactly ``max_new_tokens`` tokens (EOS ignored, as Fig. 9's fixed
    length), split in seconds: ``vision encoder`` (vision tower + projector of all images,
    ``vlm.llava.visual_features``), ``prefill`` (the LLM over the prompt with those features in place of the
    image tokens), ``decode`` (one call per new token); ``total`` is the wall time of the whole, so
    ``total - sum(components)`` is the bookkeeping between calls. Also returns ``tokens`` (the output ids)."""
    device = _device(target)
    lm = CachedLM(target)
    t_start = now(device)
    t_vision, features = timed(device, lambda: visual_features(target, request["pixel_values"].to(device)))
    t_prefill, _ = timed(device, lambda: lm.prefill([request["ids"].to(device)], row_features=[features.flatten(0, 1)]))
    t0 = now(device)
    tokens: list[int] = []
    for _ in range(max_new_tokens):
        tokens.append(int(lm.extend(tokens)[0, -1].argmax()))
    t_end = now(device)
    return {
        "vision encoder": t_vision,
        "prefill": t_prefill,
        "decode": t_end - t0,
        "total": t_end - t_start,
        "tokens": tokens,
    }


def component_times(target, requests, max_new_tokens: int = 100, repeats: int = 3) -> list[dict]:
    """Fig. 9 analogue: tidy rows ``{request, n_images, repeat, component, seconds}`` (components of
    ``generation_components`` plus ``total``); requests interleaved within each repeat."""
    rows = []
    for rep in tqdm(range(repeats), desc="Fig. 9 components", leave=False):
        for req in requests:
            split = generation_components(target, req, max_new_tokens)
            base = {"request": req["id"], "n_images": req["n_images"], "repeat": rep}
            rows += [{**base, "component": c, "seconds": split[c]} for c in COMPONENTS + ["total"]]
    return rows


@reads_frame
def component_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Median seconds per n_images x component (medians over repeats, then mean over requests) and each
    component's share of their sum."""
    per_request = frame.groupby(["n_images", "request", "component"]).seconds.median()
    table = per_request.groupby(["n_images", "component"]).mean().unstack("component")
    table = table[COMPONENTS + ["total"]]
    shares = table[COMPONENTS].div(table[COMPONENTS].sum(axis=1), axis=0).add_suffix(" share")
    return pd.concat([table, shares], axis=1)


# ------------------------------------------------------------------------------------------------- Remark 3
@torch.no_grad()
def decode_step_times(
    target,
    draft,
    tokenizer,
    requests,
    m_values=(1, 2, 3, 4),
    repeats: int = 20,
    captioner=None,
    warmup: int = 3,
    block: int = 5,
) -> list[dict]:
    """Seconds per decode step (one new token per row, cache holding the prompt) of the target at batch 1 and
    of the draft with the ``m`` drafting rows ``ROWS_BY_M[m]`` in one batch, per request.

    Each sample times ``block`` consecutive steps of one model (as a draft runs γ steps back to back between
    target calls) and divides by ``block``, so a step is timed with that model's weights warm in the caches.

    Tidy rows ``{request, n_images, model, m, S, repeat, seconds, load}`` (``model`` "target" has ``m`` 1;
    ``S`` is the cached length; ``load`` the machine's 1-minute load average, as noise context). All steps
    of a request alternate inside each repeat, in an order rotated per repeat; the steps are undone by
    cropping the cache (untimed), so every repeat times the same calls. ``captioner`` is needed when some
    ``m`` uses the C row.
    """
    device = _device(target)
    rows = []
    for req in tqdm(requests, desc="decode steps (T_p, T_q(m))", leave=False):
        lms = {("target", 1): _prefilled_target(target, req)}
        for m in m_values:
            lms[("draft", m)] = _prefilled_draft(draft, tokenizer, req, ROWS_BY_M[m], captioner)
        token = int(lms[("target", 1)].extend([])[0, -1].argmax())
        for lm in lms.values():
            if lm.cached_length < lm.width:  # feed each row's last prompt token once, untimed
                lm.extend([])
        order = list(lms.items())
        for rep in range(warmup + repeats):
            shift = rep % len(order)  # rotate who goes first, so no model always runs right after another
            for (model, m), lm in order[shift:] + order[:shift]:
                seconds, _ = timed(device, lambda lm=lm, token=token: _consecutive_steps(lm, token, block))
                lm.rollback([token])  # back to the prompt; ``token`` stays pending
                if rep >= warmup:
                    rows.append(
                        {
                            "request": req["id"],
                            "n_images": req["n_images"],
                            "model": model,
                            "m": m,
                            "S": lm.width,
                            "repeat": rep - warmup,
                            "seconds": seconds / block,
                            "load": os.getloadavg()[0],
                        }
                    )
    return rows


def _consecutive_steps(lm: CachedLM, token: int, block: int) -> None:
    """``block`` decode steps of one new token each."""
    sequence = []
    for _ in range(block):
        sequence.append(token)
        lm.extend(sequence)


def _prefilled_target(target, request) -> CachedLM:
    device = _device(target)
    lm = CachedLM(target)
    lm.prefill([request["ids"].to(device)], pixel_values=request["pixel_values"].to(device))
    return lm


def _prefilled_draft(draft, tokenizer, request, methods, captioner) -> CachedLM:
    device = _device(draft)
    make_rows = tabed.DraftingRows(draft, methods, tokenizer, captioner=captioner)
    rows, features = make_rows(request["ids"].to(device), request["pixel_values"].to(device), request["images"])
    if tuple(make_rows.active) != tuple(methods):
        raise RuntimeError(f"drafting rows {methods} requested but only {make_rows.active} were built")
    lm = CachedLM(draft)
    lm.prefill(rows, row_features=features)
    return lm


@reads_frame
def batch_cost_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per m: the rows it holds, the median draft step (ms), ``T_q(m) / T_q(1)`` and ``T_q(m)/T_p``.

    Ratios are *paired*: per request and repeat, the m-row step over the one-row (or target) step of the same
    repeat (adjacent in time, so they share the machine's load), median over repeats, mean over requests;
    ``spread`` gives the lowest and highest per-request ratio."""
    draft = frame[frame.model == "draft"].pivot_table(index=["request", "repeat"], columns="m", values="seconds")
    target = frame[frame.model == "target"].set_index(["request", "repeat"]).seconds.reindex(draft.index)
    per_request = draft.div(draft[1], axis=0).groupby("request").median()
    return pd.DataFrame(
        {
            "rows": [",".join(ROWS_BY_M.get(m, ("?",))) for m in draft.columns],
            "T_q(m) ms": draft.median().mul(1e3).values,
            "T_q(m) / T_q(1)": per_request.mean().values,
            "spread over requests": [f"{lo:.2f}–{hi:.2f}" for lo, hi in zip(per_request.min(), per_request.max())],
            "T_q(m) / T_p": draft.div(target, axis=0).groupby("request").median().mean().values,
        },
        index=pd.Index(draft.columns, name="m"),
    )


@reads_frame
def measured_ratio(frame: pd.DataFrame) -> float:
    """``T_q/T_p`` at batch 1: per request the median over repeats of (one-row draft step / target step of
    the same repeat), averaged over requests (as the paper's Table 6 averages over datasets)."""
    return float(batch_cost_table(frame).loc[1, "T_q(m) / T_p"])


def stored_real_sizes(profile: str) -> pd.DataFrame:
    """The real-size latency grid (``latency_real_sizes``, measured on a GPU by notebook 01 /
    scripts/device_runs.sh): from the output directory, else the committed copy under the repository."""
    load_profile(getattr(profile, "name", profile))  # an unknown profile: one error naming the known ones
    key = ["model", "device", "B", "S", "gamma"]
    frame = results.ResultStore(profile, "latency_real_sizes", key).frame()
    if not len(frame):
        frame = results.ResultStore(profile, "latency_real_sizes", key, root=zoo.ROOT / "results").frame()
    return frame


@reads_frame
def gpu_reference(frame: pd.DataFrame, target: str = "llava-1.5-7b", draft: str = "draft-68m") -> pd.DataFrame:
    """From the stored real-size grid (``latency_real_sizes``): per device and S, ``T_q/T_p`` at B = 1 and the
    draft's ``T(B, S, 1) / T(1, S, 1)`` for each stored B."""
    one = frame[frame.gamma.astype(int) == 1]
    out = []
    for (device, s), grid in one.groupby(["device", "S"]):
        t = grid.set_index(["model", "B"]).seconds
        row = {"device": device, "S": int(s), f"T_q/T_p ({draft}/{target})": t[(draft, 1)] / t[(target, 1)]}
        for b in sorted(grid[grid.model == draft].B.unique()):
            row[f"{draft} T(B={b})/T(B=1)"] = t[(draft, b)] / t[(draft, 1)]
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------------- Eq. (1)
def tau_by_method(frame: pd.DataFrame, methods) -> pd.Series:
    """Mean block efficiency τ per method over the image-benchmark rows: per turn, then the mean of the turns
    (as the paper's 1.74x averages Table 1's first- and second-turn ``Avg.`` cells)."""
    bench_rows = frame[(frame.group == "benchmark") & frame.method.isin(methods)]
    per_turn = bench_rows.groupby(["method", "turn"]).block_efficiency.mean()
    return per_turn.groupby("method").mean().reindex(methods)


def expected_speedup_table(
    tau: pd.Series,
    ratio_measured: float,
    ratio_paper: float = PAPER_RATIO,
    gamma: int = 5,
    batch_cost: dict | None = None,
) -> pd.DataFrame:
    """Eq. (1) per method: ``τ / (γ · T_q/T_p + 1)`` with the measured ratio and with the paper's.

    ``batch_cost`` (m -> T_q(m)/T_q(1)), if given, adds a column charging a method's draft step at its
    measured m-row cost (``T_q/T_p · cost(m)``) instead of assuming, by Remark 3, that it costs batch 1."""
    table = pd.DataFrame({"rows m": [len(tabed.ENSEMBLES[m]) for m in tau.index], "τ": tau.values}, index=tau.index)
    table["Eq.(1), measured T_q/T_p"] = [bench.expected_speedup(t, gamma, ratio_measured) for t in tau]
    if batch_cost is not None:
        table["Eq.(1), measured T_q/T_p × cost(m)"] = [
            bench.expected_speedup(t, gamma, ratio_measured * batch_cost[m]) for t, m in zip(tau, table["rows m"])
        ]
    table[f"Eq.(1), paper T_q/T_p = {ratio_paper}"] = [bench.expected_speedup(t, gamma, ratio_paper) for t in tau]
    return table


def paper_tau(methods, setting: dict | None = tables.PAPER_SETTING) -> pd.Series:
    """The paper's τ per method: mean over the two turns of the benchmark ``Avg.`` cells of the table of ``setting``
    (``tables.pair_setting``; default Table 10, LLaVA-1.5 68M draft and 7B target, whose M / T / MT / MT* cells
    are Table 1's); NaN where the paper has no table for the pair."""
    table = tables.pair_paper_table(methods, setting)
    averages = table[[d == "Avg." for d in table.index.get_level_values("dataset")]]
    return averages.mean().reindex(methods)


def block_efficiencies(runs, methods, weights: dict, compute_fallback) -> tuple[pd.Series, str]:
    """``(τ per method, where it came from)``: from notebooks 10-13's runs table ``runs`` (``zoo.store``;
    default setting: γ = 5, window ALL, criterion kl, ``captioners.CAPTIONER``) when it holds every method on
    benchmark rows, else ``compute_fallback()``, which must return a frame of ``experiments.setting`` rows (e.g. a
    small subset stored in a table of this notebook's own). Only the runs of today's weights count (``weights``:
    method -> ``model_weights``, ``zoo.run_weights`` of the target and draft): rows of older weights stored
    beside them never enter τ."""
    frame = runs.frame()
    if len(frame) and {"group", "block_efficiency", "model_weights"} <= set(frame.columns):
        chosen = tables.runs(frame)
        chosen = chosen[chosen.model_weights.astype(str) == chosen.method.map(weights)]
        chosen = _common_rows(chosen[chosen.group == "benchmark"], methods)
        if len(chosen):
            return tau_by_method(chosen, methods), f"{runs.path.name} (notebooks 10-13, {len(chosen)} runs)"
    chosen = tables.runs(compute_fallback())
    n = int((chosen.group == "benchmark").sum())
    return tau_by_method(chosen, methods), f"own subset ({n} runs; {runs.path.name} not found or incomplete)"


def _common_rows(frame: pd.DataFrame, methods) -> pd.DataFrame:
    """The runs of ``methods`` on the requests that every one of them has run (a table still being filled
    must not compare methods on different requests)."""
    frame = frame[frame.method.isin(methods)]
    counts = frame.groupby("row").method.nunique()
    return frame[frame.row.isin(counts.index[counts == len(set(methods))])]


# ------------------------------------------------------------------------------------------------- storing
def stored(profile: str, table: str, key: dict, compute, models: dict | None = None) -> pd.DataFrame:
    """The rows of ``key`` in ``results/<profile>/<table>.csv``, computing them first (``compute()`` -> list of
    row dicts, one whole measurement) unless a previous run already stored them. ``models`` (``{"target": model,
    ...}``) go into the rows' provenance (``results.model_provenance``)."""
    store = results.ResultStore(profile, table, list(key))
    if models:
        store.provenance.update(results.model_provenance(**models))
    store.run([key], lambda **_: compute(), desc=table)
    return store.frame(requested=True)  # the rows of this key only, compared exactly as the store keys them


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "COMPONENTS",
    "PAPER_RATIO",
    "ROWS_BY_M",
    "SCENARIO_BY_IMAGES",
    "batch_cost_table",
    "caption_table",
    "component_table",
    "expected_speedup_table",
    "gpu_reference",
    "measured_ratio",
    "paper_caption_table",
    "paper_tau",
    "stored",
    "stored_real_sizes",
]
