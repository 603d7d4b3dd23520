"""AASD (a speculating module that reads the target's KV cache), top to bottom: the module, its KV projector
(paper §3.2, Eq. 3-5) and the drafter that runs it inside ``engine.generate``.

Shapes: ``B`` batch, ``H`` query heads and ``Hkv`` key/value heads of the target's last layer, ``d`` its head
dimension, ``D`` the target's hidden size, ``T`` token positions, ``C`` context entries (target cache positions
the module may see). Keys and values are ``[B, Hkv, ·, d]`` as transformers caches them for a Llama layer: keys
*after* RoPE at their absolute positions, so the module rotates its own queries and keys at the same absolute
positions (``rotate``) before comparing them with the target's.

The module is one Llama-style decoder layer whose attention reads, in one softmax, the target's last-layer cache
before the block (``K_{i-1}``, ``V_{i-1}``; image positions compressed by the projector) and its own ``k'``/``v'``
for the block's tokens (Eq. 4-5). It embeds tokens with the target's (frozen) embedding and predicts with the
target's (frozen) output head, so only the layer, a final norm and the projector are trained and shipped. With
one layer a token's ``k'``/``v'`` depend on that token and its position only, which makes Target-Draft Attention
training exact (``specdec.aasd.tda``).

The drafter (``AASDDrafter``, the last section) implements ``specdec.drafters.Drafter``. Before each block the
engine has rolled the target back (``CachedLM``): its cache holds every kept position but the last, whose token is
pending at position ``p`` (the cache length). ``propose`` reads that cache (no second target pass), builds the
context once per block (the projected image slots, computed once per request at the first block, and the text
positions ``< p``), and drafts ``γ`` tokens from the pending token with a cache of its own ``k'``/``v'`` that lives
only inside the block (Eq. 4-5). ``rollback`` has nothing to undo; under ``context="own"`` (target cache off) the
module keeps its own ``k'``/``v'`` of every kept position instead and crops them.
"""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import asdict, dataclass

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from specdec.cache import CachedLM, layer_kv
from specdec.sampling import SamplingConfig, logits_to_probs, sample
from specdec.vlm.llava import image_runs

NEVER = 2**30  # context position of padding: never visible


@dataclass
class ModuleConfig:
    """Sizes (the target's last-layer KV shape), the projector and which parts of the target cache are read.

    ``projector_k``: compressed positions per image (``None``: image K/V pass as they are, "w/o projector").
    ``context``: ``"target"`` (the paper), ``"own"`` (no target cache: the module attends to its own K/V of every
    position, a one-layer draft LM), ``"no_image"`` / ``"no_text"`` (the target cache without its image / text
    positions; ``"no_text"`` drops the generated tokens' positions too), ``"no_prompt_text"`` (the target cache
    without the prompt's text positions: its image positions and every generated token's kept, the paper's Fig. 4
    "w/o text KV")."""

    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    image_tokens: int
    image_token_id: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    projector_k: int | None = 4
    context: str = "target"

    def to_dict(self) -> dict:
        return asdict(self)


