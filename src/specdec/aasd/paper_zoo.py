"""AASD at paper scale: the speculating module and the distilled baselines of a hub LLaVA target (paper profile).

The authors published no weights, code, training data or schedule, so a paper-profile user trains them with
this recipe (every choice is the project's; ``aasd`` in ``data/profiles/paper.yaml`` holds the settings)::

    python -m specdec.aasd.train paper --target llava-hf/llava-1.5-7b-hf            # one GPU
    accelerate launch --config_file configs/accelerate/ddp.yaml -m specdec.aasd.train paper \\
        --target llava-hf/llava-1.5-7b-hf                                           # DDP over the machine's GPUs

1. ``training_requests``: image rows of the profile's ``aasd.training`` datasets (splits disjoint from the
   evaluation sets), as LLaVA-1.5 chat prompts.
2. ``distill``: the target's greedy answers to them (plain decoding on our engine), stored as JSON lines in the
   zoo folder, one per request, keyed by target, revision and answer length: an interrupted run resumes, a changed
   setting writes another file.
3. ``train_module``: the speculating module (and its ablation variants) by Target-Draft Attention against the
   frozen target on prompt + answer, through the one loop (``zoo.training.train``, accelerate-aware); saved as
   ``<zoo>/aasd-module-<target>[-<variant>]``.
4. ``train_distilled``: DT-LLaMA / DT-LLaVA, the profile's ``init`` drafts finetuned on the same answers
   (sequence-level distillation; the text-only one sees each image as ``"\\n"``), same loop; saved as
   ``<zoo>/aasd-dt-llama-<target>`` / ``aasd-dt-llava-<target>``. FT-LLaMA / FT-LLaVA are public drafts named by
   the profile (stand-ins: the paper's 112M baselines are not published).

The zoo folder is ``$SPECDEC_AASD_ZOO``, default ``$HF_HOME/specdec-aasd-zoo``; notebooks 40-41 read it.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import torch

from specdec import hub
from specdec.aasd import baselines
from specdec.aasd.algorithm import SpeculatingModule, config_for, save_module
from specdec.aasd.tda import TDAObjective, tda_loss
from specdec.aasd.zoo_specs import MODULE_VARIANTS, module_name
from specdec.cache import CachedLM
from specdec.engine import generate
from specdec.vlm import scenes
from specdec.vlm.prompts import encode
from specdec.zoo import models, training
from specdec.zoo.training import save_half


def zoo_dir() -> pathlib.Path:
    """Where the paper-scale AASD models live: ``$SPECDEC_AASD_ZOO``, else ``$HF_HOME/specdec-aasd-zoo``."""
    if os.environ.get("SPECDEC_AASD_ZOO"):
        return pathlib.Path(os.environ["SPECDEC_AASD_ZOO"])
    return pathlib.Path(os.environ.get("HF_HOME", pathlib.Path.home() / ".cache" / "huggingface")) / "specdec-aasd-zoo"


def settings(profile: str = "paper") -> dict:
    """The ``aasd`` section of a profile."""
    return models.load_profile(profile)["aasd"]


def missing(path: pathlib.Path, what: str, target: str) -> hub.ModelNotAvailableError:
    """The error for a paper-scale model not trained yet, naming the command that trains it."""
    return hub.ModelNotAvailableError(
        f"no {what} for {target} at {path} (the AASD authors published none). Train it with "
        f"`python -m specdec.aasd.train paper --target {target}` (or under `accelerate launch`), or point "
        "SPECDEC_AASD_ZOO at a folder holding one"
    )


# ------------------------------------------------------------------------------------------------ requests
def question_of(row: dict, default: str) -> str:
    """A dataset row's question (ScienceQA: with its options, as the evaluation prompt puts them)."""
    question = row.get("question") or default
    if row.get("choices"):
        question += "\nOptions: " + " ".join(f"({chr(65 + k)}) {c}" for k, c in enumerate(row["choices"]))
    return question


def image_requests(rows, prefix: str, default_question: str, n: int) -> list[dict]:
    """Up to ``n`` requests ``{"id", "prompt", "images"}`` from dataset ``rows`` that have an image (LLaVA-1.5's
    chat prompt, the image first)."""
    out = []
    for i, row in enumerate(rows):
        if len(out) == n:
            break
        if row.get("image") is None:
            continue
        prompt = scenes.chat_prompt([(f"{scenes.IMAGE_PLACEHOLDER}\n{question_of(row, default_question)}", None)])
        out.append({"id": f"{prefix}-{i:06d}", "prompt": prompt, "images": [row["image"]]})
    return out


