"""AASD experiments on the one harness (``specdec.harness``): every draft against plain decoding (notebooks 40-41).

Tasks (``TASKS``, the project's mapping of the paper's three benchmarks onto held-out rows of
``specdec.vlm.scenes``): LLaVA-Bench in-the-wild -> POPE-style conversation (``pope`` turn 1), detail (the
``describe`` follow-up, turn 2), complex reasoning (the ``mmvet`` follow-up, turn 2); COCO captioning ->
``describe`` turn 1 (describe a scene or a document); ScienceQA chain-of-thought -> ``mmvet`` turn 1 (counting,
reading and adding with the reasoning spelled out). A profile whose data come from the hub reads the paper's
datasets instead (``aasd.tasks`` of its yaml). A table cell is the mean of the three tasks, as in the paper.

``experiment`` is one target of a notebook table: an ``Experiment`` whose requests are the tasks' requests and whose
methods are plain decoding (``AR``, γ = 0, the reference of ``lossless`` and of ω) and every (draft, γ), the methods
of a request back to back. ``table1`` (notebook 40: every target) and ``ablations`` (41: one target) are ``Suite``s
of them on one store, ``results/<profile>/aasd_runs.csv``, standing on the committed rows.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Sequence

import pandas as pd

from specdec import hub, results, validate
from specdec.aasd import baselines, zoo_specs
from specdec.aasd.algorithm import AASDDrafter, load_module
from specdec.aasd.rows import image_requests
from specdec.aasd.tables import ABLATIONS, MAIN_DRAFTS, MATCHED_DRAFT
from specdec.aasd.zoo import zoo_for
from specdec.batching import batchable, generate_batch
from specdec.cache import CachedLM
from specdec.drafters import ModelDrafter
from specdec.engine import generate
from specdec.harness.experiment import Experiment, Method, Request, Setting, Suite
from specdec.harness.profile import Profile
from specdec.vlm import scenes
from specdec.vlm.prompts import encode, request_digest
from specdec.zoo import models

TASKS: dict[str, list[tuple[str, int, str]]] = {
    "LLaVA-Bench": [("pope", 1, "conversation"), ("describe", 2, "detail"), ("mmvet", 2, "complex reasoning")],
    "COCO Caption": [("describe", 1, "caption")],
    "ScienceQA CoT": [("mmvet", 1, "reasoning")],
}
# ``weights``: ``weights_of`` the target and the draft, so a retrained model never reuses old rows; ``request``:
# ``request_digest`` of the prompt and its pixels, so a row id that names another request is computed again. The
# order is the committed table's columns'.
KEY = ["table", "target", "max_new_tokens", "device", "draft", "weights", "gamma", "row", "request"]
# The columns that time one request decoded alone: empty in a row decoded in a batch (``Experiment``'s ``walltime``).
WALLTIME = ("seconds", "draft_seconds", "verify_seconds")
# The columns of a stored row that do not depend on the machine's speed (``recompute`` must give them back).
EXACT_COLUMNS = ["output", "accepted", "drafted", "new_tokens", "target_calls", "lossless"]


# --------------------------------------------------------------------------------------------- requests
def load_requests(n_per_task: int, seed: int = 0, profile="tiny") -> list[dict]:
    """Held-out requests: ``n_per_task`` per task (split evenly over a task's sub-tasks), with ``task``/``subtask``;
    a profile whose data come from the hub: ``paper_requests``."""
    n_per_task = validate.integer("n_per_task", n_per_task, minimum=1, hint="requests per task")
    seed = validate.integer("seed", seed, minimum=0, hint="the held-out scenes' seed")
    profile = Profile.load(profile)
    if profile.data_source == "hub":
        return paper_requests(profile, n_per_task)
    out = []
    for task, parts in TASKS.items():
        per = max(1, n_per_task // len(parts))
        for scenario, turn, subtask in parts:
            for row in scenes.scenario_suite("test", per, seed=seed, scenarios=[(scenario, turn)]):
                out.append({**row, "task": task, "subtask": subtask})
    return out


def paper_requests(profile, n_per_task: int) -> list[dict]:
    """The first ``n_per_task`` rows with an image of each paper dataset (``aasd.tasks`` of the profile) as
    requests with the LLaVA-1.5 chat prompt; ``hub.DatasetNotAvailableError`` (naming the ``hf download``)
    offline."""
    out = []
    spec = Profile.load(profile).spec
    for task, data_spec in spec["aasd"]["tasks"].items():
        revision = hub.pinned_revision(spec, data_spec["dataset"])
        data = hub.load_dataset(data_spec["dataset"], data_spec.get("config"), data_spec["split"], revision=revision)
        rows = image_requests(data, task, "Please describe the image briefly.", n_per_task)
        out += [{**r, "task": task, "subtask": task, "scenario": task, "turn": 1} for r in rows]
    return out


def profile_targets(profile) -> list[str]:
    """The targets of a profile (its zoo's, ``aasd.zoo``): the shipped zoo's ``zoo_specs.TARGETS``; otherwise the
    ``aasd.targets`` of its yaml."""
    return zoo_for(profile).targets()


# ----------------------------------------------------------------------------------------------- models
def draft_source(
    name: str, target_name: str, profile="tiny", train_seed: int = 0
) -> tuple[str | pathlib.Path, str | None]:
    """``(folder or hub id, revision)`` of a draft name's weights (``make_drafter`` loads from there), from the
    profile's zoo (``aasd.zoo``): a module folder (``AASD*``; ``train_seed`` k > 0: the module trained with the k-th
    other seed), the shipped zoo's baseline (of ``train_seed`` k > 0: ``zoo_specs.baseline_seed_dir``, gitignored;
    missing: the error names ``baseline-seeds``), or otherwise the paper-scale zoo's distilled baseline or the public
    draft of ``aasd.drafts`` at its pinned revision."""
    validate.choice("AASD draft", name, [*MAIN_DRAFTS, *ABLATIONS, MATCHED_DRAFT])
    return zoo_for(profile, train_seed).draft_source(name, target_name)


def weights_of(draft: str, target_name: str, profile="tiny", train_seed: int = 0) -> str:
    """The ``weights`` key of a run: ``zoo.models.weights_digest`` of the target's and (but for ``AR``) the draft's
    ``weights_identity``."""
    validate.integer("train_seed", train_seed, minimum=0, hint="0: the shipped weights, k > 0: the k-th other seed")
    zoo = zoo_for(profile, train_seed)
    validate.choice("AASD target", target_name, zoo.known_targets(), hint=f"profile {zoo.profile.name!r}")
    return zoo.weights(target_name, draft)


def make_drafter(name: str, target_name: str, target, lm: CachedLM, processor, profile="tiny", train_seed: int = 0):
    """``(drafter, uses_images)`` for a draft name of ``MAIN_DRAFTS`` or ``ABLATIONS``: the shipped zoo's, or the
    paper-scale zoo (``zoo_specs.zoo_dir()``) and the public drafts of ``aasd.drafts``, on the target's device."""
    models_of = zoo_for(profile, train_seed)
    source, revision = draft_source(name, target_name, models_of.profile, train_seed)
    if name.startswith("AASD"):
        if not (source / "module.safetensors").exists():
            raise zoo_specs.missing(source, f"AASD module ({name})", target_name)
        module = load_module(source, target)
        context = ABLATIONS.get(name, ("", None))[1]
        if context:
            module.config = dataclasses.replace(module.config, context=context)
        return AASDDrafter(module, lm), False
    if models_of.draft_kind(name, target_name, source) == "llava":
        device, dtype = next(target.parameters()).device, target.dtype
        model, _ = models.load(
            source, kind="llava", device=device, dtype=dtype, revision=revision, with_tokenizer=False
        )
        return ModelDrafter(model), True
    return models_of.text_drafter(source, revision, target, lm, processor), False


