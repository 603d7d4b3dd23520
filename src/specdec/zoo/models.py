"""Loading models and tokenizers: the tiny zoo by name, hub ids or local paths, one function.

``load("tiny-target")`` reads the shipped weights under ``data/models/``; ``load("lmsys/vicuna-7b-v1.3")``
goes through the very same ``from_pretrained`` call, reading the local Hugging Face cache only when the
hub is unreachable (this project runs offline: a missing model fails at once with instructions).
Profiles (``data/profiles/<name>.yaml``) list which target/draft pairs each paper uses.
"""

from __future__ import annotations

import difflib
import os
import pathlib

import torch

from specdec import hub, zoo
from specdec.hub import ModelNotAvailableError, resolve
from specdec.zoo.device import profile_device

PROFILES_DIR = zoo.DATA / "profiles"
# kind="llava": the transformers class of each LLaVA ``model_type`` (their processors come from AutoProcessor). No
# paper id is a LLaVA-OneVision class (mjbooo/lvlm68m-ov is LLaVA-1.5-class: the authors load it as such), so
# ``llava_onevision`` is not listed: its drafting path is untested here.
LLAVA_CLASSES = {
    "llava": "LlavaForConditionalGeneration",
    "llava_next": "LlavaNextForConditionalGeneration",
}


