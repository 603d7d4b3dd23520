"""The gettext catalogs behind ``specdec.multilingual.parallel``: locating, reading and cleaning them.

Source A is the installed Django's catalogs (``specdec.zoo.corpus.django_catalogs``); source B the catalogs of
Sphinx ``SPHINX_VERSION``, from an installed Sphinx of that version or extracted once from its pinned wheel
(``sphinx_catalogs``). ``read_catalog`` = layout check + ``read_po`` + ``clean_pairs``, the rules listed in
``CLEANING_RULES`` (drop reasons counted under the names in ``DROP_REASONS``).
"""

from __future__ import annotations

import collections
import hashlib
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import zipfile

from specdec.zoo.corpus import read_po

ROOT = pathlib.Path(__file__).resolve().parents[3]
CACHE = pathlib.Path(os.environ.get("SPECDEC_PARALLEL_CACHE", ROOT / ".cache/parallel"))

# Language code used here -> (English name, Django locale, Sphinx locale).
LANGUAGES = {
    "de": ("German", "de", "de"),
    "fr": ("French", "fr", "fr"),
    "ru": ("Russian", "ru", "ru"),
    "ja": ("Japanese", "ja", "ja"),
    "zh": ("Chinese", "zh_Hans", "zh_CN"),
}
ALIASES = {"zh_Hans": "zh", "zh_CN": "zh", "zh-Hans": "zh", "zh-CN": "zh"}

SPHINX_VERSION = "9.0.4"
SPHINX_WHEEL = f"sphinx-{SPHINX_VERSION}-py3-none-any.whl"
SPHINX_WHEEL_SHA256 = "5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb"

CLEANING_RULES = [
    "parse with `specdec.zoo.corpus.read_po`: skip the header, `#, fuzzy` entries, plural entries "
    "(`msgid_plural`), untranslated entries (empty `msgstr`) and obsolete `#~` entries; a malformed file "
    "raises `ValueError` naming the file and line",
    "reject a catalog in which a `#,` flag line directly follows an entry's strings without a blank line "
    "(`read_po` would attach the flags to the previous entry), so a fuzzy entry can never slip through",
    "normalise whitespace: every run of spaces, tabs and newlines becomes one space; strip both ends",
    "placeholders (`%s`, `%(name)s`, `%d`, `%r`, `{name}`, `{}`, strftime `%Y`), HTML tags and entities "
    "are kept in the text, but a pair is kept only if, with them removed, both sides still hold at least 2 "
    "letters (drops placeholder-only strings such as `%(truncated_text)s…`, format-only ones such as "
    "`%b %d, %Y` or `%.3fs %s`, and strings with fewer than 2 letters)",
    "drop pairs whose translation equals the English string (untranslated copies, names, `IPv4`)",
    "drop exact duplicate (English, translation) pairs, within a source and language (first kept)",
    "split source A by a hash of the case-folded English string (sha256, 10 % held out), so an English "
    "string is in one split only, for every language",
    "source B: drop every pair whose case-folded English string occurs anywhere in source A",
]

_HTML_TAGS = (
    "a|abbr|b|big|br|code|div|em|h[1-6]|i|img|input|kbd|label|li|meta|ol|p|pre|s|small|span|strong|sub|sup"
    "|table|td|th|tr|tt|u|ul"
)
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[#0\-+]*\d*(?:\.\d+)?[A-Za-z]"  # %(name)s, %(count)d
    r"|%[#0\-+]*\d*(?:\.\d+)?[A-Za-z%]"  # %s, %d, %r, %.3f, strftime %Y, %%
    r"|\{[^{}]*\}"  # {name}, {0}, {}
    rf"|</?(?:{_HTML_TAGS})(?:\s[^<>]*)?/?>"  # HTML tags (not "<<original entry>>" or "<command>")
    r"|&#?\w+;"  # HTML entities: &#169; &amp;
)
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _SPACE.sub(" ", text).strip()


def has_real_words(text: str) -> bool:
    """True if ``text`` keeps at least 2 letters once placeholders, HTML tags and entities are removed."""
    return sum(ch.isalpha() for ch in _PLACEHOLDER.sub(" ", text)) >= 2


def english_key(en: str) -> str:
    """The key that decides the split and the A/B overlap: normalised, case-folded English."""
    return normalise(en).casefold()


