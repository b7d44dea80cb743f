"""The docs speak about the library, not about how it was developed, and their examples run.

Every docs page (``docs/**/*.md``) and the docstring of every public object of the package
must not mention issue numbers (``issue 43``), commit hashes (a bare hexadecimal word such as
``2ee7061``) or the sessions and tasks of the development process; inline code and code
blocks are not read (an example may print a hash). The pages' code lines fit the site's code
blocks, their tables fit the page, and the worked examples of ``docs/problems-from-data.md``
run as printed, importing only public names, and define the same problems as
``cgmpinn_jax.problems.worked``.
"""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PACKAGE = ROOT / "cgmpinn_jax"

ISSUE_RE = re.compile(r"\bissues?\s+#?\d+", re.I)
# a bare 7-to-12-digit hexadecimal word with a digit and a letter, not part of a longer token
# ("2ee7061", "2ee7061."; not "x86_64", "3.51e-04", "sha256:..." or a path)
HASH_RE = re.compile(
    r"(?<![\w./:#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,12}(?![\w/-]|\.\w)"
)
# the development process: "this session", "a session", "sessions", "this task", "the task",
# "tasks"; a Python or notebook session is an ordinary thing to mention
PROCESS_RE = re.compile(
    r"(?<![-\w])(?<!python )(?<!jupyter )(?<!ipython )(?<!notebook )(?<!interactive )"
    r"sessions?(?![-\w])"
    r"|(?<![-\w])(?:this|the|a|that|each|every|one|our|its|next|later)\s+task(?![-\w])"
    r"|(?<![-\w])tasks(?![-\w])",
    re.I,
)
# the pages only: the machine a result came from is named by its kind, not as "this machine"
MACHINE_RE = re.compile(r"\bdevelopment machine\b|\bthis (?:project|machine)\b", re.I)

FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.S | re.M)
CODE_SPAN_RE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)
DOCTEST_RE = re.compile(r"^[ \t]*(?:>>>|\.\.\.)[^\n]*$", re.M)


def prose_of_page(text: str) -> str:
    """A Markdown page without its code blocks, inline code spans and HTML comments."""
    return CODE_SPAN_RE.sub(" ", FENCE_RE.sub(" ", COMMENT_RE.sub(" ", text)))


def prose_of_docstring(text: str) -> str:
    """A docstring without its doctest lines and inline code spans (``x`` and `x`)."""
    return CODE_SPAN_RE.sub(" ", DOCTEST_RE.sub(" ", text))


