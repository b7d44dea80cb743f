"""The front door: a short README whose links resolve, and a docs site whose navigation lists
every page (``mkdocs build --strict`` itself runs in ``.ci/run``)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINK_RE = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_links_resolve():
    links = [t for t in LINK_RE.findall(README) if "://" not in t]
    assert "docs/getting-started.md" in links
    missing = [t for t in links if not (ROOT / t).exists()]
    assert missing == []


def test_docs_pages_link_only_to_pages_and_images_that_exist():
    for page in (ROOT / "docs").rglob("*.md"):
        text = re.sub(
            r"\$\$.*?\$\$|\$[^$\n]+\$", "", page.read_text(), flags=re.S
        )  # formulas: N[u](z)
        for t in LINK_RE.findall(text):
            if "://" in t:
                continue
            assert (page.parent / t).exists(), f"{page.name}: link to {t}"


def test_mkdocs_nav_lists_every_page():
    nav = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s+([\w/-]+\.(?:md|ipynb))\s*$", nav, re.M))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    pages |= {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert listed == pages
