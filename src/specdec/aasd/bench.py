"""AASD runs and tables (notebooks 40-41): every draft against plain decoding on the tiny task analogues.

Tasks (``TASKS``, the project's mapping of the paper's three benchmarks onto held-out rows of
``specdec.vlm.scenes``): LLaVA-Bench in-the-wild -> POPE-style conversation (``pope`` turn 1), detail (the
``describe`` follow-up, turn 2), complex reasoning (the ``mmvet`` follow-up, turn 2); COCO captioning ->
``describe`` turn 1 (describe a scene or a document); ScienceQA chain-of-thought -> ``mmvet`` turn 1 (counting,
reading and adding with the reasoning spelled out). A table cell is the mean of the three tasks, as in the paper.

One stored row per (table, target, draft, γ, max_new_tokens, device, request) in ``results/<profile>/aasd_runs.csv``;
draft ``AR`` (γ = 0) is plain decoding, the reference of ``lossless`` and of the walltime speedup ω.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import numpy as np
import pandas as pd
import torch

from specdec import hub, results, validate, zoo
from specdec.aasd import baselines, paper_zoo, zoo_specs
from specdec.aasd.algorithm import AASDDrafter, config_for, load_module
from specdec.aasd.zoo_specs import module_name
from specdec.bench import expected_speedup
from specdec.cache import CachedLM
from specdec.drafters import ModelDrafter
from specdec.engine import generate
from specdec.vlm import scenes
from specdec.vlm.prompts import encode, request_digest
from specdec.zoo import models

TASKS: dict[str, list[tuple[str, int, str]]] = {
    "LLaVA-Bench": [("pope", 1, "conversation"), ("describe", 2, "detail"), ("mmvet", 2, "complex reasoning")],
    "COCO Caption": [("describe", 1, "caption")],
    "ScienceQA CoT": [("mmvet", 1, "reasoning")],
}
# ``weights``: ``weights_of`` the target and the draft, so a retrained model never reuses old rows; ``request``:
# ``request_digest`` of the prompt and its pixels, so a row id that names another request is computed again.
KEY = ["table", "target", "draft", "weights", "gamma", "max_new_tokens", "device", "row", "request"]
PAPER_TARGET = {  # the larger tiny target plays 13B
    "tabed-target": "LLaVA-13B",
    "aasd-target-s": "LLaVA-7B",
    "llava-hf/llava-1.5-7b-hf": "LLaVA-7B",
    "llava-hf/llava-1.5-13b-hf": "LLaVA-13B",
}
MAIN_DRAFTS = ("FT-LLaMA", "DT-LLaMA", "FT-LLaVA", "DT-LLaVA", "AASD")
# draft name -> (module variant trained, context at inference)
ABLATIONS = {
    "AASD": ("", None),
    "AASD w/o projector": ("noproj", None),
    "AASD k=1": ("k1", None),
    "AASD own cache only": ("own", None),
    "AASD w/o image KV": ("", "no_image"),
    # the prompt's text positions hidden (image and generated positions kept), as the paper's Fig. 4; it replaces
    # "AASD w/o text KV" (context "no_text"), which hid every generated token's KV too (issue 25 §4)
    "AASD w/o prompt text KV": ("", "no_prompt_text"),
}


def load_requests(n_per_task: int, seed: int = 0, profile: str = "tiny") -> list[dict]:
    """Held-out requests: ``n_per_task`` per task (split evenly over a task's sub-tasks), with ``task``/``subtask``;
    other profiles: ``paper_requests``."""
    n_per_task = validate.integer("n_per_task", n_per_task, minimum=1, hint="requests per task")
    if profile != "tiny":
        return paper_requests(profile, n_per_task)
    out = []
    for task, parts in TASKS.items():
        per = max(1, n_per_task // len(parts))
        for scenario, turn, subtask in parts:
            for row in scenes.scenario_suite("test", per, seed=seed, scenarios=[(scenario, turn)]):
                out.append({**row, "task": task, "subtask": subtask})
    return out


def profile_targets(profile: str) -> list[str]:
    """The targets of a profile: tiny ``zoo_specs.TARGETS``; otherwise the ``aasd.targets`` of its yaml."""
    return list(zoo_specs.TARGETS) if profile == "tiny" else list(models.load_profile(profile)["aasd"]["targets"])


def paper_requests(profile: str, n_per_task: int) -> list[dict]:
    """The first ``n_per_task`` rows with an image of each paper dataset (``aasd.tasks`` of the profile) as
    requests with the LLaVA-1.5 chat prompt; ``hub.DatasetNotAvailableError`` (naming the ``hf download``)
    offline."""
    out = []
    profile_spec = models.load_profile(profile)
    for task, spec in profile_spec["aasd"]["tasks"].items():
        revision = hub.pinned_revision(profile_spec, spec["dataset"])
        data = hub.load_dataset(spec["dataset"], spec.get("config"), spec["split"], revision=revision)
        rows = paper_zoo.image_requests(data, task, "Please describe the image briefly.", n_per_task)
        out += [{**r, "task": task, "subtask": task, "scenario": task, "turn": 1} for r in rows]
    return out


def draft_source(name: str, target_name: str, profile: str = "tiny") -> tuple[str | pathlib.Path, str | None]:
    """``(folder or hub id, revision)`` of a draft name's weights (``make_drafter`` loads from there): a module
    folder (``AASD*``), the tiny zoo's baseline, or on another profile the paper-scale zoo's distilled baseline or
    the public draft of ``aasd.drafts`` at its pinned revision."""
    validate.choice("AASD draft", name, [*MAIN_DRAFTS, *ABLATIONS])
    zoo_dir = zoo.MODELS if profile == "tiny" else paper_zoo.zoo_dir()
    if name.startswith("AASD"):
        return zoo_dir / module_name(target_name, ABLATIONS[name][0]), None
    if profile == "tiny":
        kind, family = name.split("-")
        return f"aasd-{kind.lower()}-{family.lower()}" + (f"-{target_name}" if kind == "DT" else ""), None
    spec = models.load_profile(profile)
    draft = spec["aasd"]["drafts"][name]
    if "model" in draft:
        return draft["model"], models.revision_of(spec, draft["model"])
    return zoo_dir / paper_zoo.distilled_name(name, target_name), None


def weights_of(draft: str, target_name: str, profile: str = "tiny") -> str:
    """The ``weights`` key of a run: ``zoo.models.weights_digest`` of the target's and (but for ``AR``) the draft's
    ``weights_identity``."""
    revision = None if profile == "tiny" else models.revision_of(models.load_profile(profile), target_name)
    parts = [models.weights_identity(target_name, revision)]
    if draft != "AR":
        parts.append(models.weights_identity(*draft_source(draft, target_name, profile)))
    return models.weights_digest(*parts)


def make_drafter(name: str, target_name: str, target, lm: CachedLM, processor, profile: str = "tiny"):
    """``(drafter, uses_images)`` for a draft name of ``MAIN_DRAFTS`` or ``ABLATIONS``: the tiny zoo's, or on
    another profile the paper-scale zoo (``paper_zoo.zoo_dir()``) and the public drafts of ``aasd.drafts``."""
    if name.startswith("AASD"):
        folder, _ = draft_source(name, target_name, profile)
        context = ABLATIONS[name][1]
        if not (folder / "module.safetensors").exists():
            raise paper_zoo.missing(folder, f"AASD module ({name})", target_name)
        module = load_module(folder, target)
        if context:
            module.config = dataclasses.replace(module.config, context=context)
        return AASDDrafter(module, lm), False
    if profile == "tiny":
        folder, _ = draft_source(name, target_name, profile)
        if name.endswith("LLaMA"):
            model, _ = models.load(folder, with_tokenizer=False)
            return baselines.text_drafter(model, processor.tokenizer), False
        model, _ = models.load(folder, kind="llava", with_tokenizer=False)
        return ModelDrafter(model), True
    draft = models.load_profile(profile)["aasd"]["drafts"][name]
    source, revision = draft_source(name, target_name, profile)
    if "model" not in draft and not (pathlib.Path(source) / "config.json").exists():
        raise paper_zoo.missing(pathlib.Path(source), f"distilled baseline ({name})", target_name)
    device, dtype = next(target.parameters()).device, target.dtype
    if draft["kind"] == "llava":
        model, _ = models.load(
            source, kind="llava", device=device, dtype=dtype, revision=revision, with_tokenizer=False
        )
        return ModelDrafter(model), True
    model, tokenizer = models.load(source, device=device, dtype=dtype, revision=revision)
    models.check_vocabulary_prefix(processor.tokenizer, tokenizer)
    drafter = baselines.text_drafter(
        model, tokenizer, lm.vocab_size, target.config.image_token_id, config_for(target).image_tokens
    )
    return drafter, False


def load_target(target_name: str, profile: str = "tiny", device: str | None = None):
    """``(target, processor, device)``: a tiny zoo target on the CPU, or a paper target on the profile's device
    and dtype (``device`` overrides it) at its pinned revision."""
    if profile == "tiny":
        target, processor = models.load(target_name, kind="llava")
        return target, processor, "cpu"
    spec = models.load_profile(profile)
    dev, dtype = models.profile_device(spec, device)
    target, processor = models.load(
        target_name, kind="llava", device=dev, dtype=dtype, revision=models.revision_of(spec, target_name)
    )
    return target, processor, str(dev)


def run(
    store, table: str, target_name: str, requests, drafts, gammas, max_new_tokens: int, profile: str = "tiny",
    device: str | None = None,
) -> None:  # fmt: skip
    """Decode every request with plain decoding (``AR``) and every draft at every γ; one stored row each."""
    torch.set_num_threads(1)
    target, processor, device = load_target(target_name, profile, device)
    store.provenance.update(results.model_provenance(target=target))
    eos = processor.tokenizer.eos_token_id
    by_id = {r["id"]: r for r in requests}
    encoded = {}
    for rid, r in by_id.items():
        ids, inputs = encode(processor, r["prompt"], r["images"])
        encoded[rid] = ids.to(device), {k: v.to(device=device, dtype=target.dtype) for k, v in inputs.items()}
    setting = dict(table=table, target=target_name, max_new_tokens=max_new_tokens, device=device)
    drafters: dict = {}

    def compute(draft, gamma, row, **_):
        ids, inputs = encoded[row]
        lm = CachedLM(target)
        if draft == "AR":
            res = generate(lm, ids, None, max_new_tokens=max_new_tokens, eos_token_id=eos, target_inputs=inputs)
            return _row(by_id[row], res, res.output_ids)
        if draft not in drafters:
            drafters[draft] = make_drafter(draft, target_name, target, lm, processor, profile)
        drafter, uses_images = drafters[draft]
        if isinstance(drafter, AASDDrafter):
            drafter.target_lm = lm
        ar_key = dict(setting, draft="AR", weights=weights["AR"], gamma=0, row=row, request=request_sha[row])
        reference = json.loads(store.get(**ar_key)["output"])
        res = generate(lm, ids, drafter, gamma=gamma, max_new_tokens=max_new_tokens, eos_token_id=eos,
                       target_inputs=inputs, draft_inputs=inputs if uses_images else {})  # fmt: skip
        return _row(by_id[row], res, reference)

    weights = {d: weights_of(d, target_name, profile) for d in ["AR", *drafts]}
    request_sha = {rid: request_digest(r) for rid, r in by_id.items()}
    store.run(
        [dict(setting, draft="AR", weights=weights["AR"], gamma=0, row=rid, request=request_sha[rid]) for rid in by_id],
        compute,
        desc=f"{table} AR",
    )
    keys = [
        dict(setting, draft=d, weights=weights[d], gamma=g, row=rid, request=request_sha[rid])
        for d in drafts
        for g in gammas
        for rid in by_id
    ]
    store.run(keys, compute, desc=f"{table} {target_name}")


def _row(request: dict, res, reference_ids) -> dict:
    return dict(
        task=request["task"],
        subtask=request["subtask"],
        scenario=request["scenario"],
        new_tokens=res.new_tokens,
        target_calls=res.target_calls,
        drafted=sum(res.drafted_per_block),
        accepted=sum(res.accepted_per_block),
        block_efficiency=res.block_efficiency,
        acceptance_rate=res.acceptance_rate,
        lossless=res.output_ids == list(reference_ids),
        seconds=res.total_time,
        draft_seconds=res.draft_time,
        verify_seconds=res.verify_time,
        output=json.dumps(res.output_ids),
    )


def store(profile: str) -> results.ResultStore:
    """The runs table; it stands on the committed one (``results.COMMITTED``, read-only), so under ``make test``
    notebooks 40-41 read the committed runs (``tests/test_committed_results.py`` recomputes a seeded sample of
    them and demands them back) and an empty output folder recomputes only what the committed table lacks."""
    return results.ResultStore(profile, "aasd_runs", KEY, base=results.COMMITTED)


def recompute(keys: list[dict], *, profile: str = "tiny") -> pd.DataFrame:
    """Decode the stored runs of ``keys`` (rows of ``KEY`` columns) again into a temporary store (with their
    plain-decoding references, which ``lossless`` compares with) and return the fresh rows in the order of
    ``keys``. The tests run this at another CPU vector width and demand the committed rows back."""
    import tempfile

    # the first requests of a task do not depend on n_per_task: the largest index among the keys is enough
    per = 1 + max(int(str(k["row"]).rsplit("-", 1)[1]) for k in keys)
    n_per_task = per * max(len(parts) for parts in TASKS.values())
    requests = {r["id"]: r for r in load_requests(n_per_task, profile=profile)}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = results.ResultStore(profile, "recomputed", KEY, root=pathlib.Path(tmp))
        groups: dict[tuple, list[dict]] = {}
        for key in keys:
            setting = (key["table"], key["target"], int(key["max_new_tokens"]), key["draft"], int(key["gamma"]))
            groups.setdefault(setting, []).append(key)
        for (table, target, max_new_tokens, draft, gamma), group in groups.items():
            rows = [requests[k["row"]] for k in group]
            drafts = [] if draft == "AR" else [draft]
            run(fresh, table, target, rows, drafts, [gamma], max_new_tokens)
        frame = fresh.frame().astype({c: str for c in KEY})
    order = pd.DataFrame([{c: str(k[c]) for c in KEY} for k in keys])
    return order.merge(frame, on=KEY, how="left")


# ------------------------------------------------------------------------------------------------------ tables
def runs(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """The stored rows of one notebook ``table``, with ω per request (AR seconds / SD seconds, same request)."""
    frame = frame[frame.table == table].copy()
    for col in ("gamma", "new_tokens", "target_calls", "drafted", "accepted"):
        frame[col] = frame[col].astype(int)
    for col in ("block_efficiency", "acceptance_rate", "seconds", "draft_seconds", "verify_seconds"):
        frame[col] = frame[col].astype(float)
    frame["lossless"] = frame.lossless.astype(str) == "True"
    ar = frame[frame.draft == "AR"].set_index(["target", "row"]).seconds
    frame["speedup"] = frame.set_index(["target", "row"]).index.map(ar) / frame.seconds
    return frame


def cell_table(frame: pd.DataFrame, by=("target", "gamma", "draft")) -> pd.DataFrame:
    """ω, α, τ, δ per cell and task (pooled over the task's requests: α = accepted / drafted, τ = tokens / target
    calls, δ = tokens / seconds, ω = AR seconds / SD seconds), then the mean of the tasks, as the paper's cells."""
    sd = frame[frame.draft != "AR"]
    ar_seconds = frame[frame.draft == "AR"].groupby(["target", "task"]).seconds.sum()
    rows = []
    for key, g in sd.groupby([*by, "task"]):
        cell = dict(zip([*by, "task"], key))
        rows.append(
            {
                **cell,
                "omega": ar_seconds[(cell["target"], cell["task"])] / g.seconds.sum(),
                "alpha": g.accepted.sum() / g.drafted.sum(),
                "tau": g.new_tokens.sum() / g.target_calls.sum(),
                "delta": g.new_tokens.sum() / g.seconds.sum(),
                "c": (g.draft_seconds.sum() / g.drafted.sum()) / (g.verify_seconds.sum() / g.target_calls.sum()),
                "n": len(g),
            }
        )
    per_task = pd.DataFrame(rows)
    mean = per_task.groupby(list(by))[["omega", "alpha", "tau", "delta", "c"]].mean()
    mean["n"] = per_task.groupby(list(by)).n.sum()
    return mean, per_task.set_index([*by, "task"])


def with_eq1(mean: pd.DataFrame) -> pd.DataFrame:
    """Adds ω from Eq. (1), ``τ / (γ c + 1)``, with our measured ``c = T_q / T_p`` (``omega_eq1``) and with the
    paper's implied cost for the same target and draft (``omega_eq1_paper_c``, ``c`` solved from its ω and τ)."""
    out = mean.copy()
    gammas = out.index.get_level_values("gamma")
    out["omega_eq1"] = [expected_speedup(t, g, c) for t, g, c in zip(out.tau, gammas, out.c)]
    implied = paper_table1().assign(c=lambda p: (p.tau / p.omega - 1) / p.gamma)
    paper_c = implied.groupby(["draft", "gamma"]).c.mean()
    out["omega_eq1_paper_c"] = [
        expected_speedup(t, g, paper_c.get((d if d in MAIN_DRAFTS else "Ours", g), np.nan))
        for t, g, d in zip(out.tau, gammas, out.index.get_level_values("draft"))
    ]
    return out


def paper_table1() -> pd.DataFrame:
    """The paper's Table 1 (``data/paper/aasd_table1.csv``): target, gamma, draft, omega, alpha, tau, delta."""
    p = results.paper_numbers("aasd_table1")
    p = p.rename(
        columns={"draft_model": "draft", "walltime_speedup": "omega", "acceptance_rate": "alpha",
                 "block_efficiency": "tau", "tokens_per_s": "delta"}
    )  # fmt: skip
    p["draft"] = p.draft.replace({"Ours": "AASD"})
    p = p[["target", "gamma", "draft", "omega", "alpha", "tau", "delta"]].copy()
    p["gamma"] = p.gamma.astype(int)
    return p.astype({c: float for c in ("omega", "alpha", "tau", "delta")})


def side_by_side(mean: pd.DataFrame) -> pd.DataFrame:
    """Our cells beside the paper's (``paper_*`` columns) for the same γ and draft, the tiny targets mapped by
    ``PAPER_TARGET``."""
    ours = mean.reset_index()
    ours["paper_target"] = ours.target.map(PAPER_TARGET)
    p = paper_table1().rename(columns={c: f"paper_{c}" for c in ("omega", "alpha", "tau", "delta")})
    merged = ours.merge(
        p, left_on=["paper_target", "gamma", "draft"], right_on=["target", "gamma", "draft"], how="left"
    )
    merged = merged.drop(columns=["target_y"]).rename(columns={"target_x": "target"})
    return merged.set_index(["target", "gamma", "draft"])


def lossless_summary(frame: pd.DataFrame) -> str:
    sd = frame[frame.draft != "AR"]
    same = int(sd.lossless.sum())
    return f"{len(sd)} speculative runs on {sd.row.nunique()} requests: {same} identical to the target's greedy output"
