"""Multilingual experiments on the one harness: the specialised drafters (Yi et al.) beside plain decoding.

Methods (``tables.METHODS``) all decode with the same target, so at T = 0 they must give the very tokens of plain
(autoregressive) decoding — a run asserts it — and at T = 1 they sample from the same distribution:

- ``ar``: plain decoding (the baseline), ``sps-generic``: SpS with the generic drafter (like vicuna-68m),
- ``sps-f`` / ``sps-pf``: SpS with the pair's finetune-only (F) / pretrain-and-finetune (P-F) drafter,
- ``pld``: prompt lookup decoding (n-gram copy from the context, no model).

One function per notebook table, each ``f(Profile, ...) -> Table`` whose ``run()`` gives the table's rows:
``table1`` (notebooks 30 and 34), ``tokens`` (31), ``ood`` (32), ``size`` (33); ``sweep`` binds the ``ml-*`` names
to the profile (``drafters.Drafters``), draws the prompts (``drafters.prompt_set``) and builds the ``grid``. ``grid``
is the table's cells: one ``Experiment`` per (pair, temperature, seed) whose requests are the pair's prompts (each
with its own sampling seed, ``prompt_seed``) and whose methods run back to back per prompt. Block efficiency τ (new
tokens per target call, the paper's "acceptance length") is hardware-independent and carries the findings; speed is
reported as expected (``τ / (γ · T_q/T_p + 1)``) and measured (side-by-side walltime ratio), named with its device.

``grid(batch_size=B)`` decodes a cell's missing prompts B at a time (``batching.generate_batch``): the B = 1 rows'
deterministic columns, empty ``WALLTIME`` columns (``docs/reference/speed.md``, "Batched rows and walltime").
"""

from __future__ import annotations

import random
import zlib

import numpy as np
import pandas as pd

from specdec import bench, results, validate
from specdec.engine import generate
from specdec.harness.experiment import Experiment, Method, Request, Setting, Suite, speculative
from specdec.harness.profile import Profile
from specdec.multilingual import parallel
from specdec.multilingual.catalogs import LANGUAGES
from specdec.multilingual.drafters import Drafters, prompt_set, table1_drafters
from specdec.multilingual.metrics import chrf
from specdec.multilingual.tables import METHODS
from specdec.sampling import SamplingConfig
from specdec.validate import reads_frame
from specdec.zoo.tasks import text_digest

LANGS = tuple(parallel.LANGUAGES)  # de fr ru ja zh
# every parameter that changes a row, the device included (rows carry walltimes), ``weights`` (the target's and the
# drafter's, ``Drafters.weights_digest``: a retrained model never reuses old rows) and ``request`` (the prompt text's
# ``text_digest``: a prompt id that names another text is computed again)
KEYS = [
    "pair", "source", "gamma", "max_new_tokens", "temperature", "seed", "device", "prompt", "request", "method",
    "weights",
]  # fmt: skip
# the columns that time one decode alone: empty in a row decoded in a batch (``cell``'s ``batch_size``)
WALLTIME = ("total_time", "prefill_time", "draft_time", "tokens_per_second")
GREEDY_SEED = 0  # T = 0 runs are deterministic: one "seed" only


# --------------------------------------------------------------------------------------------- running
def prompt_seed(seed: int, prompt_id: str) -> int:
    """The sampling seed of one run: the run's ``seed`` and its prompt's id, nothing else (not the prompt's place
    in a sample, so a stored row's key fixes its output whatever ``n`` the run used)."""
    seed = validate.integer("seed", seed, minimum=0, hint="the run's sampling seed")
    return 10_007 * seed + zlib.crc32(str(prompt_id).encode()) % 10_007


