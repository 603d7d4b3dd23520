"""TABED benchmarks: drafting methods x scenarios x turns, tables beside the paper's, and the findings T1-T5.

``run(store, ...)`` decodes every suite row with every method (greedy, γ = 5, as in the paper) on one
LLaVA target / draft pair and stores one tidy row per (method, settings, request): block efficiency τ
(new tokens per target call, bonus token included), acceptance rate, whether the output equals the
target's own greedy output (it must: ``lossless``) and the per-block weights of adaptive ensembles.
``block_table`` averages τ per scenario and turn in the layout of the paper's Tables 1 / 10-14;
``paper_table`` reads the paper's numbers (``tabed_block_efficiency.csv``); ``findings`` decides T1-T5
(``specdec.verdict.Verdict``: estimate, 95% bootstrap interval over requests, n, status).
"""

from __future__ import annotations

import functools
import json
import pathlib
import re

import pandas as pd
import torch

from specdec import paper, results, validate
from specdec.engine import autoregressive, generate
from specdec.hub import cached_commit, load_dataset
from specdec.tabed import algorithm as tabed
from specdec.tabed.captioners import draft_captioner, hf_captioner
from specdec.vlm import dialogues, scenes
from specdec.vlm.llava import draft_pixels
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
TABLE1 = ["M", "T", "MT", "MT*"]
ALL_METHODS = ["M", "T", "C", "P", "MT", "MT*", "MTCP", "MTCP*"]
# the captioner of caption drafting C (the paper: Florence-2, a separate small model): the tiny zoo's own
CAPTIONER = "tabed-captioner"
# every parameter that changes a stored run (walltime depends on the device, the rest does not)
# ``model_weights`` (``run_weights``: target, draft, captioner) so that a retrained model never reuses old rows; the
# column ``weights`` of a row is something else, the MT* ensemble weights it chose per block. ``request``
# (``request_digest``: prompt text and image pixels) so that a regenerated suite, a new prompt template or another
# dataset revision never reuses the rows of a row id that now names another request.
KEY = [
    "method", "gamma", "window", "criterion", "captioner", "model_weights", "max_new_tokens", "device", "row",
    "request",
]  # fmt: skip
PAPER_SETTING = dict(draft_type="LLaVA-1.5", draft_size="68M", target="LLaVA-1.5 7B")
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


# ------------------------------------------------------------------------------------------------- models, data
def load_vlm_pair(profile: str = "tiny", pair: str | None = None, device=None, dtype=None):
    """``(target, draft, processor)`` of a LLaVA pair: tiny ``tabed-target`` / ``tabed-draft``; paper: the
    ``pair`` of ``paper.yaml`` (default ``llava-7b``; ``llava-13b``, ``llava-7b-160m``; the LLaVA-NeXT targets of
    Tables 11-14 ``llava-next-*``). A pair marked ``as_authors`` loads its target as the TABED authors did:
    ``LlavaForConditionalGeneration`` over the checkpoint, fed by the *draft's* processor (one base view per image,
    the draft's image tokens), and returns that processor. Device and dtype default to the profile's."""
    spec = models.load_profile(profile)
    if profile == "tiny" and pair is None:
        target_name, draft_name = "tabed-target", "tabed-draft"
    else:
        pairs = spec.get("pairs", {})
        pair = pair or "llava-7b"
        if pair not in pairs or pairs[pair].get("kind") != "llava":
            llava = sorted(k for k, v in pairs.items() if v.get("kind") == "llava")
            raise ValueError(f"profile {profile!r} has no LLaVA pair {pair!r}; LLaVA pairs: {llava}")
        target_name, draft_name = pairs[pair]["target"], pairs[pair]["draft"]
    device, dtype = models.profile_device(spec, device, dtype)
    revision = lambda name: models.revision_of(spec, name)  # noqa: E731
    as_authors = profile != "tiny" and bool(spec["pairs"][pair].get("as_authors"))
    target, processor = models.load(
        target_name,
        kind="llava",
        device=device,
        dtype=dtype,
        revision=revision(target_name),
        with_tokenizer=not as_authors,
        llava_class="LlavaForConditionalGeneration" if as_authors else None,
    )
    draft, draft_processor = models.load(
        draft_name, kind="llava", device=device, dtype=dtype, with_tokenizer=as_authors, revision=revision(draft_name)
    )
    return target, draft, draft_processor if as_authors else processor


