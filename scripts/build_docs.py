"""Build the docs site (``make docs``): ``docs/`` and the executed notebooks, rendered by MkDocs and mkdocs-jupyter
into ``site/``, offline and deterministic.

1. Stage ``docs/`` into ``.cache/docs-src`` with ``notebooks/[0-9]*.ipynb`` and the data cards beside it, as they
   lie in the repository, so a root-relative link (``/notebooks/...``, ``/data/...``) resolves on GitHub and in
   the site alike (``validation.links.absolute_links: relative_to_docs``).
2. Write the build configuration: ``mkdocs.yml`` with each paper section's notebooks appended to its ``nav``
   entry (``NOTEBOOK_SECTIONS``: a notebook joins by its file name's first digit, so a new one needs no edit).
3. ``mkdocs build --strict`` (a broken link or a page left out of the nav fails the build) with
   ``SOURCE_DATE_EPOCH`` set to the last commit's time, so two builds of one commit are byte-identical.

    python scripts/build_docs.py [--site site]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from specdec.papers import STUDIES, notebook_sections

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / ".cache" / "docs-src"
DATA_CARDS = ["data/DATA_CARD.md", "data/parallel/DATA_CARD.md", "data/paper/README.md"]
# first digit of a notebook's file name -> the nav section it joins (the registry: specdec.papers.STUDIES)
NOTEBOOK_SECTIONS = notebook_sections()


def notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))


def stage(into: Path) -> None:
    """Copy docs/, the notebooks and the data cards into ``into`` (emptied first)."""
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(ROOT / "docs", into)
    (into / "notebooks").mkdir()
    for nb in notebooks():
        shutil.copy2(nb, into / "notebooks" / nb.name)
    for card in DATA_CARDS:
        (into / card).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / card, into / card)


def section_title(name: str) -> str:
    """A study's nav title: its registry name with a capital first letter (``engine`` -> ``Engine``)."""
    return name[:1].upper() + name[1:]


def nav_with_notebooks(nav: list) -> list:
    """``nav`` (mkdocs.yml's: the scoreboard, reference pages, data cards) with every study of the registry after
    the scoreboard, each its page then its notebooks: ``{"TABED": ["papers/tabed.md",
    "notebooks/10_tabed_benchmark.ipynb", ...]}``; notebook 90 after the scoreboard's page."""
    sections = {digit: section_title(name) for digit, name in NOTEBOOK_SECTIONS.items()}
    by_section: dict[str, list[str]] = {}
    for nb in notebooks():
        section = sections.get(nb.name[0])
        if section is None:
            raise SystemExit(f"{nb.name}: no study in specdec.papers.STUDIES has notebooks starting with {nb.name[0]}")
        by_section.setdefault(section, []).append(f"notebooks/{nb.name}")
    studies = [{section_title(s.name): s.page} for s in STUDIES.values()]
    out = []
    for entry in nav[:1] + studies + nav[1:]:
        ((title, target),) = entry.items()
        if title in by_section:
            pages = target if isinstance(target, list) else [target]
            entry = {title: pages + [{nb.split("/")[-1].removesuffix(".ipynb"): nb} for nb in by_section[title]]}
        out.append(entry)
    return out


def commit_time() -> str:
    """The last commit's time (Unix seconds), or 0 outside a git checkout (or without git)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        return "0"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "0"


def build(site: Path, staging: Path = STAGE) -> int:
    """Build the site into ``site``, staging its sources in ``staging`` (a test passes its own folder, so that two
    builds never share one); the exit status of ``mkdocs build``."""
    stage(staging)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["docs_dir"] = str(staging)
    config["site_dir"] = str(site)
    config["nav"] = nav_with_notebooks(config["nav"])
    config_file = staging.parent / f"{staging.name}.mkdocs.yml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    env = {**os.environ, "SOURCE_DATE_EPOCH": commit_time(), "NO_MKDOCS_2_WARNING": "1"}  # no end-of-life banner
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "--quiet", "-f", str(config_file)]
    return subprocess.run(mkdocs, cwd=ROOT, env=env).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "site", help="output folder (default: site/)")
    args = ap.parse_args(argv)
    code = build(args.site.resolve())
    if code == 0:
        print(f"docs site: {args.site}/index.html ({len(notebooks())} notebooks)")
    return code


if __name__ == "__main__":
    sys.exit(main())
