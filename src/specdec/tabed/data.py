"""TABED's requests: the tiny suite (``specdec.vlm.scenes``) or the paper's datasets, first and second turns.

``load_suite(profile, n_per_scenario, ...)`` gives the requests ``{"id", "scenario", "turn", "prompt", "images",
...}`` of every (scenario, turn) of the paper's Tables 1 / 10-14. The profile says where they come from
(``Profile.data_source``): generated from seeds (tiny) or the App. J datasets with the App. I prompts (paper). On
both, second turns continue the target's own greedy first answers (``first_turn_answers``, cached in
``answer_store``), as the authors' multi-turn runs do.
"""

from __future__ import annotations

import json
import pathlib

import pandas as pd

from specdec import results, validate
from specdec.engine import autoregressive
from specdec.harness.profile import Profile
from specdec.hub import cached_commit, load_dataset
from specdec.vlm import dialogues, scenes
from specdec.vlm.prompts import conversation_prompt, encode, request_digest
from specdec.zoo import models

GROUP = {
    "describe": "benchmark",
    "docvqa": "benchmark",
    "pope": "benchmark",
    "mmvet": "benchmark",
    "iedit": "benchmark",
    "magicbrush": "benchmark",
    "spot": "benchmark",
    "psv": "ood",
    "vist": "ood",
    "nq": "nlp",
    "gsm8k": "nlp",
}
# Paper datasets (App. J) for the paper profile, first turns: (id, config, split, question field, image field), as
# the authors' code loads them (github.com/furiosa-ai/TABED, tabed/datamodules/). Loading them needs the local
# Hugging Face cache (or ``sources``: local copies in the same format).
PAPER_DATASETS = {
    "describe": ("lmms-lab/llava-bench-in-the-wild", None, "train", "question", "image"),
    "docvqa": ("lmms-lab/LMMs-Eval-Lite", "docvqa_val", "lite", "question", "image"),
    "pope": ("lmms-lab/POPE", None, "test", "question", "image"),
    "mmvet": ("lmms-lab/MMVet", None, "test", "question", "image"),
    "nq": ("google-research-datasets/nq_open", None, "validation", "question", None),
    "gsm8k": ("openai/gsm8k", "main", "test", "question", None),
}
# The multi-image sets are sub-tasks of the LLaVA-Interleave bench; their ``question`` holds the App. I prompt
# with one ``<image>`` per image, the images are the columns ``image_0``, ``image_1``, ...
INTERLEAVE = ("lmms-lab/LLaVA-NeXT-Interleave-Bench", "in_domain", "test")
INTERLEAVE_TASKS = {
    "iedit": "IEdit",
    "magicbrush": "MagicBrush",
    "spot": "Spot-the-Diff",
    "psv": "PororoSV",
    "vist": "VIST",
}
# App. I: the instruction in front of every single-image question; the authors' code words the text-only turns
# (NQ, GSM8K) as below (tabed/datamodules/dataset.py: NQ questions capitalised, the question's own punctuation kept).
APP_I_INSTRUCTION = (
    "For the following question, provide a detailed explanation of your reasoning leading to the answer."
)
TEXT_PROMPTS = {
    "nq": "{question}. Provide a comprehensive and detailed explanation, including the reasoning and background "
    "information.",
    "gsm8k": "{question}. Provide a detailed explanation.\nLet's think step by step.",
}
# Second turns (the authors' run_scripts/second_ALL.sh: multi_turn_task qaorg-qaorg, -captioning, -summary, -story,
# -nq, -gsm8k; the follow-up texts of tabed/datamodules/dataset.py). ``qaorg``: the same set's next request.
FOLLOW_UPS = {
    "qaorg": None,
    "captioning": "Provide a detailed caption for the provided image.",
    "summary": "Summarize the previous answer.",
    "story": "Can you use the previous responses to write a long story for children?",
}
# what each kind of second turn rests on (``dialogues``' kinds): the set's next request and a caption need the images,
# a summary or a story the first answer; NQ / GSM8K after an image conversation are independent text tasks
RESTS_ON = {
    "qaorg": dialogues.IMAGE,
    "captioning": dialogues.IMAGE,
    "summary": dialogues.PREVIOUS,
    "story": dialogues.PREVIOUS,
    "nq": dialogues.TEXT_TASK,
    "gsm8k": dialogues.TEXT_TASK,
}
# the first turns a text-only second turn (NQ, GSM8K) follows: every image set in turn (the authors run qaorg-nq
# and qaorg-gsm8k after each of their nine datasets)
TEXT_AFTER = ("describe", "docvqa", "pope", "mmvet", "iedit", "magicbrush", "spot", "psv", "vist")
ANSWER_TOKENS = 128  # the first answer's length: the authors' max_target_length (tabed/config.py)
ANSWER_KEY = ["target", "revision", "max_new_tokens", "row", "prompt_sha"]
ANSWER_EXACT = ["answer", "output"]  # what a recompute of a cached answer gives back (``study.TABLES``)
TINY_TARGET = "tabed-target"  # the shipped zoo's target: it answers the tiny second turns' first turns


