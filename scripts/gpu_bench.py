"""GPU speed check at the papers' sizes with random weights (issue 27): this engine against transformers' assisted
generation, and batched speculative decoding at B = 1..32. Needs only torch + transformers and this tree:

    PYTHONPATH=src python3 scripts/gpu_bench.py --out "$OUT"            # on one GPU, < 8 minutes
    PYTHONPATH=src python3 scripts/gpu_bench.py --tiny --out /tmp/gb    # the same logic on CPU, tiny shapes

Models: a Llama-2-7B-shaped target (LLaVA-1.5-7B's language model: 4096 hidden, 32 layers, 32,064 tokens) and
the 68M / 160M drafts' shapes of ``paper.yaml`` ``latency_configs``, in bfloat16, plus an *early-exit* draft (the
target's embedding, first layer, norm and head, shared): random independent models almost never agree, so
the random drafts show the engine's overhead at τ ≈ 1, while the early-exit draft, against a target whose later
layers' output projections are damped (``--damp``), gives τ > 1.

Writes, each row with the device named (rows flushed as they come, so a cut run keeps what it measured):
- ``peer.csv``: per prompt and round, ``hf`` (``target.generate(assistant_model=draft)``, γ constant, threshold 0),
  ``specdec`` (``engine.generate``) and ``ar`` (``engine.generate`` without a draft): seconds, tokens, τ, and
  whether the text equals HF's / plain greedy decoding's (bf16: near-tied logits may legitimately flip a token
  when 6 positions are verified at once instead of 1; ``first_diff`` says where);
- ``latency.csv``: T(1, S, 1) of each model and the per-call cost ratios T_q/T_p, and T_p(1, S, γ+1)/T_p(1, S, 1);
- ``batched.csv``: ``batching.generate_batch`` on B prompts of mixed lengths, B = 1, 2, 4, 8, 16, 32, for each
  draft and without one (plain batched decoding): tokens/s, batched steps, τ.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import statistics
import sys
import time

import torch

SHAPES = {  # paper.yaml latency_configs (vocabulary of LLaVA-1.5 / Llama-2 + image and pad tokens)
    "target-7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32),
    "draft-68m": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=2, num_attention_heads=12),
    "draft-160m": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12),
}
TINY = {
    "target-7b": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4),
    "draft-68m": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2),
    "draft-160m": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2),
}


def build(shape: dict, vocab: int, dtype, device, seed: int):
    """A random-weight Llama of ``shape``, built directly in ``dtype`` on ``device`` (a 7B model in fp32 is 27 GB)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab,
        max_position_embeddings=4096,
        num_key_value_heads=shape["num_attention_heads"],
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        **shape,
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.to(dtype).eval()


def damp_later_layers(target, factor: float) -> None:
    """Scale the output projections of the target's layers after the first by ``factor``: a random-weight target
    then stays close to its first layer, so the early-exit draft agrees with it often (τ > 1). Costs are unchanged."""
    for layer in target.model.layers[1:]:
        layer.self_attn.o_proj.weight.mul_(factor)
        layer.mlp.down_proj.weight.mul_(factor)


def early_exit(target):
    """A draft that is the target's embedding, first decoder layer, final norm and head (shared, no copy)."""
    from transformers import LlamaForCausalLM

    config = target.config.__class__(**{**target.config.to_dict(), "num_hidden_layers": 1})
    with torch.device("meta"):
        draft = LlamaForCausalLM(config)
    draft.model.embed_tokens, draft.model.norm = target.model.embed_tokens, target.model.norm
    draft.model.layers = torch.nn.ModuleList([target.model.layers[0]])
    draft.model.rotary_emb, draft.lm_head = target.model.rotary_emb, target.lm_head
    assert not any(t.is_meta for t in list(draft.parameters()) + list(draft.buffers())), "a part left on meta"
    return draft.eval()


def sync_now(device) -> float:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


@torch.no_grad()
def call_latency(model, context: int, new: int, device, repeats: int) -> float:
    """Median seconds of one forward of ``new`` tokens per row at batch 1 after ``context`` cached positions."""
    from transformers import DynamicCache

    from specdec.cache import crop_cache

    ids = torch.randint(3, model.config.vocab_size, (1, context + new), device=device)
    cache = DynamicCache(config=model.config)
    model(input_ids=ids[:, :context], past_key_values=cache, use_cache=True)
    times = []
    for _ in range(repeats + 3):
        t0 = sync_now(device)
        model(input_ids=ids[:, context:], past_key_values=cache, use_cache=True)
        times.append(sync_now(device) - t0)
        crop_cache(cache, context)
    return statistics.median(times[3:])


