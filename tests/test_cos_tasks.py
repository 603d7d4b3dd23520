"""The CoS task suites (tiny profile): real HumanEval data, correct ground truth, disjoint splits, clear errors."""

import builtins
import hashlib
import importlib
import json
import math
import os
import re
import subprocess
import sys
import time

import pytest

from specdec import hub
from specdec.cos import arithmetic as ca
from specdec.cos import tasks as ct

# Each template's answer from its stored numbers, written independently of the generator.
ANSWERS = {
    "change": lambda x: x["paid"] - x["count"] * x["price"],
    "two_items": lambda x: x["count1"] * x["price1"] + x["count2"] * x["price2"],
    "share": lambda x: x["boxes"] * x["per_box"] / x["friends"],
    "rate": lambda x: x["rate"] * (x["hours1"] + x["hours2"]),
    "compare": lambda x: x["count"] + 2 * x["factor"] * x["count"] - x["fewer"],
    "days": lambda x: 3 * x["monday"] + x["tuesday"] + x["wednesday"],
    "savings": lambda x: x["weekly"] * x["weeks"] - x["spent"],
    "ages": lambda x: 2 * x["age"] + x["older_by"] + 2 * x["years"],
    "school": lambda x: x["classes"] * x["per_class"] - x["absent"],
    "sale": lambda x: x["count"] * (x["price"] - x["discount"]),
    # held out: the test split's templates
    "recipe": lambda x: x["needed"] / x["batch"] * x["wanted"],
    "garden": lambda x: x["rows"] * x["per_row"] - x["lost"],
    "bus": lambda x: x["start"] - x["off1"] + x["on1"] - x["off2"],
    "tank": lambda x: (x["capacity"] - x["already"]) / x["rate"],
}
EQUATION = re.compile(r"(\d+(?: [-+*/] \d+)+) = (\d+)")


def test_humaneval_is_the_real_dataset_and_solutions_pass_their_tests():
    rows = ct.humaneval()
    assert len(rows) == 164
    assert [r["task_id"] for r in rows[:3]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert rows[-1]["task_id"] == "HumanEval/163"
    first = rows[0]
    assert first["prompt"].startswith("from typing import List\n\n\ndef has_close_elements(")
    assert first["entry_point"] == "has_close_elements" and first["task"] == "humaneval"
    assert "def check(candidate)" in first["test"]
    assert len({r["id"] for r in rows}) == 164
    assert [r["id"] for r in ct.humaneval(5)] == [f"HumanEval/{i}" for i in range(5)]
    for row in rows[:3]:  # the reference is the continuation of the prompt: together they pass the tests
        namespace = {}
        exec(row["prompt"] + row["reference"] + "\n" + row["test"], namespace)  # noqa: S102 - trusted data
        namespace["check"](namespace[row["entry_point"]])


def test_generation_is_deterministic_and_seeded():
    assert ct.arithmetic(40, "test", seed=3) == ct.arithmetic(40, "test", seed=3)
    assert ct.multiple_choice(40, "train", seed=3) == ct.multiple_choice(40, "train", seed=3)
    assert ct.summaries(20, "test") == ct.summaries(20, "test")
    assert ct.arithmetic(20, seed=0) != ct.arithmetic(20, seed=1)
    assert ct.multiple_choice(20, seed=0) != ct.multiple_choice(20, seed=1)
    assert [r["id"] for r in ct.summaries(20, seed=0)] != [r["id"] for r in ct.summaries(20, seed=1)]


def _digest():
    rows = ct.arithmetic(30, "test") + ct.multiple_choice(60, "test") + ct.multiple_choice(60, "train")
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def test_generation_does_not_depend_on_the_hash_seed():
    """Another interpreter with another string-hash seed (set iteration order) generates the same rows."""
    other_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    here = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONHASHSEED=other_seed, PYTHONPATH=here + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", "from test_cos_tasks import _digest; print(_digest())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == _digest()


@pytest.mark.parametrize("task,n", [("gsm8k", 400), ("mmlu", 400), ("cnndm", None)])
def test_train_and_test_share_no_prompt(task, n):
    train = ct.load_task(task, n, split="train")
    test = ct.load_task(task, n, split="test")
    if n is None:  # cnndm: every usable article of the corpus' prose (test: the 16 never read in training)
        assert len(test) >= 16 and len(train) > 4 * len(test)
    else:
        assert len(train) == len(test) == n
    for rows in (train, test):
        assert len({r["prompt"] for r in rows}) == len(rows)  # no duplicates inside a split either
        assert len({r["id"] for r in rows}) == len(rows)
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in test}
    if task == "mmlu":  # a fact is asked in one split only
        assert not {r["fact"] for r in train} & {r["fact"] for r in test}
    if task == "cnndm":
        assert not {r["article"] for r in train} & {r["article"] for r in test}


