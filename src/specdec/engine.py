"""The decode loop: draft γ tokens, verify them in one target call, accept, roll both caches back.

``generate(target, prompt_ids, drafter)`` runs speculative decoding; with ``drafter=None`` the same loop
is plain autoregressive decoding (one target call per token), which is the baseline every speedup is
measured against. Everything the loop observed comes back as a ``GenerationResult``.

Cache invariant (both models): the cache holds the prompt and every kept token except the last one; the
last kept token is fed first in the next call, so no position is ever computed twice.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch

from specdec import verify
from specdec.cache import BatchedLM, CachedLM, TargetLM
from specdec.drafters import AdaptiveDrafter, Drafter, ModelDrafter, batch_drafter
from specdec.sampling import SamplingConfig, logits_to_probs


@dataclass
class GenerationResult:
    """Output and statistics of one generation.

    ``block_efficiency`` τ counts the corrected / bonus token: new tokens per target decode call
    (``1 ≤ τ ≤ γ + 1``). ``acceptance_rate`` α = accepted draft tokens / drafted tokens.
    ``from_draft[i]`` says whether new token ``i`` was a draft token the target accepted.
    """

    prompt_ids: list[int]
    output_ids: list[int]
    gamma: int
    target_calls: int = 0  # decode calls (the prefill call is not counted)
    draft_calls: int = 0
    accepted_per_block: list[int] = field(default_factory=list)
    drafted_per_block: list[int] = field(default_factory=list)
    from_draft: list[bool] = field(default_factory=list)
    target_tokens_fed: int = 0
    draft_tokens_fed: int = 0
    prefill_time: float = 0.0
    draft_time: float = 0.0
    verify_time: float = 0.0
    total_time: float = 0.0
    stop_reason: str = ""

    @property
    def new_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def block_efficiency(self) -> float:
        return self.new_tokens / self.target_calls if self.target_calls else float("nan")

    @property
    def acceptance_rate(self) -> float:
        drafted = sum(self.drafted_per_block)
        return sum(self.accepted_per_block) / drafted if drafted else float("nan")

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.total_time if self.total_time else float("nan")

    def summary(self) -> dict:
        """One flat dict of the scalar statistics (a tidy results row)."""
        row = {k: v for k, v in asdict(self).items() if not isinstance(v, list)}
        row.update(
            new_tokens=self.new_tokens,
            block_efficiency=self.block_efficiency,
            acceptance_rate=self.acceptance_rate,
            tokens_per_second=self.tokens_per_second,
        )
        return row


def generate(
    target,
    prompt_ids,
    drafter=None,
    *,
    gamma: int = 5,
    max_new_tokens: int = 128,
    sampling: SamplingConfig | None = None,
    eos_token_id=None,
    stop_strings=None,
    tokenizer=None,
    seed: int = 0,
    verifier=None,
    target_inputs: dict | None = None,
    draft_inputs: dict | None = None,
) -> GenerationResult:
    """Generate up to ``max_new_tokens`` tokens after ``prompt_ids`` (``LongTensor[L]``, batch size 1).

    target: a transformers causal LM (or LLaVA) model. drafter: ``None`` (autoregressive baseline), a
    draft model (wrapped in ``ModelDrafter``) or any object with the drafter protocol
    (``specdec.drafters``). gamma: draft length γ ≥ 1. sampling: temperature 0 (default) is greedy.
    eos_token_id: int or list (default: the target's ``generation_config``); stop_strings need ``tokenizer``.
    verifier: ``f(draft_tokens, draft_probs, target_logits, sampling, generator) -> (n_accepted, next)``;
    default ``verify.greedy`` / ``verify.stochastic`` on the warped target distribution.
    target_inputs / draft_inputs: extra prefill inputs (e.g. ``pixel_values``) for each model.
    """
    sampling = sampling or SamplingConfig()
    prompt_ids = check_prompt(prompt_ids)
    check_int("gamma", gamma, minimum=1, hint="draft at least one token per block")
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    if stop_strings and tokenizer is None:
        raise ValueError("stop_strings need the tokenizer that decodes the ids: pass tokenizer=...")
    drafter = as_drafter(drafter)
    target_lm = as_target_lm(target)
    check_request(target_lm, prompt_ids, max_new_tokens, target_inputs)
    if drafter is not None and getattr(drafter, "vocab_size", target_lm.vocab_size) != target_lm.vocab_size:
        raise ValueError(
            f"draft vocabulary ({drafter.vocab_size}) differs from the target's "
            f"({target_lm.vocab_size}); speculative decoding needs one shared tokenizer"
        )
    eos_ids = _eos_ids(target_lm.model if isinstance(target_lm, CachedLM) else target, eos_token_id)
    verifier = verifier or default_verifier
    adaptive = isinstance(drafter, AdaptiveDrafter)  # once: a runtime-checkable Protocol's isinstance costs ~25 µs
    device = target_lm.device
    draft_gen = torch.Generator(device=device).manual_seed(seed)
    verify_gen = torch.Generator(device=device).manual_seed(seed + 1)

    result = GenerationResult(prompt_ids=prompt_ids.tolist(), output_ids=[], gamma=gamma if drafter else 0)
    t_start = now(device)
    target_lm.prefill([prompt_ids.to(device)], **(target_inputs or {}))
    if drafter is not None:
        drafter.prefill(prompt_ids.to(device), **(draft_inputs or {}))
    result.prefill_time = now(device) - t_start
    out: list[int] = []
    while len(out) < max_new_tokens:
        block = 0 if drafter is None else min(gamma, max_new_tokens - len(out) - 1)
        t0 = now(device)
        draft_tokens, draft_probs = draft_block(drafter, out, block, sampling, draft_gen, target_lm)
        block = len(draft_tokens)  # a drafter may propose fewer tokens (prompt lookup)
        t1 = now(device)
        target_logits = target_lm.extend(out + draft_tokens.tolist())[0, -(block + 1) :]  # [block+1, V]
        n_accepted, next_token = verifier(draft_tokens, draft_probs, target_logits, sampling, verify_gen)
        new = draft_tokens[:n_accepted].tolist() + [next_token]
        t2 = now(device)
        result.draft_time += t1 - t0
        result.verify_time += t2 - t1
        result.target_calls += 1
        if block > 0:
            result.accepted_per_block.append(n_accepted)
            result.drafted_per_block.append(block)
        result.from_draft += [True] * n_accepted + [False]
        if block > 0 and adaptive:  # the drafter learns from the verified positions
            n_verified = min(n_accepted + 1, block)  # the bonus position has no draft distribution
            drafter.observe(target_logits[:n_verified], new[:n_verified], sampling)
        out += new
        stop = _stop_index(out, len(out) - len(new), eos_ids, stop_strings, tokenizer)
        if stop is not None:
            del out[stop:], result.from_draft[stop:]
            result.stop_reason = "eos" if out and out[-1] in eos_ids else "stop_string"
            break
        target_lm.rollback(out)
        if drafter is not None:
            drafter.rollback(out)
    result.stop_reason = result.stop_reason or "max_new_tokens"
    result.output_ids = out[:max_new_tokens]
    result.from_draft = result.from_draft[:max_new_tokens]
    result.total_time = now(device) - t_start
    result.target_tokens_fed = target_lm.tokens_fed
    if drafter is not None:
        result.draft_calls = drafter.calls
        result.draft_tokens_fed = drafter.tokens_fed
    return result


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
) -> BatchResult:
    """``generate`` for ``B`` prompts at once (``prompts``: ``B`` LongTensors ``[L_i]`` of any lengths): each step
    runs the drafter once per draft position and the target once for the whole batch; rows accept, roll back
    and stop on their own (``BatchedLM``), and a finished row leaves the batch.

    Row ``i`` is ``generate(target, prompts[i], drafter, seed=seeds[i], ...)`` with the same options: the same
    tokens, blocks, τ and α (its generators make the same draws, so under sampling too, up to floating-point
    rounding of the batched forwards). ``seeds`` default to ``seed + i``. ``target``: a transformers model (or
    its ``CachedLM``); ``drafter``: None, a draft model, or what ``drafters.batch_drafter`` accepts (drafters
    with per-sequence state run at batch size 1 and are refused). Per-row ``target_tokens_fed`` /
    ``draft_tokens_fed`` count the positions the row ran (filler columns excluded).
    """
    sampling = sampling or SamplingConfig()
    prompts = [check_prompt(p) for p in prompts]
    if not prompts:
        raise ValueError("generate_batch needs at least one prompt")
    check_int("gamma", gamma, minimum=1, hint="draft at least one token per block")
    check_int("max_new_tokens", max_new_tokens, minimum=0)
    if stop_strings and tokenizer is None:
        raise ValueError("stop_strings need the tokenizer that decodes the ids: pass tokenizer=...")
    model = target.model if isinstance(target, CachedLM) else target
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"generate_batch needs a transformers model as target, got {type(target).__name__}: "
            "a combined target (TargetLM) runs at batch size 1 with engine.generate"
        )
    target_lm = BatchedLM(model)
    for p in prompts:
        check_request(target_lm, p, max_new_tokens, None)
    drafter = batch_drafter(drafter, target_lm.vocab_size)
    if drafter is not None and drafter.vocab_size != target_lm.vocab_size:
        raise ValueError(
            f"draft vocabulary ({drafter.vocab_size}) differs from the target's ({target_lm.vocab_size}); "
            "speculative decoding needs one shared tokenizer"
        )
    seeds = [seed + i for i in range(len(prompts))] if seeds is None else list(seeds)
    device = target_lm.device
    draft_gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    verify_gens = [torch.Generator(device=device).manual_seed(s + 1) for s in seeds]
    rows = [GenerationResult(prompt_ids=p.tolist(), output_ids=[], gamma=gamma if drafter else 0) for p in prompts]
    batch = BatchResult(rows=rows)
    loop = _BatchLoop(target_lm, drafter, gamma, max_new_tokens, sampling, verifier, draft_gens, verify_gens)
    loop.stop = (eos_ids(model, eos_token_id), stop_strings, tokenizer)

    t_start = now(device)
    target_lm.prefill([p.to(device) for p in prompts])
    if drafter is not None:
        drafter.prefill([p.to(device) for p in prompts])
    batch.prefill_time = now(device) - t_start
    loop.run(rows, [p.tolist() for p in prompts], t_start)
    batch.steps, batch.total_time = loop.steps, now(device) - t_start
    for i, res in enumerate(rows):
        res.prefill_time = batch.prefill_time
        res.stop_reason = res.stop_reason or "max_new_tokens"
        res.target_tokens_fed = target_lm.tokens_fed[i]
        if drafter is not None and hasattr(drafter, "lm"):
            res.draft_calls, res.draft_tokens_fed = drafter.lm.calls[i], drafter.lm.tokens_fed[i]
    return batch


@dataclass
class _BatchLoop:
    """``generate_batch``'s decode loop over the rows still in the batch (``active``: their prompt indices)."""

    target_lm: BatchedLM
    drafter: object
    gamma: int
    max_new_tokens: int
    sampling: SamplingConfig
    verifier: object
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
            accepted, following = self.verify(drafts, probs, logits, blocks, active)
            t2 = now(device)
            self.steps += 1
            finished = []
            for j, (i, tokens) in enumerate(zip(active, drafts.tolist())):
                new = tokens[: accepted[j]] + [following[j]]
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
            probs = _pad_vocab(probs, self.target_lm.vocab_size)
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
        out = [
            verifier(drafts[j, :b], probs[j, :b], logits[j, : b + 1], self.sampling, self.verify_gens[i])
            for j, (i, b) in enumerate(zip(active, blocks))
        ]
        return [n for n, _ in out], [t for _, t in out]

    def record(self, res: GenerationResult, new: list[int], block: int, accepted: int, times) -> bool:
        """Add one step to a row's result as ``generate`` does; True when the row has stopped."""
        res.draft_time += times[0]
        res.verify_time += times[1]
        res.target_calls += 1
        if block > 0:
            res.accepted_per_block.append(accepted)
            res.drafted_per_block.append(block)
        res.from_draft += [True] * accepted + [False]
        res.output_ids += new
        eos, stop_strings, tokenizer = self.stop
        stop = _stop_index(res.output_ids, len(res.output_ids) - len(new), eos, stop_strings, tokenizer)
        if stop is not None:
            del res.output_ids[stop:], res.from_draft[stop:]
            res.stop_reason = "eos" if res.output_ids and res.output_ids[-1] in eos else "stop_string"
        elif res.new_tokens >= self.max_new_tokens:
            res.stop_reason = "max_new_tokens"
        return bool(res.stop_reason)


def draft_block(drafter, generated: list[int], block: int, sampling, generator, target_lm):
    """``(tokens [k], probs [k, V])`` the drafter proposes after ``generated`` (``k ≤ block``; ``k = 0`` with no
    drafter or ``block = 0``), ``probs`` padded to the target's vocabulary ``V``."""
    if drafter is None or block == 0:
        return (
            torch.zeros(0, dtype=torch.long, device=target_lm.device),
            torch.zeros((0, target_lm.vocab_size), device=target_lm.device),
        )
    tokens, probs = drafter.propose(generated, block, sampling, generator)
    return tokens, _pad_vocab(probs, target_lm.vocab_size)


def check_request(target_lm, prompt_ids: torch.Tensor, max_new_tokens: int, target_inputs: dict | None) -> None:
    """One clear error for a request the target cannot serve: ids outside its vocabulary, a prompt plus
    ``max_new_tokens`` longer than its context, image tokens without the images."""
    low, high = int(prompt_ids.min()), int(prompt_ids.max())
    if low < 0 or high >= target_lm.vocab_size:
        raise ValueError(
            f"prompt ids span {low}..{high}, outside the target's vocabulary 0..{target_lm.vocab_size - 1}: "
            "encode the prompt with the target's own tokenizer"
        )
    config = getattr(getattr(target_lm, "model", None), "config", None)
    if config is None:  # a combined target (cos.CombinedLM) checks its members itself
        return
    text_config = getattr(config, "text_config", None) or config
    context = getattr(text_config, "max_position_embeddings", None)
    if context and len(prompt_ids) + max_new_tokens > context:
        raise ValueError(
            f"the prompt ({len(prompt_ids)} tokens) plus max_new_tokens ({max_new_tokens}) exceeds the target's "
            f"context of {context} positions: shorten the prompt or ask for fewer tokens"
        )
    image_token = getattr(config, "image_token_id", None)
    if image_token is not None and bool((prompt_ids == image_token).any()):
        if (target_inputs or {}).get("pixel_values") is None:
            raise ValueError(
                "the prompt holds image tokens but no images were given: pass target_inputs={'pixel_values': ...} "
                "(the processor's output for the request's images)"
            )


def as_drafter(drafter) -> Drafter | None:
    """``None``, a ``Drafter``, or a draft model (a ``torch.nn.Module``, wrapped in ``ModelDrafter``)."""
    if drafter is None or isinstance(drafter, Drafter):
        return drafter
    if isinstance(drafter, torch.nn.Module):
        return ModelDrafter(drafter)
    raise TypeError(
        f"drafter must be None, a draft model or a Drafter (prefill / propose / rollback, calls, tokens_fed: "
        f"see specdec.drafters.Drafter), got {type(drafter).__name__}"
    )


def as_target_lm(target) -> TargetLM:
    """A ``TargetLM`` as it is (e.g. ``CachedLM``, ``cos.CombinedLM``), or a transformers model in a ``CachedLM``."""
    if isinstance(target, TargetLM):
        return target
    if isinstance(target, torch.nn.Module):
        return CachedLM(target)
    raise TypeError(
        f"target must be a transformers model or a TargetLM (prefill / extend / rollback: see "
        f"specdec.cache.TargetLM), got {type(target).__name__}"
    )


def _pad_vocab(probs: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Model-free drafters return ``[γ, V']`` with ``V' ≤ V``; pad with zeros to the target's vocabulary."""
    if probs.shape[-1] < vocab_size:
        probs = torch.nn.functional.pad(probs, (0, vocab_size - probs.shape[-1]))
    return probs


def default_verifier(draft_tokens, draft_probs, target_logits, sampling, generator):
    """``generate``'s verifier: ``verify.greedy``, or ``verify.stochastic`` on the warped target distribution."""
    if sampling.greedy:
        return verify.greedy(draft_tokens, target_logits)
    return verify.stochastic(draft_tokens, draft_probs, logits_to_probs(target_logits, sampling), generator)


def autoregressive(target, prompt_ids, **kwargs) -> GenerationResult:
    """Plain decoding, one target call per token: ``generate`` without a drafter."""
    return generate(target, prompt_ids, drafter=None, **kwargs)


def _stop_index(out, first_new, eos_ids, stop_strings, tokenizer):
    """Length to truncate ``out`` to if it now contains EOS or a stop string, else ``None``."""
    for i in range(first_new, len(out)):
        if out[i] in eos_ids:
            return i + 1
    if stop_strings:
        text = tokenizer.decode(out)
        if any(s in text for s in stop_strings):
            for k in range(max(1, first_new), len(out) + 1):
                if any(s in tokenizer.decode(out[:k]) for s in stop_strings):
                    return k
    return None


def eos_ids(model, eos_token_id) -> set[int]:
    if eos_token_id is None:
        gen_config = getattr(model, "generation_config", None)
        eos_token_id = getattr(gen_config, "eos_token_id", None)
    if eos_token_id is None:
        return set()
    ids = [eos_token_id] if isinstance(eos_token_id, int) else eos_token_id
    if isinstance(ids, (str, bytes)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise ValueError(f"eos_token_id must be a token id (int) or a list of ids, got {eos_token_id!r}")
    return set(ids)


_eos_ids = eos_ids  # generate() names its local set ``eos_ids``


def check_prompt(prompt_ids) -> torch.Tensor:
    prompt_ids = torch.as_tensor(prompt_ids)
    if prompt_ids.dim() == 2 and prompt_ids.shape[0] == 1:
        prompt_ids = prompt_ids[0]
    if prompt_ids.dim() != 1:
        raise ValueError(
            f"prompt_ids must be one sequence (LongTensor[L] or [1, L]); got shape "
            f"{list(prompt_ids.shape)}; the target runs at batch size 1"
        )
    if prompt_ids.numel() == 0:
        raise ValueError("the prompt is empty: give at least one token (e.g. the BOS token)")
    if prompt_ids.dtype not in (torch.long, torch.int32, torch.int64):
        raise ValueError(f"prompt_ids must be integer token ids, got {prompt_ids.dtype}")
    return prompt_ids.long()


def check_int(name, value, minimum, hint=""):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}" + (f" ({hint})" if hint else ""))


def now(device) -> float:
    """The clock every timing in this package reads: ``perf_counter`` after the device's queued work is done."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()
