"""The engine's own speed: batched throughput (``generate_batch``) and where one decode step's time goes.

Both are measurements for notebooks and scripts (``scripts/bench_batched.py``), never timed tests: walltime on a
shared machine is noisy, so every comparison here alternates its methods within one loop (interleaved repeats)
and reports medians.
"""

from __future__ import annotations

import functools
import statistics
import time

from specdec import batching, engine
from specdec.cache import CachedLM
from specdec.drafters import ModelDrafter


def batched_throughput(
    target,
    draft,
    prompts,
    batch_sizes=(1, 4, 8, 16),
    *,
    gamma: int = 5,
    max_new_tokens: int = 64,
    repeats: int = 3,
    eos_token_id=(),
    with_generate: bool = True,
) -> list[dict]:
    """Decode all ``prompts`` (``LongTensor[L]`` each) in consecutive chunks of ``B`` with ``generate_batch``, for
    every ``B`` of ``batch_sizes``, and (``with_generate``) one at a time with ``engine.generate``; ``repeats``
    rounds, the methods alternating inside each round. Greedy. One row per round and method: ``method``
    (``generate_batch`` / ``generate``), ``batch_size``, ``repeat``, ``seconds``, ``new_tokens``,
    ``tokens_per_second``, ``target_calls`` (batched target decode calls), ``same_text`` (every row's tokens equal
    the first method's in that round)."""
    eos = list(eos_token_id)
    methods = [("generate_batch", b) for b in batch_sizes] + ([("generate", 1)] if with_generate else [])
    rows = []
    for rep in range(repeats):
        reference = None
        for method, b in methods:
            outputs, calls = [], 0
            t0 = time.perf_counter()
            for start in range(0, len(prompts), b):
                chunk = prompts[start : start + b]
                if method == "generate":
                    res = [
                        engine.generate(
                            target,
                            chunk[0],
                            draft,
                            gamma=gamma,
                            max_new_tokens=max_new_tokens,
                            eos_token_id=eos,
                            seed=start,
                        )
                    ]
                    calls += res[0].target_calls
                else:
                    batch = batching.generate_batch(
                        target, chunk, draft, gamma=gamma, max_new_tokens=max_new_tokens, eos_token_id=eos, seed=start
                    )
                    res, calls = batch.rows, calls + batch.steps
                outputs += [r.output_ids for r in res]
            seconds = time.perf_counter() - t0
            reference = reference or outputs
            tokens = sum(map(len, outputs))
            rows.append(
                dict(
                    method=method,
                    batch_size=b,
                    repeat=rep,
                    seconds=seconds,
                    new_tokens=tokens,
                    tokens_per_second=tokens / seconds,
                    target_calls=calls,
                    same_text=outputs == reference,
                )
            )
    return rows


