"""The API reference reads well: docstrings use mkdocstrings' cross-references (Markdown),
not Sphinx roles, and the site documents only public paths.

The source-level checks always run; the site check builds the docs (``mkdocs build --strict``,
a few seconds) and is skipped where the docs extras (``pip install ".[docs]"``) are missing.
"""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cgmpinn_jax"
ROLES = (":class:", ":func:", ":meth:", ":mod:", ":data:", ":attr:")
ROLE_RE = re.compile(r":(?:class|func|meth|mod|data|attr):`")
# a dotted path with at least one component that starts with "_" (training._sweep, _x.y)
PRIVATE_PATH_RE = re.compile(r"\b\w+(?:\.\w+)+\b")


def _is_private_path(text: str) -> list[str]:
    return [
        p for p in PRIVATE_PATH_RE.findall(text) if any(c.startswith("_") for c in p.split("."))
    ]


def _docstrings(path: Path):
    """(line, docstring) of the module, its classes and functions, and attribute docstrings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "lineno", 1), doc
        body = getattr(node, "body", None)
        if isinstance(body, list):  # "attribute docstrings": a string right after an assignment
            for a, b in zip(body, body[1:]):
                if (
                    isinstance(a, (ast.Assign, ast.AnnAssign))
                    and isinstance(b, ast.Expr)
                    and isinstance(b.value, ast.Constant)
                    and isinstance(b.value.value, str)
                ):
                    yield b.lineno, b.value.value


def test_no_sphinx_roles_in_docstrings():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, doc in _docstrings(path):
            for m in ROLE_RE.finditer(doc):
                found.append(
                    f"{path.relative_to(ROOT)}:{line}: {doc[m.start() : m.start() + 60]!r}"
                )
    assert found == [], (
        "Sphinx roles in docstrings (use [`Name`][cgmpinn_jax.path] or `name`):\n"
        + "\n".join(found)
    )


def test_docs_directives_name_public_paths():
    """Every ``::: path`` line of the docs names a public object (no private module as a
    heading)."""
    directives = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for line in page.read_text().splitlines():
            if line.startswith(":::"):
                directives.append((page.name, line[3:].strip()))
    assert directives, "no ::: directives found in docs/"
    private = [
        (page, path) for page, path in directives if any(c.startswith("_") for c in path.split("."))
    ]
    assert private == []


class _Headings(HTMLParser):
    """The ``(id, text)`` of every h1-h6 heading (mkdocstrings' id is the object's full path)."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.headings: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if re.fullmatch(r"h[1-6]", tag):
            if self.depth == 0:
                self.headings.append((dict(attrs).get("id") or "", ""))
            self.depth += 1

    def handle_endtag(self, tag):
        if re.fullmatch(r"h[1-6]", tag) and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            hid, text = self.headings[-1]
            self.headings[-1] = (hid, text + data)


def _private_heading(hid: str, text: str) -> bool:
    """A heading that names a private module or object: a private component in its dotted id
    (``cgmpinn_jax.training._sweep``), a private dotted path in its text (``training._sweep``),
    or a text that is a private name (``_sweep``, shown without its path)."""
    name = text.replace("\u00b6", "").strip().split("(")[0].strip()
    return bool(
        _is_private_path(hid)
        or _is_private_path(text)
        or (name.startswith("_") and not name.startswith("__"))
    )


@pytest.fixture(scope="module")
def api_html(built_site) -> str:
    return "\n".join(page.read_text() for page in sorted((built_site / "api").rglob("index.html")))


def test_api_page_has_no_sphinx_roles(api_html):
    assert "cgmpinn_jax.train" in api_html  # the page was rendered
    left = [role for role in ROLES if role in api_html]
    assert left == []


def test_api_page_headings_name_no_private_module(api_html):
    parser = _Headings()
    parser.feed(api_html)
    assert len(parser.headings) > 20
    private = [(hid, text.strip()) for hid, text in parser.headings if _private_heading(hid, text)]
    assert private == []


def test_api_page_examples_render_as_code(api_html):
    """Doctest examples are highlighted code (an ``Examples:`` section), not nested quotes."""
    assert "<blockquote>" not in api_html
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api_html
