"""A real parallel corpus for the multilingual-drafter experiments, built offline from gettext catalogs.

English ``msgid`` ↔ translated ``msgstr`` pairs for German, French, Russian, Japanese and Chinese, from two
disjoint packages:

- source A, ``django`` (the installed Django, pinned in ``requirements.txt``): ``django/conf/locale`` and
  every ``django/contrib/*/locale`` catalog (read with :func:`specdec.zoo.corpus.django_catalogs`);
  split ``train`` / ``heldout`` by a hash of the English string (~10 % held out), so one English string is
  never in both splits;
- source B, ``sphinx`` (Sphinx ``SPHINX_VERSION``; ``sphinx/locale/<lang>/LC_MESSAGES/sphinx.po``): a
  different dataset for the same pairs, used for evaluation only (every row is ``heldout``); any English
  string that also occurs in source A (any language, any split) is removed from it. Sphinx is not a
  dependency of the project: if the pinned version is not installed, its wheel is fetched once with
  ``pip download sphinx==SPHINX_VERSION --no-deps`` into the ignored ``.cache/parallel/`` and only the five
  catalogs are extracted from it (the wheel is checked against ``SPHINX_WHEEL_SHA256``).

Catalogs are parsed with :func:`specdec.zoo.corpus.read_po` (drops header, fuzzy, plural and untranslated
entries), then :func:`clean_pairs` applies the rules listed in ``CLEANING_RULES``. Nothing but the data card
is written: rows are rebuilt from the packages on first use (well under a second) and cached in memory.

Locating, reading and cleaning the catalogs live in ``specdec.multilingual.catalogs`` (its names are
importable from here too); this module builds the rows, the prompts and the data card.

``python -m specdec.multilingual.parallel`` writes ``data/parallel/DATA_CARD.md``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import importlib.metadata
import pathlib
import time

from specdec.multilingual.catalogs import (
    ALIASES,
    CACHE,
    CLEANING_RULES,
    DROP_REASONS,
    LANGUAGES,
    ROOT,
    SPHINX_VERSION,
    SPHINX_WHEEL,
    SPHINX_WHEEL_SHA256,
    canonical_lang,
    check_entry_separation,
    clean_pairs,
    english_key,
    has_real_words,
    normalise,
    read_catalog,
    read_checked,
    sphinx_catalogs,
)
from specdec.zoo.corpus import build_corpus, django_catalogs, is_heldout, read_po

CARD = ROOT / "data/parallel/DATA_CARD.md"
SOURCES = ("django", "sphinx")
SPLITS = {"django": ("train", "heldout"), "sphinx": ("heldout",)}
DIRECTIONS = ("xx-en", "en-xx")
HELDOUT_FRACTION = 0.1


# --- building the rows ------------------------------------------------------------------------------------


def _row(source: str, lang: str, split: str, en: str, xx: str) -> dict:
    digest = hashlib.sha256(f"{en}\0{xx}".encode()).hexdigest()[:12]
    return {"id": f"{source}:{lang}:{digest}", "source": source, "lang": lang, "split": split, "en": en, "xx": xx}


@functools.cache
def _build(source: str) -> tuple[dict[str, list[dict]], dict[str, collections.Counter]]:
    """All rows of one source, per language, and the cleaning statistics per language."""
    rows: dict[str, list[dict]] = {}
    stats: dict[str, collections.Counter] = {}
    if source == "django":
        for lang, (_, django_code, _) in LANGUAGES.items():
            stats[lang] = collections.Counter()
            raw = [pair for po in django_catalogs(django_code) for pair in read_checked(po)]
            rows[lang] = []
            for en, xx in clean_pairs(raw, stats[lang]):
                split = "heldout" if is_heldout(english_key(en), HELDOUT_FRACTION) else "train"
                rows[lang].append(_row(source, lang, split, en, xx))
    elif source == "sphinx":
        in_a = {english_key(r["en"]) for lang_rows in _build("django")[0].values() for r in lang_rows}
        for lang, po in sphinx_catalogs().items():
            stats[lang] = collections.Counter()
            rows[lang] = []
            for en, xx in read_catalog(po, stats[lang]):
                if english_key(en) in in_a:
                    stats[lang]["dropped: English string also in source A"] += 1
                else:
                    rows[lang].append(_row(source, lang, "heldout", en, xx))
            stats[lang]["kept"] = len(rows[lang])
    else:
        raise ValueError(f"unknown source {source!r}; expected one of {SOURCES}")
    return rows, stats


def pairs(source: str, lang: str, split: str) -> list[dict]:
    """Rows ``{"id", "source", "lang", "en", "xx"}`` of ``source`` ("django" | "sphinx") for ``lang``.

    ``split`` is "train" or "heldout" for Django; Sphinx is an evaluation-only set (split "heldout");
    ``split="all"`` returns every row. Rows come in catalog order; the list is a fresh copy.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; expected one of {SOURCES}")
    lang = canonical_lang(lang)
    if split != "all" and split not in SPLITS[source]:
        raise ValueError(
            f"source {source!r} has splits {SPLITS[source]} (sphinx is for evaluation only), not {split!r}"
        )
    keys = ("id", "source", "lang", "en", "xx")
    return [{k: r[k] for k in keys} for r in _build(source)[0][lang] if split in ("all", r["split"])]


