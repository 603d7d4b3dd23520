"""The AASD speculating module and its KV projector (paper §3.2, Eq. 3-5).

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
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import asdict, dataclass

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from specdec.tabed.drafting import image_runs

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
    """``(cos, sin)`` of shape ``[*positions.shape, d]`` for Llama's default RoPE (halves, not interleaved)."""
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
    """``[B, Hkv, T, d]`` -> ``[B, Hkv * n_rep, T, d]`` (grouped-query attention)."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)


# ---------------------------------------------------------------------------------------------------- projector
class KVProjector(nn.Module):
    """Eq. (3): ``K*_I = W_K K_I``, ``V*_I = W_V V_I`` per image, ``W_K, W_V ∈ R^{k×n}`` (n image positions -> k).

    Initialised as ``k`` block averages of ``n / k`` consecutive positions (a pooled start), then learned."""

    def __init__(self, n: int, k: int):
        super().__init__()
        init = torch.zeros(k, n)
        for row, chunk in enumerate(torch.arange(n).chunk(k)):
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
