"""The "full" answer style of the synthetic TABED scenarios (``dialogues.ANSWER_STYLES``): the first turns of the
benchmark scenarios and the stories answered at length, as the paper's tasks are (docs/papers/tabed.md, "T2 and T5"),
so that a window of h past blocks is shorter than the answer. ``FULL_ANSWERS`` maps a scenario to a function of
its first turn (``dialogues.first_turn``'s dict) that returns the full answer. Each uses the turn's ground truth and
short answer only (no draw from the scenario's rng), so both styles give the same scenes, questions and requests.
"""

from __future__ import annotations

from specdec.vlm.groundtruth import (
    LINE_AT,
    LINES,
    POSITIONS,
    article,
    describe_scene,
    is_number,
    number_word,
    story_events,
)


def _scene_scan(scene: dict) -> str:
    """Every place of the 3 x 3 grid in reading order: what is there, and how many places are empty."""
    held = {pos: (shape, color) for shape, color, pos in scene["shapes"]}
    parts = [f"{pos}, {article(c)} {c} {s}" for pos in POSITIONS if pos in held for s, c in [held[pos]]]
    empty = len(POSITIONS) - len(held)
    tail = "no place is empty" if not empty else f"the other {number_word(empty)} places are empty"
    return f"Place by place: {'; '.join(parts)}; {tail}."


def document_report(doc: dict) -> str:
    """The document read line by line, each line with its kind, and the count of numbers and words."""
    lines = []
    for where, text in zip(LINES, doc["lines"]):
        kind = "number" if is_number(text) else "word"
        lines.append(f"The line {LINE_AT[where]} holds the {kind} {text}.")
    nums = sum(is_number(x) for x in doc["lines"])
    words = 3 - nums
    count = f"{number_word(nums)} number{'s' * (nums != 1)} and {number_word(words)} word{'s' * (words != 1)}"
    return f"Reading the document line by line: {' '.join(lines)} So the document has {count}."


def _full_image(turn: dict) -> str:
    """Describe / DocVQA / MM-Vet: the short answer, then the whole picture (every shape, or every line)."""
    gt = turn["gt"]
    if "document" in gt:
        return f"{turn['answer']} {document_report(gt['document'])}"
    scene = gt["scene"]
    whole = _scene_scan(scene) if turn["answer"] == describe_scene(scene) else f"{describe_scene(scene)}"
    return f"{turn['answer']} {whole}"


def _full_pope(turn: dict) -> str:
    """POPE: the yes / no, the places checked, and the reason."""
    gt = turn["gt"]
    shape, color = gt["shape"], gt["color"]
    verdict = (
        f"One of them is {article(color)} {color} {shape}, so the answer is yes."
        if gt["yes"]
        else f"None of them is {article(color)} {color} {shape}, so the answer is no."
    )
    return f"{turn['answer']} To check, I look at every place of the image. {_scene_scan(gt['scene'])} {verdict}"


def _full_edit(turn: dict) -> str:
    """IEdit / MagicBrush / Spot-the-Diff: the instruction or change, then the scene before and after it."""
    gt = turn["gt"]
    before, after = _scene_scan(gt["before"]), _scene_scan(gt["after"])
    return f"{turn['answer']} Before the edit: {before} After it: {after}"


def _full_vist(turn: dict) -> str:
    """VIST: the last caption, then the four before it, as the story so far."""
    events = story_events(turn["gt"]["story"])
    return f"{turn['answer']} It ends the story told by the four pictures before it: {' '.join(events[:4])}"


FULL_ANSWERS = {
    "describe": _full_image,
    "docvqa": _full_image,
    "pope": _full_pope,
    "mmvet": _full_image,
    "iedit": _full_edit,
    "magicbrush": _full_edit,
    "spot": _full_edit,
    "vist": _full_vist,
}  # PororoSV already tells its five frames at length; NQ and GSM8K: Table 3 has no text-only cells