def load(
    name_or_path: str | os.PathLike,
    *,
    device: str | torch.device = "cpu",
    dtype=None,
    kind: str = "causal_lm",
    with_tokenizer: bool = True,
    revision: str | None = None,
    llava_class: str | None = None,
):
    """Load ``(model, tokenizer)`` from a zoo name, a local directory or a hub id, in eval mode.

    kind: ``"causal_lm"`` (``AutoModelForCausalLM``) or ``"llava"`` (the config's LLaVA class, ``LLAVA_CLASSES``:
    LLaVA-1.5, LLaVA-NeXT with any-resolution tiles; returning its processor instead of a tokenizer). dtype: e.g.
    ``torch.float16`` on a GPU (default: the config's ``dtype`` for a local directory, so zoo weights stored as
    float16 with a float32 config load as float32; else the checkpoint's). revision: a hub commit (``paper.yaml``
    ``revisions``; None: main).
    llava_class: kind="llava" only, a transformers class name to load the checkpoint with instead of its config's
    (``"LlavaForConditionalGeneration"`` over a LLaVA-NeXT checkpoint: what the TABED authors did, one base view
    per image; the NeXT-only ``image_newline`` weight is then unused).
    Raises ``ModelNotAvailableError`` when the weights cannot be found offline.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoProcessor, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-tensor "Loading weights" bars drown the notebooks' own output
    source = resolve(name_or_path)
    local = pathlib.Path(source)
    if local.exists() and not (local / "config.json").exists():
        raise ModelNotAvailableError(
            f"{local} exists but holds no config.json: not a saved model directory "
            "(save one with model.save_pretrained(path))"
        )
    if not local.exists() and (source.startswith((".", "/", "~")) or os.sep in source and source.count("/") > 1):
        raise ModelNotAvailableError(f"no model directory at {source}")
    if not local.exists() and "/" not in source:  # not a hub id (org/name) nor a folder: a misspelt zoo name?
        shipped = sorted(p.name for p in zoo.MODELS.iterdir() if (p / "config.json").exists())
        close = difflib.get_close_matches(source, shipped, n=1, cutoff=0.8)
        if close:
            raise ValueError(f"unknown zoo model {source!r} (did you mean {close[0]!r}?); the zoo ships {shipped}")
    model_cls = AutoModelForCausalLM
    if kind not in ("causal_lm", "llava"):
        raise ValueError(f"kind must be 'causal_lm' or 'llava', got {kind!r}")
    if dtype is None and (local / "config.json").exists():
        dtype = _config_dtype(local / "config.json")
    try:
        if kind == "llava":  # a LLaVA class over another config silently builds a default 7B model
            model_type = AutoConfig.from_pretrained(
                source, local_files_only=_offline(local), revision=revision
            ).model_type
            if model_type not in LLAVA_CLASSES:
                raise ValueError(
                    f"{source!r} is a {model_type!r} model, not LLaVA: load it with kind='causal_lm' (LLaVA model "
                    f"types: {sorted(LLAVA_CLASSES)})"
                )
            import transformers

            model_cls = getattr(transformers, llava_class or LLAVA_CLASSES[model_type])
        model, info = model_cls.from_pretrained(
            source,
            dtype=dtype,
            local_files_only=_offline(local),
            revision=revision,
            output_loading_info=True,
            ignore_mismatched_sizes=True,  # reported by check_loading, naming the tensors
        )
        check_loading(source, info, allowed=LLAVA_UNUSED if llava_class else ())
        tokenizer = None
        if with_tokenizer:
            tok_cls = AutoProcessor if kind == "llava" else AutoTokenizer
            tok_source = source
            if kind == "causal_lm" and _in_zoo(local) and not (local / "tokenizer.json").exists():
                tok_source = str(zoo.TOKENIZER_DIR)  # zoo models share one tokenizer, shipped once
            tokenizer = tok_cls.from_pretrained(tok_source, local_files_only=_offline(local), revision=revision)
    except OSError as err:
        raise ModelNotAvailableError(
            f"cannot load {source!r} offline ({type(err).__name__}). This machine does not download from the "
            f"Hugging Face hub. On a machine with internet run `make download PROFILE=paper` (or "
            f"`{hub.HF_CLI} download {source}`), then copy the cache "
            f"(HF_HOME={os.environ.get('HF_HOME', '~/.cache/huggingface')}) "
            "here, or pass a local directory saved with save_pretrained()"
            f"{hub.STANDIN_HINT}."
        ) from None
    return model.to(device).eval(), tokenizer


# tensors a checkpoint may hold that the model does not use: a LLaVA-NeXT checkpoint's any-resolution separator
# when loaded as LLaVA-1.5 (``llava_class``); rotary frequencies older Llama checkpoints saved (recomputed anyway)
LLAVA_UNUSED = ("image_newline",)
ALWAYS_UNUSED = ("rotary_emb.inv_freq",)


def check_loading(source, info: dict, allowed=()) -> None:
    """Refuse a partial checkpoint: every tensor the model has must come from the checkpoint at its shape, and every
    tensor of the checkpoint must be used (``allowed`` / ``ALWAYS_UNUSED`` name unused ones that are expected).
    ``info``: transformers' ``output_loading_info`` (missing, unexpected, mismatched keys). A model with a tensor
    left at its random initialisation decodes, and its results would be keyed like the real one's."""
    ignore = tuple(allowed) + ALWAYS_UNUSED
    missing = sorted(info.get("missing_keys") or [])
    unexpected = sorted(k for k in info.get("unexpected_keys") or [] if not k.endswith(ignore))
    mismatched = sorted(
        f"{k[0]} (checkpoint {tuple(k[1])}, model {tuple(k[2])})" if isinstance(k, tuple) and len(k) == 3 else str(k)
        for k in info.get("mismatched_keys") or []
    )
    problems = [
        f"{what} {len(keys)}: {', '.join(keys[:8])}{' ...' if len(keys) > 8 else ''}"
        for what, keys in (
            ("missing from the checkpoint", missing),
            ("in the checkpoint but not the model", unexpected),
            ("of another shape", mismatched),
        )
        if keys
    ]
    if problems:
        raise ValueError(
            f"{source} does not fit its config (a partial or mismatched checkpoint): tensors "
            + "; ".join(problems)
            + ". Save the model again with save_pretrained, or fix config.json (e.g. num_hidden_layers)"
        )


def load_tokenizer(name_or_path: str | os.PathLike, revision: str | None = None):
    """The tokenizer of a zoo name, local directory or hub id alone (no weights), offline as ``load``."""
    from transformers import AutoTokenizer

    source = resolve(name_or_path)
    try:
        return AutoTokenizer.from_pretrained(source, local_files_only=_offline(pathlib.Path(source)), revision=revision)
    except OSError:
        raise ModelNotAvailableError(
            f"cannot load the tokenizer of {source!r} offline: run `make download PROFILE=paper` (or "
            f"`{hub.HF_CLI} download {source}`) on a machine with internet and copy the cache here{hub.STANDIN_HINT}"
        ) from None


def weights_identity(name_or_path: str | os.PathLike, revision: str | None = None) -> str:
    """What a model's weights are: the sha256 (hex) of its ``*.safetensors`` files for a zoo name or a local
    directory, else ``"<hub id>@<revision>"`` (``unpinned`` without one; hashing a 7B checkpoint is not worth it)."""
    import hashlib

    local = pathlib.Path(resolve(name_or_path))
    if local.is_dir():
        files = sorted(local.glob("*.safetensors"))
        if not files:  # the sha256 of nothing would give every such folder one results key
            raise ValueError(
                f"{local} holds no *.safetensors weights: its results could not be told apart from another "
                "model's; save the model with save_pretrained (safe_serialization, the default)"
            )
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.read_bytes())
        return digest.hexdigest()
    return f"{name_or_path}@{revision or 'unpinned'}"