def summarize_throughput(rows):
    """Per method and ``B``: median tokens/s over the rounds, and its ratio to ``generate_batch`` at ``B = 1`` and to
    ``generate`` (medians of the per-round ratios, so that a slow round slows both sides alike)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    base = df[(df.method == "generate_batch") & (df.batch_size == 1)].set_index("repeat").tokens_per_second
    one = df[df.method == "generate"].set_index("repeat").tokens_per_second
    out = []
    for (method, b), g in df.groupby(["method", "batch_size"], sort=False):
        tps = g.set_index("repeat").tokens_per_second
        row = dict(
            method=method,
            batch_size=b,
            tokens_per_second=tps.median(),
            rounds=len(g),
            same_text=bool(g.same_text.all()),
        )
        if len(base):
            row["x_batch_1"] = (tps / base).median()
        if len(one):
            row["x_generate"] = (tps / one).median()
        out.append(row)
    return pd.DataFrame(out)


class _Clock:
    """Seconds per named part of a decode, counted only once decoding started (prefill excluded)."""

    def __init__(self, device):
        self.device, self.decoding, self.parts = device, False, {}

    def now(self):
        return engine.now(self.device)

    def add(self, part, seconds):
        if self.decoding:
            self.parts[part] = self.parts.get(part, 0.0) + seconds

    def timed(self, part, fn, *args):
        self.decoding = True
        t0 = self.now()
        out = fn(*args)
        self.add(part, self.now() - t0)
        return out


class _TimedLM(CachedLM):
    """A ``CachedLM`` whose calls are timed: ``forward`` names the model's forward calls (timed around
    ``_forward``, not with module hooks: a hooked model leaves ``decode_call``'s fast path, so hooks would time
    another path than the engine's)."""

    def __init__(self, model, clock, forward="target forward", call="target call"):
        super().__init__(model)
        self.clock, self.forward_part, self.call_part = clock, forward, call

    def extend(self, sequence):
        if self.call_part is None:  # the drafter's calls: inside its timed ``propose``
            return super().extend(sequence)
        return self.clock.timed(self.call_part, super().extend, sequence)

    def rollback(self, sequence):
        return self.clock.timed("rollback", super().rollback, sequence)

    def _forward(self, ids, positions_from, **model_inputs):
        if not self.clock.decoding:  # the prefill
            return super()._forward(ids, positions_from, **model_inputs)
        t0 = self.clock.now()
        logits = super()._forward(ids, positions_from, **model_inputs)
        self.clock.add(self.forward_part, self.clock.now() - t0)
        return logits


class _TimedDrafter(ModelDrafter):
    def __init__(self, model, clock):
        super().__init__(model)
        self.clock = clock
        self.lm = _TimedLM(model, clock, forward="draft forwards", call=None)

    def propose(self, generated, gamma, sampling, generator=None):
        return self.clock.timed("drafting", super().propose, generated, gamma, sampling, generator)

    def rollback(self, generated):
        return self.clock.timed("rollback", super().rollback, generated)


def step_profile(target, draft, prompts, *, gamma: int = 5, max_new_tokens: int = 64, repeats: int = 3) -> list[dict]:
    """Where the time of one ``engine.generate`` decode step goes, for speculative decoding with ``draft`` and for
    plain decoding, greedy, on every prompt; ``repeats`` rounds alternating the two. One row per round and method:
    ``method``, ``repeat``, ``steps`` (target decode calls), ``new_tokens`` and milliseconds per step of
    ``draft forwards`` (the draft model's calls), ``drafting other`` (the drafter's own work around them: logits to
    distributions, picking tokens, cache bookkeeping), ``target forward``, ``target call other`` (building the
    call's inputs, cache checks), ``verify`` (the rule), ``rollback`` (both caches), ``loop`` (the rest: the loop's
    own Python between them); they add up to the decode time (prefill excluded), also given as ``step``."""
    device = next(target.parameters()).device
    rows = []
    for rep in range(repeats):
        for method in ("speculative", "autoregressive"):
            parts: dict[str, float] = {}
            steps, tokens, decode = 0, 0, 0.0
            for prompt in prompts:
                clock = _Clock(device)
                verifier = functools.partial(clock.timed, "verify", engine.default_verifier)
                drafter = _TimedDrafter(draft, clock) if method == "speculative" else None
                res = engine.generate(
                    _TimedLM(target, clock),
                    prompt,
                    drafter,
                    gamma=gamma,
                    max_new_tokens=max_new_tokens,
                    eos_token_id=[],
                    verifier=verifier,
                )
                for k, v in clock.parts.items():
                    parts[k] = parts.get(k, 0.0) + v
                steps, tokens = steps + res.target_calls, tokens + res.new_tokens
                decode += res.total_time - res.prefill_time
            parts["drafting other"] = parts.pop("drafting", 0.0) - parts.get("draft forwards", 0.0)
            parts["target call other"] = parts.pop("target call") - parts["target forward"]
            parts["loop"] = decode - sum(parts.values())
            per_step = {k: 1e3 * v / steps for k, v in parts.items()}
            rows.append(
                dict(method=method, repeat=rep, steps=steps, new_tokens=tokens, step=1e3 * decode / steps, **per_step)
            )
    return rows


