"""Batched speculative decoding: ``generate`` for ``B`` prompts at once, one draft forward per draft position and
one target forward per step for the whole batch (``cache.BatchedLM`` keeps each row's cache, positions and
rollback); every row equals its batch-1 ``engine.generate`` run (``tests/test_batched.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specdec import validate
from specdec.batch_ensemble import BatchEnsembleDrafter
from specdec.cache import BatchedLM, CachedLM
from specdec.drafters import batch_drafter
from specdec.engine import (
    GenerationResult,
    check_logits,
    check_options,
    check_prompt,
    check_request,
    check_verdict,
    check_vocab,
    default_verifier,
    eos_ids,
    now,
    pad_vocab,
    stop_index,
)
from specdec.sampling import SamplingConfig


@dataclass
class BatchResult:
    """``generate_batch``'s output: ``rows[i]`` is prompt ``i``'s ``GenerationResult``; ``steps`` counts the
    batched target decode calls, ``total_time`` the whole batch (a row's ``total_time`` ends when it finished)."""

    rows: list[GenerationResult]
    steps: int = 0
    prefill_time: float = 0.0
    total_time: float = 0.0

    @property
    def new_tokens(self) -> int:
        return sum(r.new_tokens for r in self.rows)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.total_time if self.total_time else float("nan")


def generate_batch(
    target,
    prompts,
    drafter=None,
    *,
    gamma: int = 5,
    max_new_tokens: int = 128,
    sampling: SamplingConfig | None = None,
    eos_token_id=None,
    stop_strings=None,
    tokenizer=None,
    seed: int = 0,
    seeds=None,
    verifier=None,
    target_inputs=None,
    draft_inputs=None,
) -> BatchResult:
    """``generate`` for ``B`` prompts at once (``prompts``: ``B`` LongTensors ``[L_i]`` of any lengths): each step
    runs the drafter once per draft position and the target once for the whole batch; rows accept, roll back
    and stop on their own (``BatchedLM``), and a finished row leaves the batch.

    Row ``i`` is ``generate(target, prompts[i], drafter, seed=seeds[i], ...)`` with the same options: the same
    tokens, blocks, τ and α (its generators make the same draws, so under sampling too, up to floating-point
    rounding of the batched forwards). ``seeds`` default to ``seed + i``. ``target``: a transformers model (or
    its ``CachedLM``); ``drafter``: None, a draft model, or what ``drafters.batch_drafter`` accepts (drafters
    with per-sequence state run at batch size 1 and are refused), or a list of ``B`` per-request ``ModelDrafter`` s
    on one draft model (TABED's drafting rows, weights and adaptive state: ``batch_ensemble``). Per-row
    ``target_tokens_fed`` / ``draft_tokens_fed`` count the positions the row ran (filler columns excluded).

    ``target_inputs`` / ``draft_inputs``: per prompt, ``generate``'s extra prefill inputs of each model (``None`` or
    ``{}``: none). A LLaVA target takes ``pixel_values [n_images, 3, H, W]`` (``batchable``; a LLaVA-NeXT request's
    any-resolution tiles run at batch size 1); the draft inputs go to the per-request drafters' ``make_rows``.
    """
    prompts = [check_prompt(p) for p in prompts]
    if not prompts:
        raise ValueError("generate_batch needs at least one prompt")
    sampling, gamma, max_new_tokens, seed, stop_strings = check_options(
        sampling, gamma, max_new_tokens, seed, stop_strings, tokenizer
    )
    model = target.model if isinstance(target, CachedLM) else target
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"generate_batch needs a transformers model as target, got {type(target).__name__}: "
            "a combined target (TargetLM) runs at batch size 1 with engine.generate"
        )
    target_lm = BatchedLM(model)
    target_inputs = per_prompt("target_inputs", target_inputs, len(prompts))
    for p, inputs in zip(prompts, target_inputs):
        check_request(target_lm, p, max_new_tokens, inputs)
    draft_inputs = per_prompt("draft_inputs", draft_inputs, len(prompts))
    for inputs in draft_inputs:
        validate.model_inputs("draft_inputs", inputs)
    if isinstance(drafter, (list, tuple)):
        drafter = BatchEnsembleDrafter(drafter, draft_inputs)
    elif any(draft_inputs):
        raise ValueError("draft_inputs need one drafter per prompt (a list): one drafter for the batch reads none")
    else:
        drafter = batch_drafter(drafter, target_lm.vocab_size)
    check_vocab(drafter, target_lm)
    seeds = [seed + i for i in range(len(prompts))] if seeds is None else list(seeds)
    device = target_lm.device
    draft_gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    verify_gens = [torch.Generator(device=device).manual_seed(s + 1) for s in seeds]
    rows = [GenerationResult(prompt_ids=p.tolist(), output_ids=[], gamma=gamma if drafter else 0) for p in prompts]
    batch = BatchResult(rows=rows)
    loop = _BatchLoop(target_lm, drafter, gamma, max_new_tokens, sampling, verifier, draft_gens, verify_gens)
    loop.stop = (eos_ids(model, eos_token_id), stop_strings, tokenizer)

    t_start = now(device)
    features = [image_features(model, inputs) for inputs in target_inputs] if any(target_inputs) else None
    target_lm.prefill([p.to(device) for p in prompts], row_features=features)
    if drafter is not None:
        drafter.prefill([p.to(device) for p in prompts])
    batch.prefill_time = now(device) - t_start
    loop.run(rows, [p.tolist() for p in prompts], t_start)
    batch.steps, batch.total_time = loop.steps, now(device) - t_start
    for i, res in enumerate(rows):
        res.prefill_time = batch.prefill_time
        res.stop_reason = res.stop_reason or "max_new_tokens"
        res.target_tokens_fed = target_lm.tokens_fed[i]
        counted = drafter if isinstance(drafter, BatchEnsembleDrafter) else getattr(drafter, "lm", None)
        if counted is not None:
            res.draft_calls, res.draft_tokens_fed = counted.calls[i], counted.tokens_fed[i]
    return batch