def check_entry_separation(path: str | pathlib.Path) -> None:
    """Raise ``ValueError`` if a ``#,`` flag line follows an entry's strings with no blank line between.

    ``read_po`` closes an entry at a blank line or at the next ``msgid``, so in that layout the flags
    (``fuzzy`` among them) would be given to the previous entry and the flagged entry would be kept.
    """
    path = pathlib.Path(path)
    previous = ""
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("#,") and previous.startswith(("msgstr", '"')):
            raise ValueError(
                f"{path}:{lineno}: flag line {raw!r} follows an entry without a blank line; "
                "separate the entries with a blank line"
            )
        previous = line
    return None


DROP_REASONS = [
    "dropped: empty",
    "dropped: placeholder/format-only or < 2 letters",
    "dropped: translation == English",
    "dropped: duplicate pair",
    "dropped: English string also in source A",
]


def clean_pairs(raw: list[tuple[str, str]], stats: collections.Counter | None = None) -> list[tuple[str, str]]:
    """Apply the cleaning rules to ``read_po`` pairs; count the reasons for dropping in ``stats``."""
    stats = collections.Counter() if stats is None else stats
    seen: set[tuple[str, str]] = set()
    kept = []
    for en, xx in raw:
        en, xx = normalise(en), normalise(xx)
        stats["read"] += 1  # the reasons, in the order they are tested, are listed in DROP_REASONS
        if not (en and xx):
            stats["dropped: empty"] += 1
        elif not (has_real_words(en) and has_real_words(xx)):
            stats["dropped: placeholder/format-only or < 2 letters"] += 1
        elif en == xx:
            stats["dropped: translation == English"] += 1
        elif (en, xx) in seen:
            stats["dropped: duplicate pair"] += 1
        else:
            seen.add((en, xx))
            kept.append((en, xx))
    stats["kept"] += len(kept)
    return kept


def read_checked(path: str | pathlib.Path) -> list[tuple[str, str]]:
    """:func:`check_entry_separation`, then ``read_po`` (no cleaning: it is applied per language)."""
    check_entry_separation(path)
    return read_po(path)


def read_catalog(path: str | pathlib.Path, stats: collections.Counter | None = None) -> list[tuple[str, str]]:
    """``read_po`` + layout check + :func:`clean_pairs` for one catalog."""
    return clean_pairs(read_checked(path), stats)


def canonical_lang(lang: str) -> str:
    lang = ALIASES.get(lang, lang)
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; expected one of {sorted(LANGUAGES)}")
    return lang


# --- source B: the pinned Sphinx catalogs -----------------------------------------------------------------


def _sphinx_po_name(lang: str) -> str:
    return f"sphinx/locale/{LANGUAGES[lang][2]}/LC_MESSAGES/sphinx.po"


def sphinx_catalogs() -> dict[str, pathlib.Path]:
    """Paths of the five Sphinx ``.po`` catalogs of ``SPHINX_VERSION`` (installed, or from the cached wheel)."""
    try:
        installed = importlib.metadata.version("sphinx") == SPHINX_VERSION
    except importlib.metadata.PackageNotFoundError:
        installed = False
    if installed:
        import sphinx

        root = pathlib.Path(sphinx.__file__).parent.parent
        files = {lang: root / _sphinx_po_name(lang) for lang in LANGUAGES}
        if all(f.exists() for f in files.values()):
            return files

    extracted = CACHE / f"sphinx-{SPHINX_VERSION}"
    files = {lang: extracted / _sphinx_po_name(lang) for lang in LANGUAGES}
    if all(f.exists() for f in files.values()):
        return files

    wheel = CACHE / SPHINX_WHEEL
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"sphinx=={SPHINX_VERSION}",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--dest",
            str(CACHE),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not wheel.exists():
            raise RuntimeError(
                f"could not fetch the Sphinx {SPHINX_VERSION} wheel (source B) with "
                f"`{' '.join(cmd)}`:\n{done.stderr.strip()}"
            )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != SPHINX_WHEEL_SHA256:
        raise ValueError(f"{wheel}: sha256 {digest} differs from the pinned {SPHINX_WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        for lang, target in files.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(archive.read(_sphinx_po_name(lang)))
            tmp.replace(target)  # atomic: a concurrent reader never sees half a file
    return files


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = [
    "ALIASES",
    "CACHE",
    "CLEANING_RULES",
    "DROP_REASONS",
    "LANGUAGES",
    "ROOT",
    "SPHINX_VERSION",
    "SPHINX_WHEEL",
    "SPHINX_WHEEL_SHA256",
]
