"""MMLU-like questions about the Python standard library for the CoS task suites (``specdec.cos.tasks``).

4-option questions whose ground truth is found by importing the modules and evaluating the expressions in the
running Python (never written by hand): which module defines a function or class, which name a module has,
which name is a method of a builtin type, what an expression evaluates to. Question generators are registered
by kind; the split is decided by a hash of each question's fact.
"""

from __future__ import annotations

import bisect
import builtins
import collections
import fractions
import functools
import heapq
import importlib
import inspect
import itertools
import json
import math
import operator
import random
import statistics

from specdec.cos.rows import check_n, check_split, hash_split, max_tries, short_hash

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
    check_split(split)
    check_n(n, allow_none=False)
    rng = random.Random(f"mmlu:{split}:{seed}")
    rows, seen, positions = [], set(), []
    for _ in range(max_tries(n)):
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
                "id": f"mmlu/{split}/{short_hash(fact)}",
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


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["EXPRESSION_NAMESPACE", "LETTERS", "MMLU_KINDS", "MMLU_MODULES", "MMLU_TYPES"]
