"""The questions and answers of the synthetic TABED scenarios: one first turn and one follow-up per scenario.

Two registries, in the style of ``specdec.cos.tasks``: ``FIRST_TURNS`` maps a scenario name to a function
``(rng, split) -> turn`` and ``FOLLOW_UPS`` maps a scenario with a second turn to a function
``(first turn, rng) -> (question, answer, rests_on)``: ``rests_on`` says what the answer needs, ``IMAGE``
(look at the picture again) or ``PREVIOUS`` (the first turn's answer holds all it needs), the paper's kinds of
follow-up (Sec. 4: text-only drafting leads "particularly in tasks dependent on prior responses"). A turn is
``{"user", "answer", "gt", "images": [(kind, gt, render)], "items": [(kind, gt)]}``: ``user`` holds one
``<image>`` per image, ``render`` makes the PIL image lazily, ``items`` are what the train / test split is decided
on. ``first_turn`` / ``follow_up`` look a scenario
up; ``specdec.vlm.scenes`` assembles them into chat prompts and suite rows.
"""

from __future__ import annotations

import random

from specdec.vlm.full_answers import FULL_ANSWERS
from specdec.vlm.groundtruth import (
    AT,
    COLORS,
    EDIT_TYPES,
    LINE_AT,
    LINES,
    POSITIONS,
    SHAPES,
    article,
    colors_of,
    describe_document,
    describe_scene,
    document_numbers,
    draw_in_split,
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
    shape_at,
    split_of,
    story_events,
    story_frames,
    tell_story,
    there_are,
)
from specdec.vlm.pictures import render_document, render_scene


def _shape_image(gt):
    return ("shapes", gt, lambda: render_scene(gt))


def _doc_image(gt):
    return ("document", gt, lambda: render_document(gt))


IMAGE, PREVIOUS, TEXT_TASK = "image", "previous answer", "text task"  # what a second turn's answer rests on


def _turn(user, answer, gt, images, items=None) -> dict:
    items = items if items is not None else [(kind, g) for kind, g, _ in images]
    return {"user": user, "answer": answer, "gt": gt, "images": images, "items": items}


# ----------------------------------------------------------------------------------------- first turns
def _document_question(rng: random.Random, split: str, scenario: str) -> dict:
    """A document instead of a shape scene (LLaVA-W / MM-Vet): describe it, or add up / double its numbers."""
    doc = draw_in_split(rng, split, "document", random_document)
    image = _doc_image(doc)
    if scenario == "describe":
        return _turn("<image>\nDescribe the image.", describe_document(doc), {"document": doc}, [image])
    nums = document_numbers(doc)
    if len(nums) >= 2:
        q = "What is the sum of the numbers in the document?"
        a = (
            f"The numbers are {join_and([str(n) for n in nums])}, so the sum is "
            f"{' + '.join(str(n) for n in nums)} = {sum(nums)}."
        )
        task = "doc_sum"
    else:
        q = "What is the number in the document times two?"
        a = f"The number in the document is {nums[0]}, and {nums[0]} x 2 = {2 * nums[0]}."
        task = "doc_double"
    return _turn(f"<image>\n{q}", a, {"document": doc, "task": task}, [image])


def _first_describe(rng: random.Random, split: str) -> dict:
    """LLaVA-W: describe a shape scene (30 %: a document)."""
    if rng.random() < 0.3:
        return _document_question(rng, split, "describe")
    scene = draw_in_split(rng, split, "shapes", random_scene)
    return _turn("<image>\nDescribe the image.", describe_scene(scene), {"scene": scene}, [_shape_image(scene)])


def _first_docvqa(rng: random.Random, split: str) -> dict:
    """DocVQA: read one line of a document."""
    doc = draw_in_split(rng, split, "document", random_document)
    line = rng.choice(LINES)
    text = doc["lines"][LINES.index(line)]
    kind = rng.choice(["number" if is_number(text) else "word", "any"])
    q = f"What is written {LINE_AT[line]}?" if kind == "any" else f"What {kind} is written {LINE_AT[line]}?"
    return _turn(f"<image>\n{q}", read_line(doc, line), {"document": doc, "line": line}, [_doc_image(doc)])