def load_target(target_name: str, profile="tiny"):
    """``(target, processor)``: a target of the profile on its device and dtype, at its pinned revision."""
    return zoo_for(profile).load(target_name)


# ----------------------------------------------------------------------------------------------- methods
def result_row(request: Request, res) -> dict:
    """One stored row's columns (the committed table's): the request's task, the counts, timings and tokens;
    ``lossless`` is the harness's mark (set in place)."""
    return dict(
        task=request.data["task"],
        subtask=request.data["subtask"],
        scenario=request.data["scenario"],
        new_tokens=res.new_tokens,
        target_calls=res.target_calls,
        drafted=sum(res.drafted_per_block),
        accepted=sum(res.accepted_per_block),
        block_efficiency=res.block_efficiency,
        acceptance_rate=res.acceptance_rate,
        lossless=None,
        seconds=res.total_time,
        draft_seconds=res.draft_time,
        verify_seconds=res.verify_time,
        output=json.dumps(res.output_ids),
    )


def method(target, draft: str | None, gamma: int, weights: str, make) -> Method:
    """Plain decoding (``draft`` None) or one draft at one γ on a fresh ``CachedLM`` of ``target`` per request.
    ``make(lm)`` builds ``(drafter, uses_images)`` once; the AASD module reads the cache of the request's target.
    ``decode_batch``: plain decoding and the LLaMA / LLaVA baselines decode several requests in one
    ``batching.generate_batch`` (one drafter per request on the draft model, ``baselines.batch_member``), each row
    its batch-1 run (``tests/test_aasd_batched.py``); the AASD module has none (it reads one request's target
    cache: docs/papers/aasd.md, "Batched decoding"), so its requests decode alone."""
    made: list = []

    def drafter_of(lm):
        if not made:
            made.append(make(lm))
        return made[0]

    def decode(request: Request, setting: Setting):
        lm = CachedLM(target)
        ids, inputs = request.prompt_ids, dict(request.target_inputs)
        if draft is None:
            return generate(lm, ids, None, max_new_tokens=setting.max_new_tokens,
                            eos_token_id=setting.eos_token_id, target_inputs=inputs)  # fmt: skip
        drafter, uses_images = drafter_of(lm)
        if isinstance(drafter, AASDDrafter):
            drafter.target_lm = lm
        return generate(lm, ids, drafter, gamma=gamma, max_new_tokens=setting.max_new_tokens,
                        eos_token_id=setting.eos_token_id, target_inputs=inputs,
                        draft_inputs=inputs if uses_images else {})  # fmt: skip

    def decode_batch(requests: Sequence[Request], setting: Setting):
        members = draft_inputs = None
        if draft is not None:
            drafter, uses_images = drafter_of(CachedLM(target))
            members = [baselines.batch_member(drafter, uses_images) for _ in requests]
            draft_inputs = [dict(r.target_inputs) if uses_images else {} for r in requests]
        if (members and None in members) or not all(batchable(r.target_inputs) for r in requests):
            return [decode(r, setting) for r in requests]  # a prefix-vocabulary draft, LLaVA-NeXT tiles: alone
        out = generate_batch(target, [r.prompt_ids for r in requests], members, gamma=gamma if draft else 5,
                             max_new_tokens=setting.max_new_tokens, eos_token_id=setting.eos_token_id,
                             seeds=[0] * len(requests), target_inputs=[dict(r.target_inputs) for r in requests],
                             draft_inputs=draft_inputs)  # fmt: skip
        return out.rows

    params = dict(draft=draft or "AR", weights=weights, gamma=gamma if draft else 0)
    module = draft is not None and draft.startswith("AASD")  # decoded alone: its rows keep their walltime
    return Method(decode=decode, params=params, decode_batch=None if module else decode_batch)