def first_diff(a, b) -> int:
    """Index of the first differing token (``-1`` when equal)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return -1 if len(a) == len(b) else min(len(a), len(b))


class Writer:
    def __init__(self, folder: pathlib.Path, name: str, device_name: str):
        self.path, self.device_name, self.fields = folder / name, device_name, None

    def write(self, row: dict) -> None:
        row = {"device": self.device_name, **row}
        new = self.fields is None
        if new:
            self.fields = list(row)
        with self.path.open("a" if not new else "w", newline="") as f:
            out = csv.DictWriter(f, self.fields)
            if new:
                out.writeheader()
            out.writerow(row)
        print(self.path.name, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)


def peer_part(target, drafts, prompts, args, device, out: Writer, over_budget) -> None:
    from specdec import peer
    from specdec.engine import generate

    for name, draft in drafts.items():
        generate(target, prompts[0], draft, gamma=args.gamma, max_new_tokens=8, eos_token_id=[])  # warm-up
        peer.hf_assisted(target, draft, prompts[0], gamma=args.gamma, max_new_tokens=8)
        for rep in range(args.repeats):
            for i, ids in enumerate(prompts):
                if over_budget():
                    return
                t0 = sync_now(device)
                hf = peer.hf_assisted(target, draft, ids, gamma=args.gamma, max_new_tokens=args.new_tokens)
                hf_s = sync_now(device) - t0
                sd = generate(target, ids, draft, gamma=args.gamma, max_new_tokens=args.new_tokens, eos_token_id=[])
                ar = generate(target, ids, None, max_new_tokens=args.new_tokens, eos_token_id=[])
                for method, toks, secs, tau in (
                    ("hf", hf["output_ids"], hf_s, hf["block_efficiency"]),
                    ("specdec", sd.output_ids, sd.total_time, sd.block_efficiency),
                    ("ar", ar.output_ids, ar.total_time, 1.0),
                ):
                    out.write(
                        dict(
                            draft=name,
                            prompt=i,
                            repeat=rep,
                            method=method,
                            gamma=args.gamma,
                            new_tokens=len(toks),
                            seconds=secs,
                            tokens_per_second=len(toks) / secs,
                            tau=tau,
                            same_as_hf=toks == hf["output_ids"],
                            same_as_ar=toks == ar.output_ids,
                            first_diff_vs_ar=first_diff(toks, ar.output_ids),
                        )
                    )


def latency_part(target, drafts, args, device, out: Writer) -> None:
    t_p = call_latency(target, args.context, 1, device, args.latency_repeats)
    verify = call_latency(target, args.context, args.gamma + 1, device, args.latency_repeats)
    out.write(
        dict(
            model="target-7b",
            S=args.context,
            seconds=t_p,
            ratio_to_target=1.0,
            verify_cost=verify / t_p,
            gamma=args.gamma,
        )
    )
    for name, draft in drafts.items():
        t_q = call_latency(draft, args.context, 1, device, args.latency_repeats)
        out.write(
            dict(model=name, S=args.context, seconds=t_q, ratio_to_target=t_q / t_p, verify_cost="", gamma=args.gamma)
        )


def batched_part(target, drafts, prompts, args, device, out: Writer, over_budget) -> None:
    from specdec.batching import generate_batch

    for name, draft in {"none": None, **drafts}.items():
        generate_batch(target, prompts[:2], draft, gamma=args.gamma, max_new_tokens=8, eos_token_id=[])  # warm-up
        for rep in range(args.repeats):
            for b in args.batch_sizes:
                if over_budget():
                    return
                t0 = sync_now(device)
                batch = generate_batch(
                    target, prompts[:b], draft, gamma=args.gamma, max_new_tokens=args.new_tokens, eos_token_id=[]
                )
                secs = sync_now(device) - t0
                calls = sum(r.target_calls for r in batch.rows)
                out.write(
                    dict(
                        draft=name,
                        B=b,
                        repeat=rep,
                        gamma=args.gamma if draft is not None else 0,
                        new_tokens=batch.new_tokens,
                        seconds=secs,
                        tokens_per_second=batch.new_tokens / secs,
                        steps=batch.steps,
                        tau=batch.new_tokens / calls,
                        peak_gib=torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else 0.0,
                    )
                )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true", help="tiny shapes on CPU in fp32: checks the logic")
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--gamma", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--peer-prompts", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--latency-repeats", type=int, default=20)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--drafts", nargs="+", default=["draft-68m", "draft-160m", "early-exit"])
    parser.add_argument("--damp", type=float, default=0.05, help="damp_later_layers factor (1: untouched)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="stop starting new runs after this")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    device = args.device or ("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    dtype = torch.float32 if args.tiny else getattr(torch, args.dtype)
    shapes, vocab = (TINY, 512) if args.tiny else (SHAPES, 32064)
    torch.set_grad_enabled(False)
    name = torch.cuda.get_device_name() if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    device_name = f"{name}; {dtype}; torch {torch.__version__}"
    folder = pathlib.Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)

    def over_budget() -> bool:
        late = time.perf_counter() - start > args.budget_s
        if late:
            print(f"budget of {args.budget_s:.0f} s spent: skipping the remaining runs", flush=True)
        return late

    target = build(shapes["target-7b"], vocab, dtype, device, seed=0)
    damp_later_layers(target, args.damp)
    drafts = {}
    for i, d in enumerate(args.drafts):
        drafts[d] = early_exit(target) if d == "early-exit" else build(shapes[d], vocab, dtype, device, seed=1 + i)
    print(f"{device_name}: models built in {time.perf_counter() - start:.0f} s", flush=True)
    g = torch.Generator().manual_seed(0)
    lengths = [
        int(x) for x in torch.randint(args.context // 2, 3 * args.context // 2, (max(args.batch_sizes),), generator=g)
    ]
    prompts = [torch.randint(3, vocab, (n,), generator=g).to(device) for n in lengths]

    latency_part(target, drafts, args, device, Writer(folder, "latency.csv", device_name))
    peer_drafts = {k: v for k, v in drafts.items() if k != "draft-160m"}  # 160M: latency and batched only
    peer_part(
        target,
        peer_drafts,
        prompts[: args.peer_prompts],
        args,
        device,
        Writer(folder, "peer.csv", device_name),
        over_budget,
    )
    batched_part(target, drafts, prompts, args, device, Writer(folder, "batched.csv", device_name), over_budget)
    print(f"done in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