def _first_pope(rng: random.Random, split: str) -> dict:
    """POPE: is an object in the image (half of the questions: an adversarial absent one)?"""
    scene = draw_in_split(rng, split, "shapes", random_scene)
    present = {(s, c) for s, c, _ in scene["shapes"]}
    if rng.random() < 0.5:
        shape, color = rng.choice(sorted(present))
    else:  # adversarial absent object: same shape or same colour as a present one when possible
        absent = [(s, c) for s in SHAPES for c in COLORS if (s, c) not in present]
        near = [(s, c) for s, c in absent if any(s == s2 or c == c2 for s2, c2 in present)]
        shape, color = rng.choice(near or absent)
    yes = (shape, color) in present
    a = (
        f"Yes, there is {article(color)} {color} {shape} in the image."
        if yes
        else f"No, there is no {color} {shape} in the image."
    )
    return _turn(
        f"<image>\nIs there {article(color)} {color} {shape} in the image?",
        a,
        {"scene": scene, "shape": shape, "color": color, "yes": yes},
        [_shape_image(scene)],
    )


def _first_mmvet(rng: random.Random, split: str) -> dict:
    """MM-Vet: count, count one colour, say what is somewhere or which colour it has (25 %: a document)."""
    if rng.random() < 0.25:
        return _document_question(rng, split, "mmvet")
    scene = draw_in_split(rng, split, "shapes", random_scene)
    task = rng.choice(["count", "count_color", "where", "color_at"])
    gt = {"scene": scene, "task": task}
    n = len(scene["shapes"])
    if task == "count":
        q = "How many shapes are in the image?"
        a = there_are(n, "shape", "in the image")
    elif task == "count_color":
        color = rng.choice(COLORS)
        k = sum(c == color for _, c, _ in scene["shapes"])
        gt["color"] = color
        q = f"How many {color} shapes are in the image?"
        a = (
            f"There are no {color} shapes in the image."
            if k == 0
            else f"There is one {color} shape in the image."
            if k == 1
            else f"There are {number_word(k)} {color} shapes in the image."
        )
    elif task == "where":
        pos = rng.choice(POSITIONS)
        gt["pos"] = pos
        hit = shape_at(scene, pos)
        q = f"What is {AT[pos]}?"
        a = f"There is {article(hit[1])} {hit[1]} {hit[0]} {AT[pos]}." if hit else f"There is nothing {AT[pos]}."
    else:
        shape, color, pos = rng.choice(scene["shapes"])
        gt["pos"] = pos
        q = f"What colour is the shape {AT[pos]}?"
        a = f"The shape {AT[pos]} is {color}."
    return _turn(f"<image>\n{q}", a, gt, [_shape_image(scene)])


def _edit_pair(rng: random.Random, split: str, types) -> tuple[dict, list]:
    """An edit of one of ``types`` whose two pictures are both shape scenes of the split, and the two images."""
    while True:
        edit = random_edit(rng, types)
        if split_of("shapes", edit["before"]) == split and split_of("shapes", edit["after"]) == split:
            return edit, [_shape_image(edit["before"]), _shape_image(edit["after"])]


def _first_iedit(rng: random.Random, split: str) -> dict:
    """IEdit: the instruction for a recolour or a move."""
    edit, images = _edit_pair(rng, split, ("recolor", "move"))
    q = "Please provide instructions for editing the first image to match the second image."
    return _turn(f"<image>\n<image>\n{q}", edit_instruction(edit["edit"]), edit, images)


def _first_magicbrush(rng: random.Random, split: str) -> dict:
    """MagicBrush: the instruction for adding or removing a shape."""
    edit, images = _edit_pair(rng, split, ("add", "remove"))
    q = "Write the edit instruction that turns the first image into the second."
    return _turn(f"<image>\n<image>\n{q}", edit_instruction(edit["edit"]), edit, images)


def _first_spot(rng: random.Random, split: str) -> dict:
    """Spot-the-Diff: what changed between two pictures (any edit)."""
    edit, images = _edit_pair(rng, split, tuple(EDIT_TYPES))
    return _turn("<image>\n<image>\nWhat changed between the two images?", edit_difference(edit["edit"]), edit, images)


def _story(rng: random.Random, split: str) -> tuple[dict, list]:
    story = draw_in_split(rng, split, "story", random_story)
    return story, [("story", story, (lambda s=s: render_scene(s, border=True))) for s in story_frames(story)]


def _first_psv(rng: random.Random, split: str) -> dict:
    """PororoSV: tell the story of five pictures."""
    story, images = _story(rng, split)
    user = "<image>\n" * 5 + "Tell the story of these pictures."
    return _turn(user, tell_story(story), {"story": story}, images, items=[("story", story)])


def _first_vist(rng: random.Random, split: str) -> dict:
    """VIST: the last caption of a story, given the pictures interleaved with the first four captions."""
    story, images = _story(rng, split)
    events = story_events(story)
    user = "With the captions of the first four pictures, how does the story end in the last picture?\n"
    user += "".join(f"<image>\nCaption #{k + 1}: {e}\n" for k, e in enumerate(events[:4]))
    user += "<image>\nCaption #5:"
    return _turn(user, events[4], {"story": story}, images, items=[("story", story)])