def requests_of(rows: Sequence[dict], processor, target) -> list[Request]:
    """The harness requests of ``load_requests`` rows, encoded on the target's device and dtype: key ``row`` (the
    id) and ``request`` (``request_digest`` of the prompt and its pixels); ``data`` the row."""
    device = next(target.parameters()).device
    out = []
    for r in rows:
        ids, inputs = encode(processor, r["prompt"], r["images"])
        inputs = {k: v.to(device=device, dtype=target.dtype) for k, v in inputs.items()}
        key = dict(row=r["id"], request=request_digest(r))
        out.append(Request(r["id"], ids.to(device), key, target_inputs=inputs, draft_inputs=inputs, data=r))
    return out


def experiment(store, profile, table: str, target_name: str, rows, drafts, gammas, max_new_tokens: int,
               loaded=None, train_seed: int | None = None, batch_size: int = 1) -> Experiment:  # fmt: skip
    """One target of a notebook ``table``: plain decoding (``AR``) and every draft at every γ on every request of
    ``rows`` (``load_requests``), one stored row each. ``loaded``: ``(target, processor)``, else ``load_target``.
    ``train_seed`` (the seed store of ``aasd.seeds``): the modules of that training seed, stored in a ``train_seed``
    column. ``batch_size`` > 1: plain decoding and the baselines decode that many missing requests at once, rows
    equal to the B = 1 rows but for ``WALLTIME`` (empty); the notebooks' tables time each request alone (B = 1)."""
    seed = train_seed or 0
    profile = Profile.load(profile)
    target, processor = loaded or load_target(target_name, profile)
    device = next(target.parameters()).device.type

    def maker(draft):
        return lambda lm: make_drafter(draft, target_name, target, lm, processor, profile, seed)

    methods = {"AR": method(target, None, 0, weights_of("AR", target_name, profile), None)}
    for draft in drafts:
        weights = weights_of(draft, target_name, profile, seed)
        methods |= {f"{draft} γ={g}": method(target, draft, g, weights, maker(draft)) for g in gammas}
    return Experiment(
        store,
        requests_of(rows, processor, target),
        methods,
        fixed=dict(table=table, target=target_name, max_new_tokens=max_new_tokens, device=device)
        | ({} if train_seed is None else {"train_seed": train_seed}),
        setting=Setting(max_new_tokens, eos_token_id=processor.tokenizer.eos_token_id),
        reference="AR",
        row=result_row,
        method_column="draft",
        batch_size=batch_size,
        walltime=WALLTIME,
        provenance=results.model_provenance(target=target),
        desc=f"{table} {target_name}",
    )


