"""Batched drafting for ``batching.generate_batch`` with one ``ModelDrafter`` per request: ``B`` requests, each with
its own drafting rows (TABED's M / T / C / P prompt variants, with their images), mixture weights and adaptive
state, drafted with one forward of the draft model per draft position for all the requests' rows together.

The rows of every request sit in one ``BatchedLM`` (request ``i``'s ``m_i`` rows next to each other). Each request's
own drafter object keeps everything that is per request and does the arithmetic of one draft position exactly as it
does alone (``ModelDrafter.draft_token``: the mixture under its weights, the token; ``begin_block``: an adaptive
ensemble's weight choice; ``observe``: its verified history), so a row's blocks, weights and counts are its
batch-1 run's (``tests/test_tabed_batched.py``).
"""

from __future__ import annotations

import torch

from specdec.cache import BatchedLM
from specdec.drafters import ModelDrafter, mixing_probs


class BatchEnsembleDrafter:
    """``B`` per-request ``ModelDrafter`` s (``AdaptiveEnsembleDrafter`` s too) on one draft model, drafted together.
    A subclass that overrides ``prefill``, ``propose`` or ``rollback`` runs at batch size 1 (refused).

    ``inputs[i]``: request ``i``'s draft inputs (``pixel_values``, ``images``), which its ``make_rows`` turns into rows
    with visual features. ``calls[i]`` / ``tokens_fed[i]``: the forward calls request ``i`` took part in with at least
    one token and the token positions of its rows, as its own ``CachedLM`` counts them alone.
    """

    def __init__(self, drafters, inputs=None):
        drafters = list(drafters)
        if not drafters or any(type(d) is not type(drafters[0]) or d.model is not drafters[0].model for d in drafters):
            raise ValueError("batched per-request drafters must be ModelDrafters of one class on one draft model")
        kind = type(drafters[0])
        if not isinstance(drafters[0], ModelDrafter) or any(
            getattr(kind, step) is not getattr(ModelDrafter, step) for step in ("prefill", "propose", "rollback")
        ):  # a subclass that reworks a step (a padded vocabulary, timers) would be bypassed here
            raise ValueError(f"{kind.__name__} runs at batch size 1: decode its prompts with engine.generate")
        self.members = drafters
        self.inputs = [dict(x or {}) for x in inputs] if inputs is not None else [{} for _ in drafters]
        self.lm = BatchedLM(drafters[0].model)

    @property
    def vocab_size(self) -> int:
        return self.lm.vocab_size

    def prefill(self, prompt_rows: list[torch.Tensor]) -> None:
        """Every request's drafting rows (``ModelDrafter.start``) prefilled in one batch."""
        if len(prompt_rows) != len(self.members):
            raise ValueError(f"{len(prompt_rows)} prompts for {len(self.members)} per-request drafters")
        rows: list = []
        features: list = []
        self.row_prompts = []
        for member, prompt, inputs in zip(self.members, prompt_rows, self.inputs):
            made, made_features = member.start(prompt, **inputs)
            if made_features is None and inputs:
                raise ValueError(
                    "a drafter whose rows take the model inputs as they are (no visual features) runs at batch size 1"
                )
            rows += made
            features += made_features or [None] * len(made)
            self.row_prompts.append([r.tolist() for r in made])
        self.lm.prefill(rows, row_features=features if any(f is not None for f in features) else None)
        self.m = [len(r) for r in self.row_prompts]
        self.first = [sum(self.m[:i]) for i in range(len(self.m))]  # request i's first row in the prefill
        self.prompt_len = [len(p) for p in prompt_rows]
        self.cached = [0] * len(self.m)  # tokens of [last prompt token] + generated in request i's cache rows
        self.call_count = [int(max(map(len, r)) > 1) for r in self.row_prompts]  # CachedLM's prefill call
        self.active = list(range(len(self.m)))  # the requests in the batch, in batch order

    @property
    def calls(self) -> list[int]:
        return list(self.call_count)

    @property
    def tokens_fed(self) -> list[int]:
        fed = self.lm.tokens_fed
        return [sum(fed[f : f + m]) for f, m in zip(self.first, self.m)]

    def _slices(self) -> list[slice]:
        """Per request in batch order, the batch positions of its rows (a request's rows are contiguous)."""
        out, start = [], 0
        for i in self.active:
            out.append(slice(start, start + self.m[i]))
            start += self.m[i]
        return out

    @torch.no_grad()
    def propose(self, sequences, blocks, sampling, generators, want_probs):
        """``generate_batch``'s drafter call for the active requests (``sequences``: prompt + kept tokens): each
        request that drafts (``blocks[j] > 0``) starts its block, its rows feed their pending tokens, then one
        forward per draft position; a request's rows go quiet (masked columns) past its own block."""
        device, width = self.lm.device, max(blocks)
        for i, block in zip(self.active, blocks):
            if block > 0:
                self.members[i].begin_block()
        pending = self._pending(sequences, blocks)
        logits = self._feed_right_aligned(pending)
        slices = self._slices()
        row_of = [j for j, rows in enumerate(slices) for _ in range(rows.stop - rows.start)]  # batch row -> request
        tokens = torch.zeros((len(blocks), width), dtype=torch.long)
        probs = torch.zeros((len(blocks), width, self.vocab_size), device=device) if want_probs else None
        for k in range(width):
            if k:  # every row feeds its request's last draft token; valid where the request drafts token k
                step = torch.tensor([[int(tokens[j, k - 1])] for j in row_of], device=device)
                logits = self.lm.feed(step, torch.tensor([[k < blocks[j]] for j in row_of], device=device), True)
            per_row = mixing_probs(logits[:, -1], sampling, check=False)  # [rows, V]: what ModelDrafter mixes
            for j, rows in enumerate(slices):
                if k < blocks[j]:
                    token, mixed = self.members[self.active[j]].draft_token(per_row[rows], sampling, generators[j])
                    tokens[j, k] = token
                    if want_probs:
                        probs[j, k] = mixed
        for j, (i, block) in enumerate(zip(self.active, blocks)):
            if block > 0:  # the last draft token is never fed (as alone)
                self.cached[i] += len(pending[slices[j].start]) + block - 1
                self.call_count[i] += block
        return tokens.to(device), probs, list(blocks)

    def _pending(self, sequences, blocks) -> list[list[int]]:
        """Per batch row, the tokens its cache lacks: its last prompt token and the generated tokens after the
        request's cached ones (1, or 2 after a fully accepted block); none for a request that drafts nothing."""
        out = []
        for i, seq, block in zip(self.active, sequences, blocks):
            generated = seq[self.prompt_len[i] :]
            out += [([row[-1]] + generated)[self.cached[i] :] if block > 0 else [] for row in self.row_prompts[i]]
        return out

    def _feed_right_aligned(self, pending: list[list[int]]) -> torch.Tensor:
        """Feed every row's pending tokens, right-aligned (the last column is each row's last token): ``[rows, 1, V]``
        logits of the last column."""
        device, n = self.lm.device, max(map(len, pending))
        ids = torch.zeros((len(pending), n), dtype=torch.long)
        for r, toks in enumerate(pending):
            if toks:
                ids[r, n - len(toks) :] = torch.tensor(toks)
        counts = torch.tensor([len(p) for p in pending], device=device)
        valid = torch.arange(n, device=device)[None, :] >= n - counts[:, None]
        return self.lm.feed(ids.to(device), valid, last_only=True)

    def observe(self, j: int, target_logits, kept_tokens, sampling) -> None:
        """Batch request ``j``'s verified positions, for its adaptive drafter (``engine.generate``'s call)."""
        member = self.members[self.active[j]]
        if hasattr(member, "observe"):
            member.observe(target_logits, kept_tokens, sampling)

    def rollback(self, sequences) -> None:
        """Keep each request's rows for its kept ``sequence`` minus the last token (which becomes pending)."""
        keep = []
        for i, seq in zip(self.active, sequences):
            self.cached[i] = min(self.cached[i], len(seq) - self.prompt_len[i])
            keep += [len(row) - 1 + self.cached[i] for row in self.row_prompts[i]]
        self.lm.truncate(torch.tensor(keep, device=self.lm.device))

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the requests at batch positions ``keep``, in that order."""
        kept, slices = keep.tolist(), self._slices()
        rows = [r for j in kept for r in range(slices[j].start, slices[j].stop)]
        self.lm.select(torch.tensor(rows, device=self.lm.device))
        self.active = [self.active[j] for j in kept]