def load_suite(
    profile: str | Profile = "tiny",
    n_per_scenario: int = 8,
    seed: int = 0,
    scenarios=None,
    sources: dict | None = None,
    *,
    turns=(1, 2),
    target=None,
    processor=None,
    answer_tokens: int = ANSWER_TOKENS,
    answers=None,
    n_ood: int | None = None,
    n_second: int | None = None,
) -> list[dict]:
    """Requests ``{"id", "scenario", "turn", "prompt", "images", ...}`` of every ``(scenario, turn)`` of
    ``scenes.SCENARIOS`` (``scenarios``: only these names or ``(name, turn)`` pairs; ``turns``: only these turns),
    in that order: the synthetic suite (tiny) or the paper's requests (paper profile). ``n_per_scenario`` requests
    per ``(scenario, turn)``, ``n_ood`` (default the same) per OOD story set (PSV, VIST: the OOD findings T1c and
    T3 rest on these two cells alone), ``n_second`` (default the same) per second-turn cell (T1b and its split by
    what the answer rests on). The first requests of a cell do not depend on its n.

    Paper profile: first turns are the App. J datasets (``PAPER_DATASETS``; the multi-image sets from the
    LLaVA-Interleave bench, ``INTERLEAVE``) with the App. I prompts (``paper_rows``; ``hub.DatasetNotAvailableError``
    naming the id when one is not cached; ``sources``: ``{scenario: local path or id}`` to load instead). Second
    turns continue a first turn after the *target's own* greedy answer (``second_turn_rows``), so they need
    ``target`` and ``processor`` (the answers are cached in ``answers``, default ``answer_store(profile)``, and
    never recomputed; ``answer_tokens``: their length, the authors' 128). The tiny suite's second turns are
    rebuilt the same way on its scripted dialogues (``own_first_answers``; ``target`` / ``processor`` default to
    the shipped ``TINY_TARGET``); its first turns need no model.
    """
    profile = Profile.load(profile)
    n_per_scenario = validate.integer("n_per_scenario", n_per_scenario, minimum=1, hint="requests per cell")
    for name, n in (("n_ood", n_ood), ("n_second", n_second)):
        if n is not None:
            validate.integer(name, n, minimum=1, hint="requests per cell; None = n_per_scenario")
    wanted = [
        (s, t)
        for s, t in scenes.SCENARIOS
        if t in turns and (scenarios is None or s in scenarios or (s, t) in scenarios)
    ]

    def n_of(scenario: str, turn: int = 1) -> int:
        if n_ood is not None and GROUP[scenario] == "ood":
            return n_ood
        return n_second if n_second is not None and turn == 2 else n_per_scenario

    if profile.data_source == "generated":
        rows = [
            row for s, t in wanted for row in scenes.scenario_suite("test", n_of(s, t), seed=seed, scenarios=[(s, t)])
        ]
        if not any(r["turn"] == 2 for r in rows):
            return rows
        if target is None or processor is None:
            target, processor = models.load(TINY_TARGET, kind="llava", device=profile.device, dtype=profile.dtype)
        store = answers if answers is not None else answer_store(profile)
        return own_first_answers(rows, target, processor, answer_tokens, store)
    unknown = [x for x in scenarios or [] if not isinstance(x, str) and tuple(x) not in scenes.SCENARIOS]
    if unknown:
        raise ValueError(
            f"no requests for {unknown}: the paper's second turns are {[s for s, t in scenes.SCENARIOS if t == 2]} "
            "(Tables 1, 10-14 report none for PSV and VIST)"
        )
    if any(t == 2 for _, t in wanted) and (target is None or processor is None):
        raise ValueError(
            "paper profile: second turns continue the target's own first-turn answers; pass target= and "
            "processor= (zoo.load_vlm_pair) or turns=(1,) for first turns only"
        )
    firsts: dict[str, list[dict]] = {}  # scenario -> its first-turn rows, loaded once

    def first_rows(scenario: str, n: int) -> list[dict]:
        if len(firsts.get(scenario, [])) < n:
            firsts[scenario] = paper_rows(scenario, n, (sources or {}).get(scenario))
        return firsts[scenario]

    rows = []
    for scenario, turn in wanted:
        if turn == 1:
            rows += first_rows(scenario, n_of(scenario))[: n_of(scenario)]
        else:
            store = answers if answers is not None else answer_store(profile)
            revision = models.revision_of(profile.spec, results.model_provenance(model=target)["model_model"])
            rows += second_turn_rows(
                scenario, n_of(scenario, 2), first_rows, target, processor, answer_tokens, store, revision
            )
    return rows


