"""Training the tiny zoo: a byte-level BPE tokenizer and Llama models, with fixed seeds.

``python -m specdec.zoo.training --out data/models`` (what ``make models`` runs) rebuilds the corpus, the tokenizer,
the held-out prompts and every model of ``specdec.zoo.TINY_ZOO``, and writes a data card: the weights shipped under
``data/models/``. Without ``--out`` all of it goes to ``.cache/trained`` (``specdec.zoo.cli``), prompts included.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import time
from dataclasses import dataclass, field

import torch

from specdec import zoo
from specdec.zoo import cli
from specdec.zoo import corpus as corpus_lib

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>"]  # ids 0, 1, 2
# Sampling weight of each kind of document when drawing training windows.
KIND_WEIGHTS = {"prose": 0.45, "code": 0.35, "translation": 0.20}


def train_tokenizer(texts: list[str], vocab_size: int = zoo.VOCAB_SIZE):
    """Train a byte-level BPE tokenizer and wrap it as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", model_max_length=zoo.MAX_POSITIONS
    )


def token_streams(docs: list[dict], tokenizer, split: str) -> dict[str, torch.Tensor]:
    """Concatenate ``<s> doc </s>`` per kind of document: ``{kind: LongTensor[n_tokens]}``."""
    streams: dict[str, list[int]] = {}
    for doc in docs:
        if doc["split"] == split:
            ids = tokenizer(doc["text"], add_special_tokens=False, verbose=False)["input_ids"]  # long docs are fine
            streams.setdefault(doc["kind"], []).extend([tokenizer.bos_token_id, *ids, tokenizer.eos_token_id])
    return {kind: torch.tensor(ids) for kind, ids in sorted(streams.items())}


def sample_batch(
    streams: dict[str, torch.Tensor],
    batch_size: int,
    seq_len: int,
    generator: torch.Generator,
    mix: dict[str, float] | None = None,
):
    """Draw ``batch_size`` windows of ``seq_len + 1`` tokens, kinds weighted by ``mix`` (default ``KIND_WEIGHTS``)."""
    mix = mix or KIND_WEIGHTS
    kinds = [k for k in streams if mix.get(k, 0) > 0]
    weights = torch.tensor([mix[k] for k in kinds])
    picks = torch.multinomial(weights, batch_size, replacement=True, generator=generator)
    rows = []
    for k in picks.tolist():
        stream = streams[kinds[k]]
        start = torch.randint(0, len(stream) - seq_len - 1, (1,), generator=generator).item()
        rows.append(stream[start : start + seq_len + 1])
    return torch.stack(rows)