def test_arithmetic_answers_and_worked_solutions_are_correct():
    rows = ct.arithmetic(300, "test") + ct.arithmetic(300, "train")
    assert {r["template"] for r in rows} == set(ANSWERS)
    for row in rows:
        expected = ANSWERS[row["template"]](row["numbers"])
        assert expected == int(expected) and row["answer"] == expected and row["answer"] >= 0
        assert isinstance(row["answer"], int)
        question = row["prompt"]
        assert question.startswith("Question: ") and question.endswith("?\nAnswer:")
        for key, value in row["numbers"].items():
            if key != "factor":  # "twice" / "three times" are written in words
                assert re.search(rf"\b{value}\b", question), (value, question)
        reference = row["reference"]
        assert reference.startswith(" ") and reference.endswith(f" The answer is {row['answer']}.")
        equations = EQUATION.findall(reference)
        assert len(equations) >= 2, reference
        for left, right in equations:
            assert eval(left) == int(right), (left, right, reference)  # noqa: S307 - digits and operators
        assert int(equations[-1][1]) == row["answer"]


def _import_option(name):
    return importlib.import_module(name)


def test_multiple_choice_ground_truth_is_reverified_by_python():
    rows = ct.multiple_choice(250, "test") + ct.multiple_choice(250, "train")
    assert {r["kind"] for r in rows} == set(ct.MMLU_KINDS)
    for row in rows:
        options, letter = row["options"], row["answer"]
        assert len(options) == 4 == len(set(options)) and letter in "ABCD"
        index = "ABCD".index(letter)
        assert row["reference"] == f" {letter}. {options[index]}"
        lines = row["prompt"].split("\n")
        assert lines[0].startswith("Question: ") and lines[-1] == "Answer:"
        assert lines[1:5] == [f"{letter}. {o}" for letter, o in zip("ABCD", options)]
        if row["kind"] == "defines":
            correct = [hasattr(_import_option(o), row["name"]) for o in options]
            assert f"`{row['name']}`" in lines[0]
        elif row["kind"] == "member":
            module = _import_option(row["module"])
            correct = [hasattr(module, o) for o in options]
        elif row["kind"] == "method":
            cls = getattr(builtins, row["type"])
            correct = [callable(getattr(cls, o, None)) for o in options]
        else:
            value = eval(
                row["expression"],
                {
                    "math": math,
                    **{
                        m: _import_option(m)
                        for m in (  # noqa: S307
                            "statistics",
                            "bisect",
                            "heapq",
                            "itertools",
                            "functools",
                            "operator",
                            "collections",
                            "json",
                            "fractions",
                        )
                    },
                },
            )
            correct = [o == repr(value) for o in options]
            assert f"`{row['expression']}`" in lines[0]
        assert correct.count(True) == 1 and correct[index], (row["prompt"], correct)


def test_multiple_choice_known_fact():
    """A spot check with a fact known by heart: urljoin lives in urllib.parse, not in json or math."""
    rows = [
        r
        for r in ct.multiple_choice(500, "train") + ct.multiple_choice(500, "test")
        if r["kind"] == "defines" and r["name"] in ("urljoin", "floor", "dumps", "deque")
    ]
    assert rows, "expected at least one of the well-known names among 1000 questions"
    where = {"urljoin": "urllib.parse", "floor": "math", "dumps": "json", "deque": "collections"}
    for row in rows:
        assert row["options"]["ABCD".index(row["answer"])] == where[row["name"]]


