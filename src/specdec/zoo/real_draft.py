"""The real profile's foundation draft: self-distilled on SmolLM2-135M-Instruct's own greedy answers.

``python -m specdec.zoo.real_draft data`` asks the target (``specdec.realmodel``) for its greedy answers to chat
prompts made from the embedded corpus (``specdec.zoo.corpus``: stdlib prose, stdlib code, Django's translated
strings; train prompts from the corpus's train split, held-out prompts from its held-out split), batched (HF
``generate``, left padding), and appends them to ``DISTILL`` (resumable: prompts already answered are skipped).
``python -m specdec.zoo.real_draft train --out data/models-real`` ranks the train answers' tokens by frequency, keeps
the K most frequent (the smallest multiple of ``vocab_step`` whose token coverage reaches ``coverage``:
``vocab_coverage``) as the draft's output vocabulary (``realmodel.ScatterHead``), trains the draft with the zoos' one
loop (``training.train``) on the answer tokens (cross-entropy over the K; tokens outside them are left out of the
loss) and writes it with ``realmodel.save_draft`` (without ``--out``: into ``.cache/trained``, never the committed
draft). Sizes and budgets: ``RECIPE``, written in the data card before the runs; the data is a token budget
(``n_train`` prompts of ``max_new_tokens`` each, in a fixed order and fixed batches), never a wall-clock cap, so
``make models-real`` rebuilds the committed draft from the same data with the same seed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import time
from typing import Any

import torch

from specdec import realmodel, zoo
from specdec.zoo import cli, training
from specdec.zoo import corpus as corpus_lib

DISTILL = zoo.ROOT / ".cache" / "specdec" / "real-distill.jsonl"  # rebuilt by `data` (not committed)
DRAFT = "real-draft-l2"
TARGET = "smollm2-135m-instruct"
# decided before the runs (data card, "Real profile"): 2 layers of the target's width initialised from its layers
# `init_layers`, embedding the target's (frozen, not stored); the output head a ScatterHead over the K most frequent
# train answer tokens, K the smallest multiple of 1024 covering >= 97 % of them (rows: the target's frozen embedding
# rows, not stored); data: a token budget of n_train x max_new_tokens answer tokens (n_train prompts, batches of
# gen_batch, in a fixed order), plus 32 held-out prompts; AdamW lr 1e-3, batch 8 sequences, `steps` steps (what a
# shared 2-core CPU trains in ~15 min on one thread), the loss at answer positions only
RECIPE: dict[str, Any] = dict(
    n_layers=2,
    init_layers=[0, 1],
    n_train=384,
    n_heldout=32,
    max_new_tokens=128,
    gen_batch=32,
    lr=1e-3,
    batch=8,
    steps=200,
    seed=0,
    max_prompt_tokens=192,
    vocab_size=49152,
    vocab_step=1024,
    coverage=0.97,
)
TEMPLATES = {
    "prose": [
        "Explain this in simple words:\n\n{}",
        "Summarize the following text:\n\n{}",
        "What is this about?\n\n{}",
    ],
    "code": ["Explain what this Python code does:\n\n```python\n{}\n```", "Review this Python code:\n\n{}"],
    "translation": ["Translate into English: {}", "What does this phrase mean? {}"],
}


def _pick(text: str, options: list) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)


def prompt_texts(split: str, n: int) -> list[dict]:
    """``n`` user prompts ``{id, kind, text}`` from the corpus split ``split`` (``train`` / ``heldout``): paragraphs of
    prose, chunks of 12 code lines, foreign strings of the translation pages; kinds 60 / 25 / 15 %, in a fixed order
    (sorted by a hash of the text, so the list does not depend on the order documents are found)."""
    pieces: dict[str, list[str]] = {"prose": [], "code": [], "translation": []}
    for doc in corpus_lib.build_corpus():
        if doc["split"] != split:
            continue
        if doc["kind"] == "prose":
            pieces["prose"] += [p.strip()[:600] for p in doc["text"].split("\n\n") if len(p.strip()) >= 120]
        elif doc["kind"] == "code":
            lines = doc["text"].splitlines()
            pieces["code"] += ["\n".join(lines[i : i + 12]) for i in range(0, len(lines) - 6, 12)]
        else:
            pieces["translation"] += [
                ln.split(": ", 1)[1] for ln in doc["text"].splitlines() if ": " in ln and not ln.startswith("English")
            ]
    rows = []
    for kind, share in (("prose", 0.60), ("code", 0.25), ("translation", 0.15)):
        texts = sorted(set(t for t in pieces[kind] if t.strip()), key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        for text in texts[: round(n * share)]:
            template = TEMPLATES[kind][_pick(text, TEMPLATES[kind])]
            rows.append(
                dict(
                    id=f"{split}-{kind}-{hashlib.sha256(text.encode()).hexdigest()[:10]}",
                    kind=kind,
                    text=template.format(text),
                )
            )
    return rows


def chat_ids(tokenizer, text: str, max_tokens: int) -> list[int]:
    """The chat-template token ids of one user turn (the generation prompt added), the user text cut to fit."""

    def encode(text):
        ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    ids = encode(text)
    while len(ids) > max_tokens:
        text = text[: int(len(text) * 0.8)]
        ids = encode(text)
    return ids


@torch.no_grad()
def greedy_batch(model, tokenizer, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """The target's greedy answers to ``prompts`` (token ids), one left-padded HF ``generate`` call, each answer cut
    after its first end-of-turn token."""
    width = max(len(p) for p in prompts)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    out = model.generate(
        input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad
    )
    eos = tokenizer.eos_token_id
    answers = []
    for row in out[:, width:].tolist():
        answers.append(row[: row.index(eos) + 1] if eos in row else row)
    return answers


def make_data(path: pathlib.Path = DISTILL, recipe: dict = RECIPE) -> None:
    """Append the target's greedy answers to the held-out then the train prompts not yet in ``path`` (batches of
    ``gen_batch``, prompts of similar length together: the batches of a fresh run, whatever was answered before)."""
    target, tokenizer = realmodel.load_source(load_models(), TARGET)
    done = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for split, n in (("heldout", recipe["n_heldout"]), ("train", recipe["n_train"])):
        rows = prompt_texts(split, n)
        for r in rows:
            r["prompt_ids"] = chat_ids(tokenizer, r["text"], recipe["max_prompt_tokens"])
        rows.sort(key=lambda r: (len(r["prompt_ids"]), r["id"]))
        todo = [rows[i : i + recipe["gen_batch"]] for i in range(0, len(rows), recipe["gen_batch"])]
        todo = [b for b in todo if any(r["id"] not in done for r in b)]  # a batch is redone whole: same padding
        for i, batch in enumerate(todo):
            answers = greedy_batch(target, tokenizer, [r["prompt_ids"] for r in batch], recipe["max_new_tokens"])
            with path.open("a") as fh:
                for r, a in zip(batch, answers):
                    if r["id"] in done:
                        continue
                    fh.write(
                        json.dumps(
                            dict(id=r["id"], split=split, kind=r["kind"], prompt_ids=r["prompt_ids"], answer_ids=a)
                        )
                        + "\n"
                    )
            print(f"{split} batch {i + 1}/{len(todo)} {time.perf_counter() - start:.0f} s", flush=True)


def load_models() -> dict:
    from specdec.zoo import models

    return models.load_profile("real")["models"]


def read_data(path: pathlib.Path | None = None) -> dict[str, list[dict]]:
    rows = [json.loads(line) for line in (path or DISTILL).read_text().splitlines()]
    return {s: [r for r in rows if r["split"] == s] for s in ("train", "heldout")}


def answer_batch(rows: list[dict], pad: int) -> dict:
    """A right-padded ``training.answer_loss`` batch: prompt + answer ids, labels -100 outside the answer."""
    seqs = [r["prompt_ids"] + r["answer_ids"] for r in rows]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(rows), width), pad)
    labels = torch.full((len(rows), width), -100)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (r, s) in enumerate(zip(rows, seqs)):
        ids[i, : len(s)], mask[i, : len(s)] = torch.tensor(s), 1
        labels[i, len(r["prompt_ids"]) : len(s)] = torch.tensor(r["answer_ids"])
    return dict(input_ids=ids, attention_mask=mask, labels=labels)


def vocab_coverage(rows: list[dict], recipe: dict = RECIPE) -> dict:
    """The frequency-ranked draft vocabulary of answer ``rows``: ``token_ids`` (the K most frequent answer tokens,
    ties by id, sorted), K (the smallest multiple of ``vocab_step`` covering at least
    ``coverage`` of the answer tokens) and the coverage curve ``{K: share of answer tokens}`` at every step."""
    counts = torch.zeros(recipe["vocab_size"], dtype=torch.long)
    for r in rows:
        counts += torch.bincount(torch.tensor(r["answer_ids"]), minlength=recipe["vocab_size"])
    order = sorted(range(len(counts)), key=lambda t: (-int(counts[t]), t))
    cum = counts[order].cumsum(0).double() / counts.sum()
    curve = {k: round(float(cum[k - 1]), 4) for k in range(recipe["vocab_step"], len(order) + 1, recipe["vocab_step"])}
    k = min(k for k, share in curve.items() if share >= recipe["coverage"])
    return dict(k=k, token_ids=sorted(order[:k]), curve=curve, answer_tokens=int(counts.sum()))


def _answer_hidden(model, rows: list[dict], pad: int):
    """The draft's last hidden states at the answer positions of ``rows`` (``[N, d]``) and their labels (``[N]``)."""
    batch = answer_batch(rows, pad)
    labels = batch["labels"][:, 1:]
    answer = labels != -100
    hidden = model.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    return hidden[:, :-1][answer], labels[answer]


