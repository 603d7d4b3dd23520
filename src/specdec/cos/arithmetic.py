"""GSM8K-like word problems for the CoS task suites (``specdec.cos.tasks``): templates with worked solutions.

Each template of ``ARITHMETIC_TEMPLATES`` draws its quantities from a ``random.Random`` and writes the question
and a multi-step solution in full sentences, every equation written out (``3 * 4 = 12``); ``arithmetic`` draws
distinct questions of one split (hash-based, so train and test never share a question).
"""

from __future__ import annotations

import random

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


def arithmetic(n: int, split: str = "test", seed: int = 0) -> list[dict]:
    """``n`` GSM8K-like word problems of one split (distinct questions; train and test never share one).

    Rows: ``{"id", "task": "gsm8k", "prompt": "Question: …\\nAnswer:", "reference": " <steps> The answer is
    N.", "answer": N, "template", "numbers"}``; ``numbers`` holds the quantities the template drew, so the
    answer can be recomputed. Every equation in the reference is written out (``3 * 4 = 12``).
    """
    check_split(split)
    check_n(n, allow_none=False)
    rng = random.Random(f"gsm8k:{split}:{seed}")
    names = sorted(ARITHMETIC_TEMPLATES)
    rows, seen = [], set()
    for _ in range(max_tries(n)):
        if len(rows) == n:
            break
        template = rng.choice(names)
        question, solution, answer, numbers = ARITHMETIC_TEMPLATES[template](rng)
        if question in seen or hash_split(question) != split:
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
