"""The embedded text corpus: real text taken from files that installed packages ship.

Three kinds of documents, all offline and versioned by the packages they come from:

- ``prose``: English reference prose (``pydoc_data.topics``) and module docstrings of the stdlib;
- ``code``: Python sources of the stdlib (comments and docstrings kept, as in real code);
- ``translation``: English ``msgid`` / translated ``msgstr`` pairs from Django's gettext catalogs
  (de, fr, ru, ja, zh_Hans), rendered as ``"English: …\\nGerman: …"`` lines.

Two splits, both by a hash (so neither depends on the order in which files are found):

- ``split="content"`` (the tiny zoo's): by *unit of content*, so that no held-out text sits inside a training
  document. A stdlib module's source and all its docstrings share one split (a held-out docstring would
  otherwise be read in training inside its module's code); a pydoc topic is its own unit; a Django string
  is split by its English ``msgid``, in every language and app at once (the same string recurs across the
  catalogs of apps and languages), and the phrasebook pages are cut after the split.
- ``split="name"``: by document name, the split the CoS and multilingual zoos (and the shared tokenizer)
  were trained on. It leaks (39 of the 120 old held-out prompts sat verbatim in training text); those zoos
  keep it so that their shipped weights stay what their code trains, and mask held-out content on their
  own side where it matters (``multilingual.data.drop_heldout_entries``).

``build_corpus`` returns plain dicts; ``write_corpus`` saves them as JSONL.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import pathlib
import platform
import sysconfig

LANGUAGES = {"de": "German", "fr": "French", "ru": "Russian", "ja": "Japanese", "zh_Hans": "Chinese"}

# Stdlib modules whose sources and docstrings go into the corpus (sorted, fixed, so the corpus is stable).
STDLIB_MODULES = [
    "argparse",
    "ast",
    "asyncio/base_events",
    "asyncio/tasks",
    "bisect",
    "calendar",
    "collections/__init__",
    "configparser",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "email/message",
    "enum",
    "fractions",
    "ftplib",
    "functools",
    "gettext",
    "glob",
    "gzip",
    "heapq",
    "html/parser",
    "http/client",
    "http/server",
    "imaplib",
    "inspect",
    "ipaddress",
    "json/decoder",
    "json/encoder",
    "logging/__init__",
    "logging/handlers",
    "mailbox",
    "operator",
    "optparse",
    "os",
    "pathlib",
    "pdb",
    "pickle",
    "pprint",
    "queue",
    "random",
    "re/_parser",
    "sched",
    "secrets",
    "selectors",
    "shlex",
    "shutil",
    "smtplib",
    "socket",
    "socketserver",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "tokenize",
    "traceback",
    "turtle",
    "typing",
    "unittest/case",
    "urllib/parse",
    "urllib/request",
    "uuid",
    "warnings",
    "wave",
    "weakref",
    "xml/dom/minidom",
    "zipfile",
    "zoneinfo/_zoneinfo",
]


SPLITS = ("content", "name")


def is_heldout(name: str, heldout_fraction: float) -> bool:
    """Whether the unit ``name`` is held out: the first 4 bytes of its sha256 below ``heldout_fraction``."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:4], "little") / 2**32 < heldout_fraction


def read_po(path: str | pathlib.Path) -> list[tuple[str, str]]:
    """Read a gettext ``.po`` file and return ``[(msgid, msgstr), ...]`` of translated entries.

    Skips the header, fuzzy entries, plural forms, untranslated entries and entries whose text is only
    placeholders or punctuation. Raises ``ValueError`` naming the file and line on malformed input.
    """
    path = pathlib.Path(path)
    pairs: list[tuple[str, str]] = []
    entry: dict[str, str] = {}
    flags: set[str] = set()
    field = None

    def flush():
        nonlocal entry, flags, field
        msgid, msgstr = entry.get("msgid", ""), entry.get("msgstr", "")
        keep = msgid and msgstr and "fuzzy" not in flags and "msgid_plural" not in entry
        if keep and _has_words(msgid) and _has_words(msgstr):
            pairs.append((msgid, msgstr))
        entry, flags, field = {}, set(), None

    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("#") and any(k.startswith("msgstr") for k in entry):
            flush()  # comments and flags belong to the next entry, even without a blank line before them
            if line.startswith("#,"):
                flags.update(f.strip() for f in line[2:].split(","))
        elif line.startswith("#,"):
            flags.update(f.strip() for f in line[2:].split(","))
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            if field is None:
                raise ValueError(f"{path}:{lineno}: string continuation outside an entry: {raw!r}")
            entry[field] += _unquote(line, path, lineno)
        else:
            key, _, rest = line.partition(" ")
            if key not in {"msgctxt", "msgid", "msgid_plural", "msgstr"} and not key.startswith("msgstr["):
                raise ValueError(f"{path}:{lineno}: unknown keyword {key!r}; is this a gettext .po file?")
            if key == "msgid" and "msgid" in entry:
                flush()
            field = key
            entry[key] = _unquote(rest.strip(), path, lineno)
    flush()
    return pairs


def _unquote(token: str, path, lineno) -> str:
    if len(token) < 2 or token[0] != '"' or token[-1] != '"':
        raise ValueError(f"{path}:{lineno}: expected a quoted string, got {token!r}")
    try:
        return ast.literal_eval(token)
    except (SyntaxError, ValueError) as err:
        raise ValueError(f"{path}:{lineno}: bad string literal {token!r} ({err})") from None


