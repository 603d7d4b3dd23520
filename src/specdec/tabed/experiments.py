"""TABED experiments, one per notebook table, on the one harness (``specdec.harness``).

A *setting* is one set of requests decoded by some of TABED's drafting methods (M, T, C, P and their static and
adaptive ensembles, ``algorithm.ENSEMBLES``) at one γ, window h, criterion and captioner: an ``Experiment`` whose
reference is the target's own greedy decoding (method ``AR``), so every row is marked ``lossless`` against it. Rows
are keyed by ``KEY``: the weights they ran with (``run_weights``) and the ``request_digest`` of their prompt and
pixels, so a retrained model or a regenerated suite never reuses a stored row. ``benchmark`` (notebook 10: Tables
1 / 10-14), ``weights`` (13: Fig. 3, the same runs), ``more_drafts`` (11: Table 2, the captioners), ``ablations``
(12: Table 3, the policies, γ) and ``latency_tau`` (14's fallback τ) are ``Suite``s of settings on one store
standing on the committed rows. ``latency_experiment`` (14: Table 4, Fig. 9, Remark 3) times the pair on a few
requests: walltime microbenchmarks, not requests x methods.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pandas as pd
import torch

from specdec import batching, bench, results, validate
from specdec.harness.experiment import PER_REQUEST, Experiment, Method, Request, Setting, Suite, plain, speculative
from specdec.harness.profile import Profile
from specdec.results import ResultStore
from specdec.tabed import algorithm, data, latency, tables
from specdec.tabed.captioners import CAPTIONER, captioner_model, draft_captioner, make_captioner

# the models and the runs table live in ``tabed.zoo``; named here too, where the runs are
from specdec.tabed.zoo import KEY as KEY
from specdec.tabed.zoo import REFERENCE, Pair, run_weights, store
from specdec.tabed.zoo import TINY_PAIR as TINY_PAIR
from specdec.tabed.zoo import load_vlm_pair as load_vlm_pair
from specdec.tabed.zoo import requests as requests

# a row's walltime: empty if decoded in a batch; no TABED table or finding reads it (notebook 14 times its own)
WALLTIME = ("seconds",)
BATCH_SIZE = 8  # missing requests the suites decode at once (``batching.generate_batch``; 1: one at a time)
# the columns a recompute gives back exactly (``study.TABLES``); ``block_efficiency`` to float rounding, the ensembles'
# ``weights`` to their policy's grid (tests/test_committed_results.py)
EXACT_COLUMNS = ["output", "accepted", "new_tokens", "target_calls", "lossless", "active"]


# ------------------------------------------------------------------------------------------------- methods
def run_row(request: Request, result) -> dict:
    """One stored row: the request's scenario, turn, group and images, τ and the acceptance statistics, the
    accepted tokens per block and the output; ``weights`` / ``active`` (an ensemble's) empty here. The columns are
    in the committed table's order (a store standing on it appends rows with the same header)."""
    r = request.data
    return dict(
        scenario=r["scenario"],
        turn=r["turn"],
        group=data.GROUP[r["scenario"]],
        n_images=len(r["images"]),
        new_tokens=result.new_tokens,
        target_calls=result.target_calls,
        block_efficiency=result.block_efficiency,
        acceptance_rate=result.acceptance_rate,
        lossless=None,  # the harness marks it; here for the committed table's column order
        seconds=result.total_time,
        accepted=json.dumps(result.accepted_per_block),
        output=json.dumps(result.output_ids),
        active="",
        weights="",
    )


def tabed_method(
    pair: Pair, name: str, *, gamma: int, window, criterion: str, captioner: str, batched: bool = False
) -> Method:
    """TABED's drafting method ``name`` (``algorithm.make_drafter``) on the engine. Settings a method does not use
    are ``"-"`` in its key (so they never split its rows): window / criterion for non-adaptive methods (``window``
    "ALL" = every past block; ``criterion`` of MTCP* is its divergence), the captioner for non-caption ones. Its
    rows add the per-block weights it chose and the drafting rows it kept active. ``batched``: it may decode several
    requests at once, each with its own drafter (``batching.generate_batch``; every method of ``ENSEMBLES`` can)."""
    adaptive, caption = name.endswith("*"), "C" in algorithm.ENSEMBLES[name]
    options = {"window": None if window == "ALL" else int(window)} if adaptive else {}
    if name == "MTCP*":
        options["divergence"] = criterion
    elif name == "MT*":
        options["criterion"] = criterion
    drafters = {}  # request id -> its drafter, until its row is written

    def factory(request: Request):
        captions = make_captioner(captioner, pair.draft, pair.processor) if caption else None
        drafter = algorithm.make_drafter(pair.draft, name, pair.tokenizer, captioner=captions, **options)
        drafters[request.id] = drafter
        return drafter

    def row(request: Request, result) -> dict:
        drafter = drafters.pop(request.id)
        weights = [[round(w, 3) for w in ws] for ws in getattr(drafter, "weight_log", [])]
        return dict(weights=json.dumps(weights), active="".join(drafter.make_rows.active))

    params = dict(
        window=window if adaptive else "-",
        criterion=criterion if adaptive else "-",
        captioner=captioner if caption else "-",
        model_weights=run_weights(pair.target, pair.draft, name, captioner),
    )
    batch = PER_REQUEST if batched else False
    return dataclasses.replace(speculative(pair.target, factory, gamma=gamma, batched=batch, **params), row=row)


def setting(
    store: ResultStore,
    pair: Pair,
    rows,
    methods,
    *,
    gamma: int = 5,
    max_new_tokens: int = 128,
    window: int | str | None = None,
    criterion: str = "kl",
    captioner: str = CAPTIONER,
    desc: str = "",
    batch_size: int = 1,
    fixed: dict | None = None,
) -> Experiment:
    """Every request of ``rows`` decoded by the target alone (``AR``, the reference) and by every method of
    ``methods`` at one setting; one stored row per (method, settings, request). ``window`` (h, ``None`` = ALL) and
    ``criterion`` configure the adaptive ensembles; ``captioner``: see ``captioners.make_captioner``.
    ``batch_size`` > 1: each method decodes that many missing requests at once; their rows are the B = 1 rows with
    ``seconds`` empty (``WALLTIME``); requests a batch cannot take (LLaVA-NeXT tiles) run at B = 1. ``fixed``: more key
    columns shared by every row (a store with more keys than ``KEY``)."""
    check_options(methods, [gamma], [window], [criterion], max_new_tokens)
    window = "ALL" if window in (None, "ALL") else int(window)
    requests = pair.requests(rows)
    if not all(batching.batchable(r.target_inputs) for r in requests):
        batch_size = 1
    batched = batch_size > 1
    ar = plain(
        pair.target,
        window="-",
        criterion="-",
        captioner="-",
        model_weights=run_weights(pair.target, None, "AR"),
        batched=PER_REQUEST if batched else False,
    )
    options = dict(gamma=gamma, window=window, criterion=criterion, captioner=captioner, batched=batched)
    return Experiment(
        store,
        requests,
        {REFERENCE: ar, **{m: tabed_method(pair, m, **options) for m in methods}},
        fixed=dict(max_new_tokens=max_new_tokens, device=pair.target.device.type, **(fixed or {})),
        setting=Setting(max_new_tokens, eos_token_id=pair.tokenizer.eos_token_id),
        reference=REFERENCE,
        row=run_row,
        provenance=results.model_provenance(target=pair.target, draft=pair.draft),
        batch_size=batch_size,
        walltime=WALLTIME,
        desc=desc or "tabed",
    )


def check_options(methods=(), gammas=(), windows=(), criteria=(), max_new_tokens: int = 1) -> None:
    """One clear error, before any model loads, for a drafting method ``algorithm.ENSEMBLES`` lacks (with the closest
    name), a γ or ``max_new_tokens`` below 1, a window h that is neither "ALL" nor an integer >= 1, or a weight
    criterion / divergence ``algorithm.make_drafter`` does not know."""
    if isinstance(methods, str):
        methods = [methods]  # one method, never its characters
    for m in methods:
        validate.choice("TABED method", m, list(algorithm.ENSEMBLES), hint="a column of Tables 1-3")
    for g in gammas:
        validate.integer("gamma", g, minimum=1, hint="draft tokens per block")
    for h in windows:
        if h not in (None, "ALL"):
            validate.integer("window", h, minimum=1, hint='past blocks the weights read; "ALL" for every one')
    for c in criteria:
        validate.choice("criterion", c, ("hard", "kl", "tvd", "hard+kl"))
    validate.integer("max_new_tokens", max_new_tokens, minimum=1)


# ------------------------------------------------------------------------------------------------- tables
def benchmark(
    profile,
    *,
    pair: str = "",
    methods=tables.TABLE1,
    n_per_scenario: int = 20,
    n_ood: int | None = None,
    n_second: int | None = None,
    gamma: int = 5,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
) -> Suite:
    """Tables 1 / 10-14 (notebook 10) and Fig. 3 (13): ``methods`` on every (scenario, turn) of the suite.
    ``context``: ``pair`` (the loaded ``Pair``), ``requests`` (the suite rows), ``rests`` (what each second turn's
    answer rests on, ``data.rests_on``). ``batch_size``: missing requests decoded at once (``setting``; as in
    ``more_drafts`` and ``ablations``: their tables read τ, α, tokens and weights, never ``seconds``)."""
    check_options(methods, [gamma], max_new_tokens=max_new_tokens)
    loaded = Pair.load(profile, pair)
    rows = loaded.suite(n_per_scenario, seed, answer_tokens=max_new_tokens, n_ood=n_ood, n_second=n_second)
    runs = loaded.store()
    experiment = setting(runs, loaded, rows, methods, gamma=gamma, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return Suite(runs, [experiment], pair=loaded, requests=rows, rests=data.rests_on(rows))


def weights(profile, **options) -> Suite:
    """Fig. 3 (notebook 13): the per-block weights MT* chose, read from ``benchmark``'s runs (the same keys, so
    nothing is decoded twice); ``options`` as ``benchmark``'s."""
    return benchmark(profile, **options)


def more_drafts(
    profile,
    *,
    pair: str = "",
    methods=tables.ALL_METHODS,
    captioner: str = CAPTIONER,
    compare_captioners=("draft", "oracle"),
    n_compare: int = 5,
    n_per_scenario: int = 20,
    n_ood: int | None = None,
    gamma: int = 5,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
) -> Suite:
    """Table 2 and the caption rows (notebook 11): every method with ``captioner``, then C and MTCP* with each of
    ``compare_captioners`` on the first ``n_compare`` requests of every cell (``"oracle"``, the generator's true
    captions, only where the data are generated). ``context``: ``pair``, ``requests``, ``compare`` (the compared
    requests), ``captioners`` (those compared)."""
    check_options(methods, [gamma], max_new_tokens=max_new_tokens)
    loaded = Pair.load(profile, pair)
    rows = loaded.suite(n_per_scenario, seed, answer_tokens=max_new_tokens, n_ood=n_ood)
    compare = loaded.suite(n_compare, seed, answer_tokens=max_new_tokens)
    others = [c for c in compare_captioners if c != "oracle" or loaded.profile.data_source == "generated"]
    runs = loaded.store()
    options = dict(gamma=gamma, max_new_tokens=max_new_tokens, batch_size=batch_size)
    suite = Suite(runs, pair=loaded, requests=rows, compare=compare, captioners=others)
    suite.add(setting(runs, loaded, rows, methods, captioner=captioner, **options))
    for other in others:
        suite.add(setting(runs, loaded, compare, ["C", "MTCP*"], captioner=other, desc=f"captioner {other}", **options))
    return suite


def ablations(
    profile,
    *,
    pair: str = "",
    n_per_scenario: int = 20,
    n_ood: int | None = None,
    n_sweeps: int = 20,
    windows=(1, 4, 16, "ALL"),
    criteria=("hard", "kl", "tvd", "hard+kl"),
    divergences=("kl", "tvd"),
    gammas=(1, 3, 5, 7),
    gamma_methods=("M", "T", "MT*"),
    gamma: int = 5,
    max_new_tokens: int = 128,
    seed: int = 0,
    batch_size: int = BATCH_SIZE,
) -> Suite:
    """Table 3 and the sweeps (notebook 12): MT* and MTCP* at every window h on the suite, then on the first
    ``n_sweeps`` requests of every cell MT* under every weight policy, MTCP* under every divergence and
    ``gamma_methods`` at every γ. ``context``: ``pair``, ``requests``, ``sweep_requests``."""
    check_options(gamma_methods, [gamma, *gammas], windows, [*criteria, *divergences], max_new_tokens)
    loaded = Pair.load(profile, pair)
    rows = loaded.suite(n_per_scenario, seed, answer_tokens=max_new_tokens, n_ood=n_ood)
    sweep = loaded.suite(n_sweeps, seed, answer_tokens=max_new_tokens)  # the first requests of every cell
    runs = loaded.store()
    suite = Suite(runs, pair=loaded, requests=rows, sweep_requests=sweep)
    at = dict(gamma=gamma, max_new_tokens=max_new_tokens, batch_size=batch_size)
    for h in windows:
        suite.add(setting(runs, loaded, rows, ["MT*", "MTCP*"], window=h, desc=f"h={h}", **at))
    for criterion in criteria:
        suite.add(setting(runs, loaded, sweep, ["MT*"], criterion=criterion, desc=f"MT* {criterion}", **at))
    for divergence in divergences:
        suite.add(setting(runs, loaded, sweep, ["MTCP*"], criterion=divergence, desc=f"MTCP* {divergence}", **at))
    for g in gammas:
        options = dict(max_new_tokens=max_new_tokens, batch_size=batch_size)
        suite.add(setting(runs, loaded, sweep, gamma_methods, gamma=g, desc=f"γ={g}", **options))
    return suite


def latency_tau(pair: Pair, *, n_per_scenario: int = 1, gamma: int = 5, max_new_tokens: int = 32, seed: int = 0):
    """Notebook 14's fallback τ, where the runs table lacks the benchmark rows: every method on ``n_per_scenario``
    requests of every benchmark scenario, first and second turns (table ``tabed_latency_tau``)."""
    scenarios = [s for s, g in data.GROUP.items() if g == "benchmark"]
    rows = pair.suite(n_per_scenario, seed, scenarios=scenarios, answer_tokens=max_new_tokens)
    runs = pair.store("tabed_latency_tau")
    options = dict(gamma=gamma, max_new_tokens=max_new_tokens, desc="τ (fallback)")
    return Suite(runs, [setting(runs, pair, rows, tables.ALL_METHODS, **options)])


# ------------------------------------------------------------------------------------------------- latency
@dataclass
class LatencyRows:
    """Notebook 14's timed rows (``latency``): Table 4's caption vs prefill, Fig. 9's components, Remark 3's steps."""

    captions: pd.DataFrame
    components: pd.DataFrame
    steps: pd.DataFrame


class Latency:
    """Notebook 14: walltime microbenchmarks of a LLaVA pair on ``per_count`` first-turn requests per number of
    images (``latency.encode_requests``), not requests x methods. ``run`` measures each table once (``latency.stored``:
    keyed by the device label and the settings; a rerun reads the rows back); ``tau`` is the τ per method of
    Eq. (1)."""

    def __init__(self, pair: Pair, *, per_count: int, image_counts, seed: int, captioner: str, repeats: dict):
        self.pair, self.captioner, self.repeats, self.seed = pair, captioner, repeats, seed
        self.device_name = bench.describe_device(pair.profile.device)
        scenarios = [latency.SCENARIO_BY_IMAGES[n] for n in image_counts]
        suite = data.load_suite(pair.profile, n_per_scenario=per_count, seed=seed, scenarios=scenarios, turns=(1,))
        self.requests = latency.encode_requests(pair.processor, suite, counts=image_counts, per_count=per_count)
        self.setting = {"device": self.device_name, "per_count": per_count, "image_counts": str(image_counts)}

    def stored(self, table: str, key: dict, compute, **models) -> pd.DataFrame:
        return latency.stored(self.pair.profile.name, table, {**self.setting, **key}, compute, models=models)

    def captions(self) -> pd.DataFrame:
        """Table 4: the captioner over a request's images (not memoised) against the target's prefill."""
        target, draft, processor, n = self.pair.target, self.pair.draft, self.pair.processor, self.repeats["caption"]
        to_pixels = lambda images: processor.image_processor(images, return_tensors="pt")["pixel_values"]  # noqa: E731
        model = captioner_model(self.captioner, draft)
        fresh = draft_captioner(model, processor.tokenizer, to_pixels)
        return self.stored(
            "tabed_latency_caption",
            {"captioner": self.captioner, "repeats": n},
            lambda: latency.caption_vs_prefill(target, fresh, self.requests, n, name=self.captioner),
            target=target,
            captioner=model,
        )

    def components(self, max_new_tokens: int = 100) -> pd.DataFrame:
        """Fig. 9: vision encoder, prefill and decode of ``max_new_tokens`` greedy target tokens per request."""
        target, n = self.pair.target, self.repeats["components"]
        return self.stored(
            "tabed_latency_components",
            {"repeats": n, "max_new_tokens": max_new_tokens, "target": results.model_fingerprint(target)},
            lambda: latency.component_times(target, self.requests, max_new_tokens, n),
            target=target,
        )

    def steps(self, m_values=(1, 2, 3, 4)) -> pd.DataFrame:
        """Remark 3: a draft decode step with m TABED rows in one batch, the M row alone and a target step."""
        target, draft, n = self.pair.target, self.pair.draft, self.repeats["steps"]
        memo = make_captioner(self.captioner, draft, self.pair.processor)  # the C row's captions (untimed here)
        return self.stored(
            "tabed_latency_steps",
            {"repeats": n, "draft": results.model_fingerprint(draft)},
            lambda: latency.decode_step_times(
                target, draft, self.pair.tokenizer, self.requests, m_values, n, captioner=memo
            ),
            target=target,
            draft=draft,
        )

    def run(self, max_new_tokens: int = 100, m_values=(1, 2, 3, 4)) -> LatencyRows:
        """Every timed table (each measured once, then read back)."""
        return LatencyRows(self.captions(), self.components(max_new_tokens), self.steps(m_values))

    def tau(self, methods, *, gamma: int = 5, n_per_scenario: int = 1, max_new_tokens: int = 32):
        """``(τ per method, its source)``: notebooks 10-13's runs, else a small subset run here (``latency_tau``)."""
        options = dict(n_per_scenario=n_per_scenario, gamma=gamma, max_new_tokens=max_new_tokens, seed=self.seed)
        fallback = lambda: latency_tau(self.pair, **options).run()  # noqa: E731
        weights = {m: run_weights(self.pair.target, self.pair.draft, m) for m in methods}
        return latency.block_efficiencies(store(self.pair.profile), methods, weights, fallback)


def latency_experiment(
    profile: Profile,
    pair: str = "",
    *,
    per_count: int = 2,
    image_counts=(1, 2, 5),
    seed: int = 0,
    captioner: str = CAPTIONER,
    caption_repeats: int = 3,
    component_repeats: int = 5,
    step_repeats: int = 12,
) -> Latency:
    """Notebook 14's experiment on ``pair`` of the profile (``""``: its default), one thread on a CPU."""
    torch.manual_seed(seed)
    repeats = dict(caption=caption_repeats, components=component_repeats, steps=step_repeats)
    loaded = Pair.load(profile, pair)
    return Latency(
        loaded, per_count=per_count, image_counts=image_counts, seed=seed, captioner=captioner, repeats=repeats
    )


# ------------------------------------------------------------------------------------------------- re-checking
def recompute(keys: list[dict], *, profile: str = "tiny", n_per_scenario: int | None = None) -> pd.DataFrame:
    """Decode the stored runs of ``keys`` (rows of ``KEY`` columns, e.g. a sample of the committed table) again and
    return the fresh rows (today's keys) as a DataFrame in the order of ``keys``.

    The tests run this in a subprocess with another CPU vector width (``ATEN_CPU_CAPABILITY``,
    ``MKL_ENABLE_INSTRUCTIONS``) and demand the committed rows back: a result that depends on the machine's
    float rounding, or on code changed since the table was written, fails there instead of in nbval on CI."""
    pair = Pair.load(profile)
    # suite rows do not depend on n, so the largest index among the keys' row ids is enough
    n_per_scenario = n_per_scenario or 1 + max(int(str(k["row"]).rsplit("-", 1)[1]) for k in keys)
    rows = {r["id"]: r for r in pair.suite(n_per_scenario, seed=0)}
    runs = pair.store()
    groups: dict[tuple, list[int]] = {}  # setting -> positions of its keys
    for i, key in enumerate(keys):
        names = ("gamma", "window", "criterion", "captioner", "max_new_tokens")
        groups.setdefault(tuple(str(key[k]) for k in names), []).append(i)
    fresh: dict[int, dict] = {}
    for (gamma, window, criterion, captioner, max_new_tokens), positions in groups.items():
        group = [keys[i] for i in positions]
        options = dict(
            gamma=int(gamma),
            max_new_tokens=int(max_new_tokens),
            window=None if window in ("ALL", "-") else int(window),
            criterion=criterion if criterion != "-" else "kl",
            captioner=captioner if captioner != "-" else CAPTIONER,
        )
        methods = list(dict.fromkeys(str(k["method"]) for k in group))
        wanted = [rows[r] for r in dict.fromkeys(str(k["row"]) for k in group)]
        frame = setting(runs, pair, wanted, methods, **options).recompute(group)
        fresh.update(zip(positions, frame.to_dict("records")))
    return pd.DataFrame([fresh[i] for i in range(len(keys))])


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "BATCH_SIZE",
    "Latency",
    "WALLTIME",
    "ablations",
    "benchmark",
    "check_options",
    "latency_experiment",
    "more_drafts",
    "recompute",
    "setting",
    "weights",
]
