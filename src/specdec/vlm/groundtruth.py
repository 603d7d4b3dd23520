"""Ground truths of the synthetic TABED scenarios and the English built from them.

The items every scenario of ``specdec.vlm.scenes`` is made of, as JSON-able ground truths: shape scenes
(1-4 coloured shapes on a 3 x 3 grid of named ``POSITIONS``), documents (three lines of upper-case words and
two-digit numbers), edit pairs (a scene and a copy with exactly one edit), stories (five frames in which one
shape moves or changes colour) and text-only questions (NQ-like facts, GSM8K-like word problems). Each
``random_*`` generator draws one item from a ``random.Random``; the sentences (``describe_scene``,
``describe_document``, ``edit_instruction``, ``tell_story``, ...) are built from the ground truth only.

The train / test split is hash-based on an item's kind and canonical ground truth (``split_of``);
``draw_in_split`` samples until an item of the wanted split comes up. Pixels are drawn by
``specdec.vlm.pictures``.
"""

from __future__ import annotations

import hashlib
import json
import random

# The colours shapes come in (all in specdec.vlm.pictures.PALETTE).
COLORS = ["red", "green", "blue", "yellow", "purple", "orange"]
SHAPES = ["circle", "square", "triangle", "diamond"]
POSITIONS = ["top left", "top", "top right", "left", "center", "right", "bottom left", "bottom", "bottom right"]
AT = {
    "top left": "at the top left",
    "top": "at the top",
    "top right": "at the top right",
    "left": "on the left",
    "center": "in the center",
    "right": "on the right",
    "bottom left": "at the bottom left",
    "bottom": "at the bottom",
    "bottom right": "at the bottom right",
}
LINES = ["top", "middle", "bottom"]
LINE_AT = {"top": "at the top", "middle": "in the middle", "bottom": "at the bottom"}
WORDS = [
    "APPLE",
    "BREAD",
    "CHAIR",
    "RIVER",
    "TIGER",
    "LEMON",
    "PIANO",
    "CLOUD",
    "HOUSE",
    "MOUSE",
    "PAPER",
    "STONE",
    "TRAIN",
    "WATER",
    "GRAPE",
    "HONEY",
    "MAPLE",
    "NORTH",
    "OCEAN",
    "PLANT",
    "QUEEN",
    "ROBOT",
    "SUGAR",
    "TABLE",
]
NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]


TEST_PERCENT = 20  # an item is "test" when its hash bucket (0-99) is below this


# ---------------------------------------------------------------------------------------------- english helpers
def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def join_and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def count_phrase(n: int, color: str, shape: str) -> str:
    """``a red circle`` / ``two red circles``."""
    return f"{article(color)} {color} {shape}" if n == 1 else f"{number_word(n)} {color} {shape}s"


def there_are(n: int, noun: str, tail: str) -> str:
    """``There is one shape in the image.`` / ``There are two shapes in the image.``"""
    return f"There {'is' if n == 1 else 'are'} {number_word(n)} {noun}{'' if n == 1 else 's'} {tail}."


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


# ------------------------------------------------------------------------------------------------ splitting
def canonical(gt) -> str:
    return json.dumps(gt, sort_keys=True, separators=(",", ":"))


def split_of(kind: str, gt) -> str:
    """``"test"`` or ``"train"`` from the sha256 of an item's kind and canonical ground truth."""
    bucket = int(hashlib.sha256(f"{kind}:{canonical(gt)}".encode()).hexdigest()[:8], 16) % 100
    return "test" if bucket < TEST_PERCENT else "train"


def draw_in_split(rng: random.Random, split: str, kind: str, sampler, *args):
    """Sample ground truths until one falls into ``split``."""
    for _ in range(10_000):
        gt = sampler(rng, *args)
        if split_of(kind, gt) == split:
            return gt
    raise RuntimeError(f"no {kind} item of split {split!r} found")


# ---------------------------------------------------------------------------------------------- shape scenes
def random_scene(rng: random.Random, n_min: int = 1, n_max: int = 4) -> dict:
    n = rng.randint(n_min, n_max)
    cells = sorted(rng.sample(range(len(POSITIONS)), n))
    return {"shapes": [[rng.choice(SHAPES), rng.choice(COLORS), POSITIONS[c]] for c in cells]}


def _sorted_scene(shapes: list) -> dict:
    return {"shapes": sorted(([s, c, p] for s, c, p in shapes), key=lambda x: POSITIONS.index(x[2]))}