@torch.no_grad()
def heldout_metrics(model, rows: list[dict], pad: int) -> dict:
    """Held-out answer loss (nats per answer token, over the draft's K token ids: the tokens inside them) and greedy
    top-1 agreement with the target's answer tokens (over all of them: a token outside the K is a miss)."""
    model.eval()
    index = model.lm_head.label_index()
    loss, hits, n, n_in = 0.0, 0, 0, 0
    for i in range(0, len(rows), 8):
        hidden, labels = _answer_hidden(model, rows[i : i + 8], pad)
        logits = model.lm_head.small(hidden).float()
        inside = index[labels]
        loss += float(torch.nn.functional.cross_entropy(logits, inside, ignore_index=-100, reduction="sum"))
        hits += int((model.lm_head.token_ids[logits.argmax(-1)] == labels).sum())
        n, n_in = n + len(labels), n_in + int((inside != -100).sum())
    return dict(heldout_loss=round(loss / n_in, 4), heldout_top1=round(hits / n, 4))


def draft_loss(model, rows: list[dict], pad: int, index: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over the draft's K token ids at the answer positions of ``rows`` (tokens outside the K left out:
    the draft can never propose them; ``index``: ``ScatterHead.label_index``)."""
    hidden, labels = _answer_hidden(model, rows, pad)
    logits = model.lm_head.small(hidden).float()
    return torch.nn.functional.cross_entropy(logits, index[labels], ignore_index=-100)


def train_draft(recipe: dict = RECIPE, out: pathlib.Path | None = None) -> dict:
    """Train the draft of ``recipe`` on ``DISTILL`` with ``training.train``; save it; return its summary."""
    target, tokenizer = realmodel.load_source(load_models(), TARGET)
    data = read_data()
    wanted = {s: {r["id"] for r in prompt_texts(s, recipe[f"n_{s}"])} for s in ("train", "heldout")}
    data = {s: [r for r in data[s] if r["id"] in wanted[s]] for s in ("train", "heldout")}
    missing = {s: len(wanted[s]) - len(data[s]) for s in wanted if len(data[s]) < len(wanted[s])}
    if missing:
        raise ValueError(f"{DISTILL} lacks answers ({missing}): python -m specdec.zoo.real_draft data")
    pad = tokenizer.pad_token_id
    vocab = vocab_coverage(data["train"], recipe)
    heldout_vocab = vocab_coverage(data["heldout"], dict(recipe, coverage=0.0))
    in_k = set(vocab["token_ids"])
    heldout_cover = sum(t in in_k for r in data["heldout"] for t in r["answer_ids"]) / heldout_vocab["answer_tokens"]
    torch.manual_seed(recipe["seed"])
    model = realmodel.draft_from_target(target, recipe["n_layers"], recipe["init_layers"], vocab["token_ids"])
    index = model.lm_head.label_index()
    train_rows = data["train"]

    def batches(generator):
        picks = torch.randint(0, len(train_rows), (recipe["batch"],), generator=generator).tolist()
        return [train_rows[i] for i in picks]

    start = heldout_metrics(model, data["heldout"], pad)
    print(json.dumps(dict(step=0, k=vocab["k"], **start)), flush=True)
    log = training.train(
        model,
        batches,
        lambda m, rows: draft_loss(m, rows, pad, index),
        steps=recipe["steps"],
        lr=recipe["lr"],
        seed=recipe["seed"] + 1,
        log_every=max(1, recipe["steps"] // 12),
        eval_every=1,
        evaluate=lambda m: heldout_metrics(m, data["heldout"], pad),
        name=DRAFT,
        progress=False,
    )
    summary = dict(
        recipe=recipe,
        target=realmodel.package_revision(load_models()[TARGET]),
        threads=torch.get_num_threads(),
        train_prompts=len(train_rows),
        train_answer_tokens=vocab["answer_tokens"],
        heldout_prompts=len(data["heldout"]),
        heldout_answer_tokens=heldout_vocab["answer_tokens"],
        draft_vocab=vocab["k"],
        coverage_curve=vocab["curve"],
        heldout_coverage=round(heldout_cover, 4),
        seconds=round(log.seconds, 1),
        curve=[dict(step=0, **start), *log.rows],
    )
    realmodel.save_draft(model, out or realmodel.REAL_MODELS / DRAFT, summary)
    return summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["data", "train"])
    parser.add_argument("--threads", type=cli.POS, default=1)
    parser.add_argument("--out", type=pathlib.Path, help=f"train: the folder of {DRAFT}/ (data/models-real: say so)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.command == "data":
        make_data()
    else:  # never the committed draft unless named
        summary = train_draft(out=cli.output_dir(args.out) / DRAFT)
        print(json.dumps({k: v for k, v in summary.items() if k != "curve"}))


if __name__ == "__main__":
    main()
