"""Synthetic multimodal scenarios for TABED-style experiments: tiny rendered images with exact ground truth.

The TABED paper benchmarks LVLM drafting on seven image datasets (LLaVA-Bench in-the-wild, DocVQA, POPE,
MM-Vet, IEdit, MagicBrush, Spot-the-Diff), two out-of-distribution five-image story sets (PororoSV, VIST),
second turns, and text-only NLP turns (NQ, GSM8K). This module rebuilds each of those *scenarios* offline
from images drawn with PIL, so a tiny LLaVA trained here (``specdec.vlm.train``) can be evaluated on the
same mix of inputs.

This module is the public face of four: ``specdec.vlm.groundtruth`` (the items, their English and the split),
``specdec.vlm.pictures`` (rendering, captions, pixel normalisation), ``specdec.vlm.dialogues`` (one
registered first turn and follow-up per scenario) and the suite below; every name is importable from here.

Images
    ``IMAGE_SIZE`` x ``IMAGE_SIZE`` = 64 x 64 RGB. A CLIP vision tower with ``PATCH_SIZE`` 16 sees a 4 x 4 grid,
    so every image becomes ``PATCHES_PER_IMAGE`` = 16 image tokens (the CLS token is dropped, LLaVA's
    ``vision_feature_select_strategy="default"``). Every pixel has one of the ``PALETTE`` colours (no
    anti-aliasing; text uses PIL's built-in bitmap font, the one ``ImageFont.load_default()`` returns without
    FreeType, 6 x 11 px per character, so rendering is identical on every platform). Kinds of image:

    - shape scenes: 1-4 coloured shapes (``SHAPES`` x ``COLORS``) on a 3 x 3 grid of named ``POSITIONS``;
    - documents: three lines of black text on white (upper-case words and two-digit numbers), named
      ``top`` / ``middle`` / ``bottom``;
    - edit pairs: a shape scene and a copy with exactly one edit (recolour, move, add or remove a shape);
    - stories: five frames (shape scenes with a gray border) in which one shape moves or changes colour.

    Each generator returns the PIL images plus a JSON-able ground truth; answers are full sentences built from
    the ground truth (``describe_scene``, ``describe_document``, ``edit_instruction``, ...).

Chat layout (LLaVA-1.5 "v1" style, as in the paper's App. I)
    first turn:  ``USER: <image>\\n<question> ASSISTANT:``
    second turn: ``USER: <image>\\n<question 1> ASSISTANT: <answer 1></s>USER: <question 2> ASSISTANT:``
    ``<image>`` (``IMAGE_PLACEHOLDER``) appears once per image, images first, each followed by a newline (the
    VIST-like rows interleave images with captions, as in the paper). The reply is ``" " + answer`` followed by
    ``</s>``. The models add ``<s>`` in front (``specdec.vlm.data.encode_prompt`` tokenises a prompt and
    expands each placeholder into the image-token ids).

Scenario suite
    ``scenario_suite(split, n_per_scenario, seed)`` returns rows for every ``(scenario, turn)`` of
    ``SCENARIOS``. Rows are decided by a ``random.Random`` with a string seed (independent of
    ``PYTHONHASHSEED``). The split is hash-based on the *content* of every item a row uses (a shape scene, a
    document, a story, a text question: ``split_of(kind, gt)``), so a test scene never appears in any training
    row of any scenario, and train / test never share a ``(scenario, ground truth)`` item.

Captions (caption drafting, C)
    ``render_caption(images)`` is the "captioner": it maps each PIL image made here to its ground-truth short
    caption. Rendering stores the caption in ``image.info["caption"]`` (kept by ``copy()`` and pickling) and in
    a registry keyed by the sha256 of the pixels, so copies or re-created images with identical pixels are
    captioned too; an image never rendered in this process and without the info entry raises ``KeyError``.
"""

from __future__ import annotations

import random

