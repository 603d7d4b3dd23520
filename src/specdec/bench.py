"""Latency and speedup: T(B, S, γ), the draft-to-target ratio, TABED Eq. (1) and engine efficiency.

Conventions (``../shared/papers/formulas.md``): ``T(B, S, γ)`` is the wall time of one forward call that
feeds ``γ`` new tokens per row to a model whose KV cache already holds ``S`` positions, at batch size
``B``; it is the median over ``repeats`` after ``warmup`` calls, synchronised on CUDA.
``T_q/T_p = T_draft(1, S, 1) / T_target(1, S, 1)``. The verdicts on these measurements (notebook 01's
findings) are ``specdec.engine_findings``'.
"""

from __future__ import annotations

import statistics

import torch
from tqdm.auto import tqdm

from specdec import validate
from specdec.batching import generate_batch
from specdec.cache import crop_cache
from specdec.costs import expected_block_efficiency, expected_speedup  # Eq. (1): one formula, in costs
from specdec.engine import generate, now


def iid_acceptance(block_efficiency: float, gamma: int, tol: float = 1e-10) -> float:
    """The per-token acceptance β that the i.i.d. model needs to give the measured τ at this γ: the root of
    ``(1 − β^(γ+1)) / (1 − β) = τ`` on [0, 1] (bisection; τ increases with β).

    Why not accepted ÷ drafted: under i.i.d. acceptance a block stops at the first rejection, so that ratio is
    ``(β − β^(γ+1)) / ((1 − β) γ)``, which falls with γ even when β is constant. β from τ stays constant
    across γ exactly when acceptance is i.i.d.; a trend in β is evidence against it."""
    if not 1 <= block_efficiency <= gamma + 1:
        raise ValueError(f"block efficiency must lie in [1, γ + 1] = [1, {gamma + 1}], got {block_efficiency}")
    low, high = 0.0, 1.0
    while high - low > tol:
        mid = (low + high) / 2
        low, high = (mid, high) if expected_block_efficiency(mid, gamma) < block_efficiency else (low, mid)
    return (low + high) / 2


def timed(device, fn) -> tuple[float, object]:
    """``(seconds, fn())``: wall time of one call, read with ``engine.now`` (synchronised on CUDA)."""
    if not callable(fn):
        raise TypeError(f"fn must be a callable of no argument (the work to time), got {type(fn).__name__} {fn!r}")
    t0 = now(device)
    out = fn()
    return now(device) - t0, out


@torch.no_grad()
def forward_latency(
    model,
    batch_size: int = 1,
    context: int = 128,
    new_tokens: int = 1,
    repeats: int = 10,
    warmup: int = 2,
    seed: int = 0,
) -> float:
    """Median seconds of T(B=batch_size, S=context, γ=new_tokens) for ``model`` (random token ids)."""
    validate.model("model", model)
    for name, value in dict(batch_size=batch_size, context=context, new_tokens=new_tokens, repeats=repeats).items():
        validate.integer(name, value, minimum=1)
    from transformers import DynamicCache

    device = next(model.parameters()).device
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(3, vocab, (batch_size, context), generator=g).to(device)
    block = torch.randint(3, vocab, (batch_size, new_tokens), generator=g).to(device)
    cache = DynamicCache(config=model.config)
    if context:
        model(input_ids=prefix, past_key_values=cache, use_cache=True)
    times = []
    for i in range(warmup + repeats):
        seconds, _ = timed(device, lambda: model(input_ids=block, past_key_values=cache, use_cache=True))
        if i >= warmup:
            times.append(seconds)
        crop_cache(cache, context)
    return statistics.median(times)


def latency_grid(
    model,
    batch_sizes=(1,),
    contexts=(128,),
    new_tokens=(1,),
    repeats: int = 10,
    name: str = "model",
    device_name: str | None = None,
) -> list[dict]:
    """Tidy rows ``{model, device, B, S, gamma, seconds}`` over the grid (median of ``repeats``)."""
    validate.model("model", model)
    device_name = device_name or describe_device(next(model.parameters()).device)
    grid = [(b, s, k) for b in batch_sizes for s in contexts for k in new_tokens]
    rows = []
    for b, s, k in tqdm(grid, desc=f"T(B,S,γ) {name}", leave=False):
        rows.append(
            {
                "model": name,
                "device": device_name,
                "B": b,
                "S": s,
                "gamma": k,
                "seconds": forward_latency(model, b, s, k, repeats=repeats),
            }
        )
    return rows


def latency_ratio(target, draft, context: int = 128, repeats: int = 20) -> float:
    """``T_q / T_p``: one draft call over one target call, both at B = 1, one new token, ``S = context``."""
    return forward_latency(draft, 1, context, 1, repeats) / forward_latency(target, 1, context, 1, repeats)