def paper_rows(scenario: str, n: int, source: str | None = None) -> list[dict]:
    """First-turn requests of one paper dataset in the App. I format: ``USER: <image>\\n<instruction> <question>
    ASSISTANT:`` (single image), the bench's own ``<image>``-interleaved question (multi-image), the question
    alone with the authors' wording (text only)."""
    if scenario in INTERLEAVE_TASKS:
        return _interleave_rows(scenario, n, source)
    dataset_id, config, split, question, image = PAPER_DATASETS[scenario]
    data = load_dataset(source or dataset_id, None if source else config, split, n, _revision(dataset_id, source))
    rows = []
    for i, example in enumerate(data):
        images = [] if image is None else [example[image].convert("RGB")]
        text = example[question].strip()
        if images:
            user = f"{scenes.IMAGE_PLACEHOLDER}\n{APP_I_INSTRUCTION} {text}"
        else:
            user = TEXT_PROMPTS[scenario].format(question=text.capitalize() if scenario == "nq" else text)
        rows.append(_paper_row(scenario, i, split, images, user))
    return rows


def _revision(dataset_id: str, source: str | None) -> str | None:
    """The commit ``paper.yaml`` pins for a paper dataset; None for a local ``source`` standing in for it."""
    return None if source else models.revision_of(models.load_profile("paper"), dataset_id)


def _interleave_rows(scenario: str, n: int, source: str | None) -> list[dict]:
    dataset_id, config, split = INTERLEAVE
    data = load_dataset(source or dataset_id, None if source else config, split, revision=_revision(dataset_id, source))
    data = data.filter(lambda task: task == INTERLEAVE_TASKS[scenario], input_columns="sub_task")
    data = data.select(range(min(n, len(data))))
    columns = sorted((c for c in data.column_names if c.startswith("image_")), key=lambda c: int(c.split("_")[1]))
    rows = []
    for i, example in enumerate(data):
        images = [example[c].convert("RGB") for c in columns if example[c] is not None]
        rows.append(_paper_row(scenario, i, split, images, example["question"].strip()))
    return rows


def _paper_row(scenario: str, i: int, split: str, images: list, user: str, turn: int = 1) -> dict:
    return {
        "id": f"{scenario}-t{turn}-paper-{i:05d}",
        "scenario": scenario,
        "turn": turn,
        "split": split,
        "images": images,
        "user": user,
        "prompt": scenes.chat_prompt([(user, None)]),
        "answer": "",
        "caption": None,
    }