def translation_prompt(row: dict, direction: str) -> dict:
    """The paper's prompt: ``"Translate German to English: <text>\\nEnglish:"``, reference ``" <text>"``.

    ``direction`` is "xx-en" (the paper's setting) or "en-xx". Returns
    ``{"id", "source", "lang", "direction", "prompt", "reference"}``.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; expected one of {DIRECTIONS}")
    language = LANGUAGES[canonical_lang(row["lang"])][0]
    if direction == "xx-en":
        src_name, src, tgt_name, tgt = language, row["xx"], "English", row["en"]
    else:
        src_name, src, tgt_name, tgt = "English", row["en"], language, row["xx"]
    return {
        "id": f"{row['id']}:{direction}",
        "source": row["source"],
        "lang": row["lang"],
        "direction": direction,
        "prompt": f"Translate {src_name} to {tgt_name}: {src}\n{tgt_name}:",
        "reference": f" {tgt}",
    }


def joined_pairs(source: str, src: str, tgt: str, split: str) -> list[dict]:
    """Rows ``{"id", "source", "src", "tgt", "src_text", "tgt_text"}`` for any direction ``src`` → ``tgt``.

    ``src`` / ``tgt`` are "en" or a language code (different from each other). A pair of two non-English
    languages X → Y is built by joining X's and Y's rows on the same English string (``english_key``; the
    first row of each key wins), so every row is a translation of one English message into both languages.
    Rows come in the order of ``src``'s (or, for En → Y, ``tgt``'s) rows.
    """
    src = "en" if src == "en" else canonical_lang(src)
    tgt = "en" if tgt == "en" else canonical_lang(tgt)
    if src == tgt:
        raise ValueError(f"source and target language are both {src!r}")
    if "en" in (src, tgt):
        lang = tgt if src == "en" else src
        texts = [
            ((r["en"], r["xx"]) if src == "en" else (r["xx"], r["en"]), r["id"]) for r in pairs(source, lang, split)
        ]
    else:
        other: dict[str, dict] = {}
        for r in pairs(source, tgt, split):
            other.setdefault(english_key(r["en"]), r)
        texts = [
            ((r["xx"], other[english_key(r["en"])]["xx"]), f"{r['id']}+{other[english_key(r['en'])]['id']}")
            for r in pairs(source, src, split)
            if english_key(r["en"]) in other
        ]
    return [
        {"id": f"{rid}:{src}-{tgt}", "source": source, "src": src, "tgt": tgt, "src_text": a, "tgt_text": b}
        for (a, b), rid in texts
    ]


def language_name(code: str) -> str:
    """ "English" for "en", else the English name of a corpus language ("de" -> "German")."""
    return "English" if code == "en" else LANGUAGES[canonical_lang(code)][0]


def direction_prompt(row: dict) -> dict:
    """The paper's prompt for a :func:`joined_pairs` row: ``"Translate German to French: <text>\nFrench:"``.

    Same layout as :func:`translation_prompt` (for X → En and En → X the prompt and reference are the same
    strings); ``direction`` is ``"<src>-<tgt>"`` (e.g. ``"de-fr"``), ``lang`` the non-English side (or the
    source language when neither side is English).
    """
    src_name, tgt_name = language_name(row["src"]), language_name(row["tgt"])
    lang = row["src"] if row["src"] != "en" else row["tgt"]
    return {
        "id": row["id"],
        "source": row["source"],
        "lang": lang,
        "direction": f"{row['src']}-{row['tgt']}",
        "prompt": f"Translate {src_name} to {tgt_name}: {row['src_text']}\n{tgt_name}:",
        "reference": f" {row['tgt_text']}",
    }


def corpus_card() -> list[dict]:
    """Tidy rows ``{source, lang, split, pairs, en_chars, xx_chars}``, one per source × language × split."""
    out = []
    for source in SOURCES:
        for lang in LANGUAGES:
            for split in SPLITS[source]:
                rows = pairs(source, lang, split)
                out.append(
                    {
                        "source": source,
                        "lang": lang,
                        "split": split,
                        "pairs": len(rows),
                        "en_chars": sum(len(r["en"]) for r in rows),
                        "xx_chars": sum(len(r["xx"]) for r in rows),
                    }
                )
    return out


def cleaning_stats() -> list[dict]:
    """Rows ``{source, lang, reason, count}``: what the cleaning read, dropped and kept."""
    out = []
    for source in SOURCES:
        for lang, counter in _build(source)[1].items():
            out += [{"source": source, "lang": lang, "reason": k, "count": v} for k, v in sorted(counter.items())]
    return out


def source_versions() -> dict[str, str]:
    return {"django": importlib.metadata.version("django"), "sphinx": SPHINX_VERSION}


def zoo_contamination() -> dict[str, int]:
    """How many source-A held-out pairs sit in the training documents of the embedded corpus.

    The multilingual zoo pretrains on ``corpus.build_corpus(split="name")``, which splits its Django "phrasebook"
    documents by document name, not by English string, so a held-out pair may sit in a training page (the
    pipeline drops those, ``data.drop_heldout_entries``). Counted per language.
    """
    train_text = normalise(
        " ".join(d["text"] for d in build_corpus(split="name") if d["kind"] == "translation" and d["split"] == "train")
    )
    out = {}
    for lang, (language, _, _) in LANGUAGES.items():
        held = pairs("django", lang, "heldout")
        out[lang] = sum(f"English: {r['en']} {language}: {r['xx']}" in train_text for r in held)
    return out


# --- data card --------------------------------------------------------------------------------------------


def _md_table(header: list[str], rows: list[list], numeric_from: int = 1) -> str:
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_CARD_INTRO = [
    "# Data card: the parallel corpus (`specdec.multilingual.parallel`)",
    "",
    "English ↔ German / French / Russian / Japanese / Chinese sentence pairs taken from the gettext "
    "catalogs (`.po`) that two packages ship. Nothing is downloaded from a data hub and no pair is "
    "stored in the repository: `specdec.multilingual.parallel.pairs(source, lang, split)` "
    "rebuilds the rows from the catalogs on first use. Regenerate this card with "
    "`python -m specdec.multilingual.parallel`.",
    "",
    "## Sources",
    "",
]
_CARD_SOURCES_NOTE = (
    "Sphinx is not a dependency of the project: unless that exact version is installed, its wheel is "
    "fetched once with `pip download sphinx==" + SPHINX_VERSION + " --no-deps` into the ignored "
    "`.cache/parallel/`, checked against the pinned sha256, and only the five catalogs are extracted. "
    "Django's strings are web-framework UI text (form errors, admin messages, language and month "
    "names); Sphinx's are documentation-tool messages (build log lines, warnings, HTML theme labels), "
    "so B is a different domain for the same language pairs, like the paper's WMT16 → IWSLT14 "
    "generalisation check. Language codes here: `de fr ru ja zh` (`zh` = Django `zh_Hans` = Sphinx "
    "`zh_CN`). Licences: Django BSD-3-Clause, Sphinx BSD-2-Clause."
)
_CARD_SPLIT_NOTE = (
    "The split is by English string, so it is shared by all languages: an English string held out "
    "for German is held out for every language."
)
_CARD_CONTAMINATION = (
    "**Overlap with the multilingual zoo's pretraining corpus.** `specdec.zoo.corpus` puts the same "
    "Django pairs in its `translation` documents, and the split this zoo pretrains on "
    '(`build_corpus(split="name")`) is by document name, not by English string. Source-A held-out '
    "pairs that occur verbatim in a *training* document of that split: {counts} (the pipeline drops them "
    "from its general text, `drop_heldout_entries`). Source B never entered the embedded corpus."
)
_CARD_PROMPTS = [
    "",
    "## Prompts",
    "",
    "`translation_prompt(row, direction)`, direction `xx-en` (the paper's) or `en-xx`, follows the "
    'paper\'s user prompt ("Translate French to English: …"):',
    "",
    "```",
    "prompt:    {prompt!r}",
    "reference: {reference!r}",
    "```",
    "",
]


def _card_sources(versions: dict[str, str]) -> list[str]:
    """The sources table and the note on Sphinx and the two domains."""
    table = _md_table(
        ["source", "package", "catalogs", "languages", "role"],
        [
            [
                "A `django`",
                f"Django {versions['django']} (installed, `requirements.txt`)",
                "`django/conf/locale/<lang>/LC_MESSAGES/django.po` + `django/contrib/*/locale/<lang>/…`",
                "de, fr, ru, ja, zh_Hans",
                "train + held-out",
            ],
            [
                "B `sphinx`",
                f"Sphinx {versions['sphinx']} (wheel `{SPHINX_WHEEL}`, sha256 `{SPHINX_WHEEL_SHA256[:16]}…`)",
                "`sphinx/locale/<lang>/LC_MESSAGES/sphinx.po`",
                "de, fr, ru, ja, zh_CN",
                "evaluation only (a different dataset)",
            ],
        ],
        numeric_from=5,
    )
    return [table, "", _CARD_SOURCES_NOTE, ""]


def _card_counts(by: dict) -> list[str]:
    """Pairs per language and split, with the characters of A train."""
    rows = [
        [
            f"{lang} ({LANGUAGES[lang][0]})",
            by["django", lang, "train"]["pairs"],
            by["django", lang, "heldout"]["pairs"],
            by["sphinx", lang, "heldout"]["pairs"],
            f"{by['django', lang, 'train']['en_chars']:,} / {by['django', lang, 'train']['xx_chars']:,}",
        ]
        for lang in LANGUAGES
    ]
    rows.append(
        [
            "**total**",
            sum(by["django", lang, "train"]["pairs"] for lang in LANGUAGES),
            sum(by["django", lang, "heldout"]["pairs"] for lang in LANGUAGES),
            sum(by["sphinx", lang, "heldout"]["pairs"] for lang in LANGUAGES),
            "",
        ]
    )
    header = ["language", "A train", "A held-out", "B held-out (eval)", "A train chars en / xx"]
    return ["## Counts (pairs; characters of English / of the translation)", "", _md_table(header, rows), ""]


def _card_cleaning() -> list[str]:
    """The cleaning rules and how many pairs each one dropped."""
    lines = ["## Cleaning rules", ""] + [f"{i}. {rule}" for i, rule in enumerate(CLEANING_RULES, 1)] + [""]
    stats = collections.defaultdict(dict)
    for s in cleaning_stats():
        stats[s["source"], s["lang"]][s["reason"]] = s["count"]
    reasons = [r for r in DROP_REASONS if any(r in d for d in stats.values())]
    header = ["source", "lang", "read"] + [r.removeprefix("dropped: ") for r in reasons] + ["kept"]
    table = [
        [src, lang, d.get("read", 0)] + [d.get(r, 0) for r in reasons] + [d.get("kept", 0)]
        for (src, lang), d in stats.items()
    ]
    return lines + [
        "Effect of rules 3–8 (pairs that `read_po` returned → dropped → kept):",
        "",
        _md_table(header, table, numeric_from=2),
        "",
    ]


def _card_examples() -> list[str]:
    """Per language the first two rows of 5+ English words of A train and of B, and one prompt."""
    lines = ["## Examples (per language: the first two rows of 5+ English words; A train, then B)", ""]
    for lang in LANGUAGES:
        for source, split in (("django", "train"), ("sphinx", "heldout")):
            for row in [r for r in pairs(source, lang, split) if len(r["en"].split()) >= 5][:2]:
                en, xx = _md_escape(row["en"]), _md_escape(row["xx"])
                lines.append(f"- `{row['id']}` — en: “{en}” → {lang}: “{xx}”")
    example = translation_prompt(pairs("django", "de", "heldout")[0], "xx-en")
    return lines + [line.format(**example) for line in _CARD_PROMPTS]


def _card_timings(timings: dict) -> list[str]:
    return [
        "## Build time",
        "",
        "On the 2-core development machine, one process: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items())
        + " (a first run downloads the 3.9 MB Sphinx wheel and extracts five catalogs: 1.6 s measured).",
        "",
    ]


def card_text(timings: dict | None = None, contamination=None) -> str:
    """The markdown of the data card (``timings``: build times to report; ``contamination``: ``{lang: n}`` of
    :func:`zoo_contamination`)."""
    versions = source_versions()
    by = {(c["source"], c["lang"], c["split"]): c for c in corpus_card()}
    parts = _CARD_INTRO + _card_sources(versions) + _card_counts(by) + [_CARD_SPLIT_NOTE, ""]
    if contamination is not None:
        counts = ", ".join(f"{lang} {n}/{by['django', lang, 'heldout']['pairs']}" for lang, n in contamination.items())
        parts += [_CARD_CONTAMINATION.format(counts=counts), ""]
    parts += _card_cleaning() + _card_examples()
    if timings:
        parts += _card_timings(timings)
    return "\n".join(parts)


def write_card(path: str | pathlib.Path = CARD, timings: dict | None = None, contamination=None) -> str:
    """Write :func:`card_text` to ``path`` (default ``data/parallel/DATA_CARD.md``) and return it."""
    text = card_text(timings, contamination)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(CARD), help="where to write the data card")
    parser.add_argument(
        "--no-contamination",
        action="store_true",
        help="skip the overlap count with the embedded corpus (it rebuilds it, ~10 s)",
    )
    args = parser.parse_args(argv)
    timings = {}
    cached = (CACHE / SPHINX_WHEEL).exists()
    start = time.perf_counter()
    sphinx_catalogs()
    timings["Sphinx catalogs ready" + (" (wheel cached)" if cached else " (wheel downloaded)")] = (
        time.perf_counter() - start
    )
    start = time.perf_counter()
    _build("django")
    timings["source A built"] = time.perf_counter() - start
    start = time.perf_counter()
    _build("sphinx")
    timings["source B built"] = time.perf_counter() - start
    contamination = None if args.no_contamination else zoo_contamination()
    write_card(args.out, timings, contamination)
    for row in corpus_card():
        print(f"{row['source']:7s} {row['lang']} {row['split']:8s} {row['pairs']:5d}")
    print(f"wrote {args.out}")


__all__ = [
    "ALIASES",
    "CACHE",
    "CARD",
    "CLEANING_RULES",
    "DIRECTIONS",
    "HELDOUT_FRACTION",
    "LANGUAGES",
    "ROOT",
    "SOURCES",
    "SPHINX_VERSION",
    "SPHINX_WHEEL",
    "SPHINX_WHEEL_SHA256",
    "SPLITS",
    "build_corpus",
    "canonical_lang",
    "check_entry_separation",
    "clean_pairs",
    "corpus_card",
    "django_catalogs",
    "english_key",
    "has_real_words",
    "is_heldout",
    "main",
    "normalise",
    "pairs",
    "read_catalog",
    "read_checked",
    "read_po",
    "sphinx_catalogs",
]


if __name__ == "__main__":
    main()