def findings(prose: str, machine: bool = False) -> list[str]:
    patterns = [ISSUE_RE, HASH_RE, PROCESS_RE] + ([MACHINE_RE] if machine else [])
    return [m.group(0) for p in patterns for m in p.finditer(prose)]


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def public_docstrings(path: Path):
    """``(line, docstring)`` of every public object of a module: the module itself when its
    path is public, its classes, functions and methods whose names (and whose enclosing
    classes' names) are public, and the attribute docstrings of public names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parts = path.relative_to(ROOT).with_suffix("").parts
    if all(_public(p) for p in parts):
        doc = ast.get_docstring(tree, clean=False)
        if doc:
            yield 1, doc

    def visit(body):
        for a, b in zip(body, body[1:] + [None]):
            if isinstance(a, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and _public(
                a.name
            ):
                doc = ast.get_docstring(a, clean=False)
                if doc:
                    yield a.lineno, doc
                if isinstance(a, ast.ClassDef):
                    yield from visit(a.body)
            elif (
                isinstance(a, (ast.Assign, ast.AnnAssign))
                and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            ):
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if names and all(_public(n) for n in names):
                    yield b.lineno, b.value.value

    yield from visit(tree.body)


# ------------------------------------------------------------------------------------------
# the patterns themselves


@pytest.mark.parametrize(
    "text",
    [
        "the goal of issue 30 is met",
        "Issue 44's measurement",
        "as issues 19 and 22 found",
        "Since 2ee7061 a failure",
        "at 2ee7061.",
        "(0c2c4b12bc19)",
        "the iterations a session allows",
        "this session",
        "GPU sessions",
        "which this task did not have",
        "the task's goals",
        "as the tasks say",
    ],
)
def test_the_patterns_catch_process_language(text):
    assert findings(text)


@pytest.mark.parametrize(
    "text",
    [
        "3.51e-04 [1.35e-04 - 1.59e-03]",
        "x86_64",
        "float64",
        "a 4 x 100 network",
        "seed 1224",
        "`2ee7061`",
        "``0c2c4b12bc19``",
        "sha256:2ee7061aa",
        "benchmarks/2ee7061/x",
        "1e-3 to 1e-12",
        "a multi-task loss",
        "in a Python session",
        "an interactive session",
        "the issue of scale",
        "decadence",
        "defaced",
        "a1b2c3",
        "g2ee7061",
    ],
)
def test_the_patterns_leave_code_and_ordinary_words(text):
    assert findings(prose_of_page(text)) == []


def test_code_is_not_read():
    page = (
        "text\n\n```python\nx = '2ee7061'  # issue 43\n```\n\n"
        "    ```text\n    a session\n    ```\nmore `issue 4`\n"
    )
    assert findings(prose_of_page(page)) == []
    assert findings(prose_of_docstring("Example:\n    >>> run('issue 4')\n    ``2ee7061``")) == []
    assert findings(prose_of_page("done in issue 4")) == ["issue 4"]


def test_docstrings_of_private_objects_are_not_collected():
    mod = PACKAGE / "problems" / "base.py"  # a public module with public and private objects
    lines = {line for line, _ in public_docstrings(mod)}
    tree = ast.parse(mod.read_text())
    private = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.ClassDef))
        and n.name.startswith("_")
        and not n.name.startswith("__")
        and ast.get_docstring(n)
    ]
    assert lines and not lines & set(private)


# ------------------------------------------------------------------------------------------
# the pages and the docstrings


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_docs_page_speaks_about_the_library(page):
    found = findings(prose_of_page(page.read_text()), machine=True)
    assert found == [], f"{page.relative_to(ROOT)}: {found}"


def test_public_docstrings_speak_about_the_library():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, doc in public_docstrings(path):
            for hit in findings(prose_of_docstring(doc)):
                found.append(f"{path.relative_to(ROOT)}:{line}: {hit!r}")
    assert found == [], "process language in docstrings:\n" + "\n".join(found)


# ------------------------------------------------------------------------------------------
# code lines, tables and the worked examples


MAX_CODE_LINE = 88
MAX_COLUMNS = 8


def code_blocks(text: str, lang: str | None = None) -> list[str]:
    """The contents of the fenced code blocks of a page (of one language, when given),
    dedented by their fence's indentation."""
    out = []
    for m in re.finditer(
        r"^([ \t]*)(`{3,}|~{3,})[ \t]*(\w*)[^\n]*\n(.*?)^[ \t]*\2[ \t]*$", text, re.S | re.M
    ):
        if lang is None or m.group(3) == lang:
            indent = len(m.group(1))
            out.append(
                "".join(
                    line[indent:] if line[:indent].isspace() else line
                    for line in m.group(4).splitlines(keepends=True)
                )
            )
    return out


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_code_lines_fit(page):
    long = [
        line
        for block in code_blocks(page.read_text())
        for line in block.splitlines()
        if len(line) > MAX_CODE_LINE
    ]
    assert long == [], f"{page.relative_to(ROOT)}: code lines over {MAX_CODE_LINE} characters"