def training_requests(profile: str = "paper", n: int | None = None) -> list[dict]:
    """The training prompts of ``aasd.training`` (each entry's ``n`` rows with an image, or ``n`` to cap them)."""
    out = []
    spec = models.load_profile(profile)
    for entry in spec["aasd"]["training"]:
        wanted = n or entry["n"]
        revision = hub.pinned_revision(spec, entry["dataset"])
        rows = hub.load_dataset(entry["dataset"], entry.get("config"), entry["split"], revision=revision)
        prefix = entry["dataset"].split("/")[-1]
        out += image_requests(rows, prefix, entry.get("question", "Describe the image briefly."), wanted)
    return out


# ---------------------------------------------------------------------------------------------- distillation
def distill_path(zoo: pathlib.Path, target: str, revision: str | None, max_new_tokens: int) -> pathlib.Path:
    return zoo / f"distill-{target.split('/')[-1]}@{revision or 'main'}-{max_new_tokens}.jsonl"


@torch.no_grad()
def distill(target, processor, requests: list[dict], max_new_tokens: int, path: pathlib.Path, progress=True):
    """``{request id: answer ids}``: the target's greedy answers (EOS kept), appended to ``path`` one JSON line
    per request as they are made; requests already in ``path`` are read, not decoded again."""
    from tqdm.auto import tqdm

    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row["answer"]
    todo = [r for r in requests if r["id"] not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    eos = processor.tokenizer.eos_token_id
    device = next(target.parameters()).device
    with path.open("a") as f:
        for request in tqdm(todo, desc="target answers", disable=not progress):
            ids, inputs = encode(processor, request["prompt"], request["images"])
            inputs = {k: v.to(device=device, dtype=target.dtype) for k, v in inputs.items()}
            res = generate(CachedLM(target), ids.to(device), None, max_new_tokens=max_new_tokens, eos_token_id=eos,
                           target_inputs=inputs)  # fmt: skip
            done[request["id"]] = res.output_ids
            f.write(json.dumps({"id": request["id"], "answer": res.output_ids}) + "\n")
            f.flush()
    return done


def _right_pad(rows: list[torch.Tensor], labels: list[torch.Tensor], pad_id: int, device=None) -> dict:
    """``input_ids``, ``attention_mask``, ``labels`` (``LongTensor[B, longest row]`` on ``device``, default the
    CPU) of 1-D id ``rows`` and their ``labels`` (each as long as its row), right-padded: after a row's end
    ``input_ids`` is ``pad_id``, ``attention_mask`` 0 (1 on the row) and ``labels`` -100."""
    width = max(len(r) for r in rows)
    out = {
        "input_ids": torch.full((len(rows), width), pad_id, dtype=torch.long, device=device),
        "attention_mask": torch.zeros((len(rows), width), dtype=torch.long, device=device),
        "labels": torch.full((len(rows), width), -100, dtype=torch.long, device=device),
    }
    for b, (row, lab) in enumerate(zip(rows, labels)):
        out["input_ids"][b, : len(row)] = row
        out["attention_mask"][b, : len(row)] = 1
        out["labels"][b, : len(row)] = lab
    return out


def make_batch(encoded: list[tuple[torch.Tensor, dict]], answers: list[list[int]], pad_id: int, device) -> dict:
    """A right-padded batch ``input_ids``, ``attention_mask``, ``pixel_values``, ``labels`` (answer ids; -100 on
    the prompt and the padding) of ``(prompt ids [L], pixel inputs)`` and answer ids."""
    rows, labels = [], []
    for (ids, _), answer in zip(encoded, answers):
        answer = torch.tensor(answer, dtype=torch.long)
        rows.append(torch.cat([ids, answer]))
        labels.append(torch.cat([torch.full((len(ids),), -100, dtype=torch.long), answer]))
    pixels = [inputs["pixel_values"] for _, inputs in encoded if "pixel_values" in inputs]
    batch = _right_pad(rows, labels, pad_id)
    batch["pixel_values"] = torch.cat(pixels) if pixels else None
    return {k: (v.to(device) if v is not None else None) for k, v in batch.items()}


def text_only_batch(batch: dict, newline_ids: list[int], image_token_id: int, image_tokens: int, vocab_size: int):
    """``batch`` with each image's run of ``image_tokens`` ids replaced by ``newline_ids`` (labels follow), no
    pixels: what the text-only baselines train on and see at inference (``baselines.text_rows``). Ids the draft's
    ``vocab_size`` lacks (the target's extra tokens) become 0 and are not trained on; padding is 0."""
    rows, labels = [], []
    for ids, lab, m in zip(batch["input_ids"], batch["labels"], batch["attention_mask"]):
        ids, lab = ids[m.bool()], lab[m.bool()]
        prompt_len = int((lab == -100).sum())
        prompt = baselines.replace_images(ids[:prompt_len], newline_ids, image_token_id, image_tokens)
        answer = ids[prompt_len:]
        outside = answer >= vocab_size
        rows.append(torch.cat([prompt, answer.masked_fill(outside, 0)]))
        labels.append(torch.cat([torch.full_like(prompt, -100), lab[prompt_len:].masked_fill(outside, -100)]))
    return _right_pad(rows, labels, 0, batch["input_ids"].device)


# ------------------------------------------------------------------------------------------------- training
def _sampler(n_rows: int, batch_size: int):
    return lambda g: torch.randint(n_rows, (batch_size,), generator=g)


def train_module(target, processor, requests, answers, cfg: dict, variant: dict, accelerator=None, seed: int = 0):
    """One speculating module for the frozen ``target`` (``cfg``: ``aasd.algorithm`` settings; ``variant``: overrides
    such as ``projector_k`` / ``context``); returns ``(module, log rows)``."""
    target.requires_grad_(False).eval()
    device = next(target.parameters()).device
    size = {k: variant.get(k, cfg[k]) for k in ("intermediate_size", "projector_k", "context")}
    if size["context"] == "own":  # it never reads the image cache: no projector (DDP refuses unused parameters)
        size["projector_k"] = None
    torch.manual_seed(seed)
    module = SpeculatingModule(config_for(target, **size)).to(device).attach(target)
    encoded = [encode(processor, r["prompt"], r["images"]) for r in requests]
    pad = processor.tokenizer.pad_token_id or 0
    picks = torch.Generator().manual_seed(seed + 2)

    def loss_fn(objective, rows):
        batch = make_batch([encoded[i] for i in rows], [answers[requests[i]["id"]] for i in rows], pad, device)
        if batch["pixel_values"] is not None:
            batch["pixel_values"] = batch["pixel_values"].to(target.dtype)
        return tda_loss(objective, batch, target, cfg["depths"], cfg["max_positions"], picks)

    log = training.train(
        TDAObjective(module), _sampler(len(requests), cfg["batch_size"]), loss_fn, steps=cfg["steps"], lr=cfg["lr"],
        seed=seed + 1, weight_decay=0.0, mean_loss=True, name="aasd-module", accelerator=accelerator,
    )  # fmt: skip
    return module, log.rows


def train_distilled(model, batches_of, n_rows: int, cfg: dict, accelerator=None, seed: int = 0):
    """Finetune ``model`` (a draft) on ``batches_of(rows)`` for ``cfg`` steps with the answer-token loss."""
    log = training.train(
        model, _sampler(n_rows, cfg["batch_size"]), lambda m, rows: training.answer_loss(m, batches_of(rows)),
        steps=cfg["steps"], lr=cfg["lr"], seed=seed + 1, weight_decay=0.0, mean_loss=True, name="aasd-dt",
        accelerator=accelerator,
    )  # fmt: skip
    return log.rows


def run(
    target_id: str,
    *,
    profile: str = "paper",
    out: pathlib.Path | None = None,
    steps: int | None = None,
    n: int | None = None,
    max_new_tokens: int | None = None,
    batch_size: int | None = None,
    variants: tuple[str, ...] = ("", "noproj", "k1", "own"),
    baselines_too: bool = True,
    device: str | None = None,
    accelerator=None,
) -> dict:
    """The whole recipe for one target (the ``None`` arguments: the profile's settings; smaller ones for a smoke
    run). Returns ``{name: folder}`` of what it saved."""
    spec = models.load_profile(profile)
    aasd = spec["aasd"]
    out = pathlib.Path(out or zoo_dir())
    overrides = {k: v for k, v in (("steps", steps), ("batch_size", batch_size)) if v}
    module_cfg = {**aasd["module"], **overrides}
    dt_cfg = {**aasd["distilled"], **overrides}
    max_new_tokens = max_new_tokens or aasd["distill_max_new_tokens"]
    if accelerator is not None:
        device = str(accelerator.device)
    dev, dtype = models.profile_device(spec, device)
    revision = models.revision_of(spec, target_id)
    target, processor = models.load(target_id, kind="llava", device=dev, dtype=dtype, revision=revision)
    main = accelerator is None or accelerator.is_main_process
    requests = training_requests(profile, n)
    path = distill_path(out, target_id, revision, max_new_tokens)
    if main:
        distill(target, processor, requests, max_new_tokens, path)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    answers = distill(target, processor, requests, max_new_tokens, path, progress=False)  # read back: all done
    saved = {}
    for variant in variants:
        t0 = time.perf_counter()
        module, log = train_module(target, processor, requests, answers, module_cfg, MODULE_VARIANTS.get(variant, {}),
                                   accelerator)  # fmt: skip
        name = module_name(target_id, variant)
        if main:
            processes = accelerator.num_processes if accelerator is not None else 1
            training_info = {"requests": len(requests), "answers": path.name, **module_cfg, "device": str(dev),
                             "processes": processes,
                             "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip
            info = {"target": target_id, "revision": revision, "variant": variant or "main", "profile": profile,
                    "training": training_info, "log": log}  # fmt: skip
            save_module(module, out / name, info)
            saved[name] = out / name
    if baselines_too:
        saved |= _distilled_baselines(target_id, target, processor, requests, answers, spec, dt_cfg, out, dev,
                                      accelerator)  # fmt: skip
    return saved


def _distilled_baselines(target_id, target, processor, requests, answers, spec, cfg, out, dev, accelerator):
    """DT-LLaVA (images seen) and DT-LLaMA (images as ``"\\n"``) from the profile's ``init`` drafts."""
    encoded = [encode(processor, r["prompt"], r["images"]) for r in requests]
    pad = processor.tokenizer.pad_token_id or 0
    image_token_id = target.config.image_token_id
    image_tokens = config_for(target).image_tokens
    saved = {}
    for name, draft in spec["aasd"]["drafts"].items():
        if "init" not in draft:
            continue
        kind = "llava" if draft["kind"] == "llava" else "causal_lm"
        model, tokenizer = models.load(draft["init"], kind=kind, device=dev, dtype=torch.float32,
                                       revision=models.revision_of(spec, draft["init"]))  # fmt: skip
        for param_name, param in model.named_parameters():  # the vision encoder stays frozen, as in LLaVA's finetuning
            if "vision_tower" in param_name:  # (and DDP refuses its last layer, which the features skip, untrained)
                param.requires_grad_(False)
        tok = tokenizer.tokenizer if kind == "llava" else tokenizer
        newline = tok(baselines.NEWLINE, add_special_tokens=False)["input_ids"]

        vocab = model.get_input_embeddings().num_embeddings

        def batches_of(rows, kind=kind, newline=newline, vocab=vocab):
            batch = make_batch([encoded[i] for i in rows], [answers[requests[i]["id"]] for i in rows], pad, dev)
            if kind == "llava":
                return batch
            return text_only_batch(batch, newline, image_token_id, image_tokens, vocab)

        log = train_distilled(model, batches_of, len(requests), cfg, accelerator)
        if accelerator is not None:
            model = accelerator.unwrap_model(model)
        folder = out / distilled_name(name, target_id)
        if accelerator is None or accelerator.is_main_process:
            save_half(model, folder)
            tokenizer.save_pretrained(folder)
            (folder / "training_log.json").write_text(json.dumps({"init": draft["init"], "log": log}) + "\n")
            saved[folder.name] = folder
    return saved


def distilled_name(draft: str, target_id: str) -> str:
    """The zoo folder of a distilled baseline (``DT-LLaMA`` -> ``aasd-dt-llama-<target>``)."""
    kind, family = draft.split("-")
    return f"aasd-{kind.lower()}-{family.lower()}-{target_id.split('/')[-1]}"


__all__ = ["distill", "image_requests", "make_batch", "run", "training_requests", "zoo_dir"]
