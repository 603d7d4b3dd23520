"""Synthetic multimodal scenarios for TABED-style experiments: tiny rendered images with exact ground truth.

The TABED paper benchmarks LVLM drafting on seven image datasets (LLaVA-Bench in-the-wild, DocVQA, POPE,
MM-Vet, IEdit, MagicBrush, Spot-the-Diff), two out-of-distribution five-image story sets (PororoSV, VIST),
second turns, and text-only NLP turns (NQ, GSM8K). This module rebuilds each of those *scenarios* offline
from images drawn with PIL, so a tiny LLaVA trained here (``specdec.tabed.train``) can be evaluated on the
same mix of inputs.

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
    ``</s>``. The models add ``<s>`` in front (``specdec.tabed.data.encode_prompt`` tokenises a prompt and
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

import hashlib
import json
import random

IMAGE_SIZE = 64
PATCH_SIZE = 16
PATCHES_PER_IMAGE = (IMAGE_SIZE // PATCH_SIZE) ** 2  # 16 image tokens per image
IMAGE_PLACEHOLDER = "<image>"
USER, ASSISTANT, TURN_END = "USER: ", " ASSISTANT:", "</s>"

# Every pixel of every image has one of these colours (index = palette index, stored by train_llava's data).
PALETTE: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "gray": (128, 128, 128),
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 70, 220),
    "yellow": (240, 200, 20),
    "purple": (140, 60, 180),
    "orange": (245, 130, 20),
}
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
TEST_PERCENT = 20  # an item is "test" when its hash bucket (0-99) is below this

_CAPTIONS: dict[str, str] = {}  # sha256(mode, size, pixels) -> caption, filled by every render


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


def _draw(rng: random.Random, split: str, kind: str, sampler, *args):
    """Sample ground truths until one falls into ``split``."""
    for _ in range(10_000):
        gt = sampler(rng, *args)
        if split_of(kind, gt) == split:
            return gt
    raise RuntimeError(f"no {kind} item of split {split!r} found")


# -------------------------------------------------------------------------------------------------- rendering
def _font():
    from PIL import ImageFont

    # The built-in bitmap font (what load_default() returns without FreeType): identical on every platform.
    loader = getattr(ImageFont, "load_default_imagefont", None)
    return loader() if loader is not None else ImageFont.load_default()


def image_key(image) -> str:
    return hashlib.sha256(f"{image.mode}{image.size}".encode() + image.tobytes()).hexdigest()


def _register(image, caption: str):
    image.info["caption"] = caption
    _CAPTIONS[image_key(image)] = caption
    return image


def _cell_box(pos: str, size: int = 14) -> tuple[int, int, int, int]:
    row, col = divmod(POSITIONS.index(pos), 3)
    cx = round((col + 0.5) * IMAGE_SIZE / 3)
    cy = round((row + 0.5) * IMAGE_SIZE / 3)
    half = size // 2
    return cx - half, cy - half, cx + half, cy + half


def _draw_shape(draw, shape: str, color: str, pos: str) -> None:
    x0, y0, x1, y1 = _cell_box(pos)
    fill = PALETTE[color]
    if shape == "circle":
        draw.ellipse((x0, y0, x1, y1), fill=fill)
    elif shape == "square":
        draw.rectangle((x0 + 1, y0 + 1, x1 - 1, y1 - 1), fill=fill)
    elif shape == "triangle":
        draw.polygon([((x0 + x1) // 2, y0), (x0, y1), (x1, y1)], fill=fill)
    elif shape == "diamond":
        cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
        draw.polygon([(cx, y0), (x1, cy), (cx, y1), (x0, cy)], fill=fill)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def render_scene(gt: dict, border: bool = False):
    """A shape scene ``{"shapes": [[shape, color, position], ...]}`` as a 64 x 64 RGB image (``border``:
    the gray frame of story pictures)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), PALETTE["white"])
    draw = ImageDraw.Draw(image)
    if border:
        draw.rectangle((0, 0, IMAGE_SIZE - 1, IMAGE_SIZE - 1), outline=PALETTE["gray"], width=1)
    for shape, color, pos in gt["shapes"]:
        _draw_shape(draw, shape, color, pos)
    return _register(image, scene_caption(gt))