@torch.no_grad()
def heldout_loss(model, streams, seq_len: int = 128, n_windows: int = 64, seed: int = 1234, mix=None) -> float:
    """Mean next-token cross-entropy (nats) on fixed held-out windows."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    batch = sample_batch(streams, n_windows, seq_len, g, mix).to(next(model.parameters()).device)
    losses = []
    for chunk in batch.split(16):
        out = model(input_ids=chunk[:, :-1], labels=chunk[:, :-1].clone())
        logits = out.logits
        losses.append(
            torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1)).item()
        )
    return sum(losses) / len(losses)


@dataclass
class TrainLog:
    """What ``train`` returns: the logged ``rows`` (as printed, one per ``log_every`` steps and the last) and
    ``losses``, every step's training loss (float32 values as Python floats), and the loop's ``seconds``."""

    rows: list[dict] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def cosine_schedule(steps: int, warmup: int):
    """The learning-rate factor of scheduler step ``s`` (0-based): linear warm-up to 1 over ``warmup`` steps
    (``(s + 1) / warmup``) times a cosine decay from 1 to 0 at ``steps``."""
    return lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps))


def train(
    model,
    batches,
    loss_fn,
    *,
    steps: int,
    lr: float,
    seed: int | None = None,
    warmup: int | None = None,
    betas: tuple[float, float] = (0.9, 0.95),
    weight_decay: float = 0.1,
    clip: float | None = 1.0,
    fused: bool = False,
    log_every: int | None = None,
    eval_every: int = 5,
    evaluate=None,
    mean_loss: bool = False,
    log_lr: bool = False,
    name: str = "",
    fields: dict | None = None,
    counters=None,
    progress: bool = True,
    accelerator=None,
) -> TrainLog:
    """The training loop of every zoo (foundation, CoS, multilingual, TABED): AdamW, warm-up + cosine decay,
    gradient clipping, logging. Trains ``model`` in place for ``steps`` steps and returns a ``TrainLog``.

    Each step, in this order: ``model.train()``; draw a batch; ``loss = loss_fn(model, batch)`` (a scalar
    tensor, the mean loss of the batch); ``zero_grad(set_to_none=True)``; ``loss.backward()``; clip the global
    gradient norm of ``model.parameters()`` to ``clip`` (``None``: no clipping); ``opt.step()``;
    ``sched.step()``. The model is left in ``eval()`` mode.

    * ``batches``: a callable ``batches(generator) -> batch``, called once per step with one CPU
      ``torch.Generator`` seeded ``seed`` (so the data order does not depend on the device), or an iterable
      of batches (``seed`` unused). A batch is whatever ``loss_fn`` takes, already on the model's device, e.g.
      ``LongTensor[batch, seq_len + 1]`` windows for ``next_token_loss``. The zoos seed the model's
      initialisation with their model seed (``torch.manual_seed``, before building the model) and the batch
      generator with model seed + 1 (multilingual finetunes: + 2); ``train`` draws nothing from the global RNG.
    * Optimiser: ``torch.optim.AdamW(model.parameters(), lr, betas, weight_decay)`` (one parameter group, in
      ``model.parameters()`` order); ``fused=True`` asks for the fused CUDA kernel (otherwise torch's default
      implementation). Schedule: ``LambdaLR`` with ``cosine_schedule(steps, warmup)``, ``warmup`` default
      ``max(1, steps // 20)``; the scheduler steps after every optimiser step.
    * Logging: a row every ``log_every`` steps (default ``max(1, steps // 10)``) and at the last step:
      ``{"model": name, **fields, "step", **counters(), "train_loss", ["lr"], "seconds", **evaluate(model)}``,
      printed as JSON. ``train_loss`` is the last step's loss, or with ``mean_loss`` the mean over the steps
      since the previous row; ``log_lr`` adds the learning rate after the step. ``evaluate(model) -> dict``
      (held-out metrics; it may switch the model to ``eval()``) runs at every ``eval_every``-th row and the
      last. ``progress``: a tqdm progress bar.
    * ``accelerator``: an ``accelerate.Accelerator`` (a process of ``accelerate launch``; DDP or FSDP as its
      config says). Model and optimiser are ``prepare``d; every process draws the same global batch from the
      same seeded generator and trains on its contiguous slice (``split_between_processes``, dim 0), so with a
      loss that is a mean over equal-sized rows the averaged gradient is the single-process one (up to float
      rounding); ``accelerator.backward``, ``accelerator.clip_grad_norm_``; the logged loss is the mean over
      processes; only the main process prints. ``evaluate`` runs on every process (FSDP needs them all).
      ``None`` (default): the single-process loop above, unchanged. Save with ``accelerator.unwrap_model``.
    """
    from tqdm.auto import tqdm

    opt = torch.optim.AdamW(
        model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay, **({"fused": True} if fused else {})
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, cosine_schedule(steps, max(1, steps // 20) if warmup is None else warmup)
    )
    main = accelerator is None or accelerator.is_main_process
    if accelerator is not None:
        model, opt = accelerator.prepare(model, opt)  # the scheduler stays on the optimiser: one step per step
    draw = batch_source(batches, seed)
    log_every = log_every or max(1, steps // 10)
    log, pending = TrainLog(), []
    t0 = time.perf_counter()
    for step in tqdm(range(steps), desc=f"train {name}".strip(), mininterval=10, disable=not (progress and main)):
        model.train()
        batch = draw() if accelerator is None else local_batch(draw(), accelerator)
        loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        backward_and_clip(loss, model, clip, accelerator)
        opt.step()
        sched.step()
        pending.append(loss.detach() if accelerator is None else accelerator.reduce(loss.detach(), "mean"))
        last = step + 1 == steps
        if (step + 1) % log_every == 0 or last:
            recent = torch.stack(pending)
            log.losses += recent.tolist()
            pending = []
            row = {"model": name, **(fields or {}), "step": step + 1, **(counters() if counters else {})}
            row["train_loss"] = round(float(recent.mean() if mean_loss else recent[-1]), 4)
            if log_lr:
                row["lr"] = round(sched.get_last_lr()[0], 6)
            row["seconds"] = round(time.perf_counter() - t0, 1)
            if evaluate is not None and ((step + 1) % (log_every * eval_every) == 0 or last):
                row.update(evaluate(model))
            log.rows.append(row)
            if main:
                print(json.dumps(row), flush=True)
    log.seconds = time.perf_counter() - t0
    model.eval()
    return log


def batch_source(batches, seed: int | None):
    """``draw() -> batch``: ``batches(generator)`` with one CPU generator seeded ``seed``, or the next batch of an
    iterable."""
    if callable(batches):
        if seed is None:
            raise ValueError("a callable batch source needs the seed of its generator")
        generator = torch.Generator().manual_seed(seed)
        return lambda: batches(generator)
    iterator = iter(batches)
    return lambda: next(iterator)


def local_batch(batch, accelerator):
    """This process's contiguous slice (dim 0) of a global batch (a tensor, or a list / dict of them)."""
    with accelerator.split_between_processes(batch) as part:
        return part


def backward_and_clip(loss, model, clip: float | None, accelerator=None) -> None:
    """``loss.backward()`` and clip the global gradient norm to ``clip`` (``None``: no clipping), through the
    accelerator when there is one (DDP averages the gradients over processes in its backward)."""
    if accelerator is None:
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        return
    accelerator.backward(loss)
    if clip is not None:
        accelerator.clip_grad_norm_(model.parameters(), clip)


def next_token_loss(model, batch: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of ``batch`` (``LongTensor[B, T + 1]``): inputs ``[:, :-1]``, targets
    ``[:, 1:]``; logits cast to float32."""
    logits = model(input_ids=batch[:, :-1]).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1))


def answer_loss(model, batch: dict, pixels: bool = True, answer_positions_only: bool = False) -> torch.Tensor:
    """Mean next-token cross-entropy over the answer tokens of a right-padded batch: ``input_ids`` and
    ``attention_mask`` (``[B, T]``), ``labels`` (``[B, T]``, -100 outside the answer) and, for a LLaVA, optional
    ``pixel_values``; ``pixels=False`` leaves them out (a text-only model on a multimodal batch). Logits are cast
    to float32. The one answer loss of the zoos: finetuning, distillation and the baselines all use it.

    ``answer_positions_only``: the output head runs at the answer positions only (``model.model`` then
    ``model.lm_head``), as the tiny LLaVA zoo trains (``vlm.train``): the same loss in other float arithmetic (on
    a CPU, with a tiny model and a 4096-entry vocabulary, the logits at every position were most of a step).

    The inputs may leave out the last column (``input_ids`` ``[B, T - 1]``, ``labels`` ``[B, T]``): the last token
    predicts nothing, so a causal model need not read it (the multilingual zoo's batches; the same loss, one
    position less). Either way position ``t`` of the logits is scored against ``labels[:, t + 1]``."""
    names = ("input_ids", "attention_mask", "pixel_values") if pixels else ("input_ids", "attention_mask")
    inputs = {k: batch[k] for k in names if batch.get(k) is not None}
    labels = batch["labels"][:, 1:]
    if answer_positions_only:
        answer = labels != -100
        hidden = model.model(**inputs).last_hidden_state[:, : labels.shape[1]]
        logits = model.lm_head(hidden[answer]).float()
        return torch.nn.functional.cross_entropy(logits, labels[answer], reduction="none").mean()
    logits = model(**inputs).logits[:, : labels.shape[1]].float()
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
    )


def train_model(
    name: str,
    train_streams,
    heldout_streams,
    steps: int,
    batch_size: int = 32,
    seq_len: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    log_every: int = 100,
    mix=None,
    device: str = "cpu",
    accelerator=None,
    config: dict | None = None,
):
    """Train one zoo model (``zoo.llama_config(name)``, or of the size fields ``config``: a paper's zoo) from scratch
    with ``train``; returns (model, log rows).

    Initialisation seeded ``seed``; windows (``sample_batch``, kinds by ``mix``) drawn on the CPU with a
    generator seeded ``seed + 1``, so the data order does not depend on ``device``. Held-out loss
    (``heldout_loss``) every fifth log row. ``accelerator``: see ``train`` (``device`` is then the
    accelerator's)."""
    from transformers import LlamaForCausalLM

    device = accelerator.device if accelerator is not None else device
    torch.manual_seed(seed)
    model = LlamaForCausalLM(zoo.llama_config(name if config is None else config)).to(device)
    log = train(
        model,
        lambda g: sample_batch(train_streams, batch_size, seq_len, g, mix).to(device),
        next_token_loss,
        steps=steps,
        lr=lr,
        seed=seed + 1,
        log_every=log_every,
        evaluate=lambda m: {"heldout_loss": round(heldout_loss(m, heldout_streams, mix=mix), 4)},
        name=name,
        accelerator=accelerator,
    )
    return model, log.rows


def make_prompts(docs: list[dict], tokenizer, per_kind: int = 40, prompt_tokens: int = 32, seed: int = 0):
    """Held-out prompts: ``prompt_tokens`` tokens cut at a random place of a held-out document."""
    rng = random.Random(seed)
    prompts = []
    for kind in sorted({d["kind"] for d in docs}):
        pool = [d for d in docs if d["split"] == "heldout" and d["kind"] == kind]
        for i in range(per_kind):
            doc = pool[i % len(pool)]
            ids = tokenizer(doc["text"], add_special_tokens=False)["input_ids"]
            start = rng.randrange(0, max(1, len(ids) - prompt_tokens - 64))
            text = tokenizer.decode(ids[start : start + prompt_tokens])
            prompts.append({"id": f"{kind}-{i:03d}", "kind": kind, "source": doc["name"], "prompt": text})
    return prompts


def save_half(model, path: pathlib.Path) -> None:
    """``save_pretrained`` with float16 tensors and a float32 config (half the bytes in git)."""
    from safetensors.torch import load_file, save_file

    model.save_pretrained(path)
    weights = path / "model.safetensors"
    tensors = {k: v.half().contiguous() for k, v in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})


def device_name(device: str) -> str:
    """The GPU's name for a CUDA device, else ``"cpu"`` (the ``device`` of training summaries)."""
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Rebuild the tiny zoo (tokenizer, prompts, models).")
    parser.add_argument("--models", nargs="*", default=list(zoo.TINY_ZOO), help="which models to train")
    parser.add_argument("--steps-scale", type=cli.POS_NUMBER, default=1.0, help="multiply every model's steps")
    parser.add_argument("--out", type=pathlib.Path, default=None, help=f"default {cli.TRAINED} (data/models: say so)")
    parser.add_argument("--skip-tokenizer", action="store_true", help="reuse the shipped tokenizer")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--train-seed",
        type=int,
        default=0,
        help="training seed k > 0: each model's seed + 1000 k (initialisation and data order), into "
        "data/models-seeds/seed<k> unless --out is given; the shipped tokenizer, prompts and corpus card stay",
    )
    args = parser.parse_args(argv)
    if args.train_seed < 0:
        parser.error(f"--train-seed must be 0 (the shipped zoo) or a seed k > 0, got {args.train_seed}")
    unknown = sorted(set(args.models) - set(zoo.TRAIN_STEPS))
    if unknown:
        parser.error(f"unknown models {unknown}: the tiny zoo has {sorted(zoo.TRAIN_STEPS)}")
    if args.threads < 0:
        parser.error(f"--threads must be >= 0 (0: torch's default), got {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.train_seed:
        seed_out = None if args.out is None or args.out.resolve() == zoo.MODELS else args.out
        return train_seed(args.models, args.train_seed, seed_out, args.steps_scale)
    args.out = cli.output_dir(args.out)
    # the held-out prompts belong to the zoo they were made with: data/prompts only beside data/models
    prompts_path = zoo.PROMPTS if args.out.resolve() == zoo.MODELS else args.out / "prompts" / "heldout.jsonl"

    docs = corpus_lib.build_corpus()  # split by content: no held-out text inside a training document
    args.out.mkdir(parents=True, exist_ok=True)
    tok_dir = args.out / "tokenizer"
    if args.skip_tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
        if tok_dir.resolve() != zoo.TOKENIZER_DIR:
            tokenizer.save_pretrained(tok_dir)
    else:
        # Every zoo shares this tokenizer, so it keeps the text it was first trained on (the name split's
        # training documents); a new one would invalidate every model of every paper.
        names = corpus_lib.build_corpus(split="name")
        tokenizer = train_tokenizer([d["text"] for d in names if d["split"] == "train"])
        tokenizer.save_pretrained(tok_dir)
    prompts = make_prompts(docs, tokenizer)
    leaked = corpus_lib.verbatim_in_train([p["prompt"] for p in prompts], docs)
    if leaked:
        raise RuntimeError(f"{len(leaked)} held-out prompts occur verbatim in training text, e.g. {prompts[leaked[0]]}")
    prompts_path.parent.mkdir(parents=True, exist_ok=True)
    with prompts_path.open("w", encoding="utf-8") as f:
        for p in prompts:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    card = {
        "sources": corpus_lib.source_versions(),
        "split": "content",
        "stats": corpus_lib.corpus_stats(docs),
        "vocab_size": len(tokenizer),
    }
    (args.out / "corpus_stats.json").write_text(json.dumps(card, indent=1) + "\n")

    train = token_streams(docs, tokenizer, "train")
    heldout = token_streams(docs, tokenizer, "heldout")
    print({k: len(v) for k, v in train.items()}, {k: len(v) for k, v in heldout.items()})
    for name in args.models:
        steps = cli.scaled_steps(zoo.TRAIN_STEPS[name], args.steps_scale)
        model, log = train_model(name, train, heldout, steps=steps, seed=zoo.list_seed(name))
        save_half(model, args.out / name)  # float16 tensors, float32 config: loads as float32
        tokenizer.save_pretrained(args.out / name)
        (args.out / name / "training_log.json").write_text(json.dumps(log, indent=0) + "\n")


def train_seed(names, train_seed: int, out: pathlib.Path | None = None, steps_scale: float = 1.0) -> None:
    """Retrain the zoo models ``names`` with training seed ``train_seed`` > 0 (model seed ``zoo.list_seed(name) +
    zoo.SEED_STEP * train_seed``; the same corpus, steps and shipped tokenizer) into ``out`` (default
    ``zoo.seed_dir``); each folder's ``training_log.json`` names the seed and the seconds it took."""
    from transformers import AutoTokenizer

    cli.check_scale(steps_scale)  # before anything is built or written
    tokenizer = AutoTokenizer.from_pretrained(zoo.TOKENIZER_DIR)
    docs = corpus_lib.build_corpus()
    train, heldout = token_streams(docs, tokenizer, "train"), token_streams(docs, tokenizer, "heldout")
    for name in names:
        folder = (out / name) if out is not None else zoo.seed_dir(name, train_seed)
        seed = zoo.list_seed(name) + zoo.SEED_STEP * train_seed
        start = time.perf_counter()
        steps = cli.scaled_steps(zoo.TRAIN_STEPS[name], steps_scale)
        model, log = train_model(name, train, heldout, steps=steps, seed=seed)
        seconds = round(time.perf_counter() - start, 1)
        save_half(model, folder)
        tokenizer.save_pretrained(folder)
        summary = dict(train_seed=train_seed, seed=seed, steps=steps, seconds=seconds, threads=torch.get_num_threads())
        (folder / "training_log.json").write_text(json.dumps({**summary, "log": log}, indent=0) + "\n")
        print(f"{name} seed {train_seed}: {seconds:.0f} s, final {log[-1]}")
    if out is None:
        seed_summary().to_csv(SEED_SUMMARY, index=False)


SEED_SUMMARY = zoo.DATA / "zoo_training_seeds.csv"  # committed: the seeds' weights are not


def seed_summary(names=("tiny-draft-s", "tiny-draft-xs")):
    """One row per zoo model of ``names`` and training seed found (seed 0: the shipped ``data/models``, seeds k > 0:
    ``zoo.seed_dir``): ``model, train_seed, seed, steps, seconds, threads, train_loss, heldout_loss`` (the last log
    row's; seed 0's seconds are its training log's, thread count unknown); seeds whose folder is not on this machine
    keep their row of the committed ``SEED_SUMMARY``."""
    import pandas as pd

    rows = []
    for name in names:
        log = json.loads((zoo.model_dir(name) / "training_log.json").read_text())
        last = log[-1]  # the shipped log: a list of rows, no thread count
        rows.append(dict(model=name, train_seed=0, seed=zoo.list_seed(name), steps=last["step"],
                         seconds=last["seconds"], threads=None, train_loss=last["train_loss"],
                         heldout_loss=last["heldout_loss"]))  # fmt: skip
        for folder in sorted(zoo.SEED_MODELS.glob(f"seed*/{name}/training_log.json")):
            entry = json.loads(folder.read_text())
            last = entry["log"][-1]
            keep = ("train_seed", "seed", "steps", "seconds", "threads")
            rows.append(dict(model=name, **{k: entry[k] for k in keep}, train_loss=last["train_loss"],
                             heldout_loss=last["heldout_loss"]))  # fmt: skip
    frame = pd.DataFrame(rows)
    if SEED_SUMMARY.exists():
        old = pd.read_csv(SEED_SUMMARY)
        old = old[old.model.isin(names) & ~old.set_index(["model", "train_seed"]).index.isin(
            frame.set_index(["model", "train_seed"]).index)]  # fmt: skip
        frame = pd.concat([frame, old], ignore_index=True)
    frame["threads"] = frame.threads.astype("Int64")  # empty for seed 0, whose log has no thread count
    return frame.sort_values(["model", "train_seed"]).reset_index(drop=True)


if __name__ == "__main__":
    main()