def _result_row(drafters: Drafters, spec, res, reference_ids, prompt: dict) -> dict:
    """The stored columns of one decode: τ, α, timings, ``same_as_ar`` (its tokens equal plain decoding's; empty
    without a plain run), the output text and its chrF against the prompt's reference."""
    text = drafters.decode_text(res.output_ids)
    return {
        "drafter": spec or "",
        "new_tokens": res.new_tokens,
        "target_calls": res.target_calls,
        "block_efficiency": res.block_efficiency,
        "accepted": sum(res.accepted_per_block),
        "drafted": sum(res.drafted_per_block),
        "total_time": res.total_time,
        "prefill_time": res.prefill_time,
        "draft_time": res.draft_time,
        "tokens_per_second": res.tokens_per_second,
        "same_as_ar": res.output_ids == reference_ids if reference_ids is not None else "",
        "chrf": chrf(text, prompt["reference"]),
        "text": text,
    }


def decode(drafters: Drafters, target, spec, prompt_ids, *, gamma: int, setting: Setting):
    """One decode of a method's drafter ``spec`` (``engine.generate``; stops at the target's ``</s>``)."""
    return generate(
        target,
        prompt_ids,
        drafters.make_drafter(spec),
        gamma=gamma,
        max_new_tokens=setting.max_new_tokens,
        sampling=setting.sampling,
        eos_token_id=drafters.tokenizer.eos_token_id,
        seed=setting.seed,
    )


def _check_methods(methods: dict) -> None:
    """A typo in a method name must not store plain decoding under it: only ``ar`` may have no drafter."""
    for method, spec in methods.items():
        if spec is None and method != "ar":
            raise ValueError(
                f"method {method!r} has no drafter (spec None): only 'ar' is plain decoding; give a zoo drafter "
                f"name or 'pld' (drafter_name(method, lang) knows {METHODS})"
            )


def run_group(
    drafters: Drafters,
    target,
    methods: dict,
    prompt: dict,
    *,
    gamma: int,
    temperature: float,
    seed: int,
    max_new_tokens: int,
) -> list[dict]:
    """Every method of ``methods`` (``{method: spec}``, ``ar`` first) on one prompt, back to back, outside any store
    (``recompute``): rows of ``method`` + ``_result_row``'s columns. At T = 0 raises ``AssertionError`` if a method's
    tokens differ from plain decoding's."""
    _check_methods(methods)
    setting = Setting(max_new_tokens, SamplingConfig(temperature=temperature), seed)
    rows, reference_ids = [], None
    for method, spec in methods.items():
        res = decode(drafters, target, spec, prompt["ids"], gamma=gamma, setting=setting)
        if method == "ar":
            reference_ids = res.output_ids
        elif temperature == 0 and reference_ids is not None:
            assert res.output_ids == reference_ids, (
                f"greedy {method} differs from plain decoding on {prompt['id']}: lossless SD is broken"
            )
        rows.append({"method": method, **_result_row(drafters, spec, res, reference_ids, prompt)})
    return rows


