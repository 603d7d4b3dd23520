"""The real profile's foundation draft: self-distilled on SmolLM2-135M-Instruct's own greedy answers.

``python -m specdec.zoo.real_draft data`` asks the target (``specdec.realmodel``) for its greedy answers to chat
prompts made from the embedded corpus (``specdec.zoo.corpus``: stdlib prose, stdlib code, Django's translated
strings; train prompts from the corpus's train split, held-out prompts from its held-out split), batched (HF
``generate``, left padding), and appends them to ``DISTILL`` (resumable: prompts already answered are skipped).
``python -m specdec.zoo.real_draft train --out data/models-real`` trains the draft with the zoos' one loop
(``training.train``, ``training.answer_loss`` on the answer tokens) and writes it with ``realmodel.save_draft``
(without ``--out``: into ``.cache/trained``, never the committed draft). Sizes and budgets: ``RECIPE``, written in the
data card before the runs.
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
# decided before the runs (data card, "Real profile"): 2 layers of the target's width initialised from its first two
# layers, embedding and tied head the target's (frozen, not stored); up to 768 train + 32 held-out prompts (a
# wall-clock cap on generation), 128 answer tokens each; AdamW lr 1e-3, batch 8 sequences, 80 steps (about 2.5
# passes over ~250 prompts: what a shared 2-core CPU trains in ~15 min), the output head at answer positions only
RECIPE: dict[str, Any] = dict(
    n_layers=2,
    init_layers=[0, 1],
    n_train=768,
    n_heldout=32,
    max_new_tokens=128,
    gen_batch=32,
    lr=1e-3,
    batch=8,
    steps=80,
    seed=0,
    max_prompt_tokens=192,
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


def make_data(path: pathlib.Path = DISTILL, recipe: dict = RECIPE, limit_s: float | None = None) -> None:
    """Append the target's greedy answers to the held-out then the train prompts not yet in ``path`` (batches of
    ``gen_batch``, prompts of similar length together); stop after ``limit_s`` seconds if given."""
    target, tokenizer = realmodel.load_source(load_models(), TARGET)
    done = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for split, n in (("heldout", recipe["n_heldout"]), ("train", recipe["n_train"])):
        todo = [r for r in prompt_texts(split, n) if r["id"] not in done]
        for r in todo:
            r["prompt_ids"] = chat_ids(tokenizer, r["text"], recipe["max_prompt_tokens"])
        todo.sort(key=lambda r: len(r["prompt_ids"]))
        for i in range(0, len(todo), recipe["gen_batch"]):
            if limit_s is not None and time.perf_counter() - start > limit_s:
                return
            batch = todo[i : i + recipe["gen_batch"]]
            answers = greedy_batch(target, tokenizer, [r["prompt_ids"] for r in batch], recipe["max_new_tokens"])
            with path.open("a") as fh:
                for r, a in zip(batch, answers):
                    fh.write(
                        json.dumps(
                            dict(id=r["id"], split=split, kind=r["kind"], prompt_ids=r["prompt_ids"], answer_ids=a)
                        )
                        + "\n"
                    )
            print(f"{split} {i + len(batch)}/{len(todo)} {time.perf_counter() - start:.0f} s", flush=True)


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


@torch.no_grad()
def heldout_metrics(model, rows: list[dict], pad: int) -> dict:
    """Held-out answer loss (nats per answer token) and greedy top-1 agreement with the target's answer tokens (the
    output head at the answer positions only)."""
    model.eval()
    loss, hits, n = 0.0, 0, 0
    for i in range(0, len(rows), 8):
        batch = answer_batch(rows[i : i + 8], pad)
        labels = batch["labels"][:, 1:]
        answer = labels != -100
        hidden = model.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        logits = model.lm_head(hidden[:, :-1][answer]).float()
        loss += float(torch.nn.functional.cross_entropy(logits, labels[answer], reduction="sum"))
        hits += int((logits.argmax(-1) == labels[answer]).sum())
        n += int(answer.sum())
    return dict(heldout_loss=round(loss / n, 4), heldout_top1=round(hits / n, 4))


def draft_loss(model, batch: dict) -> torch.Tensor:
    """``training.answer_loss`` with the output head at the answer positions only (49,152 logits per position)."""
    return training.answer_loss(model, batch, answer_positions_only=True)


def train_draft(recipe: dict = RECIPE, out: pathlib.Path | None = None) -> dict:
    """Train the draft of ``recipe`` on ``DISTILL`` with ``training.train``; save it; return its summary."""
    target, tokenizer = realmodel.load_source(load_models(), TARGET)
    data = read_data()
    heldout_ids = {r["id"] for r in prompt_texts("heldout", recipe["n_heldout"])}
    data["heldout"] = [r for r in data["heldout"] if r["id"] in heldout_ids]
    pad = tokenizer.pad_token_id
    torch.manual_seed(recipe["seed"])
    model = realmodel.draft_from_target(target, recipe["n_layers"], recipe["init_layers"])
    train_rows = data["train"]

    def batches(generator):
        picks = torch.randint(0, len(train_rows), (recipe["batch"],), generator=generator).tolist()
        return answer_batch([train_rows[i] for i in picks], pad)

    start = heldout_metrics(model, data["heldout"], pad)
    print(json.dumps(dict(step=0, **start)), flush=True)
    log = training.train(
        model,
        batches,
        draft_loss,
        steps=recipe["steps"],
        lr=recipe["lr"],
        seed=recipe["seed"] + 1,
        log_every=max(1, recipe["steps"] // 8),
        eval_every=2,
        evaluate=lambda m: heldout_metrics(m, data["heldout"], pad),
        name=DRAFT,
        progress=False,
    )
    n_answer = sum(len(r["answer_ids"]) for r in train_rows)
    target_revision = realmodel.package_revision(load_models()[TARGET])
    summary = dict(
        recipe=recipe,
        target=target_revision,
        threads=torch.get_num_threads(),
        train_prompts=len(train_rows),
        train_answer_tokens=n_answer,
        heldout_prompts=len(data["heldout"]),
        seconds=round(log.seconds, 1),
        curve=[dict(step=0, **start), *log.rows],
    )
    realmodel.save_draft(model, out or realmodel.REAL_MODELS / DRAFT, summary)
    return summary


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["data", "train"])
    parser.add_argument("--threads", type=cli.POS, default=1)
    parser.add_argument(
        "--limit-s",
        type=cli.POS_NUMBER,
        default=None,
        help="data: stop starting batches after this time",
    )
    parser.add_argument("--out", type=pathlib.Path, help=f"train: the folder of {DRAFT}/ (data/models-real: say so)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.command == "data":
        make_data(limit_s=args.limit_s)
    else:  # never the committed draft unless named
        summary = train_draft(out=cli.output_dir(args.out) / DRAFT)
        print(json.dumps({k: v for k, v in summary.items() if k != "curve"}))


if __name__ == "__main__":
    main()