from specdec.vlm.dialogues import TEXT_TASK, first_turn, follow_up
from specdec.vlm.groundtruth import (
    AT,
    COLORS,
    CONNECTIVES,
    EDIT_TYPES,
    LINE_AT,
    LINES,
    NUMBER_WORDS,
    POSITIONS,
    SHAPES,
    TEST_PERCENT,
    WORDS,
    article,
    canonical,
    capital,
    colors_of,
    count_phrase,
    describe_document,
    describe_scene,
    document_caption,
    document_numbers,
    edit_difference,
    edit_instruction,
    is_number,
    join_and,
    number_word,
    random_document,
    random_edit,
    random_fact,
    random_scene,
    random_story,
    random_word_problem,
    read_line,
    scene_caption,
    scene_groups,
    shape_at,
    split_of,
    story_events,
    story_frames,
    tell_story,
    there_are,
)
from specdec.vlm.pictures import (
    IMAGE_MEAN,
    IMAGE_SIZE,
    IMAGE_STD,
    PALETTE,
    PATCH_SIZE,
    PATCHES_PER_IMAGE,
    image_key,
    images_to_pixels,
    palette_indices,
    render_caption,
    render_document,
    render_scene,
)

IMAGE_PLACEHOLDER = "<image>"
USER, ASSISTANT, TURN_END = "USER: ", " ASSISTANT:", "</s>"

# (scenario, turn) pairs of the suite, with the paper dataset each one mirrors.
SCENARIOS: list[tuple[str, int]] = [
    ("describe", 1),
    ("docvqa", 1),
    ("pope", 1),
    ("mmvet", 1),  # single image (LLaVA-W, DocVQA, POPE, MM-Vet)
    ("iedit", 1),
    ("magicbrush", 1),
    ("spot", 1),  # two images (IEdit, MagicBrush, Spot-the-Diff)
    ("psv", 1),
    ("vist", 1),  # five images, OOD (PororoSV, VIST)
    ("nq", 1),
    ("gsm8k", 1),  # text only, no image
    ("describe", 2),
    ("docvqa", 2),
    ("pope", 2),
    ("mmvet", 2),  # follow-ups on the first answer / image
    ("iedit", 2),
    ("magicbrush", 2),
    ("spot", 2),
    ("nq", 2),
    ("gsm8k", 2),  # text-only question after an image turn
]
PAPER_NAME = {
    "describe": "LLaVA-W",
    "docvqa": "DocVQA",
    "pope": "POPE",
    "mmvet": "MMVet",
    "iedit": "IEdit",
    "magicbrush": "MB",
    "spot": "Spot",
    "psv": "PSV",
    "vist": "VIST",
    "nq": "NQ",
    "gsm8k": "GSM8K",
}


# ------------------------------------------------------------------------------------------------- the suite
def chat_prompt(turns: list[tuple[str, str | None]]) -> str:
    """``USER: <u1> ASSISTANT: <a1></s>USER: <u2> ASSISTANT:`` (the last reply left open)."""
    out = []
    for user, reply in turns:
        out.append(f"{USER}{user}{ASSISTANT}" + (f" {reply}{TURN_END}" if reply is not None else ""))
    return "".join(out)


def make_row(scenario: str, turn: int, rng: random.Random, split: str, style: str = "short") -> dict:
    """One row of the suite (without ``id``); ``style``: the first turns' answers (``dialogues.ANSWER_STYLES``)."""
    if turn == 1:
        first = first_turn(scenario, rng, split, style)
        turns: list[tuple[str, str | None]] = [(first["user"], None)]
        answer, gt, items, images = first["answer"], first["gt"], first["items"], first["images"]
        rests_on = None
    elif turn == 2:
        if scenario in ("nq", "gsm8k"):  # an unrelated image conversation, then a text-only question
            first = first_turn(rng.choice(["describe", "docvqa", "pope", "mmvet"]), rng, split, style)
            second = first_turn(scenario, rng, split, style)
            question, answer = second["user"], second["answer"]
            gt = {"first": first["gt"], **second["gt"]}
            items = first["items"] + second["items"]
            rests_on = TEXT_TASK
        else:
            first = first_turn(scenario, rng, split, style)
            question, answer, rests_on = follow_up(scenario, first, rng)
            gt = {"first": first["gt"], "follow_up": question}
            items = first["items"]
        turns = [(first["user"], first["answer"]), (question, None)]
        images = first["images"]
    else:
        raise ValueError(f"turn must be 1 or 2, got {turn}")
    pil = [render() for _, _, render in images]
    row = {
        "scenario": scenario,
        "turn": turn,
        "split": split,
        "images": pil,
        "prompt": chat_prompt(turns),
        "answer": answer,
        "caption": render_caption(pil),
        "gt": gt,
        "items": [[kind, g] for kind, g in items],
        "rests_on": rests_on,
    }
    if turn == 2:  # the conversation's parts, so that a second turn can be rebuilt on another first answer
        row.update(first_user=first["user"], first_answer=first["answer"], second_user=question)
    return row


