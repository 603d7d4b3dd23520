"""The README and the docs site: generated numbers are current, the README stays a front door, and the site builds
offline and renders in a browser (the scoreboard and every notebook page with its figures).

The browser checks need headless Chromium (`make browser`, as root: Debian's `chromium`); without it they skip,
saying so. Building the site needs only the locked packages.
"""

from __future__ import annotations

import base64
import csv
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from filelock import FileLock
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import generated_blocks  # noqa: E402


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scoreboard, numbers, docs_tables, build_docs = (
    script("update_readme_scoreboard"),
    script("update_readme_numbers"),
    script("update_docs_tables"),
    script("build_docs"),
)
README = ROOT / "README.md"


# ------------------------------------------------------------------------------------------------ generated blocks
def test_splice_replaces_only_the_block():
    text = "head\n<!-- x:start -->\nold\n<!-- x:end -->\nmiddle\n<!-- x:start -->\n<!-- x:end -->\ntail\n"
    out = generated_blocks.splice_text(text, "x", "new")
    assert out == "head\n<!-- x:start -->\nnew\n<!-- x:end -->\nmiddle\n<!-- x:start -->\nnew\n<!-- x:end -->\ntail\n"
    assert generated_blocks.splice_text(out, "x", "new") == out
    with pytest.raises(ValueError, match="no <!-- y:start -->"):
        generated_blocks.splice_text(text, "y", "new")