def per_prompt(name: str, inputs, n: int) -> list[dict]:
    """``generate_batch``'s ``target_inputs`` / ``draft_inputs``: one dict per prompt (``None``: none at all)."""
    if inputs is None:
        return [{} for _ in range(n)]
    inputs = [dict(x or {}) for x in inputs]
    if len(inputs) != n:
        raise ValueError(f"{name} has {len(inputs)} entries for {n} prompts: give one per prompt (or None)")
    return inputs


def batchable(target_inputs) -> bool:
    """Whether ``generate_batch`` takes a request's target inputs: none, or a LLaVA ``pixel_values`` of base views
    ``[n_images, 3, H, W]`` alone (LLaVA-NeXT's any-resolution tiles and ``image_sizes`` run at batch size 1)."""
    inputs = dict(target_inputs or {})
    pixels = inputs.pop("pixel_values", None)
    return not inputs and (pixels is None or pixels.dim() == 4)


@torch.no_grad()
def image_features(model, inputs: dict):
    """``[n_image_tokens, D]``: the projected visual embeddings a LLaVA target puts in place of one request's image
    tokens, as its forward computes them (``get_image_features``, one call per request as when decoded alone), or
    ``None`` for a request without images."""
    if not inputs:
        return None
    if not batchable(inputs):
        raise ValueError(
            f"target inputs {sorted(inputs)} (LLaVA-NeXT tiles, image sizes) run at batch size 1: "
            "decode these requests with engine.generate"
        )
    device = next(model.parameters()).device
    out = model.get_image_features(pixel_values=inputs["pixel_values"].to(device), return_dict=True)
    return torch.cat(list(out.pooler_output), dim=0)