@pytest.mark.parametrize("split", ct.SPLITS)
def test_answer_letters_are_balanced(split):
    letters = [r["answer"] for r in ct.multiple_choice(200, split)]
    for letter in "ABCD":
        assert 0.15 <= letters.count(letter) / 200 <= 0.35, (letter, letters.count(letter))


@pytest.mark.parametrize("max_words", [120, 60])
def test_summaries_are_the_lead_sentence(max_words):
    rows = ct.summaries(None, "test", max_words=max_words)
    assert len(rows) >= 12
    heldout = {name for name, split, _ in ct._prose_documents() if split == "heldout"}
    for row in rows:
        article, lead = row["article"], row["reference"][1:-1]
        assert row["prompt"] == f"Article: {article}\nSummary:"
        assert row["reference"] == f" {lead}\n" and "\n" not in lead
        assert len(article.split()) <= max_words
        assert article.startswith(lead) and len(lead) < len(article)
        assert re.search(r"[.!?][\"”’)]*$", lead), lead  # a whole sentence...
        assert re.match(r" [\"“(]?[A-Z]", article[len(lead) :]), article  # ...followed by the next one
        assert len(lead.split()) >= 6
        assert row["source"] in heldout  # test articles come from the corpus' held-out documents


def test_no_test_article_was_read_in_training(monkeypatch):
    """The CoS zoo trained on the corpus' name split, where most held-out prose also sits inside training documents:
    the test articles are the ones none of whose sentences it read (16 of 66)."""
    from specdec.zoo import corpus

    def leaked(rows):
        sentences = [s for r in rows for s in ct.split_sentences(r["article"]) if len(s) >= ct.LEAK_MIN_CHARS]
        return len(corpus.verbatim_in_train(sentences, list(ct._corpus_documents())))

    rows = ct.summaries(None, "test")
    assert len(rows) == 16 and leaked(rows) == 0  # CoS cells take 16 prompts per task
    ct._summary_pool.cache_clear()
    monkeypatch.setattr(ct, "_unseen", tuple)  # the check can fail: without the filter, most articles leak
    try:
        every = ct.summaries(None, "test")
    finally:
        ct._summary_pool.cache_clear()
    assert len(every) == 66 and leaked(every) > 100


def test_training_documents_come_from_the_train_split():
    docs = ct.training_documents(30)
    assert len(docs) == 90
    test_prompts = {r["prompt"] for task in ct.TRAINING_TASKS for r in ct.load_task(task, 300, "test")}
    assert not any(doc.startswith(prompt) for doc in docs for prompt in test_prompts)
    gsm8k, mmlu, cnndm = docs[:30], docs[30:60], docs[60:]
    assert all(d.startswith("Question: ") and re.search(r"\nAnswer: .* The answer is \d+\.$", d) for d in gsm8k)
    assert all(re.search(r"\nAnswer: [ABCD]\. ", d) for d in mmlu)
    assert all(d.startswith("Article: ") and "\nSummary: " in d and d.endswith("\n") for d in cnndm)
    assert ct.training_documents_for("mmlu", 30) == mmlu
    with pytest.raises(ValueError, match="test-only"):
        ct.training_documents_for("humaneval", 5)


def test_load_task_validates_its_arguments():
    with pytest.raises(ValueError, match=r"valid tasks: \['humaneval', 'gsm8k', 'mmlu', 'cnndm'\]"):
        ct.load_task("gsm8", 5)
    with pytest.raises(ValueError, match=r"valid splits: \['train', 'test'\]"):
        ct.load_task("gsm8k", 5, split="validation")
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="n must be a positive int or None"):
            ct.load_task("mmlu", bad)
    with pytest.raises(ValueError, match="valid profiles"):
        ct.load_task("mmlu", 5, profile="huge")
    with pytest.raises(ValueError, match="only a 'test' split"):
        ct.load_task("humaneval", 5, split="train")
    with pytest.raises(ValueError, match="pass n"):
        ct.load_task("gsm8k", None)
    assert [r["task"] for r in ct.load_task("humaneval", 2)] == ["humaneval", "humaneval"]
    assert len(ct.load_task("gsm8k", 7, split="train", seed=4)) == 7


