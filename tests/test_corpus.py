"""The embedded corpus' train / held-out split: by content for the tiny zoo, so no held-out prompt was trained on."""

import re

import pytest

from specdec import zoo
from specdec.zoo import corpus, tasks, training
from specdec.zoo.models import load_tokenizer


@pytest.fixture(scope="module")
def content():
    return corpus.build_corpus()


@pytest.fixture(scope="module")
def by_name():
    return corpus.build_corpus(split="name")


def test_shipped_heldout_prompts_never_occur_in_training_text(content):
    prompts = tasks.heldout_prompts()
    assert len(prompts) == 120
    assert corpus.verbatim_in_train([p["prompt"] for p in prompts], content) == []
    splits = {d["name"]: d["split"] for d in content}
    assert {splits[p["source"]] for p in prompts} == {"heldout"}


def test_the_leak_check_finds_the_name_splits_leak(by_name):
    """The check can fail: prompts cut from the name split's held-out documents sit in its training text (the
    39 of 120 that issue 12 found)."""
    tokenizer = load_tokenizer(zoo.TOKENIZER_DIR)
    prompts = training.make_prompts(by_name, tokenizer)
    assert len(corpus.verbatim_in_train([p["prompt"] for p in prompts], by_name)) == 39


def test_a_module_and_its_docstrings_share_one_split(content):
    splits = {d["name"]: d["split"] for d in content}
    docstrings = [d for d in content if d["name"].startswith("doc:")]
    assert docstrings
    for doc in docstrings:
        module = doc["name"][4:].rsplit(".", 1)[0]
        assert doc["split"] == splits[f"code:{module}"], doc["name"]
    assert {d["split"] for d in content if d["kind"] == "code"} == {"train", "heldout"}


def english_splits(docs) -> dict[str, set]:
    """``{English string: the splits of the translation pages it is on}``."""
    split_of: dict[str, set] = {}
    for doc in docs:
        if doc["kind"] == "translation":
            for english in re.findall(r"^English: (.*)$", doc["text"], flags=re.M):
                split_of.setdefault(english, set()).add(doc["split"])
    return split_of


def test_a_django_string_is_held_out_in_every_language_and_app_or_in_none(content):
    split_of = english_splits(content)
    assert len(split_of) > 500
    assert [e for e, s in split_of.items() if len(s) > 1] == []
    held = sum(s == {"heldout"} for s in split_of.values()) / len(split_of)
    assert 0.05 < held < 0.2


def test_the_name_split_lets_strings_cross(by_name):
    """Why the split changed: under the name split the same English string is in both splits."""
    assert sum(len(s) > 1 for s in english_splits(by_name).values()) > 100


def test_units_sharing_a_paragraph_are_joined():
    para = "A long shared paragraph that two pydoc topics repeat word for word, like compound and while. " * 2
    docs = [
        {"name": "pydoc:compound", "unit": "pydoc:compound", "kind": "prose", "text": f"Intro.\n\n{para}\n\nMore."},
        {"name": "pydoc:while", "unit": "pydoc:while", "kind": "prose", "text": para},
        {"name": "pydoc:if", "unit": "pydoc:if", "kind": "prose", "text": "Short.\n\nNothing shared here at all."},
        {"name": "code:x", "unit": "module:x", "kind": "code", "text": para},  # code is grouped by module already
    ]
    units = corpus._shared_paragraph_units(docs)
    assert units["pydoc:while"] == units["pydoc:compound"] == "pydoc:compound"
    assert units["pydoc:if"] == "pydoc:if" and "module:x" not in units


def test_unknown_split_is_one_clear_error():
    with pytest.raises(ValueError, match="split must be one of"):
        corpus.build_corpus(split="random")


# sha256 of [(name, split, kind, text), ...] of build_corpus(split="name") before the content split existed (commit
# e709fff, Python 3.11.7, Django 5.2.19): the CoS and multilingual zoos were trained on exactly this corpus.
NAME_SPLIT_DIGEST = "95afc6896d0411a4bd0a9d301bd89cf49b00d0b60f77583f233cb91b18fa9cf2"


def test_the_name_split_is_the_corpus_the_cos_and_multilingual_zoos_were_trained_on(by_name):
    import hashlib
    import json

    rows = [(d["name"], d["split"], d["kind"], d["text"]) for d in by_name]
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    assert digest == NAME_SPLIT_DIGEST, (
        "build_corpus(split='name') changed: the shipped CoS and multilingual zoos no longer match their code "
        f"({corpus.source_versions()})"
    )


def test_make_models_retrains_the_shipped_tokenizer_exactly(by_name):
    """The shared tokenizer stays the one trained on the name split's training documents (every zoo uses it)."""
    import json

    tokenizer = training.train_tokenizer([d["text"] for d in by_name if d["split"] == "train"])
    ours = json.loads(tokenizer.backend_tokenizer.to_str())["model"]
    shipped = json.loads((zoo.TOKENIZER_DIR / "tokenizer.json").read_text())["model"]
    assert ours["vocab"] == shipped["vocab"] and ours["merges"] == shipped["merges"]
