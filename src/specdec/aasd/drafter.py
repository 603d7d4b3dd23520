"""The AASD drafter: the speculating module reading the target's last-layer KV cache inside ``engine.generate``.

It implements ``specdec.drafters.Drafter``. Before each block the engine has rolled the target back
(``CachedLM``): its cache holds every kept position but the last, whose token is pending at position ``p`` (the
cache length). ``propose`` reads that cache (no second target pass), builds the context once per block (the
projected image slots, computed once per request at the first block, and the text positions ``< p``), and drafts
``γ`` tokens from the pending token with a cache of its own ``k'``/``v'`` that lives only inside the block
(Eq. 4-5). ``rollback`` has nothing to undo; under ``context="own"`` (target cache off) the module keeps its own
``k'``/``v'`` of every kept position instead and crops them.
"""

from __future__ import annotations

import torch

from specdec.aasd.module import SpeculatingModule, image_context, repeat_kv, split_context
from specdec.cache import CachedLM
from specdec.sampling import SamplingConfig, logits_to_probs, sample


class AASDDrafter:
    """``AASDDrafter(module, target_lm)``: pass the same ``target_lm`` (a ``CachedLM`` of the LLaVA target) to
    ``engine.generate`` as its target."""

    def __init__(self, module: SpeculatingModule, target_lm: CachedLM):
        if not isinstance(target_lm, CachedLM):
            raise TypeError(
                "AASDDrafter reads the target's KV cache: give it the CachedLM that generate() verifies with"
            )
        self.module, self.target_lm = module, target_lm
        self.calls = 0
        self.tokens_fed = 0

    @property
    def vocab_size(self) -> int:
        return self.module.head.weight.shape[0]

    def prefill(self, prompt_ids: torch.Tensor, **_) -> None:
        """Start a request (draft inputs such as ``pixel_values`` are not needed: the images are in the cache)."""
        self.prompt = prompt_ids.tolist()
        self.image_pos, text_pos = split_context(self.module.config, prompt_ids)
        self.prompt_text_pos = text_pos.to(self.target_lm.device)
        self.image_kv = None  # projected image slots, from the target cache at the first block
        self.own = None  # context="own": (tokens, k', v') of the kept positions
        self.calls = 0
        self.tokens_fed = 0

    @torch.no_grad()
    def propose(self, generated, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None = None):
        sequence = self.prompt + list(generated)
        k_ctx, v_ctx = self.context(sequence)
        p = len(sequence) - 1  # position of the pending token
        rep = self.module.n_rep()
        device = self.target_lm.device
        own_k, own_v, tokens, probs = [], [], [], []
        token = sequence[-1]
        for depth in range(gamma):
            ids = torch.tensor([[token]], device=device)
            h, q, k, v = self.module.qkv(ids, torch.tensor([p + depth], device=device))
            own_k.append(k)
            own_v.append(v)
            keys = repeat_kv(torch.cat([k_ctx, *own_k], dim=2), rep)
            values = repeat_kv(torch.cat([v_ctx, *own_v], dim=2), rep)
            attn = torch.nn.functional.scaled_dot_product_attention(q, keys, values)  # one softmax over both
            logits = self.module.finish(h[0], attn[0].transpose(0, 1).reshape(1, -1))[0]  # [V]
            dist = logits.softmax(-1) if sampling.greedy else logits_to_probs(logits, sampling)
            token = int(dist.argmax()) if sampling.greedy else int(sample(dist, generator))
            tokens.append(token)
            probs.append(dist)
            self.calls += 1
            self.tokens_fed += 1
        return torch.tensor(tokens, dtype=torch.long, device=device), torch.stack(probs)

    def context(self, sequence: list[int]):
        """``(k_ctx, v_ctx)`` ``[1, Hkv, C, d]``: what the block's queries see besides their own keys."""
        module, p = self.module, len(sequence) - 1
        if module.config.context == "own":
            return self.own_context(sequence)
        cache = self.target_lm.cache.layers[-1]
        keys, values = cache.keys, cache.values
        if keys.shape[2] != p:
            raise RuntimeError(f"the target cache holds {keys.shape[2]} positions, expected {p}: roll it back first")
        if self.image_kv is None:
            self.image_kv = image_context(module, keys, values, self.image_pos.to(keys.device))
        if module.config.context == "no_text":
            return self.image_kv
        generated = torch.arange(len(self.prompt), max(p, len(self.prompt)), device=keys.device)
        if module.config.context == "no_prompt_text":  # the prompt's text positions hidden, generated ones kept
            text = generated
        else:
            text = torch.cat([self.prompt_text_pos[self.prompt_text_pos < p], generated])
        return torch.cat([self.image_kv[0], keys[:, :, text]], 2), torch.cat([self.image_kv[1], values[:, :, text]], 2)

    def own_context(self, sequence: list[int]):
        """Target cache off: the module's own ``k'``/``v'`` of positions ``< p``, extended incrementally."""
        p = len(sequence) - 1
        done = 0 if self.own is None else len(self.own[0])
        if done < p:
            device = self.target_lm.device
            ids = torch.tensor([sequence[done:p]], device=device)
            _, _, k, v = self.module.qkv(ids, torch.arange(done, p, device=device))
            self.tokens_fed += p - done
            if self.own is None:
                self.own = (sequence[:p], k, v)
            else:
                self.own = (sequence[:p], torch.cat([self.own[1], k], 2), torch.cat([self.own[2], v], 2))
        return self.own[1][:, :, :p], self.own[2][:, :, :p]

    def rollback(self, generated) -> None:
        if self.own is not None:
            sequence = self.prompt + list(generated)
            keep = 0
            for a, b in zip(self.own[0], sequence):
                if a != b:
                    break
                keep += 1
            self.own = (self.own[0][:keep], self.own[1][:, :, :keep], self.own[2][:, :, :keep])