@pytest.mark.parametrize("task", ct.TASKS)
def test_paper_profile_offline_raises_one_clear_error(task, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach the Hub")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    dataset_id = ct.PAPER_DATASETS[task][0]
    with pytest.raises(hub.DatasetNotAvailableError) as info:
        ct.load_task(task, 3, profile="paper")
    message = str(info.value)
    assert f"hf download --repo-type dataset {dataset_id}" in message
    assert "profile='tiny'" in message
    assert isinstance(info.value.__cause__, ConnectionError)


def test_paper_profile_through_the_real_datasets_library_fails_fast(tmp_path, monkeypatch):
    """No mock of load_dataset: an empty cache and offline mode must give the error at once, not retries."""
    datasets = pytest.importorskip("datasets")
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    start = time.perf_counter()
    with pytest.raises(hub.DatasetNotAvailableError, match="cais/mmlu"):
        ct.load_task("mmlu", 3, profile="paper")
    assert time.perf_counter() - start < 10


def test_paper_rows_have_the_tiny_rows_shape(monkeypatch):
    """The paper datasets' records (schemas of the hub datasets) become rows like the tiny ones."""
    datasets = pytest.importorskip("datasets")
    records = {
        "openai/gsm8k": [
            {"question": "Ann has 2 apples and buys 3. How many?", "answer": "2 + 3 = <<2+3=5>>5\n#### 1,005"}
        ],
        "cais/mmlu": [{"question": "2 + 2 =", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1}],
        "abisee/cnn_dailymail": [{"id": "abc", "article": "A long article.", "highlights": "Short."}],
    }
    calls = []

    def fake_load(path, name=None, split=None, revision=None):
        assert revision == hub.paper_revision(path) and len(revision) == 40  # the commit paper.yaml pins
        calls.append((path, name, split))
        return datasets.Dataset.from_list(records[path] * 5)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    gsm8k = ct.load_task("gsm8k", 3, profile="paper")
    assert len(gsm8k) == 3 and calls[-1] == ("openai/gsm8k", "main", "test")
    assert gsm8k[0]["prompt"] == "Question: Ann has 2 apples and buys 3. How many?\nAnswer:"
    assert gsm8k[0]["answer"] == 1005 and gsm8k[0]["reference"].endswith("The answer is 1,005.")
    mmlu = ct.load_task("mmlu", None, profile="paper")
    assert len(mmlu) == 5 and calls[-1] == ("cais/mmlu", "all", "test")
    assert mmlu[0]["prompt"] == "Question: 2 + 2 =\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:"
    assert mmlu[0]["reference"] == " B. 4" and mmlu[0]["answer"] == "B"
    cnndm = ct.load_task("cnndm", 1, split="train", profile="paper")
    assert calls[-1] == ("abisee/cnn_dailymail", "3.0.0", "train")
    assert cnndm == [
        {
            "id": "abc",
            "task": "cnndm",
            "prompt": "Article: A long article.\nSummary:",
            "reference": " Short.\n",
            "article": "A long article.",
        }
    ]


def test_no_test_problem_repeats_a_training_template(monkeypatch):
    """GSM8K's test problems are other problems than its training ones: the tiny test split comes from templates
    no training document was written from, so no test problem shares an 8-word numbers-free stretch of question or
    solution with the training split."""
    train = ca.arithmetic(3000, "train")
    test = ca.arithmetic(300, "test")
    assert {r["template"] for r in train} == set(ca.ARITHMETIC_TEMPLATES)
    assert {r["template"] for r in test} == set(ca.HELD_OUT_TEMPLATES)
    assert ca.template_overlap(test, train) == 0
    # the check can fail: test problems drawn from the training templates (other numbers) all overlap
    monkeypatch.setattr(ca, "HELD_OUT_TEMPLATES", ca.ARITHMETIC_TEMPLATES)
    assert ca.template_overlap(ca.arithmetic(16, "test"), train) == 16