def load_suite(
    profile: str = "tiny",
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
    never recomputed; ``answer_tokens``: their length, the authors' 128). The tiny suite scripts its dialogues
    and ignores ``target`` / ``processor``.
    """
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

    if profile == "tiny":
        return [
            row for s, t in wanted for row in scenes.scenario_suite("test", n_of(s, t), seed=seed, scenarios=[(s, t)])
        ]
    unknown = [x for x in scenarios or [] if not isinstance(x, str) and tuple(x) not in scenes.SCENARIOS]
    if unknown:
        raise ValueError(
            f"no requests for {unknown}: the paper's second turns are {[s for s, t in scenes.SCENARIOS if t == 2]} "
            "(Tables 1, 10-14 report none for PSV and VIST)"
        )
    if any(t == 2 for _, t in wanted) and (target is None or processor is None):
        raise ValueError(
            "paper profile: second turns continue the target's own first-turn answers; pass target= and "
            "processor= (tb.load_vlm_pair) or turns=(1,) for first turns only"
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
            revision = models.revision_of(
                models.load_profile(profile), results.model_provenance(model=target)["model_model"]
            )
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


def answer_store(profile: str = "paper"):
    """The cache of first-turn answers (``results/<profile>/tabed_first_answers.csv``, key ``ANSWER_KEY``)."""
    return results.ResultStore(profile, "tabed_first_answers", ANSWER_KEY)


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
    weights come from (``hub.cached_commit`` of ``revision``, the profile's pin; else ``revision``; ``-`` for a
    local folder), ``max_new_tokens``, the row id and ``request_digest``. A cached answer is read back, never
    recomputed."""
    store = store if store is not None else answer_store()
    name = results.model_provenance(model=target)["model_model"]
    revision = cached_commit(name, revision) or revision or "-"
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
    stored = {store.key_of(row): row["answer"] for row in store.rows(list(keys.values()))}
    return {rid: stored[store.key_of(key)] for rid, key in keys.items()}


def captioner_model(kind: str, draft):
    """The LLaVA that captions for ``kind``: the draft itself (``"draft"``) or the zoo name / folder ``kind``
    (e.g. ``CAPTIONER``), loaded on the draft's device; ``ValueError`` naming the choices otherwise."""
    if kind == "draft":
        return draft
    try:
        model, _ = models.load(kind, kind="llava", device=draft.device, with_tokenizer=False)
    except Exception as err:  # noqa: BLE001 - one message for every way a name can fail to be a LLaVA
        raise ValueError(
            f"captioner must be 'draft', 'oracle', 'blip' or a LLaVA zoo name / folder (e.g. {CAPTIONER!r}); "
            f"{kind!r} failed to load: {type(err).__name__}: {err}"
        ) from err
    return model


@functools.lru_cache(maxsize=4)  # one per (kind, draft, processor): its captions are memoised across runs
def make_captioner(kind: str, draft, processor):
    """A captioner ``images -> captions`` for caption drafting C: ``"tabed-captioner"`` (``CAPTIONER``, the tiny
    zoo's captioning LLaVA; any LLaVA zoo name or folder works the same way), ``"draft"`` (the draft LLaVA itself
    describes each image), ``"oracle"`` (the generator's ground-truth captions, tiny only) or ``"blip"``
    (``captioners.hf_captioner``: BLIP from the local Hugging Face cache, paper profile). LLaVA captioners are greedy,
    keep the first sentence and are memoised per image (every caption method of a request asks for the same
    captions)."""
    if kind == "oracle":
        return scenes.render_caption
    if kind == "blip":
        return hf_captioner(device=str(draft.device))
    model = captioner_model(kind, draft)

    def to_pixels(images):  # the draft's view of each image (a LLaVA-NeXT processor's base tile)
        return draft_pixels(processor.image_processor(images, return_tensors="pt")["pixel_values"])

    caption_one = draft_captioner(model, processor.tokenizer, to_pixels)

    captions: dict[str, str] = {}  # image_key -> caption

    def caption(images) -> list[str]:
        if torch.is_tensor(images):
            return caption_one(images)
        for image in images:
            key = scenes.image_key(image)
            if key not in captions:
                captions[key] = caption_one(to_pixels([image]))[0]
        return [captions[scenes.image_key(image)] for image in images]

    return caption


# ------------------------------------------------------------------------------------------------- running
def run(
    store,
    target,
    draft,
    processor,
    rows,
    methods,
    *,
    gamma: int = 5,
    max_new_tokens: int = 128,
    window: int | None = None,
    criterion: str = "kl",
    captioner: str = CAPTIONER,
    desc: str = "",
) -> None:
    """Decode every request of ``rows`` with every method; one stored row per (method, settings, request).

    The target's plain greedy output of each request is computed once (stored as method ``AR``) and every
    speculative output is compared with it (column ``lossless``). ``window`` (h, ``None`` = ALL) and
    ``criterion`` configure the adaptive ensembles (``criterion`` of MTCP* is its divergence, "kl" or "tvd");
    ``captioner``: see ``make_captioner``.
    """
    if target.device.type == "cpu":
        torch.set_num_threads(1)
    store.provenance.update(results.model_provenance(target=target, draft=draft))
    tokenizer = processor.tokenizer
    eos = tokenizer.eos_token_id
    requests = {r["id"]: r for r in rows}
    w_key = "ALL" if window is None else window
    setting = dict(max_new_tokens=max_new_tokens, device=target.device.type)
    digests = {m: run_weights(target, draft, m, captioner) for m in ["AR", *methods]}
    request_sha = {rid: request_digest(r) for rid, r in requests.items()}
    keys = [
        run_key(m, gamma, w_key, criterion, captioner, {**setting, "model_weights": digests[m]}, rid, request_sha[rid])
        for rid in requests
        for m in methods
    ]
    plain = dict(method="AR", gamma=0, window="-", criterion="-", captioner="-", model_weights=digests["AR"], **setting)
    ar = {rid: {**plain, "row": rid, "request": request_sha[rid]} for rid in requests}
    store.want([*keys, *ar.values()])  # the rows of this run, for ``store.frame(requested=True)``
    if all(store.done(**k) for k in keys):  # e.g. every key in the committed base layer: load nothing
        return
    encoded = {rid: encode(processor, r["prompt"], r["images"]) for rid, r in requests.items()}
    caption = make_captioner(captioner, draft, processor) if any("C" in tabed.ENSEMBLES[m] for m in methods) else None

    def reference(rid):
        key = ar[rid]
        if not store.done(**key):
            ids, inputs = encoded[rid]
            res = autoregressive(target, ids, max_new_tokens=max_new_tokens, eos_token_id=eos, target_inputs=inputs)
            store.append([{**key, **_row(requests[rid], res, res.output_ids), "weights": ""}])
        return json.loads(store.get(**key)["output"])

    def compute(method, gamma, window, criterion, captioner, row, **_):
        ids, inputs = encoded[row]
        request = requests[row]
        options = {}
        if method.endswith("*"):
            options["window"] = None if window == "ALL" else int(window)
        if method == "MTCP*":
            options["divergence"] = criterion
        elif method == "MT*":
            options["criterion"] = criterion
        drafter = tabed.make_drafter(draft, method, tokenizer, captioner=caption, **options)
        draft_inputs = {**inputs, "images": request["images"]} if inputs else {}
        res = generate(
            target,
            ids,
            drafter,
            gamma=gamma,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            target_inputs=inputs,
            draft_inputs=draft_inputs,
        )
        out = _row(request, res, reference(row))
        out["weights"] = json.dumps([[round(w, 3) for w in ws] for ws in getattr(drafter, "weight_log", [])])
        out["active"] = "".join(drafter.make_rows.active)
        return out

    store.run(keys, compute, desc=desc or "tabed")


def run_weights(target, draft, method: str, captioner: str = CAPTIONER) -> str:
    """The ``model_weights`` key of a run: ``zoo.models.weights_digest`` of the target's weights, for a speculative
    method also the draft's, and for a caption method (C) the captioner's when it is a model of its own (a zoo
    name or folder; ``"draft"``: the draft; ``"oracle"``: none; ``"blip"``: named)."""
    if method == "AR":
        return models.model_weights(target)
    parts = [models.model_weights(target, draft)]
    if "C" in tabed.ENSEMBLES[method] and captioner not in ("draft", "oracle"):
        parts.append(captioner if captioner == "blip" else models.weights_identity(captioner))
    return models.weights_digest(*parts) if len(parts) > 1 else parts[0]


def run_key(
    method: str, gamma: int, window, criterion: str, captioner: str, setting: dict, row: str, request: str
) -> dict:
    """The stored key of one run: settings a method does not use are ``"-"`` (so they never split its rows);
    ``request``: ``request_digest`` of the row's request."""
    adaptive = method.endswith("*")
    return dict(
        method=method,
        gamma=gamma,
        window=window if adaptive else "-",
        criterion=criterion if adaptive else "-",
        captioner=captioner if "C" in tabed.ENSEMBLES[method] else "-",
        **setting,
        row=row,
        request=request,
    )


def _row(request: dict, res, reference_ids) -> dict:
    return dict(
        scenario=request["scenario"],
        turn=request["turn"],
        group=GROUP[request["scenario"]],
        n_images=len(request["images"]),
        new_tokens=res.new_tokens,
        target_calls=res.target_calls,
        block_efficiency=res.block_efficiency,
        acceptance_rate=res.acceptance_rate,
        lossless=res.output_ids == list(reference_ids),
        seconds=res.total_time,
        accepted=json.dumps(res.accepted_per_block),
        output=json.dumps(res.output_ids),
        active="",
    )


def store(profile: str, table: str = "tabed_runs", pair: str | None = None):
    """The runs table; it stands on the committed one (``results.COMMITTED``, read-only), so under ``make test``
    (an empty ``SPECDEC_OUTPUT_DIR``) the notebooks read the committed 20-per-cell runs and compute only keys
    that are not there. ``tests/test_committed_results.py`` recomputes a sample of them. ``pair``: a LLaVA pair of
    the profile other than its default gets its own table ``<table>_<pair>`` (``KEY`` names no model, so two pairs
    must never share one)."""
    if pair:
        table = f"{table}_{pair}"
    return results.ResultStore(profile, table, KEY, base=results.COMMITTED)


# ------------------------------------------------------------------------------------------------- tables
def runs(frame: pd.DataFrame, *, gamma: int = 5, window="ALL", criterion: str = "kl", captioner: str = CAPTIONER):
    """The rows of one setting (non-adaptive methods ignore window / criterion, non-caption ones the captioner)."""
    frame = frame[frame.method != "AR"]
    adaptive = frame.method.str.endswith("*")
    caption = frame.method.str.contains("C")
    keep = frame.gamma.astype(int) == gamma
    keep &= ~adaptive | ((frame.window.astype(str) == str(window)) & (frame.criterion == criterion))
    keep &= ~caption | (frame.captioner == captioner)
    return frame[keep]


def block_table(frame: pd.DataFrame, methods, turns=(1, 2)) -> pd.DataFrame:
    """Mean τ per (turn, dataset) x method, with the paper's dataset names and an ``Avg.`` of the benchmark
    datasets per turn (as in the paper's Table 10).

    ``turns`` are the turns laid out (1 = first, 2 = second): the frame's rows of other turns are left out, and
    a turn asked for that the frame lacks (the paper profile has no second turns yet) gets the paper's rows of
    that turn, empty (NaN). ``turns=(1,)`` gives the first-turn table only, whatever the frame holds.
    """
    turns = tuple(turns)
    if not turns or not set(turns) <= {1, 2}:
        raise ValueError(f"turns must be a non-empty subset of (1, 2), got {turns!r}")
    frame = frame[frame.method.isin(methods) & frame.turn.isin(turns)].copy()
    frame["dataset"] = frame.scenario.map(scenes.PAPER_NAME)
    table = frame.pivot_table(
        index=["turn", "group", "dataset"], columns="method", values="block_efficiency", aggfunc="mean"
    ).reindex(columns=list(methods))  # a method with no run in these turns: NaN
    averages = []
    for turn in sorted(frame.turn.unique()):
        bench = table.loc[(turn, "benchmark")] if (turn, "benchmark") in table.index.droplevel(2) else None
        if bench is not None:
            averages.append(
                pd.DataFrame([bench.mean()], index=pd.MultiIndex.from_tuples([(turn, "benchmark", "Avg.")]))
            )
    table = pd.concat([table, *averages]).sort_index(level=[0, 1], sort_remaining=False)
    missing = [t for t in turns if t not in set(table.index.get_level_values(0))]
    if missing:  # a turn asked for but not run: the paper's rows, empty
        layout = paper_table(methods)
        table = pd.concat([table, layout[layout.index.get_level_values(0).isin(missing)] * float("nan")])
    order = {name: i for i, name in enumerate(list(scenes.PAPER_NAME.values()) + ["Avg."])}
    return table.iloc[
        sorted(
            range(len(table)),
            key=lambda i: (table.index[i][0], table.index[i][1] != "benchmark", order[table.index[i][2]]),
        )
    ]


def rest_table(frame: pd.DataFrame, rests: dict[str, str], methods) -> pd.DataFrame:
    """Mean τ per kind of second turn (what its answer rests on, ``rests_on``) x method, with the number of requests
    and τ(T) − τ(M) where both ran: the second turns of ``block_table`` regrouped by follow-up instead of dataset."""
    frame = frame[(frame.turn.astype(int) == 2) & frame.method.isin(methods)]
    frame = frame.assign(rests_on=frame.row.map(rests)).dropna(subset=["rests_on"])
    table = frame.pivot_table(index="rests_on", columns="method", values="block_efficiency", aggfunc="mean")
    table = table.reindex(columns=list(methods))
    table["requests"] = frame.groupby("rests_on").row.nunique()
    if {"M", "T"} <= set(table.columns):
        table["T − M"] = table["T"] - table["M"]
    order = [k for k in (dialogues.IMAGE, dialogues.PREVIOUS, dialogues.TEXT_TASK) if k in table.index]
    return table.reindex(order).rename_axis("answer rests on")


def paper_table(methods, **setting) -> pd.DataFrame:
    """The paper's block efficiencies (Table 10 by default: LLaVA-1.5 68M draft, LLaVA-1.5 7B target) in the
    layout of ``block_table``."""
    paper = results.paper_numbers("tabed_block_efficiency")
    setting = {**PAPER_SETTING, **setting}
    for k, v in setting.items():
        paper = paper[paper[k] == v]
    paper = paper[paper.method.isin(methods)].copy()
    paper["turn"] = paper.turn.map({"first": 1, "second": 2})
    paper["group"] = paper.dataset_group
    paper["block_efficiency"] = paper.block_efficiency.astype(float)
    table = paper.pivot_table(index=["turn", "group", "dataset"], columns="method", values="block_efficiency")
    return table[list(methods)]


def pair_setting(profile: str = "tiny", pair: str | None = None) -> dict | None:
    """The paper's rows a LLaVA pair compares with (``draft_type``, ``draft_size``, ``target`` of
    ``tabed_block_efficiency``): the tiny zoo's default pair, ``PAPER_SETTING`` (it stands in for Table 10's
    LLaVA-1.5 68M / 7B); a pair of a profile (default ``llava-7b``, as ``load_vlm_pair``), its ``setting`` in the
    profile (Tables 10-14), or ``None`` where it has none: the paper has no block efficiencies for that pair
    (``llava-13b``, ``llava-7b-160m``)."""
    if profile == "tiny" and not pair:
        return dict(PAPER_SETTING)
    pairs = models.load_profile(profile).get("pairs", {})
    pair = pair or "llava-7b"
    if pair not in pairs or pairs[pair].get("kind") != "llava":
        llava = sorted(k for k, v in pairs.items() if v.get("kind") == "llava")
        raise ValueError(f"profile {profile!r} has no LLaVA pair {pair!r}; LLaVA pairs: {llava}")
    setting = pairs[pair].get("setting")
    return dict(setting) if setting else None


def pair_sizes(profile: str = "tiny", pair: str | None = None) -> tuple[str, str]:
    """``(draft size, target size)`` of a LLaVA pair as Table 6 writes them (``"68M"``, ``"7B"``), read from the pair's
    hub ids (``mjbooo/lvlm160m-bf16`` -> 160M, ``llava-hf/llava-v1.6-vicuna-13b-hf`` -> 13B); the tiny zoo's default
    pair stands in for 68M / 7B (``PAPER_SETTING``)."""
    if profile == "tiny" and not pair:
        return PAPER_SETTING["draft_size"], PAPER_SETTING["target"].split()[-1]
    spec = models.load_profile(profile).get("pairs", {}).get(pair or "llava-7b")
    if not spec or spec.get("kind") != "llava":
        raise ValueError(f"profile {profile!r} has no LLaVA pair {pair!r}")
    draft, target = re.search(r"(\d+)m", spec["draft"].lower()), re.search(r"(\d+)b", spec["target"].lower())
    if not draft or not target:
        raise ValueError(f"cannot read the sizes of pair {pair!r} from {spec['draft']!r} / {spec['target']!r}")
    return f"{draft.group(1)}M", f"{target.group(1)}B"


def pair_latency_ratio(profile: str = "tiny", pair: str | None = None) -> float | None:
    """The paper's T_q/T_p (Table 6, A6000) for the sizes of a pair's draft and target (``pair_sizes``): the paper
    timed LLaVA-1.5 7B / 13B with 68M / 160M drafts, and a LLaVA-NeXT pair of the same sizes takes that ratio.
    ``None`` where Table 6 has no such sizes."""
    draft_size, target_size = pair_sizes(profile, pair)
    table = paper.tabed_latency_ratios()
    hit = table[(table.draft_size == draft_size) & (table.target_size == target_size)]
    return float(hit.latency_ratio_Tq_over_Tp.iloc[0]) if len(hit) else None


def paper_table_name(setting: dict | None = PAPER_SETTING) -> str | None:
    """The paper's table of ``setting`` (``"Table 10"`` ... ``"Table 14"``), ``None`` where it has none."""
    if not setting:
        return None
    paper = results.paper_numbers("tabed_block_efficiency")
    for k, v in setting.items():
        paper = paper[paper[k] == v]
    names = sorted(set(paper.table))
    if len(names) > 1:
        raise ValueError(f"setting {setting} matches several tables of the paper: {names}")
    return names[0] if names else None


def pair_paper_table(methods, setting: dict | None = PAPER_SETTING) -> pd.DataFrame:
    """``paper_table`` of ``setting`` (e.g. ``pair_setting(profile, pair)``); where the paper has no table for it
    (``None``, or no such rows), Table 10's layout with every cell NaN."""
    if paper_table_name(setting) is None:
        return paper_table(methods) * float("nan")
    return paper_table(methods, **setting)


def paper_group_table(methods, **setting) -> pd.DataFrame:
    """The paper's group means in the layout of ``group_means`` (Table 2 = the Table 10 averages: benchmark
    ``Avg.`` per turn, OOD = mean of PSV and VIST, NLP = mean of NQ and GSM8K)."""
    paper = paper_table(methods, **setting)
    out = {}
    for turn in (1, 2):
        if (turn, "benchmark", "Avg.") in paper.index:
            out[f"benchmark t{turn}"] = paper.loc[(turn, "benchmark", "Avg.")]
    for group in ("nlp", "ood"):
        rows = [i for i in paper.index if i[1] == group]
        if rows:
            out[group] = paper.loc[rows].mean()
    return pd.DataFrame(out).reindex(methods)


def paper_window_table(**setting) -> pd.DataFrame:
    """The paper's Table 3 (MT*, first turn): τ per dataset (rows) and window h (columns)."""
    paper = results.paper_numbers("tabed_table3_window")
    paper = paper[paper.draft_size == setting.get("draft_size", PAPER_SETTING["draft_size"])]
    paper = paper.assign(block_efficiency=paper.block_efficiency.astype(float))
    return paper.pivot_table(index="dataset", columns="h", values="block_efficiency")


def side_by_side(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """One column pair per method: ``ours`` and ``paper``."""
    both = pd.concat({"ours": ours, "paper": paper.reindex(ours.index)}, axis=1)
    return both.swaplevel(0, 1, axis=1)[[(m, s) for m in ours.columns for s in ("ours", "paper")]].round(2)


def group_means(frame: pd.DataFrame, methods) -> pd.DataFrame:
    """Mean τ per method over the groups of the paper's Table 2: benchmark first / second turn, OOD, NLP."""
    frame = frame[frame.method.isin(methods)]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp")
    return (
        frame.assign(where=label)
        .pivot_table(index="method", columns="where", values="block_efficiency", aggfunc="mean")
        .reindex(methods)
    )


def spread_line(table: pd.DataFrame, what: str) -> str:
    """One sentence on a settings table (rows: groups, columns: the settings compared): the best setting per
    group and how far apart the settings are."""
    spread = (table.max(axis=1) - table.min(axis=1)) / table.mean(axis=1)
    best = table.idxmax(axis=1)
    return (
        f"{what}: best per group "
        + ", ".join(f"{g}: {b}" for g, b in best.items())
        + f"; settings differ by at most {100 * spread.max():.1f}% of τ within a group."
    )


# ------------------------------------------------------------------------------------------------- weights
def weight_series(run_row) -> tuple[list[float], list[bool]]:
    """Per generated token of one stored run: the weight of the multimodal row ``w_M / (w_M + w_T)`` in force
    when it was drafted, and whether it was an accepted draft token (else the target's correction / bonus).

    Static methods: M → 1, T → 0, MT → 0.5; adaptive ones read the per-block weights they logged."""
    accepted = json.loads(run_row["accepted"])
    logged = json.loads(run_row["weights"]) if isinstance(run_row["weights"], str) and run_row["weights"] else []
    fixed = {"M": 1.0, "T": 0.0}.get(run_row["method"], 0.5)
    n_tokens = int(run_row["new_tokens"])
    weights, from_draft = [], []
    for b, n_acc in enumerate(accepted):
        w = logged[b][0] / (logged[b][0] + logged[b][1]) if b < len(logged) else fixed
        weights += [w] * (n_acc + 1)
        from_draft += [True] * n_acc + [False]
    while len(weights) < n_tokens:  # the last call may have had no room for a draft (max_new_tokens)
        weights.append(weights[-1] if weights else fixed)
        from_draft.append(False)
    return weights[:n_tokens], from_draft[:n_tokens]


def mean_weight_table(frame: pd.DataFrame, method: str = "MT*") -> pd.DataFrame:
    """Mean weight of the multimodal row over the blocks of ``method``'s runs, per scenario group and turn."""
    frame = frame[frame.method == method]
    means = [sum(w[0] for w in json.loads(ws)) / len(json.loads(ws)) for ws in frame.weights]
    label = frame.group.where(frame.group != "benchmark", "benchmark t" + frame.turn.astype(str))
    label = label.where(frame.group != "nlp", "nlp t" + frame.turn.astype(str))
    return frame.assign(w_M=means, where=label).groupby("where").w_M.agg(["mean", "min", "max", "count"])


# ------------------------------------------------------------------------------------------------- re-checking
def recompute(keys: list[dict], *, profile: str = "tiny", n_per_scenario: int | None = None):
    """Decode the stored runs of ``keys`` (rows of ``KEY`` columns, e.g. a sample of the committed table) again,
    into a temporary store, and return the fresh rows as a DataFrame in the order of ``keys``.

    The tests run this in a subprocess with another CPU vector width (``ATEN_CPU_CAPABILITY``,
    ``MKL_ENABLE_INSTRUCTIONS``) and demand the committed rows back: a result that depends on the machine's
    float rounding, or on code changed since the table was written, fails there instead of in nbval on CI."""
    import tempfile

    target, draft, processor = load_vlm_pair(profile)
    # suite rows do not depend on n, so the largest index among the keys' row ids is enough
    n_per_scenario = n_per_scenario or 1 + max(int(str(k["row"]).rsplit("-", 1)[1]) for k in keys)
    requests = {r["id"]: r for r in load_suite(profile, n_per_scenario, seed=0)}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = results.ResultStore(profile, "recomputed", KEY, root=pathlib.Path(tmp))
        settings = {}
        for key in keys:
            setting = (
                int(key["gamma"]),
                str(key["window"]),
                str(key["criterion"]),
                str(key["captioner"]),
                int(key["max_new_tokens"]),
            )
            settings.setdefault(setting, []).append(key)
        for (gamma, window, criterion, captioner, max_new_tokens), group in settings.items():
            for method in dict.fromkeys(k["method"] for k in group):
                rows = [requests[k["row"]] for k in group if k["method"] == method]
                run(
                    fresh,
                    target,
                    draft,
                    processor,
                    rows,
                    [method],
                    gamma=gamma,
                    max_new_tokens=max_new_tokens,
                    window=None if window in ("ALL", "-") else int(window),
                    criterion=criterion if criterion != "-" else "kl",
                    captioner=captioner if captioner != "-" else CAPTIONER,
                )
        frame = fresh.frame()
    frame = frame[frame.method != "AR"].astype({c: str for c in KEY})
    order = pd.DataFrame([{c: str(k[c]) for c in KEY} for k in keys])
    return order.merge(frame, on=KEY, how="left")