def describe_device(device) -> str:
    """A label for where tensors live (a ``torch.device``, its name, or a model: the device of its weights).
    Asking for CUDA on a machine without it raises, so a CPU run is never labelled as a GPU one."""
    if isinstance(device, torch.nn.Module):
        device = next(device.parameters()).device
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "device 'cuda' was asked for but torch sees no CUDA device here: run with -p device cpu "
            "(scripts/run_notebooks.py) or on a GPU machine"
        )
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def speedup_rows(
    target,
    drafter,
    prompts,
    *,
    gamma: int = 5,
    max_new_tokens: int = 64,
    sampling=None,
    repeats: int = 3,
    eos_token_id=None,
    seed: int = 0,
    desc: str = "SD vs AR",
) -> list[dict]:
    """Run autoregressive and speculative decoding side by side on each prompt, ``repeats`` times,
    alternating them so machine noise hits both alike. One tidy row per (prompt, repeat, method)."""
    rows = []
    for i, prompt_ids in enumerate(tqdm(prompts, desc=desc, leave=False)):
        for rep in range(repeats):
            for method, d in (("autoregressive", None), ("speculative", drafter)):
                res = generate(
                    target,
                    prompt_ids,
                    d,
                    gamma=gamma,
                    max_new_tokens=max_new_tokens,
                    sampling=sampling,
                    eos_token_id=eos_token_id,
                    seed=seed + i,
                )
                rows.append({"prompt": i, "repeat": rep, "method": method, **res.summary()})
    return rows


def summarize_speedup(
    rows: list[dict], gamma: int, latency_ratio_value: float, verify_cost: float | None = None
) -> dict:
    """Measured walltime speedup (sum over prompts of per-prompt median times), Eq. (1) prediction from
    the measured τ and ``T_q/T_p``, and their ratio (engine efficiency).

    ``verify_cost`` = ``T_p(1, S, γ+1) / T_p(1, S, 1)``: Eq. (1) assumes verifying γ+1 tokens costs one
    ordinary target step (true while decoding is memory-bound, as on a GPU); where it is not, the
    refined prediction ``τ / (γ·T_q/T_p + verify_cost)`` says how much of the gap that explains."""
    import pandas as pd

    _rows(rows, ("prompt", "method", "total_time", "new_tokens", "target_calls"), "speedup_rows")
    validate.integer("gamma", gamma, minimum=1)
    validate.number("latency_ratio_value", latency_ratio_value, minimum=0.0)
    df = pd.DataFrame(rows)
    per_prompt = (
        df.groupby(["prompt", "method"])
        .agg(
            total_time=("total_time", "median"),
            new_tokens=("new_tokens", "median"),
            target_calls=("target_calls", "median"),
        )
        .unstack("method")
    )
    ar_time = per_prompt[("total_time", "autoregressive")].sum()
    sd_time = per_prompt[("total_time", "speculative")].sum()
    sd = df[df.method == "speculative"]
    tau = sd.new_tokens.sum() / sd.target_calls.sum()
    measured = float(ar_time / sd_time)
    predicted = expected_speedup(tau, gamma, latency_ratio_value)
    out = {
        "gamma": gamma,
        "block_efficiency": float(tau),
        "latency_ratio": latency_ratio_value,
        "expected_speedup_eq1": predicted,
        "measured_speedup": measured,
        "engine_efficiency": measured / predicted,
    }
    if verify_cost is not None:
        refined = tau / (gamma * latency_ratio_value + verify_cost)
        out.update(
            verify_cost=verify_cost, expected_speedup_refined=refined, engine_efficiency_refined=measured / refined
        )
    return out


def acceptance_rows(
    target,
    drafts: dict,
    prompts,
    gammas=(1, 2, 3, 4, 6, 8),
    max_new_tokens: int = 48,
    sampling=None,
    seed: int = 0,
    batch_size: int = 16,
) -> list[dict]:
    """One row per draft, γ and prompt: ``draft, gamma, prompt`` (index in ``prompts``), ``new_tokens``,
    ``target_calls``, ``accepted``, ``drafted``. ``drafts``: ``{name: model or drafter}``; prompt ``i`` is
    decoded with seed ``seed + i`` whatever the draft and γ.

    Greedy runs of a draft that batches (``drafters.batch_drafter``) decode ``batch_size`` prompts at a time with
    ``batching.generate_batch``, whose rows equal the batch-1 runs (``tests/test_batched.py``); no row here is
    timed. Sampled runs and other drafters decode one prompt at a time (``batch_size=1``: always)."""
    rows = []
    for name, draft in drafts.items():
        batched = batch_size > 1 and (sampling is None or sampling.greedy) and _batches(draft)
        step = batch_size if batched else 1
        for gamma in tqdm(gammas, desc=f"γ sweep {name}", leave=False):
            for start in range(0, len(prompts), step):
                kwargs = dict(gamma=gamma, max_new_tokens=max_new_tokens, sampling=sampling, eos_token_id=[])
                if batched:
                    done = generate_batch(
                        target, prompts[start : start + step], draft, seed=seed + start, **kwargs
                    ).rows
                else:
                    done = [generate(target, prompts[start], draft, seed=seed + start, **kwargs)]
                for i, res in enumerate(done, start):
                    rows.append(
                        {
                            "draft": name,
                            "gamma": gamma,
                            "prompt": i,
                            "new_tokens": res.new_tokens,
                            "target_calls": res.target_calls,
                            "accepted": sum(res.accepted_per_block),
                            "drafted": sum(res.drafted_per_block),
                        }
                    )
    return rows