def cell(
    store,
    drafters: Drafters,
    target,
    pair: str,
    rows,
    methods: dict,
    *,
    source: str,
    gamma: int,
    temperature: float,
    seed: int,
    max_new_tokens: int,
    warm_up=None,
    batch_size: int = 1,
) -> Experiment:
    """One (pair, temperature, seed) of a grid: every method of ``methods`` (``{method: spec}``) on every prompt of
    ``rows``, back to back per prompt, plain decoding (``ar``) first: the reference whose tokens every other method's
    are compared with (``same_as_ar``; at T = 0 a difference stops the run: lossless SD is broken). Each prompt
    samples with its own seed (``prompt_seed``). ``batch_size`` > 1: each method decodes the missing prompts that
    many at a time (``batching.generate_batch``, plain decoding first): rows equal to their batch-1 runs in every
    column but the ``WALLTIME`` ones, which stay empty (they time one decode alone; ``Experiment``'s ``walltime``)."""
    _check_methods(methods)
    setting = Setting(max_new_tokens, SamplingConfig(temperature=temperature), seed, drafters.tokenizer.eos_token_id)
    reference_ids: dict = {}  # prompt id -> plain decoding's tokens, decoded in this run (or again, when stored)

    def method(name: str, spec) -> Method:
        factory = None if spec is None else lambda request: drafters.make_drafter(spec)  # a fresh PLD per decode
        on_engine = speculative(target, factory, gamma=gamma, batched=batch_size > 1)  # generate / generate_batch

        def row(request: Request, res) -> dict:
            if name == "ar":
                reference_ids[request.id] = res.output_ids
            elif "ar" in methods and request.id not in reference_ids:  # plain decoding is stored: decode it again
                plain = decode(
                    drafters, target, None, request.prompt_ids, gamma=gamma, setting=setting.for_request(request)
                )
                reference_ids[request.id] = plain.output_ids
            ref = reference_ids.get(request.id)
            if temperature == 0 and ref is not None:
                assert res.output_ids == ref, (
                    f"greedy {name} differs from plain decoding on {request.id}: lossless SD is broken"
                )
            return _result_row(drafters, spec, res, ref, request.data)

        return Method(on_engine.decode, dict(weights=drafters.weights_digest(spec)), on_engine.decode_batch, row)

    key = lambda r: dict(prompt=r["id"], request=text_digest(r["prompt"]))  # noqa: E731
    requests = [Request(r["id"], r["ids"], key(r), data=r, seed=prompt_seed(seed, r["id"])) for r in rows]
    device = next(target.parameters()).device.type
    fixed = dict(pair=pair, source=source, gamma=gamma, max_new_tokens=max_new_tokens, temperature=temperature)
    if drafters.train_seed:  # a training seed's rows (``seeds_store``): seed 0's keep their meaning without it
        fixed["train_seed"] = drafters.train_seed
    return Experiment(
        store,
        requests,
        {name: method(name, spec) for name, spec in methods.items()},
        fixed=dict(fixed, seed=seed, device=device),
        setting=setting,
        reference="ar" if "ar" in methods else None,
        row=lambda request, result: {},  # the methods' own rows (``_result_row``)
        output_column="text",
        lossless_column=None,  # ``same_as_ar`` is the committed tables' column
        warm_up=warm_up,
        provenance=results.model_provenance(target=target),
        batch_size=batch_size,
        walltime=WALLTIME,
        desc=f"{pair} T={temperature:g} seed {seed}",
    )


def grid(
    drafters: Drafters,
    store,
    prompts: dict,
    drafters_for,
    *,
    gamma: int,
    temperatures,
    seeds,
    max_new_tokens: int,
    source: str = "django",
    batch_size: int = 1,
) -> Suite:
    """A notebook table: ``drafters_for(pair)`` (``{method: spec}``) on every prompt of ``prompts`` (``{pair: rows}``)
    at every temperature (T = 0 once, T > 0 for each seed), one ``cell`` each, on ``store`` (keys ``KEYS``).
    ``context``: ``references`` (``{prompt id: reference}``) and ``target``. ``batch_size``: how many missing prompts
    a cell's method decodes at once (default 1: every new row timed alone; see the module's docstring)."""
    from specdec.multilingual.tables import references

    target = drafters.load("ml-target")
    suite = Suite(store, references=references(prompts), target=target)
    warm = []

    def warm_up():  # the first calls of a model pay one-time costs: warm every model up once, untimed
        if not warm:
            pair, rows = next(iter(prompts.items()))
            run_group(
                drafters, target, drafters_for(pair), rows[0], gamma=gamma, temperature=0.0, seed=0, max_new_tokens=8
            )
            warm.append(True)

    for pair, rows in prompts.items():
        for t in temperatures:
            for s in [GREEDY_SEED] if t == 0 else seeds:
                suite.add(
                    cell(
                        store,
                        drafters,
                        target,
                        pair,
                        rows,
                        drafters_for(pair),
                        source=source,
                        gamma=gamma,
                        temperature=t,
                        seed=s,
                        max_new_tokens=max_new_tokens,
                        warm_up=warm_up,
                        batch_size=batch_size,
                    )
                )
    return suite


