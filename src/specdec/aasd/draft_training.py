"""Step 3 of the AASD recipe (``aasd.recipe``): the baselines (``aasd.baselines``), each a draft (a fresh model of
given sizes, a hub checkpoint or another baseline of the recipe: ``new_draft``) trained on answers with the
answer-token loss (``zoo.training.answer_loss``); a text-only draft sees each image as ``"\\n"``. In the paper's
order (Gagrani et al. 2024): a text draft pretrained on the foundation corpus (``pretrain_draft``, next-token loss,
the foundation drafts' recipe), FT baselines on the data's answers (a LLaVA's language model taken from the FT text
draft), DT baselines on the target's (sequence-level distillation, Kim & Rush 2016) starting from the FT ones; saved
as ``aasd-pt-<family>``, ``aasd-ft-<family>`` / ``aasd-dt-<family>-<target>`` (``train_drafts``).
"""

from __future__ import annotations

import functools
import json
import pathlib

import torch

from specdec import validate, zoo
from specdec.aasd.baselines import NEWLINE
from specdec.aasd.distill import is_main
from specdec.aasd.rows import Rows, text_only_batch
from specdec.aasd.zoo_specs import SEED_STEP, baseline_seed_dir, draft_name
from specdec.zoo import models, training
from specdec.zoo.training import device_name, save_half


def sampler(n_rows: int, batch_size: int):
    """Each step ``batch_size`` row indices drawn uniformly with replacement (a CPU ``LongTensor``) from the loop's
    seeded generator."""
    return lambda g: torch.randint(n_rows, (batch_size,), generator=g)


def recipe_arguments(cfg: dict, seed: int) -> dict:
    """The keywords of the one loop (``zoo.training.train``) that the AASD recipe sets alike for the module
    (``recipe.train_module``) and every baseline (``finetune``): ``cfg``'s ``steps``, ``lr`` and ``weight_decay``
    (default 0), the batches drawn from a generator seeded ``seed + 1``, the logged loss a mean over its interval.
    ``ValueError`` naming what ``cfg`` lacks; ``TypeError`` for a seed that is no integer >= 0."""
    missing = [k for k in ("steps", "lr") if k not in cfg]
    if missing:
        raise ValueError(f"an AASD recipe setting lacks {missing} (it has {sorted(cfg)})")
    seed = validate.integer("seed", seed, minimum=0)
    weight_decay = cfg.get("weight_decay", 0.0)
    return dict(steps=cfg["steps"], lr=cfg["lr"], seed=seed + 1, weight_decay=weight_decay, mean_loss=True)


def new_draft(draft: dict, seed: int, device, files: dict | None = None, spec: dict | None = None):
    """``(model, tokenizer, save)`` of a baseline before training: a checkpoint (``draft["init"]``: a hub id at the
    revision ``spec`` pins, or a folder; float32) with its ``freeze`` parts frozen, or a fresh model of the sizes
    ``draft["new"]`` (initialisation seeded ``seed``; a LLaVA is saved with the data's processor ``files``, a text
    Llama with the foundation tokenizer), a fresh LLaVA's language model then replaced by the text draft in the
    folder ``draft["language_model"]`` when given. ``save(model, folder)`` writes float16 weights and those
    files."""
    from transformers import AutoTokenizer, LlamaForCausalLM, LlavaForConditionalGeneration

    from specdec.vlm import train as vlm_train

    torch.manual_seed(seed)
    llava = draft["kind"] == "llava"
    if "init" in draft:
        revision = models.revision_of(spec or {}, draft["init"])
        kind = "llava" if llava else "causal_lm"
        model, tok = models.load(draft["init"], kind=kind, device=device, dtype=torch.float32, revision=revision)
        tokenizer = tok.tokenizer if llava else tok
        save = functools.partial(_save_with, files=tok)
    elif llava:
        model = LlavaForConditionalGeneration(vlm_train.llava_config("", draft["new"])).to(device)
        tokenizer = None
        if "language_model" in draft:
            take_language_model(model, draft["language_model"])

        def save(model, path):  # float16 weights, generation config and the data's processor files
            vlm_train.save_model(model, {"processor_files": files}, path)

    else:
        model = LlamaForCausalLM(zoo.llama_config(draft["new"])).to(device)
        tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
        save = functools.partial(_save_with, files=tokenizer)
    for param_name, param in model.named_parameters():  # LLaVA's finetuning keeps its vision encoder frozen (and
        if any(part in param_name for part in draft.get("freeze", ())):  # DDP refuses its last layer, unused)
            param.requires_grad_(False)
    return model, tokenizer, save