def config_for(target, intermediate_size: int = 256, projector_k: int | None = 4, context: str = "target"):
    """A ``ModuleConfig`` matching ``target``'s (a transformers LLaVA) last-layer KV cache."""
    text = target.config.text_config
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    vision = target.config.vision_config
    return ModuleConfig(
        hidden_size=text.hidden_size,
        num_heads=text.num_attention_heads,
        num_kv_heads=text.num_key_value_heads,
        head_dim=head_dim,
        intermediate_size=intermediate_size,
        image_tokens=(vision.image_size // vision.patch_size) ** 2,
        image_token_id=target.config.image_token_id,
        rope_theta=float(text.rope_parameters["rope_theta"]),
        rms_norm_eps=text.rms_norm_eps,
        projector_k=projector_k,
        context=context,
    )


# --------------------------------------------------------------------------------------------------------- RoPE
def rope_tables(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` of shape ``[*positions.shape, d]`` for Llama's default RoPE (halves, not interleaved); ``d``
    (``head_dim``) is even and positive, ``theta`` finite and above 1."""
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even integer >= 2 (RoPE rotates pairs of channels), got {head_dim!r}")
    if not (isinstance(theta, (int, float)) and math.isfinite(theta) and theta > 1):
        raise ValueError(f"theta must be a finite number > 1 (the RoPE base, e.g. 10000.0), got {theta!r}")
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device) / head_dim))
    freqs = positions.float()[..., None] * inv_freq
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's ``apply_rotary_pos_emb`` for ``x [B, heads, T, d]`` with ``cos``/``sin`` ``[B, T, d]`` or ``[T, d]``."""
    if cos.dim() == 2:
        cos, sin = cos[None], sin[None]
    cos, sin = cos[:, None].to(x.dtype), sin[:, None].to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[B, Hkv, T, d]`` -> ``[B, Hkv * n_rep, T, d]`` (grouped-query attention); ``n_rep >= 1``."""
    if n_rep != 1 and (isinstance(n_rep, bool) or not isinstance(n_rep, int) or n_rep < 1):
        raise ValueError(f"n_rep must be an integer >= 1 (query heads per key/value head), got {n_rep!r}")
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


# ---------------------------------------------------------------------------------------------------- projector
class KVProjector(nn.Module):
    """Eq. (3): ``K*_I = W_K K_I``, ``V*_I = W_V V_I`` per image, ``W_K, W_V ∈ R^{k×n}`` (n image positions -> k).

    Initialised as ``k`` block averages of consecutive positions, as even as ``n`` allows (64 -> 7: one block of 10,
    six of 9), then learned."""

    def __init__(self, n: int, k: int):
        super().__init__()
        init = torch.zeros(k, n)
        for row, chunk in enumerate(torch.arange(n).tensor_split(k)):
            if len(chunk):  # k > n (a stand-in model's few positions): the rows past n start at zero
                init[row, chunk] = 1.0 / len(chunk)
        self.w_k = nn.Parameter(init.clone())
        self.w_v = nn.Parameter(init.clone())
        self.n, self.k = n, k

    def forward(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``keys``/``values`` ``[B, Hkv, n_img * n, d]`` (images back to back) -> ``[B, Hkv, n_img * k, d]``."""
        b, h, length, d = keys.shape
        shaped = (b, h, length // self.n, self.n, d)
        k = torch.einsum("kn,bhind->bhikd", self.w_k.to(keys.dtype), keys.reshape(shaped)).reshape(b, h, -1, d)
        v = torch.einsum("kn,bhind->bhikd", self.w_v.to(values.dtype), values.reshape(shaped)).reshape(b, h, -1, d)
        return k, v


# ------------------------------------------------------------------------------------------------------- module
class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class SpeculatingModule(nn.Module):
    """One decoder layer over the target's last-layer cache; ``embed`` / ``head`` are the target's (frozen,
    not registered as parameters: pass them with ``attach``)."""

    def __init__(self, config: ModuleConfig):
        super().__init__()
        c = config
        self.config = c
        self.input_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.q_proj = nn.Linear(c.hidden_size, c.num_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_heads * c.head_dim, c.hidden_size, bias=False)
        self.post_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.gate = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.final_norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.projector = KVProjector(c.image_tokens, c.projector_k) if c.projector_k else None
        self._target = []  # [embed, head] of the target, kept out of the state dict

    def attach(self, target) -> SpeculatingModule:
        """Use ``target``'s input embedding and output head (frozen; they are not saved with the module)."""
        self._target = [target.get_input_embeddings(), target.get_output_embeddings()]
        return self

    @property
    def embed(self):
        return self._target[0]

    @property
    def head(self):
        return self._target[1]

    def qkv(self, tokens: torch.Tensor, positions: torch.Tensor):
        """``(h, q [B, H, T, d], k [B, Hkv, T, d], v [B, Hkv, T, d])`` of ``tokens [B, T]`` at absolute
        ``positions [B, T]`` (or ``[T]``); ``h`` the embedded tokens (the residual stream)."""
        c = self.config
        h = self.embed(tokens).to(self.q_proj.weight.dtype)  # the target's embedding may be half precision
        x = self.input_norm(h)
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, c.num_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, c.num_kv_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, c.num_kv_heads, c.head_dim).transpose(1, 2)
        cos, sin = rope_tables(positions, c.head_dim, c.rope_theta)
        return h, rotate(q, cos, sin), rotate(k, cos, sin), v

    def finish(self, h: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """Logits ``[..., V]`` from the residual ``h [..., D]`` and attention outputs ``attn [..., H * d]``."""
        h = h + self.o_proj(attn)
        x = self.post_norm(h)
        h = h + self.down(nn.functional.silu(self.gate(x)) * self.up(x))
        return self.head(self.final_norm(h).to(self.head.weight.dtype)).float()

    def n_rep(self) -> int:
        return self.config.num_heads // self.config.num_kv_heads


# ------------------------------------------------------------------------------------------------------ context
def split_context(config: ModuleConfig, prompt_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(image_positions, text_positions)`` (LongTensors) of one prompt; images as ``image_tokens`` runs."""
    starts = image_runs(prompt_ids.cpu(), config.image_token_id, config.image_tokens)
    image = [s + j for s in starts for j in range(config.image_tokens)]
    is_image = torch.zeros(len(prompt_ids), dtype=torch.bool)
    is_image[image] = True
    return torch.tensor(image, dtype=torch.long), (~is_image).nonzero().flatten()


def image_context(module: SpeculatingModule, keys, values, image_positions: torch.Tensor):
    """The image part of the context ``[B, Hkv, n', d]`` (projected, raw, or empty when ``context`` excludes it)."""
    c = module.config
    if c.context in ("no_image", "own") or len(image_positions) == 0:
        return keys[:, :, :0], values[:, :, :0]
    k_img, v_img = keys[:, :, image_positions], values[:, :, image_positions]
    if module.projector is not None:
        k_img, v_img = module.projector(k_img, v_img)
    return k_img, v_img


def save_module(module: SpeculatingModule, path, info: dict) -> None:
    """``module.safetensors`` (float16) + ``config.json`` (``ModuleConfig`` and ``info``) under ``path``."""
    path = pathlib.Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().half().contiguous().cpu() for k, v in module.state_dict().items()}
    save_file(tensors, path / "module.safetensors", metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps({"module": module.config.to_dict(), **info}, indent=1) + "\n")


def load_module(path, target) -> SpeculatingModule:
    """A saved module attached to ``target`` (the LLaVA whose cache it reads), on its device and in its dtype."""
    path = pathlib.Path(path)
    meta = json.loads((path / "config.json").read_text())
    module = SpeculatingModule(ModuleConfig(**meta["module"]))
    module.load_state_dict({k: v.float() for k, v in load_file(path / "module.safetensors").items()})
    device = next(target.parameters()).device
    return module.to(device=device, dtype=next(target.parameters()).dtype).eval().attach(target)


# ------------------------------------------------------------------------------------------------------ the drafter
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
        keys, values = layer_kv(self.target_lm.cache)  # the target's last layer
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


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["AASDDrafter", "NEVER", "load_module", "repeat_kv", "rope_tables"]