def _first_nq(rng: random.Random, split: str) -> dict:
    """NQ: a text-only fact question."""
    fact = draw_in_split(rng, split, "text", random_fact)
    return _turn(fact["q"], fact["a"], {"fact": fact}, [], items=[("text", fact)])


def _first_gsm8k(rng: random.Random, split: str) -> dict:
    """GSM8K: a text-only word problem with a worked answer."""
    problem = draw_in_split(rng, split, "text", random_word_problem)
    return _turn(problem["q"], problem["a"], {"problem": problem}, [], items=[("text", problem)])


# scenario -> first turn (rng, split) -> {"user", "answer", "gt", "images", "items"}
FIRST_TURNS = {
    "describe": _first_describe,
    "docvqa": _first_docvqa,
    "pope": _first_pope,
    "mmvet": _first_mmvet,
    "iedit": _first_iedit,
    "magicbrush": _first_magicbrush,
    "spot": _first_spot,
    "psv": _first_psv,
    "vist": _first_vist,
    "nq": _first_nq,
    "gsm8k": _first_gsm8k,
}


ANSWER_STYLES = ("short", "full")


def first_turn(scenario: str, rng: random.Random, split: str, style: str = "short") -> dict:
    """``{"user", "answer", "gt", "images": [(kind, gt, render)], "items": [(kind, gt)]}`` of a first turn;
    ``style="full"`` replaces the answer by ``FULL_ANSWERS[scenario]`` of the turn (same draws, same question)."""
    if scenario not in FIRST_TURNS:
        raise ValueError(f"unknown scenario {scenario!r}; known: {sorted(FIRST_TURNS)}")
    if style not in ANSWER_STYLES:
        raise ValueError(f"unknown answer style {style!r}; known: {ANSWER_STYLES}")
    turn = FIRST_TURNS[scenario](rng, split)
    if style == "full" and scenario in FULL_ANSWERS:
        turn["answer"] = FULL_ANSWERS[scenario](turn)
    return turn