def summarize_profile(rows):
    """Median milliseconds per step of each part, per method (rows of ``step_profile``), with ms per token."""
    import pandas as pd

    df = pd.DataFrame(rows)
    parts = ["draft forwards", "drafting other", "target forward", "target call other", "verify", "rollback", "loop"]
    table = df.groupby("method", sort=False)[[p for p in parts if p in df] + ["step"]].median()
    table["ms/token"] = df.groupby("method", sort=False).apply(
        lambda g: statistics.median(g.step * g.steps / g.new_tokens), include_groups=False
    )
    return table.fillna(0.0)


# ------------------------------------------------------------------------------------------ GPU rows at real sizes
GPU_ROWS = ("gpu_peer_real_sizes", "gpu_latency_real_sizes", "gpu_batched_real_sizes")


def gpu_rows() -> dict:
    """The GPU rows in git (``results/tiny/gpu_*_real_sizes.csv``, name -> frame): measurements of one lent machine,
    read from the checkout whatever base layer a profile's stores stand on (``make paper-smoke`` empties that)."""
    import pandas as pd

    from specdec.zoo import ROOT

    return {name: pd.read_csv(ROOT / "results" / "tiny" / f"{name}.csv") for name in GPU_ROWS}


def gpu_cost_model_check(peer, latency):
    """The cost model (``costs.sd_speedup``) against the speed measured on a GPU at the papers' sizes.

    ``peer``: ``scripts/gpu_bench.py``'s ``peer.csv`` rows (per prompt and round: ``specdec`` and ``ar`` seconds,
    tokens, τ); ``latency``: its ``latency.csv`` (each model's one-token call in seconds, ``ratio_to_target`` =
    T_q/T_p, and the target's ``verify_cost`` = T_p(γ+1 tokens)/T_p(1 token)). The runs store τ, not their call
    counts, so the counts are derived: an SD run of n tokens makes n / τ target calls, each verifying a block,
    and γ draft calls per target call. Returns one row per (run, device, draft): measured speedup (median
    tokens/s of ``specdec`` over ``ar``), predicted speedup at the measured c and verification cost, and τ.
    """
    import pandas as pd

    from specdec import costs

    target = latency[latency.verify_cost.notna() & (latency.verify_cost != "")]
    verify = {(r.run, r.device): float(r.verify_cost) for r in target.itertuples()}
    ratio = {(r.run, r.device, r.model): float(r.ratio_to_target) for r in latency.itertuples()}
    rows = []
    for (run, device, draft), g in peer.groupby(["run", "device", "draft"]):
        tps = g.groupby("method").tokens_per_second.median()
        sd = g[g.method == "specdec"]
        tau, gamma, n = float(sd.tau.median()), int(sd.gamma.iloc[0]), float(sd.new_tokens.median())
        regime = costs.Regime(
            "measured", {"draft": ratio[(run, device, draft)]}, verify[(run, device)], "gpu_latency_real_sizes"
        )
        calls = n / tau
        rows.append(
            {
                "run": run,
                "device": device,
                "draft": draft,
                "tau": round(tau, 3),
                "c": round(regime.cost("draft"), 4),
                "verify_cost": round(regime.verify, 3),
                "predicted": round(costs.sd_speedup(n, calls, gamma * calls, regime), 3),
                "measured": round(float(tps["specdec"] / tps["ar"]), 3),
                "vs_hf": round(float(tps["specdec"] / tps["hf"]), 3),
                "same_text_as_hf": float((sd.same_as_hf.astype(str) == "True").mean()),
            }
        )
    return pd.DataFrame(rows)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["GPU_ROWS", "gpu_cost_model_check", "gpu_rows"]
