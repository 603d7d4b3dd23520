"""Target-Draft Attention training (paper §3.3, Eq. 7-13): every position at every draft depth at once.

At inference the query of draft depth ``k`` in a block starting at verified position ``i`` (position ``t = i + k``)
sees, in one softmax, the target cache before the block (``K_{i-1}``: context entries at positions ``< t - k``,
plus the projected image slots, which lie in the prompt) and the module's own ``K'_{i..t}``. Training reproduces
that view for every ``t`` and every ``k`` of ``depths``: the scores query-vs-target-cache ``Q' K^T`` and
query-vs-own ``Q' K'^T`` are computed once and each depth only masks (indexes) them (``tda_attention``);
``naive_attention`` builds each position's ``K̂``/``V̂`` explicitly and is the reference of the tests.

Exactness: with one layer a token's ``k'``/``v'`` depend on the token and its position only, so the own keys in a
block are the same whichever block they belong to, and this training is exactly what inference computes (teacher
forcing: in-block tokens are the reference tokens; at inference they are draft tokens, equal when accepted).
With more layers the own ``K'``/``V'`` of deeper layers would depend on the mask (the block start) and the
shared-score trick would only approximate inference; the module therefore has one layer.

Shapes: ``q``, ``k_own``, ``v_own`` ``[B, H, T, d]`` (own keys / values already repeated to ``H`` heads);
``k_ctx``, ``v_ctx`` ``[B, H, C, d]``; ``ctx_pos [B, C]``: the absolute position of each context entry (``-1``:
always visible, e.g. a projected image slot; ``module.NEVER``: padding).
"""

from __future__ import annotations

import torch
from torch import nn

from specdec.aasd.algorithm import NEVER, SpeculatingModule, image_context, repeat_kv, split_context
from specdec.cache import layer_kv


def tda_attention(q, k_own, v_own, k_ctx, v_ctx, ctx_pos, q_pos, depths, own_only: bool = False) -> torch.Tensor:
    """Attention outputs ``[len(depths), B, H, T, d]``. The ``T`` positions are a window of consecutive positions
    (absolute positions ``q_pos [B, T]``); at depth ``k`` window position ``j`` attends to the context entries at
    absolute positions ``< q_pos[j] - k`` and to its own keys ``j - k .. j`` (``own_only``: own keys ``0 .. j``
    and no context)."""
    scale = q.shape[-1] ** -0.5
    j = torch.arange(q.shape[2], device=q.device)
    s_ctx = (q @ k_ctx.transpose(-1, -2)) * scale  # [B, H, T, C], once for every depth
    s_own = (q @ k_own.transpose(-1, -2)) * scale  # [B, H, T, T]
    outs = []
    for depth in depths:
        start = torch.zeros_like(j) if own_only else j - depth  # block start (window index) of j at this depth
        see_own = (j[None, :] >= start[:, None]) & (j[None, :] <= j[:, None])  # [T, T]
        see_ctx = ctx_pos[:, None, None, :] < (q_pos - depth)[:, None, :, None]  # [B, 1, T, C]
        if own_only:
            see_ctx = torch.zeros_like(see_ctx)
        scores = torch.cat([s_ctx.masked_fill(~see_ctx, float("-inf")), s_own.masked_fill(~see_own, float("-inf"))], -1)
        probs = scores.float().softmax(-1).to(q.dtype)
        c = k_ctx.shape[2]
        outs.append(probs[..., :c] @ v_ctx + probs[..., c:] @ v_own)
    return torch.stack(outs)


def naive_attention(q, k_own, v_own, k_ctx, v_ctx, ctx_pos, q_pos, depth: int, own_only: bool = False):
    """The reference: for each row and window position ``j``, ``K̂ = (K_{i-1}, K'_{i..j})`` built explicitly, one
    softmax. Returns ``[B, H, T, d]`` (positions ``j < depth``, whose block would start before the window, see
    their own keys from ``0``)."""
    b_len, _, t_len, _ = q.shape
    out = torch.zeros_like(q)
    for b in range(b_len):
        for j in range(t_len):
            start = 0 if own_only else max(0, j - depth)
            visible = torch.zeros(ctx_pos.shape[1], dtype=torch.bool) if own_only else ctx_pos[b] < q_pos[b, j] - depth
            k_hat = torch.cat([k_ctx[b][:, visible], k_own[b][:, start : j + 1]], dim=1)  # [H, n, d]
            v_hat = torch.cat([v_ctx[b][:, visible], v_own[b][:, start : j + 1]], dim=1)
            scores = (q[b][:, j : j + 1] @ k_hat.transpose(-1, -2)) * q.shape[-1] ** -0.5
            out[b][:, j] = (scores.float().softmax(-1).to(q.dtype) @ v_hat)[:, 0]
    return out


