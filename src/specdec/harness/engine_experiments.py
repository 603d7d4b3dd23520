"""The engine notebooks' experiments (00 quickstart, 01 theory and latency), on the one harness.

They measure the core (``specdec.engine``, ``batching``, ``bench``, ``speed``) rather than a paper, so they live
here, above the core: the core may not import the harness (``tests/test_import_graph.py``), and no paper owns them.
Their verdicts are the core's ``specdec.engine_findings``.

- ``quickstart``: one prompt, speculative decoding beside plain decoding, one stored row with both (table
  ``quickstart``); the two generations stay at hand for the notebook's highlighted text and histogram.
- ``tau_vs_gamma``: held-out prompts x (draft, γ), greedy, one row per prompt (table ``tau_vs_gamma``).
- ``latency_grid``, ``latency_ratios``, ``real_size_latency``, ``engine_efficiency``, ``batched_throughput``,
  ``step_profile``: walltime microbenchmarks, not requests x methods; each stores its rows under a key holding
  the device label, and a rerun reads them back (timings are measured once).

``Engine`` is what they share: a profile's target, the drafts of some of its pairs and the device label.

The τ sweep's store stands on the committed rows (``base=COMMITTED``, as TABED's runs): run with
``SPECDEC_OUTPUT_DIR`` pointing elsewhere (nbval), notebook 01 reads the committed sweep and decodes only keys it
lacks (another γ, prompt count or draft), and ``tests/test_committed_results.py`` decodes a seeded sample of it
again (``recompute_sweep``). The other stores stand on no base (``base=None``): there every row is computed again,
and the checked outputs compare them with the committed ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd
import torch

from specdec import bench, engine, results, speed
from specdec.harness.engine_zoo import zoo_for
from specdec.harness.experiment import Decoded, Experiment, Method, Request, Setting, speculative
from specdec.harness.profile import Profile
from specdec.results import model_provenance
from specdec.sampling import SamplingConfig
from specdec.zoo import tasks
from specdec.zoo.models import load_profile, pair_weights

QUICKSTART_KEY = ["pair", "weights", "prompt_id", "prompts", "gamma", "temperature", "seed", "max_new_tokens", "device"]
TAU_KEY = ["draft", "weights", "gamma", "n_prompts", "prompts", "max_new_tokens", "prompt"]
LATENCY_KEY = ["model", "device", "B", "S", "gamma"]
# every setting that changes the numbers is a key: a 32-token run must never show the 16-token run's rows
SPEED_KEY = ["pair", "weights", "prompts", "gamma", "device", "max_new_tokens", "repeats", "latency_repeats"]


# ------------------------------------------------------------------------------------------------ 00 quickstart
@dataclass
class SideBySide:
    """Speculative decoding (``sd``) and plain decoding (``ar``) of one prompt: a ``Decoded`` whose tokens are the
    speculative ones."""

    sd: engine.GenerationResult
    ar: engine.GenerationResult

    @property
    def output_ids(self) -> list[int]:
        return self.sd.output_ids

    def summary(self) -> dict:
        return self.sd.summary()


class Quickstart(Experiment):
    """Notebook 00: one prompt of a profile's pair, speculative beside plain decoding, one stored row with both
    (τ, α, lossless and their wall times; a rerun keeps the first measurement). ``generations`` decodes the two
    live (deterministic under greedy decoding) for what the row does not hold (draft calls, tokens fed, the
    accepted tokens per block)."""

    def __init__(self, profile: Profile, pair: str, text: str, prompt_key: str, gamma: int, setting: Setting):
        self.target, self.draft, self.tokenizer = profile.load_pair(pair)
        setting = dataclasses.replace(setting, eos_token_id=self.tokenizer.eos_token_id)
        self.gamma = gamma
        self.device_name = bench.describe_device(profile.device)
        request = Request(prompt_key, tasks.encode(self.tokenizer, text), key=dict(prompt_id=prompt_key))
        fixed = dict(
            pair=pair,
            weights=pair_weights(profile.name, pair),  # a retrained model never reuses old rows
            prompts=tasks.text_digest(text),
            gamma=gamma,
            temperature=setting.sampling.temperature,
            seed=setting.seed,
            max_new_tokens=setting.max_new_tokens,
            device=self.device_name,
        )
        super().__init__(
            profile.store("quickstart", QUICKSTART_KEY, base=None),
            [request],
            {"sd": Method(decode=lambda request, setting: self.generations, params={})},
            fixed=fixed,
            setting=setting,
            reference=None,
            row=self.quickstart_row,
            provenance=model_provenance(target=self.target, draft=self.draft),  # the ids, in each row's provenance
        )

    @cached_property
    def generations(self) -> SideBySide:
        """Both decodes of the prompt, on this machine now."""
        request, s = self.requests[0], self.setting
        common: dict[str, Any] = dict(
            max_new_tokens=s.max_new_tokens, sampling=s.sampling, seed=s.seed, eos_token_id=s.eos_token_id
        )
        sd = engine.generate(self.target, request.prompt_ids, self.draft, gamma=self.gamma, **common)
        return SideBySide(sd, engine.autoregressive(self.target, request.prompt_ids, **common))

    @property
    def result(self) -> engine.GenerationResult:
        return self.generations.sd

    @property
    def baseline(self) -> engine.GenerationResult:
        return self.generations.ar

    def quickstart_row(self, request: Request, both: Decoded) -> dict:
        """The stored columns: τ, α, lossless (empty under sampling) and the wall times of both decodes."""
        assert isinstance(both, SideBySide)  # the one method's decode returns ``generations``
        sd, ar = both.sd, both.ar
        return {
            "new_tokens": sd.new_tokens,
            "target_calls": sd.target_calls,
            "block_efficiency": sd.block_efficiency,
            "acceptance_rate": sd.acceptance_rate,
            "lossless": sd.output_ids == ar.output_ids if self.setting.greedy else "",
            "draft_seconds": sd.draft_time,
            "verify_seconds": sd.verify_time,
            "total_seconds": sd.total_time,
            "autoregressive_seconds": ar.total_time,
        }


def quickstart(
    profile: Profile,
    pair: str = "default",
    prompt_id: str = "prose-003",
    prompt_text: str = "",
    *,
    gamma: int = 5,
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    seed: int = 0,
) -> Quickstart:
    """Notebook 00's experiment: held-out prompt ``prompt_id``, or ``prompt_text`` where given (keyed by a hash of
    its text, so two different texts never share a row). Stops at the target's end-of-sequence token."""
    text = prompt_text or next(p["prompt"] for p in tasks.heldout_prompts() if p["id"] == prompt_id)
    key = f"custom-{hashlib.sha256(prompt_text.encode()).hexdigest()[:12]}" if prompt_text else prompt_id
    setting = Setting(max_new_tokens, SamplingConfig(temperature=temperature), seed)
    profile.pin_threads()  # before the device label of its row is taken
    return Quickstart(profile, pair, text, key, gamma, setting)