def second_turn_rows(
    scenario: str, n: int, first_rows, target, processor, answer_tokens: int, store, revision: str | None = None
) -> list[dict]:
    """``n`` second-turn requests of ``scenario``, as the authors' multi-turn runs build them
    (github.com/furiosa-ai/TABED, run_scripts/second_ALL.sh and tabed/datamodules/dataset.py): the first turn,
    the target's greedy answer to it (``first_turn_answers``), then a second user turn, in the model's chat
    template (``conversation_prompt``).

    - benchmark sets (LLaVA-W ... Spot): request ``i`` of the set, then ``FOLLOW_UPS[i % 4]``: ``qaorg`` (the
      set's next request ``i + 1``, its images added), ``captioning``, ``summary`` or ``story`` (text only);
    - NQ / GSM8K: a first turn of ``TEXT_AFTER[i % 9]`` (request ``i`` of it, every image set in turn), then
      NQ / GSM8K question ``i`` in the authors' wording (``TEXT_PROMPTS``).

    ``first_rows(scenario, n)`` gives a set's first-turn rows (``paper_rows``); ``revision``: the target's pinned
    hub revision (``first_turn_answers``). Row ids
    ``<scenario>-t2-paper-<i>``; ``follow_up`` names the second query's kind, ``rests_on`` what its answer needs
    (``RESTS_ON``)."""
    pairs = []  # (first-turn row, second user text, second images, follow-up kind)
    if GROUP[scenario] == "nlp":
        questions = first_rows(scenario, n)
        for i, question in enumerate(questions[:n]):
            opener = first_rows(TEXT_AFTER[i % len(TEXT_AFTER)], i + 1)
            pairs.append((opener[i % len(opener)], question["user"], [], scenario))
    else:
        base = first_rows(scenario, n + 1)
        kinds = list(FOLLOW_UPS)
        for i, first in enumerate(base[:n]):
            kind = kinds[i % len(kinds)]
            if kind == "qaorg":
                following = base[(i + 1) % len(base)]  # the authors wrap to request 0 after the last one
                pairs.append((first, following["user"], following["images"], kind))
            else:
                pairs.append((first, FOLLOW_UPS[kind], [], kind))
    answered = first_turn_answers(target, processor, [p[0] for p in pairs], answer_tokens, store, revision)
    rows = []
    for i, (first, user, images, kind) in enumerate(pairs):
        turns = [(first["user"], answered[first["id"]]), (user, None)]
        rows.append(
            {
                **_paper_row(scenario, i, first["split"], first["images"] + list(images), user, turn=2),
                "prompt": conversation_prompt(processor, turns),
                "first_turn": first["id"],
                "follow_up": kind,
                "rests_on": RESTS_ON[kind],
            }
        )
    return rows


def own_first_answers(rows, target, processor, answer_tokens: int = ANSWER_TOKENS, store=None) -> list[dict]:
    """The tiny suite's ``rows`` with every second turn rebuilt as ``second_turn_rows`` builds the paper's: its
    first turn (``first_user``, every image of the row), the target's greedy answer to it (``first_turn_answers``,
    cached in ``store``), then the follow-up (``second_user``) unchanged. The scripted first answer stays in
    ``first_answer``, the scripted follow-up answer in ``answer`` (reference text only: decoding needs none);
    ``first_turn`` names the answered first turn (``<row id>/first``). First turns are returned as they are."""
    firsts = {r["id"]: first_turn_of(r) for r in rows if r["turn"] == 2}
    answered = first_turn_answers(target, processor, list(firsts.values()), answer_tokens, store)
    out = []
    for r in rows:
        if r["turn"] == 2:
            first = firsts[r["id"]]["id"]
            prompt = scenes.chat_prompt([(r["first_user"], answered[first]), (r["second_user"], None)])
            r = {**r, "prompt": prompt, "first_turn": first}
        out.append(r)
    return out


def first_turn_of(row: dict) -> dict:
    """The first-turn request of a tiny second-turn ``row``: ``{"id": "<row id>/first", "scenario", "turn": 1,
    "prompt", "images"}`` (the row's images: a second turn adds none)."""
    prompt = scenes.chat_prompt([(row["first_user"], None)])
    return {
        "id": f"{row['id']}/first",
        "scenario": row["scenario"],
        "turn": 1,
        "prompt": prompt,
        "images": row["images"],
    }


def answer_store(profile: str | Profile = "paper"):
    """The cache of first-turn answers (``results/<profile>/tabed_first_answers.csv``, key ``ANSWER_KEY``),
    standing on the committed table (``Profile.store``: under ``make test`` the committed answers are read)."""
    return Profile.load(profile).store("tabed_first_answers", ANSWER_KEY)