def _has_words(text: str) -> bool:
    stripped = text
    for placeholder in ("%s", "%d", "%(", ")s", ")d", "{", "}"):
        stripped = stripped.replace(placeholder, "")
    return sum(ch.isalpha() for ch in stripped) >= 2


def django_catalogs(lang: str) -> list[pathlib.Path]:
    import django

    root = pathlib.Path(django.__file__).parent
    files = [root / "conf/locale" / lang / "LC_MESSAGES/django.po"]
    files += sorted(root.glob(f"contrib/*/locale/{lang}/LC_MESSAGES/django.po"))
    return [f for f in files if f.exists()]


def build_corpus(heldout_fraction: float = 0.1, split: str = "content") -> list[dict]:
    """Return the corpus as a list of ``{"name", "kind", "split", "text"}`` documents (split: see the module
    docstring; ``"content"`` unless a zoo was trained on ``"name"``)."""
    import pydoc_data.topics

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    by_content = split == "content"
    docs = []
    for topic, text in sorted(pydoc_data.topics.topics.items()):
        docs.append({"name": f"pydoc:{topic}", "unit": f"pydoc:{topic}", "kind": "prose", "text": text.strip()})

    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    for module in STDLIB_MODULES:
        source = (stdlib / f"{module}.py").read_text(encoding="utf-8")
        unit = f"module:{module}"
        docs.append({"name": f"code:{module}", "unit": unit, "kind": "code", "text": source})
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node)
                if docstring and len(docstring) > 200:  # short docstrings are mostly "Return x."
                    name = getattr(node, "name", "<module>")
                    docs.append({"name": f"doc:{module}.{name}", "unit": unit, "kind": "prose", "text": docstring})

    for lang, language in LANGUAGES.items():
        for po in django_catalogs(lang):
            app = po.parts[-5] if "contrib" in po.parts else "core"
            pairs = read_po(po)
            if by_content:  # one page stream per split, each cut into pages after the split
                flags = [is_heldout(f"msgid:{en}", heldout_fraction) for en, _ in pairs]
                groups = [("train", [p for p, h in zip(pairs, flags) if not h])]
                groups += [("heldout", [p for p, h in zip(pairs, flags) if h])]
            else:
                groups = [("", pairs)]
            for tag, group in groups:
                # Chunks of 8 lines: each document is a short "phrasebook" page.
                for start in range(0, len(group), 8):
                    lines = [f"English: {en}\n{language}: {tr}" for en, tr in group[start : start + 8]]
                    name = f"po:{lang}:{app}:{tag + ':' if tag else ''}{start}"
                    docs.append({"name": name, "unit": tag, "kind": "translation", "text": "\n\n".join(lines)})

    seen: set[str] = set()
    unique: list[dict] = []
    shared = _shared_paragraph_units(docs) if by_content else {}
    for doc in docs:  # drop exact duplicates (same docstring inherited in several places)
        key = hashlib.sha256(doc["text"].encode()).hexdigest()
        if key in seen:
            continue
        seen.add(key)
        unit = doc.pop("unit")
        unit = shared.get(unit, unit)
        if not by_content:
            held = is_heldout(doc["name"], heldout_fraction)
        elif doc["kind"] == "translation":
            held = unit == "heldout"
        else:
            held = is_heldout(unit, heldout_fraction)
        doc["split"] = "heldout" if held else "train"
        unique.append(doc)
    return unique


def _shared_paragraph_units(docs: list[dict], min_chars: int = 80) -> dict[str, str]:
    """``{unit: representative unit}`` joining the prose units that share a paragraph of ``min_chars`` or more
    (pydoc's ``compound`` topic repeats ``while``, ``for``, ``try``...): one union-find over paragraphs."""
    parent: dict[str, str] = {}

    def find(u: str) -> str:
        while parent.setdefault(u, u) != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    owner: dict[str, str] = {}
    for doc in docs:
        if doc["kind"] != "prose":
            continue
        find(doc["unit"])
        for para in doc["text"].split("\n\n"):
            para = " ".join(para.split())
            if len(para) >= min_chars:
                first = owner.setdefault(para, doc["unit"])
                a, b = find(first), find(doc["unit"])
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {u: find(u) for u in parent}


def verbatim_in_train(texts: list[str], docs: list[dict]) -> list[int]:
    """Indices of ``texts`` that occur verbatim (after collapsing whitespace) inside a training document."""
    train = "\n".join(" ".join(d["text"].split()) for d in docs if d["split"] == "train")
    return [i for i, text in enumerate(texts) if " ".join(text.split()) in train]


def source_versions() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "django": importlib.metadata.version("django"),
    }


def write_corpus(docs: list[dict], path: str | pathlib.Path) -> None:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")


def read_corpus(path: str | pathlib.Path) -> list[dict]:
    with pathlib.Path(path).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def corpus_stats(docs: list[dict]) -> list[dict]:
    """Tidy rows ``{kind, split, documents, characters}`` for the data card."""
    rows: dict[tuple, dict] = {}
    for doc in docs:
        row = rows.setdefault(
            (doc["kind"], doc["split"]), {"kind": doc["kind"], "split": doc["split"], "documents": 0, "characters": 0}
        )
        row["documents"] += 1
        row["characters"] += len(doc["text"])
    return [rows[k] for k in sorted(rows)]