# ------------------------------------------------------------------------------------------- 01: the models
@dataclass
class Engine:
    """A profile's target and the drafts of ``pairs`` (which share the first pair's target), on its device.
    ``device_name``: the device label of timed rows (``bench.describe_device``, taken at load: on a CPU it names
    the thread count)."""

    profile: Profile
    pairs: list[str]
    target: torch.nn.Module
    tokenizer: object
    drafts: dict = field(repr=False)  # pair -> draft model
    device_name: str = ""
    train_seeds: tuple[int, ...] = ()  # its zoo's training seeds k > 0 (``engine_zoo``; ``engine_seeds``)

    @classmethod
    def load(cls, profile: Profile, pairs: list[str]) -> Engine:
        profile.pin_threads()  # before the device label is taken
        loaded = {name: profile.load_pair(name) for name in pairs}
        target, _, tokenizer = loaded[pairs[0]]
        drafts = {name: loaded[name][1] for name in pairs}
        seeds = zoo_for(profile).train_seeds
        return cls(profile, list(pairs), target, tokenizer, drafts, bench.describe_device(profile.device), seeds)

    def spec(self, pair: str) -> dict:
        """The profile yaml's entry of ``pair`` (``target``, ``draft``: model names)."""
        return self.profile.spec["pairs"][pair]

    def draft_names(self) -> dict:
        """``{pair: its draft's name}``."""
        return {p: self.spec(p)["draft"] for p in self.pairs}

    def named_models(self) -> dict:
        """``{model name: model}``: the target, then every draft."""
        return {
            self.spec(self.pairs[0])["target"]: self.target,
            **{self.spec(p)["draft"]: self.drafts[p] for p in self.pairs},
        }

    def weights(self, pair: str) -> str:
        """The weights digest of ``pair`` (target + draft): a retrained model never reuses old rows."""
        return pair_weights(self.profile.name, pair)

    def prompts(self, per_kind: int) -> tuple[list[torch.Tensor], str]:
        """``per_kind`` held-out prompts of each kind, encoded, and the digest of their texts."""
        texts = [p["prompt"] for p in tasks.heldout_prompts(n=per_kind)]
        return [tasks.encode(self.tokenizer, t).to(self.profile.device) for t in texts], tasks.text_digest(*texts)