# ------------------------------------------------------------------------------------------ notebook tables
def store(profile) -> results.ResultStore:
    """The runs table; it stands on the committed one (``results.COMMITTED``, read-only), so under ``make test``
    notebooks 40-41 read the committed runs (``tests/test_committed_results.py`` recomputes a seeded sample of
    them and demands them back) and an empty output folder recomputes only what the committed table lacks."""
    return Profile.load(profile).store("aasd_runs", KEY)


def suite(profile, table: str, targets, drafts, gammas, n_per_task: int, max_new_tokens: int, seed: int) -> Suite:
    """A notebook table: one ``experiment`` per target on ``store(profile)``; ``context``: ``requests`` (the rows)
    and ``targets``."""
    profile = Profile.load(profile)
    check_suite(profile, targets, drafts, gammas, max_new_tokens, seed)  # here, not at the first run of a cell
    profile.use_threads()  # tiny models on a CPU, one intra-op thread: walltimes comparable with the committed ones
    runs = store(profile)
    rows = load_requests(n_per_task, seed=seed, profile=profile)
    out = Suite(runs, requests=rows, targets=list(targets), table=table)
    for target in targets:
        out.add(lambda s, target=target: experiment(runs, profile, table, target, rows, drafts, gammas, max_new_tokens))
    return out


def check_suite(profile: Profile, targets, drafts, gammas, max_new_tokens: int, seed: int) -> None:
    """One clear error for a bad argument of ``suite`` before anything is loaded or run: known targets (the shipped
    zoo's, or the profile's ``aasd.targets``) and drafts, a non-empty list of γ >= 1, ``max_new_tokens`` >= 1, an
    integer seed."""
    known = zoo_for(profile).known_targets()
    for target in validate.strings("targets", targets):
        validate.choice("AASD target", target, known)
    for draft in validate.strings("drafts", drafts):
        validate.choice("AASD draft", draft, list(dict.fromkeys([*MAIN_DRAFTS, *ABLATIONS, MATCHED_DRAFT])))
    if isinstance(gammas, (str, int)) or not list(gammas):
        raise ValueError(f"gammas must be a non-empty list of draft lengths, got {gammas!r}")
    for gamma in gammas:
        validate.integer("gamma", gamma, minimum=1, hint="draft lengths")
    validate.integer("max_new_tokens", max_new_tokens, minimum=1)
    validate.integer("seed", seed, hint="the request sample's seed")