def take_language_model(llava, folder) -> None:
    """Put the text Llama saved in ``folder`` (same sizes and vocabulary) into ``llava`` as its language model:
    decoder and output head (tied to the embedding); the vision tower and projector keep their fresh weights."""
    text = models.load(folder, kind="causal_lm", with_tokenizer=False, dtype=torch.float32)[0]
    device = next(llava.parameters()).device
    llava.get_decoder().load_state_dict(text.model.state_dict())
    llava.lm_head.load_state_dict(text.lm_head.state_dict())
    llava.to(device)


def _save_with(model, path: pathlib.Path, files) -> None:
    save_half(model, path)
    files.save_pretrained(path)


def draft_batches(model, rows: Rows, draft: dict, tokenizer):
    """``batch_of(picks)``: the answer-loss batches of ``rows`` for a draft on the model's device; a text-only
    draft's have each image's run replaced by the ids of ``"\\n"`` and no pixels (``text_only_batch``)."""
    device = next(model.parameters()).device
    if draft["kind"] == "llava":
        return lambda picks: rows.batch(picks, device)
    newline = tokenizer(NEWLINE, add_special_tokens=False)["input_ids"]
    vocab = model.get_input_embeddings().num_embeddings
    return lambda picks: text_only_batch(
        rows.batch(picks, device), newline, rows.image_token_id, rows.image_tokens, vocab
    )


def finetune(
    model,
    batch_of,
    n_rows: int,
    cfg: dict,
    *,
    seed: int = 0,
    name: str = "",
    answer_positions_only=False,
    accelerator=None,
) -> training.TrainLog:
    """The one baseline training: ``model`` on ``batch_of(rows)`` (rows drawn from ``range(n_rows)`` with a
    generator seeded ``seed + 1``) for ``cfg`` (``batch_size``; ``recipe_arguments``) with the answer-token loss
    (``zoo.training.answer_loss``)."""
    loss = functools.partial(training.answer_loss, answer_positions_only=answer_positions_only)
    return training.train(
        model,
        sampler(n_rows, cfg["batch_size"]),
        lambda m, picks: loss(m, batch_of(picks)),
        **recipe_arguments(cfg, seed),
        name=name,
        accelerator=accelerator,
    )


@torch.no_grad()
def heldout_answer_loss(model, batch_of, n_rows: int, answer_positions_only=False, chunk: int = 32) -> float:
    """Mean over chunks of ``chunk`` held-out rows of the answer-token loss."""
    model.eval()
    chunks = [torch.arange(s, min(s + chunk, n_rows)) for s in range(0, n_rows, chunk)]
    losses = [
        float(training.answer_loss(model, batch_of(c), answer_positions_only=answer_positions_only)) for c in chunks
    ]
    return round(sum(losses) / len(losses), 4)


def train_draft(
    name: str,
    draft: dict,
    rows: Rows,
    settings: dict,
    out: pathlib.Path,
    *,
    seed: int,
    device,
    heldout: dict | None = None,
    spec: dict | None = None,
    accelerator=None,
    folder: pathlib.Path | None = None,
) -> pathlib.Path:
    """One baseline: ``new_draft``, ``finetune`` on ``rows``, held-out losses (``heldout``: ``{label: Rows}``),
    saved as ``folder`` (default ``out/<name>``) with ``training_log.json`` by the main process."""
    model, tokenizer, save = new_draft(draft, seed, device, rows.files, spec)
    sparse = draft.get("answer_positions_only", False)
    cfg = {**settings["finetune"], **draft.get("finetune", {})}
    log = finetune(
        model,
        draft_batches(model, rows, draft, tokenizer),
        len(rows),
        cfg,
        seed=seed,
        name=name,
        answer_positions_only=sparse,
        accelerator=accelerator,
    )
    if accelerator is not None:
        model = accelerator.unwrap_model(model)
    summary = {
        "model": name,
        "init": pathlib.Path(draft["init"]).name if "init" in draft else "new",
        **({"language_model": pathlib.Path(draft["language_model"]).name} if "language_model" in draft else {}),
        "parameters": sum(p.numel() for p in model.parameters()),
        **cfg,
        "seed": seed,
        "device": device_name(device),
        "seconds": round(log.seconds, 1),
        "training_rows": len(rows),
    }
    for label, held in (heldout or {}).items():
        batch_of = draft_batches(model, held, draft, tokenizer)
        summary[f"heldout_loss{label}"] = heldout_answer_loss(model, batch_of, len(held), sparse)
    folder = folder or out / name
    if is_main(accelerator):
        save(model, folder)
        (folder / "training_log.json").write_text(json.dumps({"summary": summary, "log": log.rows}) + "\n")
        print(json.dumps(summary), flush=True)
    return folder