def scene_groups(gt: dict) -> list[tuple[str, str, list[str]]]:
    """``[(color, shape, [positions])]`` in order of first appearance (positions in reading order)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for shape, color, pos in gt["shapes"]:
        groups.setdefault((color, shape), []).append(pos)
    return [(c, s, p) for (c, s), p in groups.items()]


def scene_caption(gt: dict) -> str:
    return join_and([count_phrase(len(p), c, s) for c, s, p in scene_groups(gt)])


def describe_scene(gt: dict) -> str:
    """``There are three shapes: two red circles and a blue square. The red circles are ... .``"""
    n = len(gt["shapes"])
    first = (
        f"There is one shape: {scene_caption(gt)}."
        if n == 1
        else f"There are {number_word(n)} shapes: {scene_caption(gt)}."
    )
    where = []
    for color, shape, positions in scene_groups(gt):
        at = join_and([AT[p] for p in positions])
        where.append(f"The {color} {shape} is {at}." if len(positions) == 1 else f"The {color} {shape}s are {at}.")
    return " ".join([first, *where])


def shape_at(gt: dict, pos: str):
    for shape, color, p in gt["shapes"]:
        if p == pos:
            return shape, color
    return None


def colors_of(gt: dict) -> list[str]:
    return [c for c in COLORS if any(col == c for _, col, _ in gt["shapes"])]


# ------------------------------------------------------------------------------------------------- documents
def random_document(rng: random.Random) -> dict:
    kinds = rng.choice(_DOC_LAYOUTS)
    return {"lines": [rng.choice(WORDS) if k == "w" else str(rng.randint(10, 99)) for k in kinds]}


_DOC_LAYOUTS = ["wnn", "nwn", "nnw", "wwn", "wnw", "nww", "nnn"]  # w: word, n: number (at least one number)


def is_number(line: str) -> bool:
    return line.isdigit()


def document_caption(gt: dict) -> str:
    return f"a document that reads {join_and(gt['lines'])}"


def describe_document(gt: dict) -> str:
    a, b, c = gt["lines"]
    return (
        f"The image shows a document with three lines of text. The top line says {a}, the middle line says "
        f"{b} and the bottom line says {c}."
    )


def read_line(gt: dict, line: str) -> str:
    text = gt["lines"][LINES.index(line)]
    kind = "number" if is_number(text) else "word"
    return f"The {kind} written {LINE_AT[line]} is {text}."


def document_numbers(gt: dict) -> list[int]:
    return [int(x) for x in gt["lines"] if is_number(x)]


# ---------------------------------------------------------------------------------------------------- edits
EDIT_TYPES = ["recolor", "move", "add", "remove"]


def random_edit(rng: random.Random, types=tuple(EDIT_TYPES)) -> dict:
    """``{"before": scene, "after": scene, "edit": {...}}`` with exactly one edit of one of ``types``."""
    kind = rng.choice(list(types))
    before = random_scene(rng, 2 if kind == "remove" else 1, 3)
    shapes = [list(s) for s in before["shapes"]]
    free = [p for p in POSITIONS if shape_at(before, p) is None]
    if kind == "add":
        new = [rng.choice(SHAPES), rng.choice(COLORS), rng.choice(free)]
        edit = {"type": "add", "shape": new[0], "color": new[1], "pos": new[2]}
        shapes.append(new)
    else:
        i = rng.randrange(len(shapes))
        shape, color, pos = shapes[i]
        edit = {"type": kind, "shape": shape, "color": color, "pos": pos}
        if kind == "recolor":
            edit["new_color"] = rng.choice([c for c in COLORS if c != color])
            shapes[i][1] = edit["new_color"]
        elif kind == "move":
            edit["new_pos"] = rng.choice(free)
            shapes[i][2] = edit["new_pos"]
        else:
            del shapes[i]
    return {"before": before, "after": _sorted_scene(shapes), "edit": edit}


def _the(p: str) -> str:
    return "the " + p


def edit_instruction(edit: dict) -> str:
    """IEdit / MagicBrush-like: an instruction that turns the first image into the second."""
    s, c, p = edit["shape"], edit["color"], edit["pos"]
    if edit["type"] == "recolor":
        return f"Change the colour of the {c} {s} {AT[p]} to {edit['new_color']}."
    if edit["type"] == "move":
        return f"Move the {c} {s} from {_the(p)} to {_the(edit['new_pos'])}."
    if edit["type"] == "add":
        return f"Add {article(c)} {c} {s} {AT[p]}."
    return f"Remove the {c} {s} {AT[p]}."


def edit_difference(edit: dict) -> str:
    """Spot-the-difference-like: what changed between the first and the second image."""
    s, c, p = edit["shape"], edit["color"], edit["pos"]
    if edit["type"] == "recolor":
        return f"The {s} {AT[p]} is {edit['new_color']} in the second image instead of {c}."
    if edit["type"] == "move":
        return f"The {c} {s} moved from {_the(p)} to {_the(edit['new_pos'])} in the second image."
    if edit["type"] == "add":
        return f"The second image has a new {c} {s} {AT[p]}."
    return f"The {c} {s} {AT[p]} is missing from the second image."


# --------------------------------------------------------------------------------------------------- stories
_NEIGHBOURS = {
    p: [
        q
        for q in POSITIONS
        if abs(divmod(POSITIONS.index(p), 3)[0] - divmod(POSITIONS.index(q), 3)[0])
        + abs(divmod(POSITIONS.index(p), 3)[1] - divmod(POSITIONS.index(q), 3)[1])
        == 1
    ]
    for p in POSITIONS
}
CONNECTIVES = ["First,", "Then", "Next,", "After that,", "Finally,"]


def random_story(rng: random.Random, frames: int = 5) -> dict:
    """One shape (``shape``) that moves to a neighbouring cell or changes colour in each frame after the first;
    maybe a second shape (``companion``) that stays put. ``{"shape", "positions", "colors", "companion"}``."""
    shape = rng.choice(SHAPES)
    companion = None
    start = rng.choice(POSITIONS)
    if rng.random() < 0.5:
        companion = [
            rng.choice([x for x in SHAPES if x != shape]),
            rng.choice(COLORS),
            rng.choice([p for p in POSITIONS if p != start]),
        ]
    positions, colors = [start], [rng.choice(COLORS)]
    for _ in range(frames - 1):
        pos, color = positions[-1], colors[-1]
        moves = [q for q in _NEIGHBOURS[pos] if companion is None or q != companion[2]]
        if moves and rng.random() < 0.65:
            pos = rng.choice(moves)
        else:
            color = rng.choice([c for c in COLORS if c != color])
        positions.append(pos)
        colors.append(color)
    return {"shape": shape, "positions": positions, "colors": colors, "companion": companion}


def story_frames(gt: dict) -> list[dict]:
    """The shape scene of every frame."""
    frames = []
    for pos, color in zip(gt["positions"], gt["colors"]):
        shapes = [[gt["shape"], color, pos]] + ([list(gt["companion"])] if gt["companion"] else [])
        frames.append(_sorted_scene(shapes))
    return frames


def story_events(gt: dict) -> list[str]:
    """One narrative sentence per frame (``The red circle moves to the top.``)."""
    s = gt["shape"]
    first = f"{capital(article(gt['colors'][0]))} {gt['colors'][0]} {s} is {AT[gt['positions'][0]]}"
    if gt["companion"]:
        cs, cc, cp = gt["companion"]
        first += f" and {article(cc)} {cc} {cs} is {AT[cp]}"
    events = [first + "."]
    for k in range(1, len(gt["positions"])):
        prev_color = gt["colors"][k - 1]
        if gt["positions"][k] != gt["positions"][k - 1]:
            events.append(f"The {prev_color} {s} moves to {_the(gt['positions'][k])}.")
        else:
            events.append(f"The {prev_color} {s} turns {gt['colors'][k]}.")
    return events


def tell_story(gt: dict) -> str:
    """PororoSV-like: the whole story, one sentence per picture with connectives."""
    out = []
    for word, event in zip(CONNECTIVES, story_events(gt)):
        body = event[0].lower() + event[1:]
        out.append(f"{word} {body}")
    return " ".join(out)


# ------------------------------------------------------------------------------------------ text-only items
_SIDES = {"triangle": 3, "square": 4, "rectangle": 4, "diamond": 4, "pentagon": 5, "hexagon": 6, "octagon": 8}
_MIXES = {
    ("red", "yellow"): "orange",
    ("blue", "yellow"): "green",
    ("red", "blue"): "purple",
    ("red", "white"): "pink",
    ("black", "white"): "gray",
    ("blue", "white"): "light blue",
}
_OBJECT_COLORS = {
    "a ripe banana": "yellow",
    "fresh grass": "green",
    "the sky on a clear day": "blue",
    "fresh snow": "white",
    "a lump of coal": "black",
    "a ripe tomato": "red",
    "a lemon": "yellow",
    "a ripe cherry": "red",
    "a summer leaf": "green",
    "a ripe orange": "orange",
    "a ripe plum": "purple",
    "a fire truck": "red",
    "a pumpkin": "orange",
    "a crow": "black",
    "milk": "white",
    "a lime": "green",
}
_OPPOSITES = {
    "top": "bottom",
    "bottom": "top",
    "left": "right",
    "right": "left",
    "up": "down",
    "down": "up",
    "big": "small",
    "small": "big",
    "black": "white",
    "white": "black",
}
_NAMES = {"Anna": "she", "Ben": "he", "Mia": "she", "Tom": "he", "Lily": "she", "Sam": "he", "Zoe": "she", "Max": "he"}


def random_fact(rng: random.Random) -> dict:
    """NQ-like fact question about shapes and colours: ``{"q", "a"}``."""
    kind = rng.choice(["sides", "which", "mix", "object", "opposite", "letters", "circle"])
    if kind == "sides":
        s = rng.choice(sorted(_SIDES))
        return {
            "q": f"How many sides does {article(s)} {s} have?",
            "a": f"{capital(article(s))} {s} has {number_word(_SIDES[s])} sides.",
        }
    if kind == "which":
        s = rng.choice(["triangle", "pentagon", "hexagon", "octagon"])
        k = number_word(_SIDES[s])
        return {"q": f"Which shape has {k} sides?", "a": f"{capital(article(s))} {s} has {k} sides."}
    if kind == "mix":
        (a, b), c = rng.choice(sorted(_MIXES.items()))
        if rng.random() < 0.5:
            a, b = b, a
        return {"q": f"What colour do you get when you mix {a} and {b}?", "a": f"Mixing {a} and {b} gives {c}."}
    if kind == "object":
        o, c = rng.choice(sorted(_OBJECT_COLORS.items()))
        return {"q": f"What colour is {o}?", "a": f"{capital(o)} is {c}."}
    if kind == "opposite":
        a, b = rng.choice(sorted(_OPPOSITES.items()))
        return {"q": f"What is the opposite of {a}?", "a": f"The opposite of {a} is {b}."}
    if kind == "letters":
        w = rng.choice(COLORS + SHAPES)
        return {"q": f"How many letters are in the word {w}?", "a": f"The word {w} has {number_word(len(w))} letters."}
    return {"q": "How many corners does a circle have?", "a": "A circle has no corners, it is perfectly round."}


def random_word_problem(rng: random.Random) -> dict:
    """GSM8K-like one- or two-step arithmetic with a worked answer: ``{"q", "a", "result"}``."""
    name = rng.choice(sorted(_NAMES))
    pron = _NAMES[name]
    color, shape = rng.choice(COLORS), rng.choice(SHAPES)
    kind = rng.choice(["add", "sub", "rows", "sides", "two", "add_sub"])
    if kind == "add":
        a, b = rng.randint(2, 30), rng.randint(2, 30)
        r = a + b
        q = f"{name} has {a} {color} {shape}s and draws {b} more. How many {color} {shape}s does {pron} have now?"
        a_ = f"{name} starts with {a} {color} {shape}s and draws {b} more, so {pron} has {a} + {b} = {r}."
    elif kind == "sub":
        a = rng.randint(5, 40)
        b = rng.randint(1, a - 1)
        r = a - b
        q = f"{name} has {a} {color} {shape}s and erases {b} of them. How many are left?"
        a_ = f"{name} starts with {a} {color} {shape}s and erases {b}, so {a} - {b} = {r} are left."
    elif kind == "rows":
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        r = a * b
        q = f"A box holds {a} rows of {b} {color} {shape}s. How many {shape}s are in the box?"
        a_ = f"There are {a} rows of {b} {shape}s, so the box holds {a} x {b} = {r} {shape}s."
    elif kind == "sides":
        s = rng.choice(["triangle", "square", "pentagon", "hexagon"])
        n = rng.randint(2, 9)
        k = _SIDES[s]
        r = n * k
        q = f"How many sides do {n} {s}s have together?"
        a_ = f"Each {s} has {k} sides, so {n} {s}s have {n} x {k} = {r} sides."
    elif kind == "two":
        c2 = rng.choice([c for c in COLORS if c != color])
        s2 = rng.choice([s for s in SHAPES if s != shape])
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        r = a + b
        q = f"{name} has {a} {color} {shape}s and {b} {c2} {s2}s. How many shapes does {pron} have in total?"
        a_ = f"{name} has {a} + {b} = {r} shapes in total."
    else:
        a, b = rng.randint(3, 20), rng.randint(2, 20)
        c = rng.randint(1, a + b - 1)
        r = a + b - c
        q = (
            f"{name} has {a} {color} {shape}s. {capital(pron)} draws {b} more and then erases {c}. "
            f"How many {color} {shape}s does {pron} have now?"
        )
        a_ = (
            f"{name} starts with {a} {color} {shape}s. After drawing {b} more {pron} has {a} + {b} = {a + b}. "
            f"After erasing {c} {pron} has {a + b} - {c} = {r}."
        )
    return {"q": q, "a": f"{a_} The answer is {r}.", "result": r}
