"""The AASD training recipe, one for both profiles: the tiny zoo is this recipe with ``zoo_specs.TINY``, the paper
scale is it with ``zoo_specs.paper_settings`` (``python -m specdec.aasd.train``). For each target:

1. ``distill``: the target's greedy answers to training prompts (plain decoding on our engine), stored as JSON
   lines next to the models, one per prompt, keyed by target, revision (or weights) and answer length; an
   interrupted run resumes, a changed setting writes another file. ``load_answers`` reads them back, once.
2. ``train_module``: the speculating module (``aasd.algorithm``) and its ablation variants, by Target-Draft
   Attention (``aasd.tda``) against the frozen target on prompt + answer (the data's answers or the target's);
   saved as ``aasd-module-<target>[-<variant>]``.
3. ``finetune``: the baselines (``aasd.baselines``): a draft (a fresh model of given sizes, a hub checkpoint or
   another baseline of the recipe: ``new_draft``) trained on answers with the answer-token loss
   (``zoo.training.answer_loss``); a text-only draft sees each image as ``"\\n"``. In the paper's order
   (Gagrani et al. 2024): a text draft pretrained on the foundation corpus (``pretrain_draft``, next-token loss,
   the foundation drafts' recipe), FT baselines on the data's answers (a LLaVA's language model taken from the FT
   text draft), DT baselines on the target's (sequence-level distillation, Kim & Rush 2016) starting from the FT
   ones; saved as ``aasd-pt-<family>``, ``aasd-ft-<family>`` / ``aasd-dt-<family>-<target>``.

Every model trains through the one loop (``zoo.training.train``: AdamW, warm-up + cosine, clipping), under
``accelerate`` when given an accelerator (the main process alone distils and saves).
"""

from __future__ import annotations

import functools
import json
import pathlib

import torch

from specdec import zoo
from specdec.aasd.algorithm import SpeculatingModule, config_for, save_module
from specdec.aasd.baselines import NEWLINE
from specdec.aasd.rows import Rows, pick_rows, text_only_batch
from specdec.aasd.tda import TDAObjective, tda_loss
from specdec.aasd.zoo_specs import SEED_STEP, baseline_seed_dir, draft_name, module_name
from specdec.cache import CachedLM
from specdec.engine import generate
from specdec.zoo import models, training
from specdec.zoo.training import device_name, save_half

MODULE_SIZE = ("intermediate_size", "projector_k", "context")


def is_main(accelerator) -> bool:
    return accelerator is None or accelerator.is_main_process


def sampler(n_rows: int, batch_size: int):
    """Each step ``batch_size`` row indices drawn uniformly with replacement (a CPU ``LongTensor``) from the loop's
    seeded generator."""
    return lambda g: torch.randint(n_rows, (batch_size,), generator=g)


# ---------------------------------------------------------------------------------------------- distillation
def answers_path(folder: pathlib.Path, target: str, version: str, max_new_tokens: int) -> pathlib.Path:
    """Where a target's answers are stored (``version``: its revision, or its weights' digest)."""
    return pathlib.Path(folder) / f"distill-{target.split('/')[-1]}@{version}-{max_new_tokens}.jsonl"


def target_version(profile, target: str) -> str:
    """What names a target's answers: its pinned revision, a local target's weights digest, else ``main``."""
    source, revision = profile.model_source(target)
    if revision:
        return revision
    return models.weights_identity(source)[:12] if pathlib.Path(source).is_dir() else "main"


def load_answers(path: pathlib.Path) -> dict[str, list[int]]:
    """The stored answers ``{row id: answer ids}`` of ``path`` (empty when there is none yet)."""
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row["answer"]
    return done