def scenario_suite(split: str, n_per_scenario: int, seed: int = 0, scenarios=None, style: str = "short") -> list[dict]:
    """Rows ``{"id", "scenario", "turn", "images", "prompt", "answer", "caption", "gt", "items", "split"}`` for
    every ``(scenario, turn)`` of ``SCENARIOS``, ``n_per_scenario`` each, in a fixed order (``scenarios``: keep
    only these names or ``(name, turn)`` pairs).

    ``prompt`` holds one ``<image>`` per image; ``answer`` is the reference reply (without the leading space and
    ``</s>``); ``caption`` one short caption per image; ``items`` the ``[kind, ground truth]`` the split is
    decided on; ``rests_on`` what a second turn's answer needs (``dialogues.IMAGE``, ``PREVIOUS`` answer, or
    ``TEXT_TASK``: an NQ / GSM8K question after an unrelated image conversation; ``None`` on first turns).
    Second turns also carry their parts: ``first_user`` (the first turn, every image), ``first_answer`` (its
    scripted reply, the one ``prompt`` carries) and ``second_user`` (the follow-up), so that a second turn can be
    rebuilt on a model's own first answer (``specdec.tabed.data``). Deterministic in ``(split, n_per_scenario,
    seed)``; the first rows do not depend on ``n``.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    wanted = None if scenarios is None else {x if isinstance(x, str) else tuple(x) for x in scenarios}
    chosen = [(s, t) for s, t in SCENARIOS if wanted is None or s in wanted or (s, t) in wanted]
    rows = []
    for scenario, turn in chosen:
        rng = random.Random(f"scenes-{seed}-{split}-{scenario}-{turn}")
        for i in range(n_per_scenario):
            row = make_row(scenario, turn, rng, split, style)
            rows.append({"id": f"{scenario}-t{turn}-{split}-{seed}-{i:05d}", **row})
    return rows


__all__ = [
    "ASSISTANT",
    "AT",
    "COLORS",
    "CONNECTIVES",
    "EDIT_TYPES",
    "IMAGE_MEAN",
    "IMAGE_PLACEHOLDER",
    "IMAGE_SIZE",
    "IMAGE_STD",
    "LINES",
    "LINE_AT",
    "NUMBER_WORDS",
    "PALETTE",
    "PAPER_NAME",
    "PATCHES_PER_IMAGE",
    "PATCH_SIZE",
    "POSITIONS",
    "SCENARIOS",
    "SHAPES",
    "TEST_PERCENT",
    "TURN_END",
    "USER",
    "WORDS",
    "article",
    "canonical",
    "capital",
    "chat_prompt",
    "colors_of",
    "count_phrase",
    "describe_document",
    "describe_scene",
    "document_caption",
    "document_numbers",
    "edit_difference",
    "edit_instruction",
    "image_key",
    "images_to_pixels",
    "is_number",
    "join_and",
    "make_row",
    "number_word",
    "palette_indices",
    "random_document",
    "random_edit",
    "random_fact",
    "random_scene",
    "random_story",
    "random_word_problem",
    "read_line",
    "render_caption",
    "render_document",
    "render_scene",
    "scenario_suite",
    "scene_caption",
    "scene_groups",
    "shape_at",
    "split_of",
    "story_events",
    "story_frames",
    "tell_story",
    "there_are",
]