def weights_digest(*identities: str) -> str:
    """The ``weights`` key of a result row: 12 hex digits of the sha256 of ``weights_identity`` strings, in order."""
    import hashlib

    return hashlib.sha256("|".join(identities).encode()).hexdigest()[:12]


def model_weights(*models) -> str:
    """``weights_digest`` of loaded models, in order: each by the folder or hub id it was loaded from
    (``name_or_path``) and, for a hub id, the commit it was loaded at."""
    return weights_digest(*(_identity(m) for m in models))


def _identity(model) -> str:
    """A loaded model's ``weights_identity``; a model of a profile's ``models`` table carries its own
    (``config.specdec_identity``: an installed package's version and file hash)."""
    given = getattr(model.config, "specdec_identity", None)
    return given or weights_identity(model.name_or_path, getattr(model.config, "_commit_hash", None))


def pair_weights(profile: str = "tiny", pair: str = "default") -> str:
    """``weights_digest`` of a profile pair's target and draft (what a row of that pair was computed with)."""
    spec_all = load_profile(profile)
    spec = spec_all["pairs"][pair]
    return weights_digest(*(named_identity(spec_all, spec[r]) for r in ("target", "draft")))


def _config_dtype(config_file: pathlib.Path):
    """The ``dtype`` (or legacy ``torch_dtype``) a saved config names, as a torch dtype; None if absent."""
    import json

    config = json.loads(config_file.read_text())
    name = config.get("dtype") or config.get("torch_dtype")
    return (
        getattr(torch, name) if isinstance(name, str) and isinstance(getattr(torch, name, None), torch.dtype) else None
    )


def _in_zoo(path: pathlib.Path) -> bool:
    try:
        return path.resolve().parent == zoo.MODELS.resolve()
    except OSError:
        return False