# -------------------------------------------------------------------------------------- 01 (b): τ against γ
def acceptance_row(request: Request, result) -> dict:
    """A ``tau_vs_gamma`` row: the tokens and target calls of one decode, accepted and drafted tokens."""
    return {
        "new_tokens": result.new_tokens,
        "target_calls": result.target_calls,
        "accepted": sum(result.accepted_per_block),
        "drafted": sum(result.drafted_per_block),
    }


def tau_vs_gamma(eng: Engine, *, n_per_kind: int = 20, gammas=(1, 2, 3, 4, 6, 8), max_new_tokens: int = 48):
    """Notebook 01 (b): ``n_per_kind`` held-out prompts of each kind x every draft of ``eng`` x ``gammas``, greedy,
    ``max_new_tokens`` tokens whatever the end-of-sequence token; one row per prompt (column ``prompt``: its index,
    so that findings can resample prompts). Batched 16 prompts at a time (``batching.generate_batch``, whose rows
    equal the batch-1 runs)."""
    prompts, texts = eng.prompts(n_per_kind)
    requests = [
        Request(str(i), ids, key=dict(prompt=i, n_prompts=len(prompts), prompts=texts), seed=i)
        for i, ids in enumerate(prompts)
    ]
    methods = {}
    for pair, name in eng.draft_names().items():
        factory = lambda request, draft=eng.drafts[pair]: draft  # noqa: E731
        for g in gammas:
            methods[f"{name} γ={g}"] = speculative(
                eng.target, factory, gamma=g, batched=True, draft=name, weights=eng.weights(pair)
            )
    return Experiment(
        eng.profile.store("tau_vs_gamma", TAU_KEY, base=results.COMMITTED),
        requests,
        methods,
        fixed=dict(max_new_tokens=max_new_tokens),
        setting=Setting(max_new_tokens=max_new_tokens, eos_token_id=[]),
        reference=None,
        row=acceptance_row,
        lossless_column=None,
        batch_size=16,
        desc="τ vs γ",
    )


# notebook 01's settings of (b), those of the committed sweep (``engine_seeds`` runs every training seed at them)
NOTEBOOK_SWEEP: dict[str, Any] = dict(n_per_kind=20, gammas=[1, 2, 3, 4, 6, 8], max_new_tokens=48)
NOTEBOOK_PAIRS = ["default", "xs"]


TAU_EXACT = ["new_tokens", "target_calls", "accepted", "drafted"]  # what a recompute gives back (``papers.ENGINE``)


def recompute_sweep(keys, *, profile: str = "tiny") -> pd.DataFrame:
    """Decode the runs of stored ``tau_vs_gamma`` ``keys`` of ``profile`` again at notebook 01's settings there (its
    defaults under the profile's ``notebook_params``) for the committed-results test, through ``papers.ENGINE``'s
    table; fresh rows in the order of ``keys``."""
    loaded = Profile.load(profile, "cpu")
    own = loaded.notebook_params("01_")
    eng = Engine.load(loaded, own.get("pairs", NOTEBOOK_PAIRS))
    return tau_vs_gamma(eng, **{k: own.get(k, v) for k, v in NOTEBOOK_SWEEP.items()}).recompute(keys)


def pooled_tau(frame: pd.DataFrame) -> pd.DataFrame:
    """τ and α per draft and γ pooled over prompts, and the i.i.d. β each τ implies (``bench.iid_acceptance``)."""
    tau = pd.DataFrame(bench.pool_acceptance(frame.to_dict("records")))
    return tau.assign(iid_beta=[bench.iid_acceptance(t, g) for t, g in zip(tau.block_efficiency, tau.gamma)])


