"""The built docs site: the API reference documents every public name, each with its table;
the notebooks are pages with their figures; formulas are MathML; nothing loads from a network.

A public module is the package, each subpackage and each module of the package whose dotted
path has no component starting with ``_``; its public names are its ``__all__``. The built site
(``mkdocs build --strict``, a few seconds; skipped where the docs extras are missing) must:

- have an entry for every public name: an inventory (``objects.inv``) path that resolves to
  the same object, at whichever public path it is documented;
- give every documented function or class that takes arguments a "Parameters" table, and every
  dataclass or named tuple with fields an "Attributes" or "Parameters" table;
- give every enumeration a description and each of its members, every protocol, exception,
  argument-free class and constant a description.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import pkgutil
import re
import typing
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

import cgmpinn_jax

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    names = ["cgmpinn_jax"]
    for info in pkgutil.walk_packages(cgmpinn_jax.__path__, "cgmpinn_jax."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            names.append(info.name)
    return names


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every name of every public ``__all__`` (submodules listed in the
    package's ``__all__`` are modules, not entries)."""
    out = []
    for mod_name in public_modules():
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", ()):
            if not inspect.ismodule(getattr(mod, name)):
                out.append((mod_name, name))
    return out


def read_inventory(path: Path) -> dict[str, tuple[str, str]]:
    """``{dotted path: (role, uri)}`` of a Sphinx version-2 inventory."""
    head = path.read_bytes().split(b"\n", 4)
    assert head[0].startswith(b"# Sphinx inventory version 2"), head[0]
    out = {}
    for line in zlib.decompress(head[4]).decode().splitlines():
        m = re.match(r"(\S+)\s+(\S+)\s+-?\d+\s+(\S+)", line)
        if m:
            name, role, uri = m.groups()
            out[name] = (role, uri.replace("$", name))
    return out


def resolve(path: str):
    """The object at a dotted path (module, then attributes), or a sentinel."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return _MISSING
        return obj
    return _MISSING


_MISSING = object()


class _Entries(HTMLParser):
    """The text of each documented object's block: ``{id: text}`` for every ``div.doc-object``
    (nested objects' text is included in their parent's too)."""

    def __init__(self):
        super().__init__()
        self.stack: list[list] = []  # [id, depth, parts]
        self.depth = 0
        self.entries: dict[str, str] = {}
        self._pending_div = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div":
            self.depth += 1
            if "doc-object" in (a.get("class") or "").split():
                self.stack.append([None, self.depth, []])
        if (
            re.fullmatch(r"h[1-6]", tag)
            and self.stack
            and self.stack[-1][0] is None
            and a.get("id")
        ):
            self.stack[-1][0] = a["id"]

    def handle_endtag(self, tag):
        if tag == "div":
            if self.stack and self.stack[-1][1] == self.depth:
                hid, _, parts = self.stack.pop()
                text = "".join(parts)
                if hid:
                    self.entries[hid] = text
                if self.stack:
                    self.stack[-1][2].append(text)
            self.depth -= 1

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2].append(data)


@pytest.fixture(scope="module")
def site(built_site) -> Path:
    return built_site


@pytest.fixture(scope="module")
def inventory(site) -> dict[str, tuple[str, str]]:
    return read_inventory(site / "objects.inv")


@pytest.fixture(scope="module")
def entries(site) -> dict[str, str]:
    found: dict[str, str] = {}
    for page in (site / "api").rglob("index.html"):
        parser = _Entries()
        parser.feed(page.read_text())
        found.update(parser.entries)
    return found


def _documented_at(inventory) -> dict[int, list[str]]:
    by_id: dict[int, list[str]] = {}
    for path in inventory:
        obj = resolve(path)
        if obj is not _MISSING:
            by_id.setdefault(id(obj), []).append(path)
    return by_id


def test_every_public_name_has_an_entry(inventory):
    by_id = _documented_at(inventory)
    missing = []
    for mod, name in public_names():
        obj = getattr(importlib.import_module(mod), name)
        here = f"{mod}.{name}"
        if here not in inventory and not by_id.get(id(obj)):
            missing.append(here)
    assert missing == [], f"{len(missing)} public names without an API entry:\n" + "\n".join(
        missing
    )


def _takes_arguments(obj) -> bool:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in sig.parameters.values())


def _has_fields(obj) -> bool:
    return inspect.isclass(obj) and bool(
        dataclasses.fields(obj) if dataclasses.is_dataclass(obj) else getattr(obj, "_fields", ())
    )


def _is_protocol(obj) -> bool:
    return inspect.isclass(obj) and bool(getattr(obj, "_is_protocol", False))


def test_every_entry_has_its_table(inventory, entries):
    lacking = []
    for mod, name in public_names():
        obj = getattr(importlib.import_module(mod), name)
        paths = [p for p in inventory if p == f"{mod}.{name}"] or [
            p for p in _documented_at(inventory).get(id(obj), []) if p in entries
        ]
        path = next((p for p in paths if p in entries), None)
        if path is None:
            continue  # no entry: the test above reports it
        text = entries[path]
        heading = path.rsplit(".", 1)[-1]
        described = len(text.replace(heading, "").strip()) > 20
        if typing.get_origin(obj) is not None:  # a type alias such as Literal[...]: a description
            ok = described
        elif inspect.isclass(obj) and issubclass(obj, enum.Enum):
            ok = described and all(m in text for m in obj.__members__)  # every member listed
        elif inspect.isclass(obj) and (issubclass(obj, BaseException) or _is_protocol(obj)):
            ok = described
        elif _has_fields(obj):
            ok = "Attributes:" in text or "Parameters:" in text
        elif inspect.isclass(obj) or callable(obj):
            ok = "Parameters:" in text if _takes_arguments(obj) else described
        else:
            ok = described  # a constant: a description below its name
        if not ok:
            lacking.append(path)
    assert lacking == [], f"{len(lacking)} entries without their table:\n" + "\n".join(lacking)


def test_api_search_finds_the_pieces_of_a_problem(site):
    """The site search index has an API entry for the names a user writes a problem with."""
    index = (site / "search" / "search_index.json").read_text()
    for name in ("Dirichlet", "Neumann", "Box", "load_reference", "partial"):
        assert re.search(rf'"location":\s*"api/[\w-]+/#cgmpinn_jax\.[\w.]*\b{name}"', index), name


def test_notebooks_are_pages_with_their_figures(site):
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 5
    for nb in notebooks:
        page = site / "notebooks" / nb.stem / "index.html"
        assert page.exists(), nb.name
        text = page.read_text()
        assert text.count('src="data:image/png') >= 1, f"{nb.name}: no figure on its page"


def test_formulas_are_mathml_and_nothing_loads_from_a_network(site):
    home = (site / "index.html").read_text()
    assert home.count("<math") >= 5 and "arithmatex" not in home
    for page in site.rglob("*.html"):
        text = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]*(?:src|href)="(https?://[^"]+)"', text)
        assert remote == [], f"{page.relative_to(site)} loads {remote[:3]}"


def test_no_formula_shows_a_latex_command_as_text(site):
    """A command latex2mathml passed through as text (a stray backslash, a line ending in ``\\``)
    shows on the page as ``\\(`` or ``\\foo``: no text node inside a formula holds a backslash."""
    bad = {}
    for page in site.rglob("*.html"):
        for formula in re.findall(r"<math.*?</math>", page.read_text(), re.S):
            texts = [t for t in re.findall(r">([^<]*)<", formula) if "\\" in t]
            if texts:
                bad.setdefault(str(page.relative_to(site)), []).extend(texts)
    assert bad == {}, bad