def committed_board() -> list[dict]:
    with (ROOT / "results" / "tiny" / "scoreboard.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_scoreboard_blocks_are_what_the_results_give():
    """README's summary and the docs front page's full table are generated from the committed scoreboard: a
    result that changed without ``make reproduce`` (or a hand edit) fails here."""
    rows = committed_board()
    fix = "stale: run .venv/bin/python scripts/update_readme_scoreboard.py"
    assert generated_blocks.block_of(README.read_text(), "scoreboard-summary") == scoreboard.summary(rows).strip(), fix
    assert (
        generated_blocks.block_of(scoreboard.BOARD_PAGE.read_text(), "scoreboard") == scoreboard.block(rows).strip()
    ), fix


def test_summary_counts_every_finding_once():
    rows = committed_board()
    findings = [r for r in rows if r.get("section") != "sanity"]
    total = next(line for line in scoreboard.summary(rows).splitlines() if line.startswith("| **all**"))
    assert f"| **all** | {len(findings)} |" in total


def test_measured_times_are_what_measurements_csv_gives():
    """The time summaries (README, the new user's path) are generated from ``results/measurements.csv``, and the
    full table on the make-targets page shows every target's latest row (its test count changes with every new
    test, so only the times are compared)."""
    fix = "stale: run .venv/bin/python scripts/update_readme_numbers.py"
    for page, (name, prefix) in numbers.SUMMARY_PAGES.items():
        assert generated_blocks.block_of(page.read_text(), name) == numbers.summary(prefix).strip(), (
            f"{page.name}: {fix}"
        )
    full = generated_blocks.block_of(numbers.FULL_PAGE.read_text(), "numbers")
    for target, row in numbers.latest().items():
        assert f"| `{target.replace('-', ' ', 1)}` | {numbers.minutes(row['seconds'])} |" in full, fix


@pytest.mark.parametrize("page, name", list(docs_tables.BLOCKS), ids=[f"{p.stem}-{n}" for p, n in docs_tables.BLOCKS])
def test_paper_page_tables_are_what_the_results_give(page, name):
    """The paper pages' tables from result rows (the findings over training seeds, the proxy conditions) are
    generated from the committed rows: a changed row without ``make reproduce`` (or a hand edit) fails here. One
    test per block, so that the blocks' findings spread over the workers."""
    try:
        body = docs_tables.BLOCKS[page, name]().strip()
    except docs_tables.NoHistory as error:  # a shallow clone lacks the commit a block compares with
        pytest.skip(f"not checked without the git history: {page.name} ({name}): {error}")
    assert generated_blocks.block_of(page.read_text(), name) == body, (
        f"{page.name} ({name}) is stale: run .venv/bin/python scripts/update_docs_tables.py"
    )


def test_readme_is_a_front_door():
    text = README.read_text()
    assert len(text.encode()) <= 15_000, f"README.md is {len(text.encode())} bytes: move detail into docs/"
    for command in ("make reproduce", "make test", "make paper-try", "make docs"):
        assert command in text
    for link in re.findall(r"\]\(((?:docs|notebooks|data)/[^)#]*)", text):
        assert (ROOT / link).exists(), link


# ------------------------------------------------------------------------------------------------------- the site
def image_outputs(notebook: Path) -> int:
    cells = json.loads(notebook.read_text())["cells"]
    return sum("image/png" in out.get("data", {}) for c in cells if c["cell_type"] == "code" for out in c["outputs"])


def test_every_notebook_has_a_section():
    nav = build_docs.nav_with_notebooks(build_docs.yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    listed = json.dumps(nav)
    for nb in build_docs.notebooks():
        assert f"notebooks/{nb.name}" in listed, nb.name


@pytest.fixture(scope="module")
def site(tmp_path_factory, worker_id) -> Path:
    """The site, built the way ``make docs`` builds it (strict: a broken link fails), into a temporary folder; under
    xdist one worker builds it (a file lock) and the others read it, so two builds never share the converter's
    cache at once."""
    if worker_id == "master":
        out = tmp_path_factory.mktemp("site")
        assert build_docs.build(out, out.parent / "docs-src") == 0, "mkdocs build --strict failed (its log is above)"
        return out
    shared = tmp_path_factory.getbasetemp().parent
    out = shared / "docs-site"
    with FileLock(str(shared / "docs-site.lock")):
        if not (out / "index.html").exists():
            assert build_docs.build(out, shared / "docs-src") == 0, "mkdocs build --strict failed (its log is above)"
    return out


def test_site_has_the_scoreboard_and_every_notebook(site):
    assert (site / "index.html").exists()
    for nb in build_docs.notebooks():
        assert (site / "notebooks" / f"{nb.stem}.html").exists(), nb.name
    text = (site / "index.html").read_text()
    assert "Scoreboard" in text and "<table>" in text
    # the wide scoreboard gets the page's whole width (no side bars) and shows the verdict before the long text
    assert 'data-md-type="navigation" hidden' in text and 'data-md-type="toc" hidden' in text
    header = re.search(r"<thead>.*?</thead>", text, re.S).group(0)
    assert header.index(">verdict<") < header.index(">claim<") < header.index(">validity<")
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", text), "a page must not load from the web"


def test_every_in_page_link_has_its_anchor(site):
    """A table-of-contents entry (or any ``href="#..."``) points at an id of its page: mkdocs-jupyter drops code spans
    from a heading's entry but keeps them in the heading's id, so a heading with code broke its entry."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(errors="replace")
        ids = set(re.findall(r'\bid="([^"]+)"', text)) | set(re.findall(r'\bname="([^"]+)"', text))
        broken += [f"{page.relative_to(site)}#{h}" for h in re.findall(r'href="#([^"]+)"', text) if h not in ids]
    assert broken == []


def chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def browse(tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium on ``url`` with its profile and caches in ``tmp`` (never the home folder)."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp), "XDG_CACHE_HOME": str(tmp)}
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={tmp / 'profile'}", "--virtual-time-budget=3000", *args, url]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=90, env=env)


def not_blank(png: bytes, least: int = 16) -> tuple[int, int]:
    """The size of a PNG that decodes, is at least ``least`` pixels each way and is not one flat colour."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert min(image.size) >= least, image.size
    assert any(lo != hi for lo, hi in image.getextrema()), "a blank (single-colour) image"
    return image.size


needs_browser = pytest.mark.skipif(
    chromium() is None,
    reason="no headless Chromium to open the docs site in: run `make browser` (as root it installs Debian's "
    "chromium with apt-get) or install chromium, then rerun",
)


@needs_browser
def test_scoreboard_page_renders(site, tmp_path):
    dom = browse(tmp_path / "dom", (site / "index.html").as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    findings = [r for r in committed_board() if r.get("section") != "sanity"]
    assert dom.stdout.count("<tr>") >= len(findings), "the rendered scoreboard lacks rows"
    shot = tmp_path / "index.png"
    done = browse(tmp_path / "shot", (site / "index.html").as_uri(), f"--screenshot={shot}", "--window-size=1280,900")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    not_blank(shot.read_bytes())


@needs_browser
def test_every_notebook_page_renders_its_figures(site, tmp_path):
    """Each notebook page, opened in the browser, holds as many figures as the notebook has image outputs, each a
    PNG that decodes to a picture that is not blank."""
    notebooks = build_docs.notebooks()

    def dom(nb: Path) -> str:
        done = browse(tmp_path / nb.stem, (site / "notebooks" / f"{nb.stem}.html").as_uri(), "--dump-dom")
        assert done.returncode == 0, f"{nb.name}: {done.stderr[-2000:]}"
        return done.stdout

    with ThreadPoolExecutor(max_workers=2) as pool:
        doms = dict(zip(notebooks, pool.map(dom, notebooks)))
    for nb, text in doms.items():
        assert "jupyter-wrapper" in text or "jp-Notebook" in text, f"{nb.name}: no rendered notebook in the page"
        figures = re.findall(r'<img[^>]+src="data:image/png;base64,([^"]+)"', text)
        assert len(figures) == image_outputs(nb), f"{nb.name}: {len(figures)} figures, {image_outputs(nb)} outputs"
        for figure in figures:
            not_blank(base64.b64decode(figure), least=50)