def _batches(draft) -> bool:
    """Whether ``batching.generate_batch`` takes this draft (model or drafter)."""
    from specdec.drafters import batch_drafter

    try:
        batch_drafter(draft, vocab_size=0)
    except ValueError:
        return False
    return True


def pool_acceptance(rows) -> list[dict]:
    """Pool ``acceptance_rows`` over prompts, per draft and γ (first-seen order): ``draft, gamma,
    block_efficiency`` (Σ new tokens ÷ Σ target calls), ``acceptance_rate`` (Σ accepted ÷ Σ drafted),
    ``expected_block_efficiency`` (the i.i.d. formula at that α), ``new_tokens``, ``target_calls``."""
    _rows(
        rows, ("draft", "gamma", "new_tokens", "target_calls", "accepted", "drafted"), "acceptance_rows", empty_ok=True
    )
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["draft"], int(r["gamma"])), []).append(r)
    out = []
    for (name, gamma), rs in groups.items():
        new, calls = sum(int(r["new_tokens"]) for r in rs), sum(int(r["target_calls"]) for r in rs)
        alpha = sum(int(r["accepted"]) for r in rs) / sum(int(r["drafted"]) for r in rs)
        out.append(
            {
                "draft": name,
                "gamma": gamma,
                "block_efficiency": new / calls,
                "acceptance_rate": alpha,
                "expected_block_efficiency": expected_block_efficiency(alpha, gamma),
                "new_tokens": new,
                "target_calls": calls,
            }
        )
    return out


def acceptance_sweep(
    target, drafts: dict, prompts, gammas=(1, 2, 3, 4, 6, 8), max_new_tokens: int = 48, sampling=None, seed: int = 0
) -> list[dict]:
    """Measured τ and α per draft and γ over ``prompts`` (pooled), beside the i.i.d. prediction from α:
    ``pool_acceptance(acceptance_rows(...))``."""
    return pool_acceptance(acceptance_rows(target, drafts, prompts, gammas, max_new_tokens, sampling, seed))


def random_model(config: dict, dtype=None, device="cpu"):
    """A randomly initialised Llama with the given sizes (latency only: weights do not change the cost)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    kwargs = dict(config)
    kwargs.setdefault("num_key_value_heads", kwargs.get("num_attention_heads"))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype or torch.float32)  # build in the target dtype: a 13B model in fp32 is 52 GB
    try:
        with torch.device(device):
            model = LlamaForCausalLM(LlamaConfig(**kwargs))
    finally:
        torch.set_default_dtype(previous)
    return model.to(dtype=dtype or torch.float32).eval()


def real_size_latency(
    store, configs: dict, *, batch_sizes, contexts, gammas, repeats: int = 10, device: str = "cuda", dtype=torch.float16
) -> None:
    """T(B, S, γ) for random-weight models built from real configurations (``paper.yaml`` ``latency_configs``),
    one at a time, into ``store`` (keys: model, device, B, S, gamma). Needs a GPU for 7B/13B sizes."""
    device_name = describe_device(device)
    for name, cfg in configs.items():
        keys = [
            {"model": name, "device": device_name, "B": b, "S": s, "gamma": k}
            for b in batch_sizes
            for s in contexts
            for k in gammas
        ]
        if all(store.done(**k) for k in keys):
            continue
        model = random_model(cfg, dtype=dtype, device=device)
        # A long untimed warm-up: the first hundred calls of a fresh multi-GB model run slower (allocator,
        # clocks), which showed up as a 13B model looking slower at batch 1 than at batch 4.
        forward_latency(model, max(batch_sizes), max(contexts), max(gammas), repeats=50, warmup=50)
        store.run(
            keys,
            lambda model=model, **key: {
                "seconds": forward_latency(model, key["B"], key["S"], key["gamma"], repeats=repeats)
            },
            desc=name,
        )
        del model
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()


def _rows(rows, columns: tuple[str, ...], made_by: str, *, empty_ok: bool = False) -> None:
    """Refuse ``rows`` unless a list of dicts (or a DataFrame of them) with ``columns`` (the rows ``made_by``
    returns)."""
    if hasattr(rows, "columns") and hasattr(rows, "to_dict"):  # a DataFrame of those rows
        missing = sorted(set(columns) - set(rows.columns))
    elif not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"rows must be a list of dicts ({made_by}'s rows), got {type(rows).__name__} {rows!r:.80}")
    else:
        missing = sorted({c for r in rows for c in columns if c not in r})
    if missing or not (len(rows) or empty_ok):
        raise ValueError(
            f"rows must be {made_by}'s rows, with the columns {list(columns)}: got {len(rows)} rows"
            + (f" lacking {missing}" if missing else "")
        )