# ----------------------------------------------------------------------------------- 01 (c): latency grids
def latency_grid(eng: Engine, batch_sizes, contexts, gammas, repeats: int = 10) -> pd.DataFrame:
    """T(B, S, γ) of the target and every draft on this device (table ``latency_grid``; ``bench.forward_latency``,
    median over ``repeats``), the rows of this device label."""
    named = eng.named_models()
    store = eng.profile.store("latency_grid", LATENCY_KEY, base=None)
    keys = [
        {"model": m, "device": eng.device_name, "B": b, "S": s, "gamma": k}
        for m in named
        for b in batch_sizes
        for s in contexts
        for k in gammas
    ]
    store.run(
        keys,
        lambda model, device, B, S, gamma: {
            "seconds": bench.forward_latency(named[model], B, S, gamma, repeats=repeats)
        },
        desc="T(B,S,γ)",
    )
    grid = store.frame()
    return grid[grid.device == eng.device_name]


def latency_ratios(eng: Engine, repeats: int = 20, context: int = 128) -> pd.DataFrame:
    """T_q/T_p of every draft against the target at context ``context`` (table ``latency_ratio``)."""
    named = eng.named_models()
    store = eng.profile.store("latency_ratio", ["draft", "device", "S"], base=None)
    store.run(
        [{"draft": d, "device": eng.device_name, "S": context} for d in eng.draft_names().values()],
        lambda draft, device, S: {
            "T_q/T_p (measured)": bench.latency_ratio(eng.target, named[draft], context=S, repeats=repeats)
        },
        desc="T_q/T_p",
    )
    ratios = store.frame()
    return ratios[ratios.device == eng.device_name]


def real_size_latency(profile: Profile, measure: bool, *, batch_sizes, gammas, repeats: int = 10) -> pd.DataFrame:
    """T(B, S, γ) of random-weight models of real sizes (``paper.yaml``'s ``latency_configs``, fp16, S = 128 and
    1024; table ``latency_real_sizes``): measured first where ``measure`` and a CUDA GPU is here, else the stored
    rows (every device's)."""
    store = profile.store("latency_real_sizes", LATENCY_KEY, base=None)
    if measure and torch.cuda.is_available():
        configs = load_profile("paper")["latency_configs"]
        bench.real_size_latency(
            store, configs, batch_sizes=batch_sizes, contexts=[128, 1024], gammas=gammas, repeats=repeats
        )
    return store.frame()


# ----------------------------------------------------------------------------- 01 (d): engine efficiency
def measure_efficiency(eng: Engine, pair: str, prompts, key: dict, rows_store) -> dict:
    """One ``engine_efficiency`` row: T_q/T_p, the verification cost T(1, 128, γ+1) / T(1, 128, 1) and the
    per-prompt timings of plain and speculative decoding alternating (``bench.speedup_rows``), summarised by
    ``bench.summarize_speedup``; the timings are stored in ``rows_store`` under the same key."""
    target, draft, gamma, n = eng.target, eng.drafts[pair], key["gamma"], key["latency_repeats"] * 2
    ratio = bench.latency_ratio(target, draft, context=128, repeats=n)
    verify_cost = bench.forward_latency(target, 1, 128, gamma + 1, repeats=n) / bench.forward_latency(
        target, 1, 128, 1, repeats=n
    )
    rows = bench.speedup_rows(
        target,
        draft,
        prompts,
        gamma=gamma,
        max_new_tokens=key["max_new_tokens"],
        repeats=key["repeats"],
        eos_token_id=[],
    )
    rows_store.append([{**r, **key} for r in rows])  # the key wins: a row's own `gamma` is 0 for AR
    return bench.summarize_speedup(rows, gamma, ratio, verify_cost)


def engine_efficiency(
    eng: Engine,
    *,
    per_kind: int = 4,
    gamma: int = 5,
    max_new_tokens: int = 48,
    repeats: int = 3,
    latency_repeats: int = 10,
) -> tuple[pd.DataFrame, dict]:
    """Notebook 01 (d): per pair, measured walltime speedup ÷ the Eq. (1) prediction (table ``engine_efficiency``)
    and the per-prompt timings behind it, written in the same call (table ``engine_speed_rows``: side by side,
    one machine state). Returns ``(summary rows of this run's settings, {pair: its timing rows})``."""
    prompts, texts = eng.prompts(per_kind)
    summary = eng.profile.store("engine_efficiency", SPEED_KEY, base=None)
    timings = eng.profile.store("engine_speed_rows", SPEED_KEY, base=None)
    keys = [
        dict(
            pair=p,
            weights=eng.weights(p),
            prompts=texts,
            gamma=gamma,
            device=eng.device_name,
            max_new_tokens=max_new_tokens,
            repeats=repeats,
            latency_repeats=latency_repeats,
        )
        for p in eng.pairs
    ]
    summary.run(keys, lambda **key: measure_efficiency(eng, key["pair"], prompts, key, timings), desc="speedup")
    eff = summary.frame(requested=True)  # this run's settings only
    eff = eff[(eff.device == eng.device_name) & (eff.prompts == texts)]
    eff = eff[eff.weights == eff.pair.map({p: eng.weights(p) for p in eng.pairs})]
    timed = timings.frame()
    by_pair = {}
    for r in eff.itertuples():
        part = timed[(timed.pair == r.pair) & (timed.weights == r.weights) & (timed.prompts == r.prompts)]
        part = part[(part.gamma == r.gamma) & (part.device == r.device) & (part.max_new_tokens == r.max_new_tokens)]
        by_pair[r.pair] = part[(part.repeats == r.repeats) & (part.latency_repeats == r.latency_repeats)]
    return eff, by_pair