def render_document(gt: dict):
    """A document ``{"lines": [top, middle, bottom]}`` as black bitmap text on white."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), PALETTE["white"])
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"
    font = _font()
    for line, y in zip(gt["lines"], (4, 26, 48)):
        draw.text((4, y), line, fill=PALETTE["black"], font=font)
    return _register(image, document_caption(gt))


def render_caption(images) -> list[str]:
    """The ground-truth short caption of each image (one PIL image or a list): the caption-drafting captioner."""
    if not isinstance(images, (list, tuple)):
        images = [images]
    out = []
    for image in images:
        caption = image.info.get("caption") or _CAPTIONS.get(image_key(image))
        if caption is None:
            raise KeyError(
                "image not rendered by specdec.tabed.scenes in this process (no caption registered); "
                "render it with scenario_suite / render_scene / render_document first"
            )
        out.append(caption)
    return out


def palette_indices(image):
    """``uint8`` array ``[H * W]``: the palette index (position in ``PALETTE``) of every pixel, row-major;
    raises ``ValueError`` on a colour outside the palette."""
    import numpy as np

    rgb = np.asarray(image.convert("RGB"), dtype=np.int64).reshape(-1, 3)
    codes = rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]
    palette = np.array([r << 16 | g << 8 | b for r, g, b in PALETTE.values()])
    order = np.argsort(palette)
    pos = np.clip(np.searchsorted(palette[order], codes), 0, len(palette) - 1)
    if not np.array_equal(palette[order][pos], codes):
        raise ValueError("image has a pixel colour outside the palette")
    return order[pos].astype(np.uint8)


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


# ----------------------------------------------------------------------------------------- first turns
def _shape_image(gt):
    return ("shapes", gt, lambda: render_scene(gt))


def _doc_image(gt):
    return ("document", gt, lambda: render_document(gt))


def _first_turn(scenario: str, rng: random.Random, split: str) -> dict:
    """``{"user", "answer", "gt", "images": [(kind, gt, render)], "items": [(kind, gt)]}`` of a first turn."""
    if scenario in ("describe", "mmvet") and rng.random() < (0.3 if scenario == "describe" else 0.25):
        doc = _draw(rng, split, "document", random_document)
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
    if scenario == "describe":
        scene = _draw(rng, split, "shapes", random_scene)
        return _turn("<image>\nDescribe the image.", describe_scene(scene), {"scene": scene}, [_shape_image(scene)])
    if scenario == "docvqa":
        doc = _draw(rng, split, "document", random_document)
        line = rng.choice(LINES)
        text = doc["lines"][LINES.index(line)]
        kind = rng.choice(["number" if is_number(text) else "word", "any"])
        q = f"What is written {LINE_AT[line]}?" if kind == "any" else f"What {kind} is written {LINE_AT[line]}?"
        return _turn(f"<image>\n{q}", read_line(doc, line), {"document": doc, "line": line}, [_doc_image(doc)])
    if scenario == "pope":
        scene = _draw(rng, split, "shapes", random_scene)
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
    if scenario == "mmvet":
        scene = _draw(rng, split, "shapes", random_scene)
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
    if scenario in ("iedit", "magicbrush", "spot"):
        types = {"iedit": ("recolor", "move"), "magicbrush": ("add", "remove"), "spot": tuple(EDIT_TYPES)}[scenario]
        while True:  # both pictures must be shape scenes of the split
            edit = random_edit(rng, types)
            if split_of("shapes", edit["before"]) == split and split_of("shapes", edit["after"]) == split:
                break
        images = [_shape_image(edit["before"]), _shape_image(edit["after"])]
        if scenario == "spot":
            return _turn(
                "<image>\n<image>\nWhat changed between the two images?", edit_difference(edit["edit"]), edit, images
            )
        q = (
            "Please provide instructions for editing the first image to match the second image."
            if scenario == "iedit"
            else "Write the edit instruction that turns the first image into the second."
        )
        return _turn(f"<image>\n<image>\n{q}", edit_instruction(edit["edit"]), edit, images)
    if scenario in ("psv", "vist"):
        story = _draw(rng, split, "story", random_story)
        images = [("story", story, (lambda s=s: render_scene(s, border=True))) for s in story_frames(story)]
        if scenario == "psv":
            user = "<image>\n" * 5 + "Tell the story of these pictures."
            return _turn(user, tell_story(story), {"story": story}, images, items=[("story", story)])
        events = story_events(story)
        user = "With the captions of the first four pictures, how does the story end in the last picture?\n"
        user += "".join(f"<image>\nCaption #{k + 1}: {e}\n" for k, e in enumerate(events[:4]))
        user += "<image>\nCaption #5:"
        return _turn(user, events[4], {"story": story}, images, items=[("story", story)])
    if scenario == "nq":
        fact = _draw(rng, split, "text", random_fact)
        return _turn(fact["q"], fact["a"], {"fact": fact}, [], items=[("text", fact)])
    if scenario == "gsm8k":
        problem = _draw(rng, split, "text", random_word_problem)
        return _turn(problem["q"], problem["a"], {"problem": problem}, [], items=[("text", problem)])
    raise ValueError(f"unknown scenario {scenario!r}; known: {sorted(PAPER_NAME)}")


def _turn(user, answer, gt, images, items=None) -> dict:
    items = items if items is not None else [(kind, g) for kind, g, _ in images]
    return {"user": user, "answer": answer, "gt": gt, "images": images, "items": items}


# ----------------------------------------------------------------------------------------- second turns
def _follow_up(scenario: str, first: dict, rng: random.Random) -> tuple[str, str]:
    """A follow-up question on the first turn and its answer (some need the image, some only the first answer)."""
    gt = first["gt"]
    if "document" in gt and scenario in ("describe", "mmvet", "docvqa"):
        doc = gt["document"]
        nums = document_numbers(doc)
        if scenario == "docvqa":
            text = doc["lines"][LINES.index(gt["line"])]
            if rng.random() < 0.5:  # needs the image again
                other = rng.choice([x for x in LINES if x != gt["line"]])
                return f"And what is written {LINE_AT[other]}?", read_line(doc, other)
            if is_number(text):
                k = rng.randint(1, 9)
                return f"What is that number plus {k}?", f"{text} plus {k} is {int(text) + k}."
            return ("How many letters does that word have?", f"The word {text} has {number_word(len(text))} letters.")
        if scenario == "describe":
            if len(nums) >= 2 and rng.random() < 0.5:
                return (
                    "What is the sum of the numbers?",
                    f"The numbers are {join_and([str(n) for n in nums])}, and "
                    f"{' + '.join(str(n) for n in nums)} = {sum(nums)}.",
                )
            words = [x for x in doc["lines"] if not is_number(x)]
            n = len(words)
            return ("How many words are in the document?", there_are(n, "word", "in the document"))
        if gt["task"] == "doc_sum":
            hi, lo = max(nums[:2]), min(nums[:2])
            return (
                "What is the difference between the first two numbers?",
                f"The first two numbers are {nums[0]} and {nums[1]}, so the difference is {hi} - {lo} = {hi - lo}.",
            )
        return "And what is it plus one?", f"{nums[0]} plus 1 is {nums[0] + 1}."
    if scenario == "describe":
        scene = gt["scene"]
        choice = rng.choice(["total", "colors", "is_there"])
        n = len(scene["shapes"])
        if choice == "total":
            return ("And how many shapes are there in total?", there_are(n, "shape", "in total"))
        if choice == "colors":
            cols = colors_of(scene)
            return (
                "Which colours appear in the image?",
                f"The colour in the image is {cols[0]}."
                if len(cols) == 1
                else f"The colours in the image are {join_and(cols)}.",
            )
        shape = rng.choice(SHAPES)
        k = sum(s == shape for s, _, _ in scene["shapes"])
        return (
            f"Is there {article(shape)} {shape} in the image?",
            "Yes, t" + there_are(k, shape, "in the image")[1:] if k else f"No, there is no {shape} in the image.",
        )
    if scenario == "pope":
        scene = gt["scene"]
        if gt["yes"]:
            positions = [p for s, c, p in scene["shapes"] if (s, c) == (gt["shape"], gt["color"])]
            at = join_and([AT[p] for p in positions])
            return (
                "Where is it?",
                f"The {gt['color']} {gt['shape']} is {at}."
                if len(positions) == 1
                else f"There are {number_word(len(positions))} {gt['color']} {gt['shape']}s, {at}.",
            )
        return "What shapes are in the image then?", f"The image shows {scene_caption(scene)}."
    if scenario == "mmvet":
        scene, task = gt["scene"], gt["task"]
        n = len(scene["shapes"])
        if task == "count":
            k = rng.randint(1, 3)
            return (
                f"And if we add {number_word(k)} more shape{'' if k == 1 else 's'}, how many will there be?",
                f"There will be {n} + {k} = {n + k} shapes.",
            )
        if task == "count_color":
            return ("And how many shapes are there in total?", there_are(n, "shape", "in total"))
        if task == "where":
            other = rng.choice([p for p in POSITIONS if p != gt["pos"]])
            hit = shape_at(scene, other)
            return (
                f"And what is {AT[other]}?",
                f"There is {article(hit[1])} {hit[1]} {hit[0]} {AT[other]}."
                if hit
                else f"There is nothing {AT[other]}.",
            )
        shape, color = shape_at(scene, gt["pos"])
        return "And what shape is it?", f"The {color} shape {AT[gt['pos']]} is {article(shape)} {shape}."
    if scenario in ("iedit", "magicbrush", "spot"):
        edit = gt["edit"]
        choice = rng.random() < 0.5
        if scenario == "iedit" and choice:
            if edit["type"] == "recolor":
                return (
                    "What colour was the shape before the edit?",
                    f"The {edit['shape']} was {edit['color']} before the edit.",
                )
            return (
                "Where was the shape before the edit?",
                f"The {edit['color']} {edit['shape']} was {AT[edit['pos']]} before the edit.",
            )
        if scenario == "spot" and choice:
            return "Describe the first image.", describe_scene(gt["before"])
        which, scene = ("first", gt["before"]) if scenario == "magicbrush" and choice else ("second", gt["after"])
        n = len(scene["shapes"])
        return (f"How many shapes are in the {which} image?", there_are(n, "shape", f"in the {which} image"))
    raise ValueError(f"scenario {scenario!r} has no second turn")


# ------------------------------------------------------------------------------------------------- the suite
def chat_prompt(turns: list[tuple[str, str | None]]) -> str:
    """``USER: <u1> ASSISTANT: <a1></s>USER: <u2> ASSISTANT:`` (the last reply left open)."""
    out = []
    for user, reply in turns:
        out.append(f"{USER}{user}{ASSISTANT}" + (f" {reply}{TURN_END}" if reply is not None else ""))
    return "".join(out)


def make_row(scenario: str, turn: int, rng: random.Random, split: str) -> dict:
    """One row of the suite (without ``id``)."""
    if turn == 1:
        first = _first_turn(scenario, rng, split)
        turns = [(first["user"], None)]
        answer, gt, items, images = first["answer"], first["gt"], first["items"], first["images"]
    elif turn == 2:
        if scenario in ("nq", "gsm8k"):  # an unrelated image conversation, then a text-only question
            first = _first_turn(rng.choice(["describe", "docvqa", "pope", "mmvet"]), rng, split)
            second = _first_turn(scenario, rng, split)
            question, answer = second["user"], second["answer"]
            gt = {"first": first["gt"], **second["gt"]}
            items = first["items"] + second["items"]
        else:
            first = _first_turn(scenario, rng, split)
            question, answer = _follow_up(scenario, first, rng)
            gt = {"first": first["gt"], "follow_up": question}
            items = first["items"]
        turns = [(first["user"], first["answer"]), (question, None)]
        images = first["images"]
    else:
        raise ValueError(f"turn must be 1 or 2, got {turn}")
    pil = [render() for _, _, render in images]
    return {
        "scenario": scenario,
        "turn": turn,
        "split": split,
        "images": pil,
        "prompt": chat_prompt(turns),
        "answer": answer,
        "caption": render_caption(pil),
        "gt": gt,
        "items": [[kind, g] for kind, g in items],
    }


def scenario_suite(split: str, n_per_scenario: int, seed: int = 0, scenarios=None) -> list[dict]:
    """Rows ``{"id", "scenario", "turn", "images", "prompt", "answer", "caption", "gt", "items", "split"}`` for
    every ``(scenario, turn)`` of ``SCENARIOS``, ``n_per_scenario`` each, in a fixed order (``scenarios``: keep
    only these names or ``(name, turn)`` pairs).

    ``prompt`` holds one ``<image>`` per image; ``answer`` is the reference reply (without the leading space and
    ``</s>``); ``caption`` one short caption per image; ``items`` the ``[kind, ground truth]`` the split is
    decided on. Deterministic in ``(split, n_per_scenario, seed)``; the first rows do not depend on ``n``.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    wanted = None if scenarios is None else {x if isinstance(x, str) else tuple(x) for x in scenarios}
    chosen = [(s, t) for s, t in SCENARIOS if wanted is None or s in wanted or (s, t) in wanted]
    rows = []
    for scenario, turn in chosen:
        rng = random.Random(f"scenes-{seed}-{split}-{scenario}-{turn}")
        for i in range(n_per_scenario):
            row = make_row(scenario, turn, rng, split)
            rows.append({"id": f"{scenario}-t{turn}-{split}-{seed}-{i:05d}", **row})
    return rows