def _offline(local: pathlib.Path) -> bool:
    """Read local files only: for local directories, in offline mode, and when the hub is unreachable
    (so a missing model fails at once instead of after minutes of retries)."""
    if local.exists():
        return True
    flags = (os.environ.get(v, "0") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if any(f not in ("0", "", "false", "False") for f in flags):
        return True
    return not hub.hub_reachable()


def check_same_vocabulary(target_tokenizer, draft_tokenizer) -> None:
    """Raise ``ValueError`` unless both tokenizers map the same strings to the same ids."""
    if target_tokenizer is draft_tokenizer:
        return
    tv, dv = target_tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    if tv != dv:
        only_t = len(set(tv) - set(dv))
        only_d = len(set(dv) - set(tv))
        raise ValueError(
            f"target and draft tokenizers differ ({len(tv)} vs {len(dv)} entries; {only_t} only in "
            f"the target, {only_d} only in the draft). Speculative decoding needs one shared "
            "vocabulary: pick a draft trained with the target's tokenizer."
        )


def check_vocabulary_prefix(target_tokenizer, draft_tokenizer) -> None:
    """Raise ``ValueError`` unless every entry of the draft's vocabulary has the same id in the target's (the
    target may have more, at the end: LLaVA-1.5 is Llama's vocabulary plus ``<image>`` and ``<pad>``)."""
    tv, dv = target_tokenizer.get_vocab(), draft_tokenizer.get_vocab()
    differ = [t for t, i in dv.items() if tv.get(t) != i]
    if differ or len(dv) > len(tv):
        raise ValueError(
            f"the draft's vocabulary ({len(dv)} entries) is not a prefix of the target's ({len(tv)}): {len(differ)} "
            f"entries differ, e.g. {differ[:3]}. Pick a draft trained with the target's tokenizer."
        )


def load_profile(name: str) -> dict:
    """Read ``data/profiles/<name>.yaml`` (``tiny``, ``real`` or ``paper``): which models each paper uses."""
    import yaml

    from specdec import validate

    path = PROFILES_DIR / f"{validate.plain_name('profile', name)}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))
        raise ValueError(f"unknown profile {name!r}; known profiles: {known}")
    return yaml.safe_load(path.read_text())


def revision_of(spec: dict, repo_id: str) -> str | None:
    """The hub revision a profile pins for ``repo_id`` (``revisions`` in its yaml), None for main / zoo names."""
    return (spec.get("revisions") or {}).get(repo_id)


def load_pair(profile: str = "tiny", pair: str = "default", device=None, dtype=None):
    """Load the target and draft of a profile's pair: ``(target, draft, tokenizer)``; checks the vocabularies.
    Device and dtype default to the profile's."""
    spec_all = load_profile(profile)
    pairs = spec_all.get("pairs", {})
    if pair not in pairs:
        raise ValueError(f"profile {profile!r} has no pair {pair!r}; known: {sorted(pairs)}")
    spec = pairs[pair]
    device, dtype = profile_device(spec_all, device, dtype)
    target, tokenizer = load_named(spec_all, spec["target"], device=device, dtype=dtype)
    draft, draft_tokenizer = load_named(spec_all, spec["draft"], device=device, dtype=dtype)
    check_same_vocabulary(tokenizer, draft_tokenizer)
    return target, draft, tokenizer


def load_named(spec_all: dict, name: str, device="cpu", dtype=None):
    """``(model, tokenizer)`` of a model a profile names: an entry of its ``models`` table (an installed package's
    file, a real draft: ``specdec.realmodel``), else ``load`` (a zoo name or a hub id at its pinned revision)."""
    if name in (spec_all.get("models") or {}):
        from specdec import realmodel

        return realmodel.load_source(spec_all["models"], name, device=device, dtype=dtype)
    return load(name, device=device, dtype=dtype, revision=revision_of(spec_all, name))


def named_identity(spec_all: dict, name: str) -> str:
    """``weights_identity`` of a model a profile names (an entry of its ``models`` table: ``realmodel``'s)."""
    if name in (spec_all.get("models") or {}):
        from specdec import realmodel

        found = realmodel.source_identity(spec_all["models"], name)
        if found is None:
            raise ValueError(f"the profile's models table has no source for {name!r}")
        return found
    return weights_identity(name, revision_of(spec_all, name))


COS_SEED_COMMAND = (
    "python -m specdec.cos.train streams --streams .gpu/cos_streams.pt && python -m specdec.cos.train train "
    "--streams .gpu/cos_streams.pt --train-seed <k> (one H200: about 3 minutes for the zoo; this CPU: about 5 hours)"
)


def seed_weights(name: str, train_seed: int, command: str, folder: pathlib.Path | None = None):
    """Where training seed k of a model of the tiny zoos is: its zoo ``name`` for k = 0 (the shipped weights), else
    ``folder`` (default ``zoo.seed_dir(name, k)``), which must hold a ``config.json``. Seeds k > 0 are not committed
    (``data/models/`` is full): a missing one raises the one ``ModelNotAvailableError`` that names ``command``, the
    command that trains it (``<k>`` filled in)."""
    k = int(train_seed)
    if k == 0:
        return name
    folder = folder or zoo.seed_dir(name, k)
    if not (folder / "config.json").exists():
        raise ModelNotAvailableError(f"no {folder} (not committed): {command.replace('<k>', str(k))}")
    return folder


def load_collab(profile: str = "tiny", name: str = "we", device=None, dtype=None, train_seed: int = 0):
    """Load a CoS model set of a profile: ``(models, tokenizer, combination_kind)``.

    ``models`` are in the profile's order, smallest / amateur first (the default proposer); all tokenizers
    must agree. Device and dtype default to the profile's. ``train_seed`` k > 0: every model of the set at training
    seed k (``seed_weights``; a shipped zoo only: ``Profile.load_collab`` checks).
    """
    spec_all = load_profile(profile)
    sets = spec_all.get("collab", {})
    if name not in sets:
        raise ValueError(f"profile {profile!r} has no collaborative model set {name!r}; known: {sorted(sets)}")
    spec = sets[name]
    device, dtype = profile_device(spec_all, device, dtype)
    sources = [seed_weights(m, train_seed, COS_SEED_COMMAND) for m in spec["models"]]
    models, tokenizers = zip(
        *(
            load(s, device=device, dtype=dtype, revision=revision_of(spec_all, m))
            for s, m in zip(sources, spec["models"])
        )
    )
    for tok in tokenizers[1:]:
        check_same_vocabulary(tokenizers[0], tok)
    return list(models), tokenizers[0], spec["combination"]