def rests_on(rows) -> dict[str, str]:
    """``{row id: what its answer rests on}`` of the second-turn requests among ``rows`` (``dialogues.IMAGE``,
    ``PREVIOUS`` answer, ``TEXT_TASK``; the tiny suite's follow-ups and the paper's ``RESTS_ON``)."""
    return {r["id"]: r["rests_on"] for r in rows if r.get("rests_on")}


def first_turn_answers(
    target, processor, rows, max_new_tokens: int = ANSWER_TOKENS, store=None, revision: str | None = None
) -> dict[str, str]:
    """``{row id: the target's greedy answer}`` to the first-turn requests ``rows`` (text of at most
    ``max_new_tokens`` tokens, special tokens and any literal ``<image>`` dropped, stripped), cached in ``store``
    (default ``answer_store()``) under ``ANSWER_KEY``: the target's id, the commit of the cached snapshot its
    weights come from (``hub.cached_commit`` of ``revision``, the profile's pin; else ``revision``; for a local
    folder the digest of its weights, ``zoo.models.model_weights``, so that a retrained target never reuses an
    answer), ``max_new_tokens``, the row id and ``request_digest``. A cached answer is read back, never
    recomputed."""
    store = store if store is not None else answer_store()
    name = results.model_provenance(model=target)["model_model"]
    revision = cached_commit(name, revision) or revision or models.model_weights(target)
    requests = {r["id"]: r for r in rows}
    keys = {
        rid: dict(target=name, revision=revision, max_new_tokens=max_new_tokens, row=rid, prompt_sha=request_digest(r))
        for rid, r in requests.items()
    }
    tokenizer = processor.tokenizer

    def compute(row, **_):
        ids, inputs = encode(processor, requests[row]["prompt"], requests[row]["images"])
        res = autoregressive(
            target, ids, max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id, target_inputs=inputs
        )
        answer = tokenizer.decode(res.output_ids, skip_special_tokens=True)
        answer = answer.replace(scenes.IMAGE_PLACEHOLDER, "").strip()  # the text "<image>" would claim an image
        return dict(scenario=requests[row]["scenario"], answer=answer, output=json.dumps(res.output_ids))

    store.provenance.update(results.model_provenance(target=target))
    store.run(list(keys.values()), compute, desc="first-turn answers")
    return {rid: store.get(**key)["answer"] for rid, key in keys.items()}  # own rows, else the committed base's


def recompute(keys: list[dict]) -> pd.DataFrame:
    """Decode the cached tiny first answers of ``keys`` (rows of ``ANSWER_KEY`` columns, e.g. a sample of the
    committed ``tabed_first_answers`` table) again, into a store of their own, and return the fresh rows in the order
    of ``keys``. ``tests/test_committed_results.py`` runs it at another CPU vector width and demands the committed
    answers back; a key whose request the suite no longer builds (another ``prompt_sha``) is an error."""
    import tempfile

    tiny = Profile.load("tiny")
    target, processor = models.load(TINY_TARGET, kind="llava", device=tiny.device, dtype=tiny.dtype)
    firsts = []
    for key in keys:
        second, _ = str(key["row"]).split("/")
        scenario, turn, split, seed, i = second.split("-")
        row = scenes.scenario_suite(split, int(i) + 1, int(seed), scenarios=[(scenario, int(turn.lstrip("t")))])[-1]
        first = first_turn_of(row)
        if request_digest(first) != key["prompt_sha"] or first["id"] != key["row"]:
            raise ValueError(f"the suite no longer builds the first turn of {key}")
        firsts.append(first)
    with tempfile.TemporaryDirectory() as folder:
        store = results.ResultStore("tiny", "tabed_first_answers", ANSWER_KEY, root=pathlib.Path(folder))
        first_turn_answers(target, processor, firsts, int(keys[0]["max_new_tokens"]), store)
        fresh = {r["row"]: r for r in store.rows()}
    return pd.DataFrame([fresh[str(k["row"])] for k in keys])


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ANSWER_KEY",
    "ANSWER_TOKENS",
    "APP_I_INSTRUCTION",
    "FOLLOW_UPS",
    "GROUP",
    "INTERLEAVE",
    "INTERLEAVE_TASKS",
    "PAPER_DATASETS",
    "RESTS_ON",
    "TEXT_AFTER",
    "TEXT_PROMPTS",
    "TINY_TARGET",
    "load_suite",
    "own_first_answers",
    "recompute",
    "second_turn_rows",
]