@pytest.mark.parametrize(
    "page",
    [p for p in pages() if p.name != "results-tables.md"],
    ids=lambda p: str(p.relative_to(DOCS)),
)
def test_tables_fit(page):
    """Tables of at most `MAX_COLUMNS` columns (wider ones go to docs/results-tables.md,
    whose tables may scroll)."""
    text = FENCE_RE.sub(" ", page.read_text())
    rule = re.compile(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*")  # a table's header rule
    columns = [
        len(line.strip().strip("|").split("|"))
        for line in text.splitlines()
        if rule.fullmatch(line)
    ]
    wide = [n for n in columns if n > MAX_COLUMNS]
    assert wide == [], (
        f"{page.relative_to(ROOT)}: tables of {wide} columns (move them to docs/results-tables.md)"
    )


WORKED_PAGE = DOCS / "problems-from-data.md"


def _private_uses(tree: ast.AST) -> list[str]:
    """Private names a code block takes from the package: ``from cgmpinn_jax._x import y``,
    ``from cgmpinn_jax.x import _y`` and ``cj._y`` / ``module._y`` attributes."""
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cgmpinn_jax"):
            if any(p.startswith("_") for p in node.module.split(".")):
                bad.append(node.module)
            bad += [a.name for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if any(p.startswith("_") for p in a.name.split("."))]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(node.attr)
        elif (
            isinstance(node, ast.Name) and node.id.startswith("_") and not node.id.startswith("__")
        ):
            bad.append(node.id)
    return bad


def test_worked_examples_use_public_names_and_show_their_imports():
    blocks = code_blocks(WORKED_PAGE.read_text(), "python")
    assert len(blocks) >= 3
    for block in blocks:
        tree = ast.parse(block)
        assert _private_uses(tree) == [], block[:200]
        if any(isinstance(n, ast.ClassDef) for n in tree.body):
            assert any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body), block[:200]


def test_worked_examples_run_and_match_the_library():
    """Each class of the page, executed as printed, has the library's class attributes and
    fields, the same ``operator``, ``pieces`` and ``reference`` (their code), and draws the
    same points."""
    import dataclasses

    import jax
    import numpy as np

    from cgmpinn_jax.problems import worked

    classes, methods = {}, {}
    library = _methods(Path(worked.__file__).read_text())
    for i, block in enumerate(code_blocks(WORKED_PAGE.read_text(), "python")):
        methods.update(_methods(block))
        module = types.ModuleType(f"docs_worked_{i}")  # a module of its own, as a script would be
        sys.modules[module.__name__] = module
        try:
            exec(compile(block, f"{WORKED_PAGE.name}, block {i}", "exec"), module.__dict__)  # noqa: S102
        finally:
            del sys.modules[module.__name__]
        classes.update(
            {
                k: v
                for k, v in vars(module).items()
                if k in worked.__all__ and isinstance(v, type) and v.__module__ == module.__name__
            }
        )
    assert set(classes) == {"BurgersFromData", "LidDrivenCavity", "SquareWithHoles"}
    small = {
        "BurgersFromData": dict(n_pde=64, n_ic=16, n_bc=8, n_refine=10),
        "LidDrivenCavity": dict(n_pde=64, n_wall=30, n_lid=20, n_refine=10),
        "SquareWithHoles": dict(n_pde=64, n_outer=20, n_holes=20),
    }
    key = jax.random.PRNGKey(3)
    for name, cls in classes.items():
        ours, lib = cls(**small[name]), getattr(worked, name)(**small[name])
        for attr in (
            "name",
            "coords",
            "fields",
            "equations",
            "terms",
            "homogeneous",
            "lower",
            "upper",
            "geometry",
            "defaults",
        ):
            assert getattr(ours, attr, None) == getattr(lib, attr, None), (name, attr)
        assert dataclasses.asdict(ours) == dataclasses.asdict(lib), name
        assert set(methods[name]) == set(library[name]), name
        for method in ("operator", "pieces", "reference"):
            assert methods[name][method] == library[name][method], (name, method)
        if methods[name]["sample_points"] != library[name]["sample_points"]:
            # written differently from the library (a public helper for a private one): the
            # same points; compiled, as the two programs are the same and the test's XLA cache
            # serves the second
            a, b = jax.jit(ours.sample_points)(key), jax.jit(lib.sample_points)(key)
            assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b), name
            for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
                np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=name)


def _methods(source: str) -> dict[str, dict[str, str]]:
    """``{class: {method: ast dump of its body}}`` of the classes of ``source`` (a method's
    docstring left out: the code is compared, not its description)."""

    def body(f):
        doc = (
            f.body and isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant)
        )
        return f.body[1:] if doc and isinstance(f.body[0].value.value, str) else f.body

    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                f.name: ast.dump(ast.Module(body=body(f), type_ignores=[]))
                for f in node.body
                if isinstance(f, ast.FunctionDef)
            }
    return out