def images_to_pixels(images):
    """``FloatTensor[n, 3, 64, 64]``: the pixel normalisation of 64 x 64 RGB images (what the saved processor's
    image processor computes: rescale by 1/255, then (x - IMAGE_MEAN) / IMAGE_STD; no resize for 64 x 64 input).
    White (the background) maps to 0."""
    import numpy as np
    import torch

    arr = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) for im in images]) / 255.0
    x = torch.from_numpy(arr).permute(0, 3, 1, 2)
    mean = torch.tensor(IMAGE_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGE_STD).view(1, 3, 1, 1)
    return (x - mean) / std


# Pixel normalisation of the tiny LLaVA models: white -> 0, black -> -2 in every channel. NOT the CLIP mean / std
# (0.48, 0.46, 0.41) / (0.27, 0.26, 0.28): under it the white background (~90% of every pixel) becomes a large
# constant input (+1.9..+2.1 in every channel) that the bias-free patch embedding turns into the same big vector
# for every patch; after CLIP's pre-layernorm the content and position parts are a small remainder, training
# shrinks them further within ~40 steps, the vision features become constant and the text model learns to
# ignore the images (trained tabed-target: loss with blank images == loss with the real ones). With white at 0
# an empty patch contributes nothing and only the shapes / text move the patch embeddings.
IMAGE_MEAN = (1.0, 1.0, 1.0)
IMAGE_STD = (0.5, 0.5, 0.5)
