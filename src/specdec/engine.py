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
from typing import cast

import torch

from specdec import validate, verify
from specdec.cache import CachedLM, TargetLM
from specdec.drafters import AdaptiveDrafter, Drafter, ModelDrafter
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

    def record_step(self, block: int, n_accepted: int, draft_time: float, verify_time: float) -> None:
        """Count one target call: its drafted block, the accepted tokens (plus the target's own next token) and
        the seconds spent drafting and verifying."""
        self.draft_time += draft_time
        self.verify_time += verify_time
        self.target_calls += 1
        if block > 0:
            self.accepted_per_block.append(n_accepted)
            self.drafted_per_block.append(block)
        self.from_draft += [True] * n_accepted + [False]

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
    prompt_ids = check_prompt(prompt_ids)
    sampling, gamma, max_new_tokens, seed, stop_strings = check_options(
        sampling, gamma, max_new_tokens, seed, stop_strings, tokenizer
    )
    drafter = as_drafter(drafter)
    target_lm = as_target_lm(target)
    check_request(target_lm, prompt_ids, max_new_tokens, target_inputs)
    validate.model_inputs("draft_inputs", draft_inputs)
    check_vocab(drafter, target_lm)
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
        block = check_draft(draft_tokens, block)  # a drafter may propose fewer tokens (prompt lookup), never more
        t1 = now(device)
        target_logits = target_lm.extend(out + draft_tokens.tolist())[0, -(block + 1) :]  # [block+1, V]
        check_logits(target_logits, len(out))
        n_accepted, next_token = verifier(draft_tokens, draft_probs, target_logits, sampling, verify_gen)
        n_accepted, next_token = check_verdict(n_accepted, next_token, block, target_lm.vocab_size)
        new = draft_tokens[:n_accepted].tolist() + [next_token]
        result.record_step(block, n_accepted, draft_time=t1 - t0, verify_time=now(device) - t1)
        if block > 0 and adaptive:  # the drafter learns from the verified positions
            n_verified = min(n_accepted + 1, block)  # the bonus position has no draft distribution
            drafter.observe(target_logits[:n_verified], new[:n_verified], sampling)
        out += new
        stop = stop_index(out, len(out) - len(new), eos_ids, stop_strings, tokenizer)
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


def draft_block(drafter, generated: list[int], block: int, sampling, generator, target_lm):
    """``(tokens [k], probs [k, V])`` the drafter proposes after ``generated`` (``k ≤ block``; ``k = 0`` with no
    drafter or ``block = 0``), ``probs`` padded to the target's vocabulary ``V``."""
    if drafter is None or block == 0:
        return (
            torch.zeros(0, dtype=torch.long, device=target_lm.device),
            torch.zeros((0, target_lm.vocab_size), device=target_lm.device),
        )
    tokens, probs = drafter.propose(generated, block, sampling, generator)
    if probs is not None and len(tokens):
        validate.draft_scores(probs[: len(tokens)], "probabilities")  # any drafter, not only ModelDrafter
    return tokens, pad_vocab(probs, target_lm.vocab_size)


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
    validate.model_inputs("target_inputs", target_inputs)
    pixels = (target_inputs or {}).get("pixel_values")
    if pixels is not None and image_token is None:
        raise ValueError(
            f"pixel_values were given to a text-only target ({type(target_lm.model).__name__}), which would drop "
            "them: use a vision-language target (LLaVA) or leave the images out"
        )
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
        return cast(Drafter, ModelDrafter(drafter))
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