# ----------------------------------------------------------------------------------------- second turns
def _follow_docvqa(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """Another line (needs the image again), or arithmetic / spelling on the line just read."""
    gt = first["gt"]
    doc = gt["document"]
    text = doc["lines"][LINES.index(gt["line"])]
    if rng.random() < 0.5:  # needs the image again
        other = rng.choice([x for x in LINES if x != gt["line"]])
        return f"And what is written {LINE_AT[other]}?", read_line(doc, other), IMAGE
    if is_number(text):
        k = rng.randint(1, 9)
        return f"What is that number plus {k}?", f"{text} plus {k} is {int(text) + k}.", PREVIOUS
    text_answer = f"The word {text} has {number_word(len(text))} letters."
    return "How many letters does that word have?", text_answer, PREVIOUS


def _follow_describe(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """A document: the sum of its numbers or its word count; a scene: total, colours, or is there a shape. The
    first answer described every line or shape, so each rests on it."""
    gt = first["gt"]
    if "document" in gt:
        doc = gt["document"]
        nums = document_numbers(doc)
        if len(nums) >= 2 and rng.random() < 0.5:
            return (
                "What is the sum of the numbers?",
                f"The numbers are {join_and([str(n) for n in nums])}, and "
                f"{' + '.join(str(n) for n in nums)} = {sum(nums)}.",
                PREVIOUS,
            )
        words = [x for x in doc["lines"] if not is_number(x)]
        n = len(words)
        return "How many words are in the document?", there_are(n, "word", "in the document"), PREVIOUS
    scene = gt["scene"]
    choice = rng.choice(["total", "colors", "is_there"])
    n = len(scene["shapes"])
    if choice == "total":
        return "And how many shapes are there in total?", there_are(n, "shape", "in total"), PREVIOUS
    if choice == "colors":
        cols = colors_of(scene)
        return (
            "Which colours appear in the image?",
            f"The colour in the image is {cols[0]}."
            if len(cols) == 1
            else f"The colours in the image are {join_and(cols)}.",
            PREVIOUS,
        )
    shape = rng.choice(SHAPES)
    k = sum(s == shape for s, _, _ in scene["shapes"])
    return (
        f"Is there {article(shape)} {shape} in the image?",
        "Yes, t" + there_are(k, shape, "in the image")[1:] if k else f"No, there is no {shape} in the image.",
        PREVIOUS,
    )


def _follow_pope(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """Where the object is (it was there), or which shapes there are instead."""
    gt = first["gt"]
    scene = gt["scene"]
    if gt["yes"]:
        positions = [p for s, c, p in scene["shapes"] if (s, c) == (gt["shape"], gt["color"])]
        at = join_and([AT[p] for p in positions])
        return (
            "Where is it?",
            f"The {gt['color']} {gt['shape']} is {at}."
            if len(positions) == 1
            else f"There are {number_word(len(positions))} {gt['color']} {gt['shape']}s, {at}.",
            IMAGE,
        )
    return "What shapes are in the image then?", f"The image shows {scene_caption(scene)}.", IMAGE


def _follow_mmvet_document(gt: dict) -> tuple[str, str, str]:
    nums = document_numbers(gt["document"])
    if gt["task"] == "doc_sum":
        hi, lo = max(nums[:2]), min(nums[:2])
        return (
            "What is the difference between the first two numbers?",
            f"The first two numbers are {nums[0]} and {nums[1]}, so the difference is {hi} - {lo} = {hi - lo}.",
            PREVIOUS,
        )
    return "And what is it plus one?", f"{nums[0]} plus 1 is {nums[0] + 1}.", PREVIOUS


def _follow_mmvet(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """One more step on the first task: add shapes, count all, look elsewhere, name the shape."""
    gt = first["gt"]
    if "document" in gt:
        return _follow_mmvet_document(gt)
    scene, task = gt["scene"], gt["task"]
    n = len(scene["shapes"])
    if task == "count":
        k = rng.randint(1, 3)
        return (
            f"And if we add {number_word(k)} more shape{'' if k == 1 else 's'}, how many will there be?",
            f"There will be {n} + {k} = {n + k} shapes.",
            PREVIOUS,
        )
    if task == "count_color":  # the first answer counted one colour only
        return "And how many shapes are there in total?", there_are(n, "shape", "in total"), IMAGE
    if task == "where":
        other = rng.choice([p for p in POSITIONS if p != gt["pos"]])
        hit = shape_at(scene, other)
        return (
            f"And what is {AT[other]}?",
            f"There is {article(hit[1])} {hit[1]} {hit[0]} {AT[other]}." if hit else f"There is nothing {AT[other]}.",
            IMAGE,
        )
    shape, color = shape_at(scene, gt["pos"])
    return "And what shape is it?", f"The {color} shape {AT[gt['pos']]} is {article(shape)} {shape}.", IMAGE


def _count_shapes(which: str, scene: dict) -> tuple[str, str, str]:
    n = len(scene["shapes"])
    return f"How many shapes are in the {which} image?", there_are(n, "shape", f"in the {which} image"), IMAGE


def _follow_iedit(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """What the edited shape was like before the edit (the instruction named it), or how many shapes the second
    image has."""
    gt = first["gt"]
    edit = gt["edit"]
    if rng.random() < 0.5:
        if edit["type"] == "recolor":
            return (
                "What colour was the shape before the edit?",
                f"The {edit['shape']} was {edit['color']} before the edit.",
                PREVIOUS,
            )
        return (
            "Where was the shape before the edit?",
            f"The {edit['color']} {edit['shape']} was {AT[edit['pos']]} before the edit.",
            PREVIOUS,
        )
    return _count_shapes("second", gt["after"])


def _follow_magicbrush(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """How many shapes the first or the second image has."""
    gt = first["gt"]
    return _count_shapes("first", gt["before"]) if rng.random() < 0.5 else _count_shapes("second", gt["after"])


def _follow_spot(first: dict, rng: random.Random) -> tuple[str, str, str]:
    """Describe the first image, or count the shapes of the second."""
    gt = first["gt"]
    if rng.random() < 0.5:
        return "Describe the first image.", describe_scene(gt["before"]), IMAGE
    return _count_shapes("second", gt["after"])


# scenario -> follow-up (first turn, rng) -> (question, answer, rests_on): ``IMAGE`` or ``PREVIOUS`` answer
FOLLOW_UPS = {
    "describe": _follow_describe,
    "docvqa": _follow_docvqa,
    "pope": _follow_pope,
    "mmvet": _follow_mmvet,
    "iedit": _follow_iedit,
    "magicbrush": _follow_magicbrush,
    "spot": _follow_spot,
}


def follow_up(scenario: str, first: dict, rng: random.Random) -> tuple[str, str, str]:
    """A follow-up question on the first turn, its answer and what the answer rests on (``IMAGE``: the picture
    again; ``PREVIOUS``: the first turn's answer)."""
    if scenario not in FOLLOW_UPS:
        raise ValueError(f"scenario {scenario!r} has no second turn")
    return FOLLOW_UPS[scenario](first, rng)
