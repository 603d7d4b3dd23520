"""One decode call of a Llama-style causal LM without transformers' per-call wrappers.

A tiny model's decode call on a CPU is mostly Python: ``LlamaForCausalLM.__call__`` goes through the
config-defaults and output-capturing decorators, builds a causal mask, slices its layer list, and wraps the
result in output dataclasses, before and after the handful of kernels the layers run. ``decode_logits`` runs the
model's own submodules (embedding, rotary embedding, decoder layers, final norm, LM head) in the order its
``forward`` does, with the same arguments, so the kernels and their inputs are the same and the logits are
bitwise the same; only the wrappers are skipped (about a quarter of a one-token call of the tiny draft).

Two callers: ``cache.CachedLM`` feeds unpadded rows that share their positions (``decode_logits``), and
``cache.BatchedLM`` feeds padded rows with a 2-D attention mask and position ids per row (``decode_logits`` with
``attention_mask`` / ``position_ids``: HF's own mask function on that padding mask, the rotary embedding of those
positions, every layer, ``logits_to_keep``; what ``LlamaForCausalLM.forward`` does with the same arguments).
``fast_path`` (the model) and ``hooked`` (per call) are the one place that decides: a Llama-style text model with
a ``DynamicCache``, SDPA attention, the default rotary embedding and no hooks (whoever hooked it, e.g. a profiler,
expects its forward to run). Everything else (LLaVA, images or ``inputs_embeds``, other architectures, hooked
models) goes through ``model(...)`` as before.
"""

from __future__ import annotations

import weakref

import torch

# Classes whose forward ``decode_logits`` mirrors: embed, rotary embedding, every layer, norm, lm_head.
_LLAMA_STYLE = {"LlamaForCausalLM"}


def fast_path(model) -> bool:
    """Whether ``decode_logits`` computes exactly what ``model(input_ids=..., past_key_values=..., attention_mask=...,
    position_ids=...)`` would: a known Llama-style text class (not LLaVA, whose forward merges images first) with the
    default rotary embedding and SDPA attention over one full-attention cache. The one decision of both caches."""
    if type(model).__name__ not in _LLAMA_STYLE:
        return False
    base = getattr(model, "model", None)
    parts = ("embed_tokens", "layers", "norm", "rotary_emb")
    if base is None or not all(hasattr(base, p) for p in parts) or not hasattr(model, "lm_head"):
        return False
    config = model.config
    rope = (getattr(config, "rope_parameters", None) or {}).get("rope_type", "default")
    return (
        config._attn_implementation == "sdpa"
        and rope == "default"
        and getattr(config, "sliding_window", None) is None
        and len(base.layers) == config.num_hidden_layers
    )


def hooked(model) -> bool:
    """Whether forward hooks watch ``model`` or its base model (the two modules ``decode_logits`` does not call), or
    global ones: then it must be called, not bypassed. Hooks on the layers and heads fire either way."""
    from torch.nn.modules import module as nn_module

    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in (model, model.model))


def decode_logits(
    model, ids: torch.Tensor, cache, attention_mask=None, position_ids=None, logits_to_keep: int = 0
) -> torch.Tensor:
    """Logits ``[m, k, V]`` of ``ids [m, k]`` fed after the ``cache`` (a ``DynamicCache``, extended in place): the
    logits of ``model(input_ids=ids, past_key_values=cache, use_cache=True, attention_mask=..., position_ids=...,
    logits_to_keep=...)``, bit for bit.

    Without ``attention_mask`` the rows are unpadded and count their positions from the cache length. With it
    (``[m, C + k]``, 1 / True where a column holds a token of the row) ``position_ids [m, k]`` are the rows' own
    positions. ``logits_to_keep``: ``n > 0`` keeps the last ``n`` positions (``[m, n, V]``), as HF does.
    The caller runs it under ``torch.inference_mode`` and has checked ``fast_path(model)`` and ``hooked(model)``.
    """
    from transformers.masking_utils import create_causal_mask

    base = model.model
    k = ids.shape[1]
    hidden = base.embed_tokens(ids)
    if attention_mask is None:
        past = cache.get_seq_length()
        positions = torch.arange(past, past + k, device=ids.device)[None, :]
        rotary = rotary_embedding(base.rotary_emb, hidden, positions, past)
    else:
        # Positions differ per row (padding, holes): computed as HF computes them, never memoised.
        positions = position_ids
        rotary = base.rotary_emb(hidden, position_ids=positions)
    # One unpadded new token attends to every cached one: HF's SDPA mask is None then. Several new tokens (the
    # causal block), or a padding mask, take HF's own function, so it is the mask model(...) would use.
    mask = None
    if k > 1 or attention_mask is not None:
        mask = create_causal_mask(
            config=model.config,
            inputs_embeds=hidden,
            attention_mask=attention_mask,
            past_key_values=cache,
            position_ids=positions,
        )
    for layer in base.layers:
        hidden = layer(
            hidden,
            attention_mask=mask,
            position_embeddings=rotary,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
        )
    hidden = base.norm(hidden)  # the whole block, then the slice, as LlamaModel and LlamaForCausalLM do
    if logits_to_keep:
        hidden = hidden[:, -logits_to_keep:, :]
    return model.lm_head(hidden)


# cos / sin of the rotary embedding per (first position, length, dtype, device), per rotary module. Memoised, not a
# table sliced by position: a call of another shape may round cos / sin differently (vectorised loop vs tail), so
# only the same call is sure to give the same bits. A decode asks for the same few shapes at the same positions over
# and over (the draft re-runs rejected positions; every prompt passes the same positions).
_ROTARY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ROTARY_ENTRIES = 8192  # a bound, far above one model's positions x call lengths in a sweep


def rotary_embedding(module, hidden: torch.Tensor, positions: torch.Tensor, past: int):
    """``module(hidden, position_ids=positions)`` (a default rotary embedding: a pure function of the positions,
    the dtype and the device), computed once per distinct call."""
    memo = _ROTARY.setdefault(module, {})
    key = (past, positions.shape[1], hidden.dtype, hidden.device)
    found = memo.get(key)
    if found is None:
        if len(memo) >= _ROTARY_ENTRIES:
            memo.clear()
        found = memo[key] = module(hidden, position_ids=positions)
    return found


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["fast_path", "hooked"]