def batch_context(module: SpeculatingModule, input_ids, keys, values):
    """Context ``(k_ctx, v_ctx, ctx_pos)`` of a right-padded batch: per row the (projected) image slots
    (position ``-1``) and the text positions of the target cache ``keys``/``values [B, Hkv, T, d]``, padded."""
    c = module.config
    if c.context == "no_prompt_text":  # needs the prompt/answer split, which a batch of ids does not carry
        raise ValueError('context "no_prompt_text" is an inference-time ablation (AASDDrafter), not a training one')
    parts = []
    for b in range(input_ids.shape[0]):
        image_pos, text_pos = split_context(c, input_ids[b])
        k_img, v_img = image_context(module, keys[b : b + 1], values[b : b + 1], image_pos.to(keys.device))
        if c.context in ("no_text", "own"):
            text_pos = text_pos[:0]
        text_pos = text_pos.to(keys.device)
        k_b = torch.cat([k_img[0], keys[b][:, text_pos]], dim=1)
        v_b = torch.cat([v_img[0], values[b][:, text_pos]], dim=1)
        pos_b = torch.cat([torch.full((k_img.shape[2],), -1, device=keys.device), text_pos])
        parts.append((k_b, v_b, pos_b))
    width = max(p[0].shape[1] for p in parts)
    hkv, d = keys.shape[1], keys.shape[3]
    k_ctx = keys.new_zeros(len(parts), hkv, width, d)
    v_ctx = values.new_zeros(len(parts), hkv, width, d)
    ctx_pos = torch.full((len(parts), width), NEVER, dtype=torch.long, device=keys.device)
    for b, (k_b, v_b, pos_b) in enumerate(parts):
        n = k_b.shape[1]
        k_ctx[b, :, :n], v_ctx[b, :, :n], ctx_pos[b, :n] = k_b, v_b, pos_b
    return k_ctx, v_ctx, ctx_pos


def answer_window(batch: dict, from_start: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids [B, A], positions [B, A], valid [B, A])``: each row from its last prompt token to its end, right-padded
    (the only positions a block can start at or reach; ``from_start``: from position 0, for a module whose own keys
    cover the prompt too). ``valid[b, j]``: the next token is an answer token."""
    labels = batch["labels"]
    answer = labels[:, 1:] != -100  # position t predicts an answer token
    first = answer.float().argmax(1)  # the last prompt position
    ends = answer.sum(1) + first  # one past the last predicting position
    if from_start:
        first = torch.zeros_like(first)
    width = int((ends - first).max())
    j = torch.arange(width, device=labels.device)
    positions = first[:, None] + j[None, :]
    valid = (positions < ends[:, None]) & answer.gather(1, positions.clamp(max=answer.shape[1] - 1))
    positions = positions.clamp(max=batch["input_ids"].shape[1] - 1)
    return batch["input_ids"].gather(1, positions), positions, valid


class TDAObjective(nn.Module):
    """A speculating module under Target-Draft Attention as one ``nn.Module`` whose ``forward`` runs every
    trainable part (own q/k/v, the projector, the layer's output): what ``accelerate`` / DDP / FSDP wrap, so that
    gradients are synchronised through the wrapper's forward (calling the module's methods directly would bypass
    it). Its parameters are the module's."""

    def __init__(self, module: SpeculatingModule):
        super().__init__()
        self.module = module

    def forward(self, input_ids, keys, values, ids, q_pos, depths, triples) -> torch.Tensor:
        """Logits ``[N, V]`` at the ``N`` (depth index, row, window position) ``triples`` of the answer window
        (``ids`` / ``q_pos [B, A]``), the context read from the target's last-layer ``keys`` / ``values``
        ``[B, Hkv, T, d]`` of the prompt-and-answer ``input_ids [B, T]``."""
        m = self.module
        h, q, k, v = m.qkv(ids, q_pos)
        k_ctx, v_ctx, ctx_pos = batch_context(m, input_ids, keys, values)
        rep = m.n_rep()
        attn = tda_attention(
            q,
            repeat_kv(k, rep),
            repeat_kv(v, rep),
            repeat_kv(k_ctx, rep),
            repeat_kv(v_ctx, rep),
            ctx_pos,
            q_pos,
            depths,
            own_only=m.config.context == "own",
        )  # [G, B, H, A, d]
        g, b, heads, a, d = attn.shape
        attn = attn.permute(0, 1, 3, 2, 4).reshape(g, b, a, heads * d)
        gi, bi, ji = triples.unbind(1)
        return m.finish(h[bi, ji], attn[gi, bi, ji])


def tda_loss(model, batch: dict, target, depths, max_positions: int, generator):
    """Mean cross-entropy of the module's next-token distribution against the frozen ``target``'s (soft labels: its
    softmax at the same position) over answer positions at every depth of ``depths`` whose block starts at or
    after the last prompt token; at most ``max_positions`` (depth, row, position) triples, drawn with
    ``generator``, go through the output head. One target forward (no gradient) gives the cache and the labels.
    ``model``: a ``SpeculatingModule``, or its ``TDAObjective`` (possibly wrapped by ``accelerate``)."""
    objective = TDAObjective(model) if isinstance(model, SpeculatingModule) else model
    module = next(m for m in objective.modules() if isinstance(m, SpeculatingModule))
    with torch.no_grad():
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        out = target.model(**inputs, use_cache=True)
    keys, values = layer_kv(out.past_key_values)  # the target's last layer
    ids, q_pos, valid = answer_window(batch, from_start=module.config.context == "own")
    triples = torch.cat(
        [
            torch.nn.functional.pad(valid[:, depth:].nonzero(), (1, 0), value=gi)
            + torch.tensor([0, 0, depth], device=valid.device)
            for gi, depth in enumerate(depths)
        ]
    )  # (depth index, row, window position j >= depth)
    if len(triples) > max_positions:
        triples = triples[torch.randperm(len(triples), generator=generator)[:max_positions].to(triples.device)]
    dtype = next(module.parameters()).dtype  # a float32 module may train on a half-precision target's cache
    logits = objective(batch["input_ids"], keys.to(dtype), values.to(dtype), ids, q_pos, depths, triples)
    _, bi, ji = triples.unbind(1)
    with torch.no_grad():
        soft = target.lm_head(out.last_hidden_state[bi, q_pos[bi, ji]]).float().softmax(-1)
    return -(soft * logits.log_softmax(-1)).sum(-1).mean()


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