def recompute(keys: list[dict], *, profile="tiny", seed_drafters=None) -> pd.DataFrame:
    """Decode the stored rows of ``keys`` (rows of ``KEYS`` plus ``drafter``, the method's spec as stored: a zoo
    name, ``pld`` or empty for plain decoding; ``weights`` may be left out) again and return the fresh rows
    (``KEYS`` + ``_result_row``'s columns; ``weights`` that of the models as they are now) in the order of ``keys``.
    Every prompt is looked up among all held-out pairs of its direction and source, with its row's seed
    (``prompt_seed``); plain decoding runs first, so ``same_as_ar`` is recomputed too, unless the key says
    ``plain_first=False`` (a grid without an ``ar`` method, as notebook 32's: its rows' ``same_as_ar`` is empty).
    The tests run this in a subprocess with another CPU vector width and demand the committed rows back (every
    column but the walltime ones). A key with ``train_seed`` k > 0 decodes with ``seed_drafters(profile, k)``
    (``seeds.recompute`` passes that seed's drafters)."""
    import torch

    torch.set_num_threads(1)
    by_seed = {0: Drafters(profile)}
    target = by_seed[0].load("ml-target")
    prompts, out = {}, []
    for key in keys:
        train_seed = int(key.get("train_seed") or 0)
        if train_seed not in by_seed and seed_drafters is None:
            raise ValueError(f"a row of training seed {train_seed}: use specdec.multilingual.seeds.recompute")
        drafters = by_seed[train_seed] = by_seed.get(train_seed) or seed_drafters(profile, train_seed)
        pair, source = str(key["pair"]), str(key["source"])
        if (pair, source) not in prompts:
            prompts[pair, source] = {r["id"]: r for r in prompt_set(drafters, source, *pair.split("-"), None)}
        prompt = prompts[pair, source][str(key["prompt"])]
        spec = key.get("drafter")
        spec = None if spec is None or (isinstance(spec, float) and np.isnan(spec)) or spec == "" else str(spec)
        methods = {str(key["method"]): spec}
        if spec is not None and key.get("plain_first", True):  # as a grid: same_as_ar compares with its output
            methods = {"ar": None, **methods}
        point = dict(
            gamma=int(key["gamma"]), temperature=float(key["temperature"]), max_new_tokens=int(key["max_new_tokens"])
        )
        rows = run_group(drafters, target, methods, prompt, seed=prompt_seed(int(key["seed"]), prompt["id"]), **point)
        # the weights and text of today: a committed row of other weights or another text does not match it
        today = {"weights": drafters.weights_digest(spec), "request": text_digest(prompt["prompt"])}
        seeded = {"train_seed": train_seed} if "train_seed" in key else {}
        out.append({**{k: key[k] for k in KEYS if k not in today}, **today, **seeded, **rows[-1]})
    return pd.DataFrame(out)


# The columns of a stored row that do not depend on the machine's speed (``recompute`` must give them back).
EXACT_COLUMNS = [
    "drafter", "new_tokens", "target_calls", "block_efficiency", "accepted", "drafted", "same_as_ar", "chrf", "text",
]  # fmt: skip


def store(profile, table: str) -> results.ResultStore:
    """A multilingual runs table (``ml_main``, ``ml_tokens``, ``ml_size``, …; keys ``KEYS``). It stands on the
    committed one (``results.COMMITTED``, read-only), so under ``make test`` (an empty ``SPECDEC_OUTPUT_DIR``)
    the notebooks read the committed runs of every held-out pair and compute only keys that are not there;
    ``tests/test_committed_results.py`` recomputes a sample of them (``recompute``)."""
    return Profile.load(profile).store(table, KEYS)


def latency_store(profile) -> results.ResultStore:
    """The ``T_q/T_p`` table of ``latency_ratios`` (keys drafter, device, S) on the committed one, like ``store``:
    the committed runs are read with the ratios measured beside them when the device is the same."""
    return Profile.load(profile).store("ml_latency", ["drafter", "device", "S"])