def pretrain_draft(name: str, draft: dict, out: pathlib.Path, *, seed: int, device="cpu") -> pathlib.Path:
    """A text draft pretrained from scratch on the foundation corpus (``zoo.training.train_model``: next-token
    loss on windows of prose, code and translation, the foundation drafts' recipe) for ``draft["pretrain"]``
    (``steps``, ``batch_size``, ``seq_len``, ``lr``); saved as ``out/<name>`` with the foundation tokenizer and
    ``training_log.json``."""
    from transformers import AutoTokenizer

    from specdec.zoo import corpus as corpus_lib

    cfg = draft["pretrain"]
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    docs = corpus_lib.build_corpus()
    streams = {split: training.token_streams(docs, tokenizer, split) for split in ("train", "heldout")}
    model, log = training.train_model(
        name,
        streams["train"],
        streams["heldout"],
        steps=cfg["steps"],
        batch_size=cfg["batch_size"],
        seq_len=cfg["seq_len"],
        lr=cfg["lr"],
        seed=seed,
        device=device,
        config=draft["new"],
    )
    summary = {
        "model": name,
        "init": "new",
        "corpus": "foundation",
        **cfg,
        "seed": seed,
        "device": device_name(device),
        "seconds": log[-1]["seconds"],
        "heldout_loss": log[-1]["heldout_loss"],
    }
    folder = out / name
    _save_with(model, folder, tokenizer)
    (folder / "training_log.json").write_text(json.dumps({"summary": summary, "log": log}) + "\n")
    print(json.dumps(summary), flush=True)
    return folder


def resolve(draft: dict, settings: dict, out: pathlib.Path, train_seed: int = 0) -> dict:
    """``draft`` with an ``init`` / ``language_model`` that names another baseline of ``settings["drafts"]`` (one
    trained before it, on the data or the corpus) replaced by that baseline's folder under ``out`` (``train_seed``
    k > 0: its seed-k folder, ``baseline_seed_dir``, but for a pretrained one, which every seed shares)."""

    def folder(v: str) -> str:
        if train_seed and settings["drafts"][v]["answers"] != "corpus":
            return str(baseline_seed_dir(v, None, train_seed))
        return str(out / draft_name(v))

    named = ("init", "language_model")
    return {k: folder(v) if k in named and v in settings["drafts"] else v for k, v in draft.items()}


def train_drafts(
    rows: Rows | None,
    settings: dict,
    answers: str,
    out: pathlib.Path,
    *,
    target: str | None = None,
    target_index: int = 0,
    device="cpu",
    heldout=None,
    spec=None,
    accelerator=None,
    train_seed: int = 0,
) -> dict:
    """Every baseline of ``settings["drafts"]`` trained on ``answers``, in the order listed (``"corpus"``: once,
    ``pretrain_draft``; ``"task"``: once, on the data's answers; ``"target"``: on ``target``'s, its seed moved by
    ``target_seed_step * target_index``); ``train_seed`` k > 0: every one but the pretrained, its seed moved by
    ``SEED_STEP * k`` as well, on seed k's parents, saved as ``zoo_specs.baseline_seed_dir``; ``{name: folder}``."""
    saved = {}
    for draft_id, draft in settings["drafts"].items():
        if draft["answers"] != answers or (train_seed and answers == "corpus"):
            continue
        name = draft_name(draft_id, target if answers == "target" else None)
        seed = draft["seed"] + settings["target_seed_step"] * target_index + SEED_STEP * train_seed
        folder = baseline_seed_dir(draft_id, target, train_seed) if train_seed else None
        if answers == "corpus":
            saved[name] = pretrain_draft(name, draft, out, seed=seed, device=device)
            continue
        parents = resolve(draft, settings, out, train_seed)
        folder = train_draft(
            name,
            parents,
            rows,
            settings,
            out,
            seed=seed,
            device=device,
            heldout=heldout,
            spec=spec,
            accelerator=accelerator,
            folder=folder,
        )
        if is_main(accelerator):
            saved[name] = folder
    return saved


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["finetune"]