@torch.no_grad()
def distill(target, rows: Rows, max_new_tokens: int, path: pathlib.Path, progress: bool = True) -> None:
    """The target's greedy answers (EOS kept; an answer cut at ``max_new_tokens`` has none) to the prompts of
    ``rows`` not yet in ``path``, appended one JSON line ``{"id", "answer"}`` per prompt as they are made."""
    from tqdm.auto import tqdm

    done = load_answers(path)
    todo = [i for i, name in enumerate(rows.ids) if name not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    device = next(target.parameters()).device
    with path.open("a") as f:
        for i in tqdm(todo, desc="target answers", disable=not progress):
            ids, inputs = rows.prompt(i)
            inputs = {k: v.to(device=device, dtype=target.dtype) for k, v in inputs.items()}
            res = generate(CachedLM(target), ids.to(device), None, max_new_tokens=max_new_tokens,
                           eos_token_id=rows.eos_id, target_inputs=inputs)  # fmt: skip
            f.write(json.dumps({"id": rows.ids[i], "answer": res.output_ids}) + "\n")
            f.flush()


def target_answers(target, rows: Rows, cfg: dict, path: pathlib.Path, accelerator=None) -> Rows:
    """``cfg["rows"]`` of ``rows`` (a seeded draw; ``None``: all) answered by ``target`` (``distill`` on the main
    process, answers up to ``cfg["max_new_tokens"]``), the answers loaded once."""
    prompts = rows.subset(pick_rows(len(rows), cfg["rows"], cfg.get("seed", 0)))
    if is_main(accelerator):
        distill(target, prompts, cfg["max_new_tokens"], path)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return prompts.with_answers(load_answers(path))


# ------------------------------------------------------------------------------------------------- modules
def train_module(target, rows: Rows, cfg: dict, variant: dict | None = None, *, name: str = "aasd-module",
                 heldout: Rows | None = None, accelerator=None) -> tuple[SpeculatingModule, dict]:  # fmt: skip
    """One speculating module for the frozen ``target`` on ``rows`` (prompt + answer), ``cfg``: the recipe's
    ``module`` settings, ``variant`` overriding its sizes; returns ``(module, summary)`` (the summary holds the
    log rows and, given ``heldout`` rows, ``heldout_loss``).

    The module's initialisation is seeded ``seed``, the batches drawn from a generator seeded ``seed + 1``, the
    (depth, row, position) triples that go through the output head from one seeded ``seed + 2``."""
    target.requires_grad_(False).eval()
    device = next(target.parameters()).device
    size = {k: (variant or {}).get(k, cfg[k]) for k in MODULE_SIZE}
    seed = cfg.get("seed", 0)
    torch.manual_seed(seed)
    module = SpeculatingModule(config_for(target, **size)).to(device).attach(target)
    picks = torch.Generator().manual_seed(seed + 2)

    def loss_fn(objective, picked):
        batch = rows.batch(picked, device, target.dtype)
        return tda_loss(objective, batch, target, cfg["depths"], cfg["max_positions"], picks)

    log = training.train(
        TDAObjective(module), sampler(len(rows), cfg["batch_size"]), loss_fn, steps=cfg["steps"], lr=cfg["lr"],
        seed=seed + 1, weight_decay=cfg.get("weight_decay", 0.0), mean_loss=True, name=name, accelerator=accelerator,
    )  # fmt: skip
    summary = {
        "model": name,
        "trainable_parameters": sum(p.numel() for p in module.parameters()),
        **size,
        **{k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items() if k not in MODULE_SIZE},
        "rows": len(rows),
        "device": device_name(device),
        "processes": accelerator.num_processes if accelerator is not None else 1,
        "seconds": round(log.seconds, 1),
        "final_train_loss": log.rows[-1]["train_loss"],
    }
    if heldout is not None:
        summary["heldout_loss"] = module_heldout_loss(module, target, heldout, cfg)
    return module, summary | {"log": log.rows}


@torch.no_grad()
def module_heldout_loss(module, target, heldout: Rows, cfg: dict, n_rows: int = 96) -> float:
    """Mean TDA loss (every depth, every answer position) over chunks of 16 of the first ``n_rows`` held-out
    rows."""
    module.eval()
    gen = torch.Generator().manual_seed(0)
    device = next(target.parameters()).device
    n = min(n_rows, len(heldout))
    losses = [
        float(tda_loss(module, heldout.batch(torch.arange(s, min(s + 16, n)), device, target.dtype), target,
                       cfg["depths"], 10**9, gen))
        for s in range(0, n, 16)
    ]  # fmt: skip
    return round(sum(losses) / len(losses), 4)


def train_modules(target, target_name: str, rows: Rows, settings: dict, variants, out: pathlib.Path, info: dict,
                  heldout: Rows | None = None, accelerator=None, train_seed: int = 0,
                  folder_of=None) -> dict:  # fmt: skip
    """The module variants ``variants`` (``""``: the main one) of one target, saved under ``out`` with ``info``
    (target, revision, profile); ``train_seed`` k > 0: with the module's seed moved by ``SEED_STEP * k``, saved as
    ``module_name(.., train_seed=k)``; ``folder_of(variant)``: where to save a variant instead of ``out/<name>``.
    Returns ``{name: folder}``."""
    saved = {}
    cfg = {**settings["module"], "seed": settings["module"].get("seed", 0) + SEED_STEP * train_seed}
    for variant in variants:
        name = module_name(target_name, variant, train_seed)
        module, summary = train_module(target, rows, cfg, settings["variants"].get(variant, {}), name=name,
                                       heldout=heldout, accelerator=accelerator)  # fmt: skip
        if is_main(accelerator):
            log = summary.pop("log")
            meta = {**info, "variant": variant or "main", "train_seed": train_seed, "training": summary, "log": log}
            folder = folder_of(variant) if folder_of else out / name
            save_module(module, folder, meta)
            print(json.dumps(summary), flush=True)
            saved[name] = folder
    return saved


# ---------------------------------------------------------------------------------------------- baselines
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
    return lambda picks: text_only_batch(rows.batch(picks, device), newline, rows.image_token_id,
                                         rows.image_tokens, vocab)  # fmt: skip


def finetune(model, batch_of, n_rows: int, cfg: dict, *, seed: int = 0, name: str = "", answer_positions_only=False,
             accelerator=None) -> training.TrainLog:  # fmt: skip
    """The one baseline training: ``model`` on ``batch_of(rows)`` (rows drawn from ``range(n_rows)`` with a
    generator seeded ``seed + 1``) for ``cfg`` (``steps``, ``batch_size``, ``lr``, ``weight_decay``) with the
    answer-token loss (``zoo.training.answer_loss``)."""
    loss = functools.partial(training.answer_loss, answer_positions_only=answer_positions_only)
    return training.train(
        model, sampler(n_rows, cfg["batch_size"]), lambda m, picks: loss(m, batch_of(picks)), steps=cfg["steps"],
        lr=cfg["lr"], seed=seed + 1, weight_decay=cfg.get("weight_decay", 0.0), mean_loss=True, name=name,
        accelerator=accelerator,
    )  # fmt: skip


@torch.no_grad()
def heldout_answer_loss(model, batch_of, n_rows: int, answer_positions_only=False, chunk: int = 32) -> float:
    """Mean over chunks of ``chunk`` held-out rows of the answer-token loss."""
    model.eval()
    chunks = [torch.arange(s, min(s + chunk, n_rows)) for s in range(0, n_rows, chunk)]
    losses = [float(training.answer_loss(model, batch_of(c), answer_positions_only=answer_positions_only))
              for c in chunks]  # fmt: skip
    return round(sum(losses) / len(losses), 4)


def train_draft(name: str, draft: dict, rows: Rows, settings: dict, out: pathlib.Path, *, seed: int, device,
                heldout: dict | None = None, spec: dict | None = None, accelerator=None,
                folder: pathlib.Path | None = None) -> pathlib.Path:  # fmt: skip
    """One baseline: ``new_draft``, ``finetune`` on ``rows``, held-out losses (``heldout``: ``{label: Rows}``),
    saved as ``folder`` (default ``out/<name>``) with ``training_log.json`` by the main process."""
    model, tokenizer, save = new_draft(draft, seed, device, rows.files, spec)
    sparse = draft.get("answer_positions_only", False)
    cfg = {**settings["finetune"], **draft.get("finetune", {})}
    log = finetune(model, draft_batches(model, rows, draft, tokenizer), len(rows), cfg, seed=seed, name=name,
                   answer_positions_only=sparse, accelerator=accelerator)  # fmt: skip
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
    model, log = training.train_model(name, streams["train"], streams["heldout"], steps=cfg["steps"],
                                      batch_size=cfg["batch_size"], seq_len=cfg["seq_len"], lr=cfg["lr"], seed=seed,
                                      device=device, config=draft["new"])  # fmt: skip
    summary = {"model": name, "init": "new", "corpus": "foundation", **cfg, "seed": seed, "device": device_name(device),
               "seconds": log[-1]["seconds"], "heldout_loss": log[-1]["heldout_loss"]}  # fmt: skip
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


def train_drafts(rows: Rows | None, settings: dict, answers: str, out: pathlib.Path, *, target: str | None = None,
                 target_index: int = 0, device="cpu", heldout=None, spec=None, accelerator=None,
                 train_seed: int = 0) -> dict:  # fmt: skip
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
        folder = train_draft(name, parents, rows, settings, out, seed=seed, device=device, heldout=heldout, spec=spec,
                             accelerator=accelerator, folder=folder)  # fmt: skip
        if is_main(accelerator):
            saved[name] = folder
    return saved


# ------------------------------------------------------------------------------------------------- a target
def load_target(profile, name: str, accelerator=None):
    """``(target, processor, revision)``: a LLaVA target of a ``harness.profile.Profile`` (a shipped zoo folder or
    a hub id at its pinned revision) on the profile's device (the accelerator's, under one) and dtype."""
    source, revision = profile.model_source(name)
    device = str(accelerator.device) if accelerator is not None else profile.device
    target, processor = models.load(source, kind="llava", device=device, dtype=profile.dtype, revision=revision)
    return target, processor, revision


def run_target(profile, target_name: str, settings: dict, make_rows, out: pathlib.Path, *, modules=True,
               drafts=True, target_index: int = 0, heldout: dict | None = None, accelerator=None,
               train_seed: int = 0, module_folder=None) -> dict:  # fmt: skip
    """The recipe for one target of ``profile`` (a ``harness.profile.Profile``): its answers to the training
    prompts ``make_rows(target, processor)`` when something trains on them, its ``modules`` (the variants
    ``settings["targets"]`` names) and its distilled baselines (``drafts``); ``heldout``: ``{label: Rows}`` the
    summaries score (``""``: the module's); ``train_seed`` k > 0: both with their seeds moved by ``SEED_STEP * k``;
    ``module_folder(variant)``: where a module is saved (default ``out/<name>``). Returns ``{name: folder}``."""
    target, processor, revision = load_target(profile, target_name, accelerator)
    rows = make_rows(target, processor)
    device = next(target.parameters()).device
    wants_answers = (modules and settings["module"]["answers"] == "target") or (
        drafts and any(d["answers"] == "target" for d in settings["drafts"].values())
    )
    answered, path = None, None
    if wants_answers:
        version = target_version(profile, target_name)
        path = answers_path(out, target_name, version, settings["distill"]["max_new_tokens"])
        answered = target_answers(target, rows, settings["distill"], path, accelerator)
    saved = {}
    if modules:
        on_answers = settings["module"]["answers"] == "target"
        module_rows = answered if on_answers else rows
        info = {"target": target_name, "revision": revision, "profile": profile.name,
                "answers": path.name if on_answers else "task"}  # fmt: skip
        saved |= train_modules(target, target_name, module_rows, settings, settings["targets"][target_name], out,
                               info, (heldout or {}).get(""), accelerator, train_seed, module_folder)  # fmt: skip
    if drafts and answered is not None:
        saved |= train_drafts(answered, settings, "target", out, target=target_name, target_index=target_index,
                              device=device, heldout=heldout, spec=profile.spec, accelerator=accelerator,
                              train_seed=train_seed)  # fmt: skip
    return saved