@dataclass
class _BatchLoop:
    """``generate_batch``'s decode loop over the rows still in the batch (``active``: their prompt indices)."""

    target_lm: BatchedLM
    drafter: Any  # a batched drafter (``drafters.batch_drafter``) or None
    gamma: int
    max_new_tokens: int
    sampling: SamplingConfig
    verifier: Any  # a verifier callable or None (``engine.default_verifier``)
    draft_gens: list
    verify_gens: list
    steps: int = 0
    stop: tuple = ()

    def run(self, rows: list[GenerationResult], seqs: list[list[int]], t_start: float) -> None:
        """Decode until every row stopped; ``seqs[i]`` (prompt + kept tokens) grows in place."""
        device = self.target_lm.device
        active = list(range(len(rows))) if self.max_new_tokens > 0 else []
        while active:
            t0 = now(device)
            drafts, probs, blocks = self.draft([seqs[i] for i in active], [rows[i] for i in active], active)
            t1 = now(device)
            # The target feeds each row's pending token and its block; columns past a row's block are filler.
            width = drafts.shape[1]
            valid = torch.arange(width + 1, device=device)[None, :] <= torch.tensor(blocks, device=device)[:, None]
            last = torch.tensor([[seqs[i][-1]] for i in active], device=device)
            logits = self.target_lm.feed(torch.cat([last, drafts], 1), valid)  # [A, width + 1, V]
            check_logits(logits[valid], self.steps)  # filler columns are never read
            accepted, following = self.verify(drafts, probs, logits, blocks, active)
            t2 = now(device)
            self.steps += 1
            finished = []
            for j, (i, tokens) in enumerate(zip(active, drafts.tolist())):
                new = tokens[: accepted[j]] + [following[j]]
                if blocks[j] > 0 and isinstance(self.drafter, BatchEnsembleDrafter):  # as ``generate``'s observe
                    verified = min(accepted[j] + 1, blocks[j])  # the bonus position has no draft distribution
                    self.drafter.observe(j, logits[j, :verified], new[:verified], self.sampling)
                if self.record(rows[i], new, blocks[j], accepted[j], (t1 - t0, t2 - t1)):
                    finished.append(j)
                    rows[i].total_time = now(device) - t_start
                seqs[i] += new
            # Both caches keep each row's sequence but its last token (pending for the next step).
            kept = [seqs[i] for i in active]
            self.target_lm.truncate(torch.tensor([len(s) - 1 for s in kept], device=device))
            if self.drafter is not None:
                self.drafter.rollback(kept)
            if finished:
                stay = [j for j in range(len(active)) if j not in finished]
                active = [active[j] for j in stay]
                if active:
                    self.target_lm.select(torch.tensor(stay, device=device))
                    if self.drafter is not None:
                        self.drafter.select(torch.tensor(stay, device=device))

    def draft(self, seqs, rows, active):
        """``(tokens [A, K], probs [A, K, V] or None, blocks)``: each row's block is ``generate``'s, γ capped by the
        tokens it may still add; ``K = max(blocks)`` (0 without a drafter)."""
        device = self.target_lm.device
        blocks = [0 if self.drafter is None else min(self.gamma, self.max_new_tokens - r.new_tokens - 1) for r in rows]
        want_probs = self.verifier is not None or not self.sampling.greedy
        if max(blocks) == 0:
            vocab = self.target_lm.vocab_size
            probs = torch.zeros((len(rows), 0, vocab), device=device) if want_probs else None
            return torch.zeros((len(rows), 0), dtype=torch.long, device=device), probs, blocks
        gens = [self.draft_gens[i] for i in active]
        tokens, probs, blocks = self.drafter.propose(seqs, blocks, self.sampling, gens, want_probs)
        if probs is not None:
            probs = pad_vocab(probs, self.target_lm.vocab_size)
        return tokens.to(device), probs, blocks

    def verify(self, drafts, probs, logits, blocks, active) -> tuple[list[int], list[int]]:
        """Per row ``(n_accepted, next_token)``: greedy in one vectorised pass, else ``generate``'s verifier row
        by row on the row's own block and generator."""
        if self.verifier is None and self.sampling.greedy:
            best = logits.argmax(-1)  # [A, K + 1], the rule of verify.greedy
            width = drafts.shape[1]
            inside = (
                torch.arange(width, device=best.device)[None, :] < torch.tensor(blocks, device=best.device)[:, None]
            )
            accepted = ((drafts == best[:, :width]) & inside).long().cumprod(1).sum(1)
            return accepted.tolist(), best.gather(1, accepted[:, None])[:, 0].tolist()
        verifier = self.verifier or default_verifier
        vocab = self.target_lm.vocab_size
        out = []
        for j, (i, b) in enumerate(zip(active, blocks)):
            n_accepted, token = verifier(
                drafts[j, :b], probs[j, :b], logits[j, : b + 1], self.sampling, self.verify_gens[i]
            )
            out.append(check_verdict(n_accepted, token, b, vocab))
        return [n for n, _ in out], [t for _, t in out]

    def record(self, res: GenerationResult, new: list[int], block: int, accepted: int, times) -> bool:
        """Add one step to a row's result as ``generate`` does; True when the row has stopped."""
        res.record_step(block, accepted, draft_time=times[0], verify_time=times[1])
        res.output_ids += new
        eos, stop_strings, tokenizer = self.stop
        stop = stop_index(res.output_ids, len(res.output_ids) - len(new), eos, stop_strings, tokenizer)
        if stop is not None:
            del res.output_ids[stop:], res.from_draft[stop:]
            res.stop_reason = "eos" if res.output_ids and res.output_ids[-1] in eos else "stop_string"
        elif res.new_tokens >= self.max_new_tokens:
            res.stop_reason = "max_new_tokens"
        return bool(res.stop_reason)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["generate_batch"]