# --------------------------------------------------------------------------- 01 (e): batched decoding, a step
def one_thread_key(eng: Engine, *, n_prompts: int, batch_sizes, gamma: int, repeats: int) -> tuple[dict, list]:
    """``(key, prompts)`` of (e): the first pair on ``n_prompts`` held-out prompts, 64 new tokens. The device label
    is taken under one thread (``batched_throughput`` and ``step_profile`` time one thread)."""
    texts = [p["prompt"] for p in tasks.heldout_prompts(n=-(-n_prompts // 3))][:n_prompts]
    key = {
        "pair": eng.pairs[0],
        "weights": eng.weights(eng.pairs[0]),
        "prompts": tasks.text_digest(*texts),
        "gamma": gamma,
        "device": bench.describe_device(eng.profile.device),
        "max_new_tokens": 64,
        "batch_sizes": str(list(batch_sizes)),
        "repeats": repeats,
    }
    return key, [tasks.encode(eng.tokenizer, t).to(eng.profile.device) for t in texts]


def one_thread(measure):
    """Run ``measure()`` with torch on one thread, whatever the rest of the notebook runs with."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return measure()
    finally:
        torch.set_num_threads(threads)


def _one_thread_row(eng: Engine, table: str, measure, desc: str, **settings) -> tuple[list[dict], dict]:
    """The stored row of ``table`` under notebook 01 (e)'s one-thread key (``one_thread_key(eng, **settings)``),
    measured by ``measure(prompts)`` at one thread if missing: ``(rows as records, the key)``."""

    def run():
        key, prompts = one_thread_key(eng, **settings)
        store = eng.profile.store(table, list(key), base=None)
        store.run([key], lambda **_: measure(prompts), desc=desc)
        return store.frame(requested=True).to_dict("records"), key

    return one_thread(run)


def batched_throughput(
    eng: Engine, *, n_prompts: int = 16, batch_sizes=(1, 4, 8, 16), gamma: int = 5, repeats: int = 2
):
    """Notebook 01 (e): tokens/s of ``batching.generate_batch`` at each batch size and of ``engine.generate`` one
    prompt at a time, interleaved per round (table ``engine_batched_throughput``; ``speed.summarize_throughput``).
    Returns ``(summary, the key)``."""
    draft = eng.drafts[eng.pairs[0]]
    rows, key = _one_thread_row(
        eng,
        "engine_batched_throughput",
        lambda prompts: speed.batched_throughput(
            eng.target, draft, prompts, batch_sizes, gamma=gamma, max_new_tokens=64, repeats=repeats
        ),
        "batched throughput",
        n_prompts=n_prompts, batch_sizes=batch_sizes, gamma=gamma, repeats=repeats,
    )  # fmt: skip
    return speed.summarize_throughput(rows), key


def step_profile(eng: Engine, *, n_prompts: int = 16, batch_sizes=(1, 4, 8, 16), gamma: int = 5, repeats: int = 2):
    """Notebook 01 (e): one decode step of ``engine.generate`` split into its parts (``speed.step_profile``) on the
    first 3 prompts of ``batched_throughput``'s set, same key (table ``engine_step_profile``); ms per part."""
    draft = eng.drafts[eng.pairs[0]]
    rows, _ = _one_thread_row(
        eng,
        "engine_step_profile",
        lambda prompts: speed.step_profile(
            eng.target, draft, prompts[:3], gamma=gamma, max_new_tokens=64, repeats=repeats
        ),
        "step profile",
        n_prompts=n_prompts, batch_sizes=batch_sizes, gamma=gamma, repeats=repeats,
    )  # fmt: skip
    return speed.summarize_profile(rows)