def pad_vocab(probs: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Model-free drafters return ``[γ, V']`` with ``V' ≤ V``; pad with zeros to the target's vocabulary. Wider rows
    are a ``ValueError``: their extra tokens are outside the target's vocabulary (cutting them would drop mass)."""
    if probs.shape[-1] > vocab_size:
        raise ValueError(
            f"the draft's probabilities have {probs.shape[-1]} columns, more than the target's vocabulary of "
            f"{vocab_size}: the draft and the target must share one tokenizer (a draft vocabulary that is a prefix of "
            "the target's is padded)"
        )
    if probs.shape[-1] < vocab_size:
        probs = torch.nn.functional.pad(probs, (0, vocab_size - probs.shape[-1]))
    return probs


def default_verifier(draft_tokens, draft_probs, target_logits, sampling, generator):
    """``generate``'s verifier: ``verify.greedy``, or ``verify.stochastic`` on the warped target distribution."""
    if sampling.greedy:
        return verify.greedy(draft_tokens, target_logits)
    target_probs = logits_to_probs(target_logits, sampling, check=False)  # generate checked them (check_logits)
    return verify.stochastic(draft_tokens, draft_probs, target_probs, generator)


def autoregressive(target, prompt_ids, **kwargs) -> GenerationResult:
    """Plain decoding, one target call per token: ``generate`` without a drafter."""
    return generate(target, prompt_ids, drafter=None, **kwargs)


def stop_index(out, first_new, eos_ids, stop_strings, tokenizer):
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
    ids = [eos_token_id] if _int_like(eos_token_id) else eos_token_id
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__") or not all(_int_like(i) for i in ids):
        raise ValueError(f"eos_token_id must be a token id (int) or a list of ids, got {eos_token_id!r}")
    ids = {int(i) for i in ids}
    if any(i < 0 for i in ids):
        raise ValueError(f"eos_token_id must be token ids >= 0, got {eos_token_id!r}")
    return ids


def _int_like(value) -> bool:
    """An int, a numpy int or a 0-d integer tensor; never a bool or a float."""
    try:
        validate.integer("eos_token_id", value)
    except (TypeError, ValueError):
        return False
    return True


_eos_ids = eos_ids  # generate() names its local set ``eos_ids``


def check_options(sampling, gamma, max_new_tokens, seed, stop_strings, tokenizer) -> tuple:
    """The decoding options ``generate`` and ``generate_batch`` share, checked and normalised:
    ``(sampling, gamma, max_new_tokens, seed, stop_strings)``."""
    sampling = check_sampling(sampling)
    gamma = check_int("gamma", gamma, minimum=1, hint="draft at least one token per block")
    max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=0)
    seed = validate.integer("seed", seed, hint="the seed of the sampling generators")
    stop_strings = validate.strings("stop_strings", stop_strings)  # "ab" is one stop string, not "a" or "b"
    if stop_strings and tokenizer is None:
        raise ValueError("stop_strings need the tokenizer that decodes the ids: pass tokenizer=...")
    return sampling, gamma, max_new_tokens, seed, stop_strings


def check_vocab(drafter, target_lm) -> None:
    """A drafter that states its vocabulary must share the target's: one tokenizer for both models."""
    if drafter is not None and getattr(drafter, "vocab_size", target_lm.vocab_size) != target_lm.vocab_size:
        raise ValueError(
            f"draft vocabulary ({drafter.vocab_size}) differs from the target's "
            f"({target_lm.vocab_size}); speculative decoding needs one shared tokenizer"
        )


def check_prompt(prompt_ids) -> torch.Tensor:
    """``prompt_ids`` as ``LongTensor[L]`` (a ``[1, L]`` batch of one is unwrapped); a clear error otherwise."""
    if isinstance(prompt_ids, (str, bytes)):
        raise TypeError(
            f"prompt_ids must be token ids, got text {prompt_ids[:40]!r}: encode it first, e.g. "
            "specdec.zoo.tasks.encode(tokenizer, text) or tokenizer(text, return_tensors='pt').input_ids"
        )
    try:
        prompt_ids = torch.as_tensor(prompt_ids)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"prompt_ids must be a sequence of token ids, got {type(prompt_ids).__name__}: {err}") from None
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


def check_int(name, value, minimum, hint="") -> int:
    """``value`` as an ``int >= minimum`` (numpy ints accepted); ``ValueError`` otherwise."""
    try:
        return validate.integer(name, value, minimum=minimum, hint=hint)
    except TypeError as e:  # callers catch ValueError for every bad size
        raise ValueError(str(e)) from None


def check_sampling(sampling) -> SamplingConfig:
    """``None`` (greedy) or a ``SamplingConfig``; a dict or a bare temperature is refused with the fix."""
    if sampling is None:
        return SamplingConfig()
    if not isinstance(sampling, SamplingConfig):
        raise TypeError(
            f"sampling must be a specdec.sampling.SamplingConfig, got {type(sampling).__name__} {sampling!r}: "
            "pass SamplingConfig(temperature=..., top_k=..., top_p=...)"
        )
    return sampling


def check_draft(draft_tokens: torch.Tensor, block: int) -> int:
    """The length of a proposed block, refused when it is longer than asked: a drafter that over-proposes would
    overrun ``max_new_tokens`` and γ."""
    if len(draft_tokens) > block:
        raise ValueError(
            f"the drafter proposed {len(draft_tokens)} tokens for a block of at most {block}: "
            "Drafter.propose(generated, n, ...) must return at most n tokens"
        )
    return len(draft_tokens)


def check_logits(target_logits: torch.Tensor, position: int) -> None:
    """Stop on non-finite target logits: argmax of a NaN row is token 0, so they would decode silently."""
    if validate.broken_scores(target_logits):
        raise FloatingPointError(
            f"the target's logits at new token {position} hold NaN or inf: the model overflowed (float16?) or "
            "its weights are broken; load it in float32 / bfloat16 or check the checkpoint"
        )


def check_verdict(n_accepted, next_token, block: int, vocab_size: int) -> tuple[int, int]:
    """A verifier's ``(n_accepted, next_token)`` within ``0 <= n_accepted <= block`` and the vocabulary."""
    n_accepted = validate.integer("the verifier's n_accepted", n_accepted)
    if not 0 <= n_accepted <= block:
        raise ValueError(
            f"the verifier accepted {n_accepted} tokens of a block of {block}: a verifier returns "
            "(n_accepted, next_token) with 0 <= n_accepted <= len(draft_tokens)"
        )
    next_token = validate.integer("the verifier's next_token", next_token)
    if not 0 <= next_token < vocab_size:
        raise ValueError(f"the verifier's next_token {next_token} is outside the vocabulary 0..{vocab_size - 1}")
    return n_accepted, next_token


def now(device) -> float:
    """The clock every timing in this package reads: ``perf_counter`` after the device's queued work is done.

    Not ``torch.utils.benchmark.Timer``: that times one statement run many times, while a decode needs the clock
    between the phases of a single run (draft, verify, per step and per row), and a forward-latency repeat
    (``bench.forward_latency``) must crop the KV cache between calls, outside the timed call."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "GenerationResult",
    "as_drafter",
    "as_target_lm",
    "autoregressive",
    "check_draft",
    "check_int",
    "check_logits",
    "check_options",
    "check_prompt",
    "check_request",
    "check_sampling",
    "check_verdict",
    "check_vocab",
    "eos_ids",
    "generate",
    "now",
    "pad_vocab",
]