def latency_ratios(store, drafters: Drafters, names: list[str], context: int = 48, repeats: int = 50) -> dict:
    """``T_q/T_p`` per drafter model (one-token call at ``S = context``, ``bench.latency_ratio``).

    Drafters of one architecture cost the same, so the ratio is measured once per architecture (on its first
    drafter) and per device and kept in ``store`` (keys drafter = architecture label, device, S): one number
    per shape keeps machine noise from ranking drafters that only differ in their weights. Prompt lookup has
    no model: its ratio is 0."""
    target = drafters.load("ml-target")
    device = bench.describe_device(next(target.parameters()).device)
    shapes = {name: drafters.architecture(name) for name in names if name and name != "pld"}
    for name, shape in shapes.items():
        if not store.done(drafter=shape, device=device, S=context):
            ratio = bench.latency_ratio(target, drafters.load(name), context, repeats)
            store.append([{"drafter": shape, "device": device, "S": context, "latency_ratio": ratio}])
    frame = store.frame()
    frame = frame[(frame.device == device) & (frame.S == context)]
    by_shape = dict(zip(frame.drafter, frame.latency_ratio.astype(float)))
    out = {name: by_shape[shape] for name, shape in shapes.items()}
    out["pld"] = 0.0
    return out


@reads_frame
def translatable_set(frame: pd.DataFrame, drafters: Drafters, quantile: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Table 7's evaluation set: the held-out prompts the target demonstrably translates (the paper's target,
    Vicuna 7B, translates IWSLT14; a set it cannot translate tests nothing about the drafters).

    ``frame``: stored rows with plain decoding at T = 0 (``method`` "ar"; prompts of one ``source``). Per pair, each
    output's sentence chrF against its own reference is compared with chance: the chrF of the pair's outputs
    against the reference of another prompt of the pair (a derangement seeded by ``seed`` and the pair); a prompt is
    translatable when its chrF exceeds the ``quantile`` of that chance distribution. The set depends on the target
    alone, never on a drafter. Returns one row per prompt: pair, prompt, chrf, chance_chrf, threshold,
    translatable."""
    from specdec.multilingual.metrics import derangement

    ar = frame[(frame.method == "ar") & (frame.temperature == 0)].drop_duplicates(["pair", "prompt"])
    out = []
    for (pair, source), g in ar.groupby(["pair", "source"], sort=True):
        refs = {r["id"]: r["reference"] for r in prompt_set(drafters, source, *pair.split("-"), None)}
        texts, prompts = g.text.fillna("").tolist(), g.prompt.astype(str).tolist()
        perm = derangement(len(prompts), random.Random(f"{seed}:{pair}")) if len(prompts) > 1 else [0]
        own = [chrf(t, refs[p]) for t, p in zip(texts, prompts)]
        chance = [chrf(t, refs[prompts[j]]) for t, j in zip(texts, perm)]
        threshold = float(np.quantile(chance, quantile))
        out += [
            {
                "pair": pair,
                "prompt": p,
                "chrf": c,
                "chance_chrf": x,
                "threshold": threshold,
                "translatable": c > threshold,
            }
            for p, c, x in zip(prompts, own, chance)
        ]
    return pd.DataFrame(out)


# --------------------------------------------------------------------------------------------- notebook tables
class Table(Suite):
    """A notebook's table: ``grid``'s suite whose ``run`` returns the rows of this configuration only
    (``tables.select``: a results file holds other runs' rows too). ``context``: ``grid``'s (``references``,
    ``target``) and ``drafters``, ``prompts``, ``methods`` (``{pair: {method: spec}}``) and ``device_name``."""

    def __init__(self, suite: Suite, select, **context):
        super().__init__(suite.store, suite.experiments, **suite.context, **context)
        self.select = select

    def run(self) -> pd.DataFrame:
        return self.select(super().run())


def sweep(
    profile,
    table: str,
    prompts_for,
    drafters_for,
    *,
    gamma: int,
    temperatures=(0.0,),
    seeds=(GREEDY_SEED,),
    max_new_tokens: int,
    source: str = "django",
    batch_size: int = 1,
) -> Table:
    """The table ``table`` of a notebook on ``profile``: the ``ml-*`` names bound to it (``Drafters``; one CPU
    thread), the prompts ``prompts_for(drafters)`` (``{pair: rows}``), ``drafters_for(pair)`` (``{method: spec}``)
    on every pair, temperature and seed (``grid``), on the store of ``table`` (on the committed rows)."""
    from specdec.multilingual.tables import select

    validate.integer("gamma", gamma, minimum=1, hint="draft tokens per block")
    for t in temperatures:  # before the models load
        validate.number("temperature", t, minimum=0.0, hint="0 = greedy")
    drafters = Drafters(profile)  # which models the ml-* names stand for
    drafters.profile.use_threads()  # tiny models on a CPU: threads cost more than they give
    device_name = bench.describe_device(drafters.profile.device)
    prompts = prompts_for(drafters)
    suite = grid(
        drafters,
        store(drafters.profile, table),
        prompts,
        drafters_for,
        gamma=gamma,
        temperatures=temperatures,
        seeds=seeds,
        max_new_tokens=max_new_tokens,
        source=source,
        batch_size=batch_size,
    )
    return Table(
        suite,
        lambda frame: select(frame, prompts, gamma, temperatures, seeds, max_new_tokens),
        drafters=drafters,
        prompts=prompts,
        methods={pair: drafters_for(pair) for pair in prompts},
        device_name=device_name,
    )


def table1(
    profile, pairs, n_prompts: int | None, *, seed: int = 0, source: str = "django", table: str = "ml_main", **kw
) -> Table:
    """Tables 1 and 5 (notebook 30), or with ``source="sphinx"`` and ``table="ml_generalization"`` Table 7 (notebook
    34): every Table 1 method (``table1_drafters``) on the held-out prompts X → En of each X in ``pairs``."""
    if isinstance(pairs, str):
        raise TypeError(f"pairs must be a list of source languages, got the string {pairs!r}: pass [{pairs!r}]")
    prompts = lambda ml: {f"{x}-en": prompt_set(ml, source, x, "en", n_prompts, seed=seed) for x in pairs}  # noqa: E731
    return sweep(profile, table, prompts, table1_drafters, source=source, **kw)


def tokens(profile, lang: str, n_prompts: int | None, *, seed: int = 0, **kw) -> Table:
    """Fig. 4 (notebook 31): plain decoding, generic SpS and the finetune-budget grid of F and P-F drafters
    (``Drafters.budget_grid``) on ``lang`` → En, greedy. ``context["grid"]``: the grid."""
    grid_of = Drafters(profile).budget_grid(lang)
    methods = {"ar": None, "sps-generic": "ml-draft-generic", **dict(zip(grid_of.model, grid_of.load))}
    prompts = lambda ml: {f"{lang}-en": prompt_set(ml, "django", lang, "en", n_prompts, seed=seed)}  # noqa: E731
    out = sweep(profile, "ml_tokens", prompts, lambda p: methods, **kw)
    out.context["grid"] = grid_of
    return out


def ood(profile, drafter_langs, langs, n_prompts: int | None, *, seed: int = 0, **kw) -> Table:
    """Figs. 5 / 8 (notebook 32): the P-F drafter of each of ``drafter_langs`` on every direction between ``langs``,
    greedy. ``context["directions"]``: the directions in order."""
    for x in drafter_langs:  # each names a P-F drafter, ml-draft-pf-<x>
        validate.choice("drafter language", x, sorted(LANGUAGES), hint="a language with a P-F drafter")
    directions = [f"{a}-{b}" for a in langs for b in langs if a != b]
    methods = {f"ml-draft-pf-{x}": f"ml-draft-pf-{x}" for x in drafter_langs}
    prompts = lambda ml: {d: prompt_set(ml, "django", *d.split("-"), n_prompts, seed=seed) for d in directions}  # noqa: E731
    out = sweep(profile, "ml_ood", prompts, lambda p: methods, **kw)
    out.context["directions"] = directions
    return out


def size(profile, lang: str, n_prompts: int | None, *, seed: int = 0, **kw) -> Table:
    """Table 6 (notebook 33): plain decoding, the small and the large P-F drafter of ``lang`` → En."""
    methods = {"ar": None, "small": f"ml-draft-pf-{lang}", "large": f"ml-draft-large-pf-{lang}"}
    prompts = lambda ml: {f"{lang}-en": prompt_set(ml, "django", lang, "en", n_prompts, seed=seed)}  # noqa: E731
    return sweep(profile, "ml_size", prompts, lambda p: methods, **kw)
