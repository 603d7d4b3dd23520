"""GSM8K-like word problems for the CoS task suites (``specdec.cos.tasks``): templates with worked solutions.

Each template draws its quantities from a ``random.Random`` and writes the question and a multi-step solution in
full sentences, every equation written out (``3 * 4 = 12``); ``arithmetic`` draws distinct questions of one split.
The train split comes from ``ARITHMETIC_TEMPLATES``, the test split from ``HELD_OUT_TEMPLATES`` only: a test
problem's story and wording were never trained on, as GSM8K's test problems are other problems than its training
ones (``template_overlap`` measures it).
"""

from __future__ import annotations

import random
import re

from specdec.cos.rows import check_n, check_split, hash_split, max_tries, short_hash

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


# Held-out templates: the test split draws only from these, and no training document was written from them, so a
# test problem is new in its story and its wording, not only in its numbers (GSM8K's test problems are other
# problems than its training ones). ``template_overlap`` checks it.
_CROPS = ["tomato", "carrot", "pepper", "bean", "lettuce", "pumpkin"]
_PORTIONS = [("cake", "cakes"), ("pie", "pies"), ("pizza", "pizzas"), ("loaf of bread", "loaves of bread")]
_INGREDIENTS = ["cups of flour", "eggs", "spoons of sugar", "grams of butter"]


def _t_recipe(rng):
    singular, plural = rng.choice(_PORTIONS)
    ingredient = rng.choice(_INGREDIENTS)
    per, batch, wanted = rng.randint(2, 9), rng.randint(2, 4), rng.randint(3, 12)
    needed = per * batch
    answer = per * wanted
    question = (
        f"A recipe uses {needed} {ingredient} to make {batch} {plural}. How many {ingredient} are needed to "
        f"make {wanted} {plural}?"
    )
    solution = (
        f"One {singular} takes {needed} / {batch} = {per} {ingredient}. For {wanted} {plural} the baker needs "
        f"{per} * {wanted} = {answer} {ingredient}."
    )
    return question, solution, answer, {"needed": needed, "batch": batch, "wanted": wanted}


def _t_garden(rng):
    crop = rng.choice(_CROPS)
    rows, per_row = rng.randint(3, 12), rng.randint(4, 20)
    planted = rows * per_row
    lost = rng.randint(1, planted - 1)
    answer = planted - lost
    question = (
        f"A gardener sets out {rows} rows of {crop} plants, {per_row} plants to a row. A late frost kills "
        f"{lost} of them. How many {crop} plants survive?"
    )
    solution = (
        f"The gardener sets out {rows} * {per_row} = {planted} plants. After the frost {planted} - {lost} = "
        f"{answer} plants are left alive."
    )
    return question, solution, answer, {"rows": rows, "per_row": per_row, "lost": lost}


def _t_bus(rng):
    start = rng.randint(10, 60)
    off1 = rng.randint(1, start - 1)
    on1 = rng.randint(1, 30)
    after1 = start - off1 + on1
    off2 = rng.randint(1, after1 - 1)
    after_off = start - off1
    answer = after1 - off2
    question = (
        f"A bus leaves the depot carrying {start} passengers. At the first stop {off1} people step off and "
        f"{on1} climb aboard. At the second stop {off2} people step off. How many passengers remain on the bus?"
    )
    solution = (
        f"After {off1} step off, {start} - {off1} = {after_off} passengers remain, and with {on1} new riders "
        f"there are {after_off} + {on1} = {after1}. At the second stop {after1} - {off2} = {answer} remain."
    )
    return question, solution, answer, {"start": start, "off1": off1, "on1": on1, "off2": off2}


def _t_tank(rng):
    rate, minutes = rng.randint(2, 15), rng.randint(3, 20)
    already = rng.randint(5, 200)
    capacity = already + rate * minutes
    missing = capacity - already
    answer = minutes
    question = (
        f"A water tank holds {capacity} liters. It already contains {already} liters, and a pump adds {rate} "
        f"liters per minute. After how many minutes is the tank full?"
    )
    solution = (
        f"The tank still lacks {capacity} - {already} = {missing} liters. At {rate} liters per minute the pump "
        f"needs {missing} / {rate} = {answer} minutes."
    )
    return question, solution, answer, {"capacity": capacity, "already": already, "rate": rate}


HELD_OUT_TEMPLATES = {"recipe": _t_recipe, "garden": _t_garden, "bus": _t_bus, "tank": _t_tank}


def arithmetic(n: int, split: str = "test", seed: int = 0) -> list[dict]:
    """``n`` GSM8K-like word problems of one split (distinct questions; train and test never share one).

    Rows: ``{"id", "task": "gsm8k", "prompt": "Question: …\\nAnswer:", "reference": " <steps> The answer is
    N.", "answer": N, "template", "numbers"}``; ``numbers`` holds the quantities the template drew, so the
    answer can be recomputed. Every equation in the reference is written out (``3 * 4 = 12``).
    """
    check_split(split)
    check_n(n, allow_none=False)
    rng = random.Random(f"gsm8k:{split}:{seed}")
    templates = ARITHMETIC_TEMPLATES if split == "train" else HELD_OUT_TEMPLATES
    names = sorted(templates)
    rows, seen = [], set()
    for _ in range(max_tries(n)):
        if len(rows) == n:
            break
        template = rng.choice(names)
        question, solution, answer, numbers = templates[template](rng)
        # train keeps its hash split, so its documents (and the shipped CoS zoo trained on them) stay as they were
        if question in seen or (split == "train" and hash_split(question) != split):
            continue
        seen.add(question)
        rows.append(
            {
                "id": f"gsm8k/{split}/{short_hash(question)}",
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


def skeleton_ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    """Word ``n``-grams of ``text`` with every number written ``#`` and case folded: what a template leaves of a
    problem once its quantities are taken out."""
    words = re.sub(r"\d+", "#", text.lower()).split()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def template_overlap(test_rows: list[dict], train_rows: list[dict], n: int = 8) -> int:
    """How many ``test_rows`` share a numbers-free word ``n``-gram (``skeleton_ngrams``) of their question and
    worked solution with any of ``train_rows``: 0 means no test problem repeats a training template's wording."""
    seen = set().union(*(skeleton_ngrams(r["prompt"] + r["reference"], n) for r in train_rows))
    return sum(bool(skeleton_ngrams(r["prompt"] + r["reference"], n) & seen) for r in test_rows)


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["ARITHMETIC_TEMPLATES", "HELD_OUT_TEMPLATES", "template_overlap"]
