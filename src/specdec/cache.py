"""A causal LM together with its KV cache, fed incrementally and rolled back by cropping.

``CachedLM`` holds ``m`` rows (the target uses one; TABED-style drafters use several prompt variants).
Each row has its own prompt (rows are left-padded to one length) and all rows share the generated
continuation, so rolling back is one crop of the whole batch. The cache never holds a token twice and is
never rebuilt: ``tokens_fed`` counts every token position sent through the model, which the tests use to
prove that no re-prefill happens.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from specdec import decode_call, validate


@runtime_checkable
class TargetLM(Protocol):
    """What ``engine.generate`` calls on a target (``CachedLM`` wraps a transformers model into one;
    ``specdec.cos.algorithm.CombinedLM`` combines several). One row here; ``V`` = ``vocab_size``.

    - ``prefill(prompt_rows, **model_inputs)``: start a sequence from ``[LongTensor[L]]``; the cache then holds
      every prompt position but the last, which stays pending.
    - ``extend(sequence) -> logits``: ``sequence`` is every token kept after the prompt plus the new draft tokens
      (``list[int]``); feeds the pending positions and returns their logits ``[1, n_pending, V]``, the last
      position predicting the token after ``sequence``.
    - ``rollback(sequence)``: keep the cache for ``sequence`` (minus its last token, which becomes pending).
    - ``device``, ``vocab_size``, ``tokens_fed`` (token positions run, for the result).
    """

    device: torch.device
    tokens_fed: int

    @property
    def vocab_size(self) -> int: ...

    def prefill(self, prompt_rows: list[torch.Tensor], **model_inputs) -> None: ...

    def extend(self, sequence: list[int]) -> torch.Tensor: ...

    def rollback(self, sequence: list[int]) -> None: ...


def crop_cache(cache, length: int) -> None:
    """Shorten a transformers ``Cache`` to ``length`` positions (works across the 4.x/5.x crop APIs)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def layer_kv(cache, layer: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """``(keys, values)`` ``[B, H_kv, L, d]`` of one layer of a transformers ``Cache``: the one place that reads its
    layout (5.x: ``cache.layers[i].keys``; 4.x: ``cache.key_cache[i]``), for a draft that reads the target's KV."""
    if hasattr(cache, "layers"):
        return cache.layers[layer].keys, cache.layers[layer].values
    return cache.key_cache[layer], cache.value_cache[layer]


class _ModelCache:
    """What both caches hold: the wrapped model, its device, its KV cache and its vocabulary size; ``fast``: whether
    its decode calls may bypass ``model(...)`` (``decode_call.fast_path``; a hooked model is called all the same)."""

    def __init__(self, model):
        self.model = validate.model("model", model)
        self.device = next(model.parameters()).device
        self.cache = None
        self.fast = decode_call.fast_path(model)  # once: the class and config checks cost more than a tiny call

    @property
    def vocab_size(self) -> int:
        # read once: transformers' get_output_embeddings() costs ~25 µs, and the engine asks every step
        if getattr(self, "_vocab_size", None) is None:
            self._vocab_size = self.model.get_output_embeddings().weight.shape[0]
        return self._vocab_size


class CachedLM(_ModelCache):
    """Wrap a ``*ForCausalLM`` (or LLaVA) model for incremental decoding with rollback.

    Invariant after ``prefill``: the cache holds every prompt position but the last; the last prompt token
    of each row and every generated token not yet seen are *pending* and are fed by the next ``extend``.
    """

    def __init__(self, model):
        super().__init__(model)
        self.tokens_fed = 0  # token positions sent through the model (padding excluded)
        self.calls = 0

    @torch.no_grad()
    def prefill(self, prompt_rows: list[torch.Tensor], row_features=None, **model_inputs) -> None:
        """Start a new sequence. ``prompt_rows``: ``m`` LongTensors ``[L_i]`` (``L_i >= 1``).

        ``model_inputs`` (e.g. ``pixel_values``) go to the prefill call only.
        ``row_features``: for LLaVA-style models whose rows carry *different* visual inputs (TABED's
        multimodal / pooled drafting rows), ``m`` tensors ``[n_i, D]`` (or ``None``) of already projected
        visual embeddings; row ``i``'s ``n_i`` image-token positions (``config.image_token_id``) get them in
        order and the prefill runs on ``inputs_embeds``. The image tokens must sit before the row's last
        token (which is fed later as an ordinary id).
        """
        from transformers import DynamicCache

        self.m = len(prompt_rows)
        lengths = [len(r) for r in prompt_rows]
        width = max(lengths)
        ids = torch.zeros((self.m, width), dtype=torch.long)  # left padding with id 0, masked out
        mask = torch.zeros((self.m, width), dtype=torch.long)
        for i, row in enumerate(prompt_rows):
            ids[i, width - len(row) :] = row
            mask[i, width - len(row) :] = 1
        self.padded = bool((mask == 0).any())
        self.mask = mask.to(self.device)
        self.last_prompt_tokens = ids[:, -1].to(self.device)
        self.width = width
        self.prompt_last_fed = False
        self.generated: list[int] = []  # generated tokens that are in the cache (shared by all rows)
        self.cache = DynamicCache(config=self.model.config)
        self.tokens_fed = 0
        self.calls = 0
        if row_features is not None:
            model_inputs["inputs_embeds"] = embed_rows(self.model, ids[:, :-1].to(self.device), row_features)
        if width > 1:
            self._forward(ids[:, :-1].to(self.device), positions_from=0, **model_inputs)
            self.tokens_fed += sum(lengths) - self.m
        elif model_inputs:
            raise ValueError("a one-token prompt cannot carry extra model inputs such as images")

    @property
    def cached_length(self) -> int:
        return self.cache.get_seq_length()

    def extend(self, sequence: list[int]) -> torch.Tensor:  # no grad context of its own: ``_forward`` has one
        """Feed whatever of the generated ``sequence`` is pending; return logits ``[m, k, V]`` (float32)
        for the ``k`` fed positions, position ``j`` predicting the token after the ``j``-th fed token.

        The first call after ``prefill`` also feeds each row's last prompt token.
        """
        n_known = len(self.generated)
        if list(sequence[:n_known]) != self.generated:
            raise RuntimeError("rollback() must be called before extending with a different continuation")
        new = torch.tensor([list(sequence[n_known:])], dtype=torch.long, device=self.device)  # [1, k]
        if self.m > 1:
            new = new.expand(self.m, -1)
        if not self.prompt_last_fed:
            new = torch.cat([self.last_prompt_tokens[:, None], new], dim=1)
            self.prompt_last_fed = True
        if new.shape[1] == 0:
            raise ValueError("extend() needs at least one pending token")
        logits = self._forward(new, positions_from=self.cached_length if self.padded else 0)  # unpadded: unused
        self.tokens_fed += new.numel()
        self.generated = list(sequence)
        return logits

    def rollback(self, sequence: list[int]) -> None:
        """Keep the cached positions that ``sequence`` (the generated tokens kept) still agrees with.

        The last token of ``sequence`` always stays pending, so the next ``extend`` has something to feed
        and returns the logits that follow it.
        """
        if not self.prompt_last_fed:
            return
        if len(sequence) == 0:
            crop_cache(self.cache, self.width - 1)
            self.generated, self.prompt_last_fed = [], False
            return
        keep = 0
        for a, b in zip(self.generated, sequence):
            if a != b:
                break
            keep += 1
        keep = min(keep, len(sequence) - 1)
        self.generated = self.generated[:keep]
        crop_cache(self.cache, self.width + keep)

    def _forward(self, ids: torch.Tensor, positions_from: int, **model_inputs) -> torch.Tensor:
        k = ids.shape[1]
        self.calls += 1
        if self.fast and not self.padded and not model_inputs and not decode_call.hooked(self.model):
            with torch.inference_mode():  # see below
                return decode_call.decode_logits(self.model, ids, self.cache).float()
        kwargs = dict(past_key_values=self.cache, use_cache=True, **model_inputs)
        if "inputs_embeds" not in kwargs:
            kwargs["input_ids"] = ids
        if self.padded:
            # Left padding: every row counts its positions from its own first real token.
            total = positions_from + k
            mask = torch.cat(
                [
                    self.mask,
                    torch.ones((self.m, max(0, total - self.mask.shape[1])), dtype=torch.long, device=self.device),
                ],
                dim=1,
            )[:, :total]
            pad = (self.mask == 0).sum(1, keepdim=True)
            kwargs["attention_mask"] = mask
            kwargs["position_ids"] = torch.arange(positions_from, total, device=self.device)[None, :] - pad
        # inference_mode, not only no_grad: it skips autograd's per-op bookkeeping (version counters, view
        # tracking), a visible share of a tiny model's call on a CPU; same kernels, so bitwise the same logits.
        with torch.inference_mode():
            out = self.model(**kwargs)
        return out.logits.float()


def embed_rows(model, ids: torch.Tensor, row_features) -> torch.Tensor:
    """``inputs_embeds [m, W, D]`` for padded ``ids [m, W]``: token embeddings, with row ``i``'s image-token
    positions replaced by ``row_features[i]`` (``[n_i, D]`` or ``None`` when the row has no image tokens)."""
    image_token = model.config.image_token_id
    embeds = model.get_input_embeddings()(ids).clone()
    if len(row_features) != ids.shape[0]:
        raise ValueError(f"got visual features for {len(row_features)} rows, the batch has {ids.shape[0]}")
    for i, features in enumerate(row_features):
        slots = ids[i] == image_token
        n_slots, n_features = int(slots.sum()), 0 if features is None else features.shape[0]
        if n_slots != n_features:
            raise ValueError(
                f"drafting row {i} has {n_slots} image tokens before its last token but "
                f"{n_features} visual embeddings; every <image> needs its features (and the "
                f"prompt must not end in an image token)"
            )
        if n_slots:
            embeds[i, slots] = features.to(embeds.dtype)
    return embeds


class BatchedLM(_ModelCache):
    """``B`` independent sequences of one model in one ``DynamicCache``, for batched speculative decoding.

    Rows have ragged lengths and roll back by different amounts, but a ``DynamicCache`` has one length for the
    whole batch. So the cache is a grid of ``C`` columns and ``valid [B, C]`` says which columns hold a token
    of the row: left padding of shorter prompts, and *holes* where a row's rejected draft tokens were (a row
    that accepted fewer tokens than another one in the same step). Masked columns cost attention but change
    nothing: each row's position ids count its own valid columns, so row ``i`` computes what it would alone.
    Columns no row needs any more are cropped from the end after every step.

    ``rows[j]`` is the caller's index of batch row ``j`` (rows leave the batch with ``select``);
    ``tokens_fed[i]`` / ``calls[i]``: valid positions row ``i`` sent through the model, forward calls it took part in.
    """

    @torch.no_grad()
    def prefill(self, prompt_rows: list[torch.Tensor], row_features=None) -> None:
        """Start ``B`` sequences from ``LongTensor[L_i]`` rows: every prompt position but the last is fed
        (left-padded to one width); the last token of each row stays pending for the first ``feed``.
        ``row_features``: a LLaVA model's rows with images, as in ``CachedLM.prefill`` (``B`` tensors
        ``[n_i, D]`` or ``None``: the projected visual embeddings of row ``i``'s image tokens, in order)."""
        from transformers import DynamicCache

        b, lengths = len(prompt_rows), [len(r) for r in prompt_rows]
        width = max(lengths) - 1
        self.cache = DynamicCache(config=self.model.config)
        self.rows = torch.arange(b, device=self.device)
        self.fed = torch.zeros(b, dtype=torch.long, device=self.device)  # by caller row, see ``tokens_fed``
        self.row_calls = torch.zeros(b, dtype=torch.long, device=self.device)
        self.lengths = torch.zeros(b, dtype=torch.long, device=self.device)  # valid columns per row
        self.valid = torch.zeros((b, 0), dtype=torch.bool, device=self.device)
        if width > 0:
            ids = torch.zeros((b, width), dtype=torch.long)  # id 0 in padding columns, masked out
            valid = torch.zeros((b, width), dtype=torch.bool)
            for i, row in enumerate(prompt_rows):
                ids[i, width - len(row) + 1 :] = row[:-1].cpu()
                valid[i, width - len(row) + 1 :] = True
            ids = ids.to(self.device)
            embeds = None if row_features is None else embed_rows(self.model, ids, row_features)
            self.feed(ids, valid.to(self.device), inputs_embeds=embeds)
        elif row_features is not None and any(f is not None for f in row_features):
            raise ValueError("one-token prompts cannot carry images")

    @torch.no_grad()
    def feed(self, ids: torch.Tensor, valid: torch.Tensor, last_only: bool = False, inputs_embeds=None) -> torch.Tensor:
        """Append ``k`` columns: ``ids [B, k]``, of which ``valid [B, k]`` are the rows' tokens (the rest are
        filler the rows never see). Returns float32 logits ``[B, k, V]`` (``[B, 1, V]`` for the last column
        alone with ``last_only``: a drafter needs no more); a valid column's logits predict the token after it.
        ``inputs_embeds [B, k, D]``: fed instead of the ids' embeddings (a prefill with images, ``embed_rows``)."""
        cached = self.valid.shape[1]
        positions = (self.lengths[:, None] + valid.long().cumsum(1) - 1).clamp_min(0)
        self.valid = torch.cat([self.valid, valid], dim=1)
        tokens = dict(input_ids=ids) if inputs_embeds is None else dict(inputs_embeds=inputs_embeds)
        with torch.inference_mode():  # as in CachedLM._forward
            # the same bits without transformers' wrappers; fed embeddings (a prefill with images) take model(...)
            if self.fast and inputs_embeds is None and not decode_call.hooked(self.model):
                logits = decode_call.decode_logits(
                    self.model, ids, self.cache, self.valid, positions, logits_to_keep=1 if last_only else 0
                )
            else:
                logits = self.model(
                    **tokens,
                    attention_mask=self.valid.long(),
                    position_ids=positions,
                    cache_position=torch.arange(cached, cached + ids.shape[1], device=self.device),
                    past_key_values=self.cache,
                    use_cache=True,
                    logits_to_keep=1 if last_only else 0,
                ).logits
        counts = valid.sum(1)
        self.lengths += counts
        self.fed.index_add_(0, self.rows, counts)  # on the device: no synchronisation per call
        self.row_calls.index_add_(0, self.rows, (counts > 0).long())  # a call a row takes part in with a token
        return logits.float()

    @property
    def tokens_fed(self) -> list[int]:
        return self.fed.tolist()

    @property
    def calls(self) -> list[int]:
        return self.row_calls.tolist()

    def truncate(self, keep: torch.Tensor) -> None:
        """Keep the first ``keep[j]`` valid columns of each row (``LongTensor[B]``, at most ``lengths``): the
        rest become holes, and trailing columns that no row keeps are cropped from the cache."""
        self.valid &= self.valid.long().cumsum(1) <= keep[:, None]
        self.lengths = torch.minimum(self.lengths, keep)
        self._crop_tail()

    def select(self, keep_rows: torch.Tensor) -> None:
        """Keep only batch rows ``keep_rows`` (``LongTensor``, positions in the current batch), in that order."""
        self.cache.batch_select_indices(keep_rows)
        self.rows, self.lengths, self.valid = self.rows[keep_rows], self.lengths[keep_rows], self.valid[keep_rows]
        self._crop_tail()

    def _crop_tail(self) -> None:
        used = self.valid.any(0).nonzero()
        width = int(used[-1, 0]) + 1 if len(used) else 0
        if width < self.valid.shape[1]:
            crop_cache(self.cache, width)
            self.valid = self.valid[:, :width]


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["BatchedLM", "CachedLM"]