def table1(profile, *, targets=(), drafts=MAIN_DRAFTS, gammas=(3, 5), n_per_task: int = 63, max_new_tokens: int = 48,
           seed: int = 0) -> Suite:  # fmt: skip
    """Table 1 (notebook 40): every main draft against plain decoding on every target (``()``: the profile's);
    ``MATCHED_DRAFT`` only on the tiny zoo (a hub target's module trains on its answers already)."""
    models_of = zoo_for(profile)
    targets = list(targets) or models_of.targets()
    drafts = models_of.usable(drafts)
    return suite(profile, "table1", targets, drafts, gammas, n_per_task, max_new_tokens, seed)


def ablation_target(profile) -> str:
    """Notebook 41's target: on the shipped zoo A2's ``aasd-target-p8`` (64 visual positions per image, a projector
    at the paper's ratio: docs/papers/aasd.md, Proxy conditions), else the profile's first target."""
    return zoo_for(profile).ablation_target()


def ablations(profile, *, target: str = "", drafts=tuple(ABLATIONS), gammas=(3, 5), n_per_task: int = 63,
              max_new_tokens: int = 48, seed: int = 0) -> Suite:  # fmt: skip
    """Table 2, the k sweep and Figs. 3-4 (notebook 41): the module's ablations on one target (``""``:
    ``ablation_target``)."""
    target = target or ablation_target(profile)
    return suite(profile, "ablations", [target], drafts, gammas, n_per_task, max_new_tokens, seed)


def recompute(keys: list[dict], *, profile="tiny") -> pd.DataFrame:
    """Decode the stored runs of ``keys`` (rows of ``KEY`` columns) again (with their plain-decoding references,
    which ``lossless`` compares with) and return the fresh rows, under today's weights and request digests
    (``Experiment.recompute``), in the order of ``keys``; a key with ``train_seed`` (``aasd.seeds``) decodes with
    that seed's modules. The tests run this at another CPU vector width and demand the committed rows back."""
    import tempfile

    profile = Profile.load(profile)
    profile.use_threads()
    # the first requests of a task do not depend on n_per_task: the largest index among the keys is enough
    per = 1 + max(int(str(k["row"]).rsplit("-", 1)[1]) for k in keys)
    requests = {r["id"]: r for r in load_requests(per * max(len(parts) for parts in TASKS.values()), profile=profile)}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        seed = None if key.get("train_seed") in (None, "") else int(key["train_seed"])
        groups.setdefault((key["table"], key["target"], int(key["max_new_tokens"]), seed), []).append(i)
    fresh: dict[int, dict] = {}
    loaded: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for (table, target, max_new_tokens, seed), where in groups.items():
            key = KEY if seed is None else [*KEY, "train_seed"]
            scratch = results.ResultStore(profile.name, f"recomputed-{len(fresh)}", key, root=pathlib.Path(tmp))
            group = [keys[i] for i in where]
            rows = list({k["row"]: requests[k["row"]] for k in group}.values())
            drafts = list(dict.fromkeys(k["draft"] for k in group if k["draft"] != "AR"))
            gammas = sorted({int(k["gamma"]) for k in group if k["draft"] != "AR"})
            if target not in loaded:
                loaded[target] = load_target(target, profile)
            exp = experiment(scratch, profile, table, target, rows, drafts, gammas, max_new_tokens, loaded[target],
                             train_seed=seed)  # fmt: skip
            for i, row in zip(where, exp.recompute(group).to_dict("records")):
                fresh[i] = row
    return pd.DataFrame([fresh[i] for i in range(len(keys))])


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "EXACT_COLUMNS",
    "KEY",
    "TASKS",
    "WALLTIME",
    "ablation_target",
    "ablations",
    "draft_source",
    "experiment",
    "load_requests",
    "load_target",
    "make_drafter",
    "method",
    "profile_targets",
    "recompute",
    "store",
    "suite",
    "table1",
    "weights_of",
]
