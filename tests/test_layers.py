"""The floor plan: the layering contracts of pyproject.toml hold (import-linter), and no two
modules of the package import each other, directly or through others (lazy imports inside
functions count)."""

from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contracts_hold():
    assert importlinter_cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def _cycles(graph) -> list[tuple[str, str]]:
    out = []
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            if a != b and graph.chain_exists(importer=b, imported=a):
                out.append((a, b))
    return out


def test_no_import_cycle():
    graph = grimp.build_graph("cgmpinn_jax")
    assert len(graph.modules) > 50
    assert _cycles(graph) == []


def test_cycle_detection_finds_one():
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    assert _cycles(graph) == []
    graph.add_import(importer="p.c", imported="p.a")
    assert ("p.a", "p.b") in _cycles(graph)


@pytest.mark.parametrize("old", ["cgmpinn_jax.driver", "cgmpinn_jax.records", "cgmpinn_jax.nets"])
def test_old_module_paths_are_gone(old):
    """The module paths of 0.2 are no longer forwarded: importing one is a ModuleNotFoundError,
    and the package has no attribute of that name."""
    import importlib
    import sys

    import cgmpinn_jax as cj

    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=old.replace(".", r"\.")):
        importlib.import_module(old)
    with pytest.raises(AttributeError, match=f"no attribute '{old.split('.')[1]}'"):
        getattr(cj, old.split(".")[1])


def test_the_legacy_modules_are_removed():
    """``solvers`` (now ``stages``), the forwarding layer ``_deprecated`` and the flat names'
    ``_config_flat`` are not in the package (looked up in the package's own folder: a
    development install of another checkout may add a finder that still has them)."""
    from importlib.machinery import PathFinder

    import cgmpinn_jax as cj

    for name in ("solvers", "_deprecated", "_config_flat"):
        assert PathFinder.find_spec(f"cgmpinn_jax.{name}", cj.__path__) is None, name
        assert name not in dir(cj)
    assert PathFinder.find_spec("cgmpinn_jax.stages", cj.__path__) is not None


def test_the_package_has_no_stray_attribute():
    import cgmpinn_jax as cj

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cj.nope  # noqa: B018
    assert cj.stages.GaussNewton is __import__("cgmpinn_jax.stages", fromlist=["x"]).GaussNewton


def _body_lines(node) -> int:
    """Lines of a function's body, its docstring not counted."""
    import ast

    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else body[-1].end_lineno - body[0].lineno + 1


def _code_lines(text: str) -> int:
    """The lines of a module that are not docstrings (module, class, function and attribute
    docstrings: every statement that is a bare string)."""
    import ast

    doc = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            doc.update(range(node.lineno, node.end_lineno + 1))
    return len(text.splitlines()) - len(doc)


def test_modules_and_functions_stay_small():
    """No module over 400 lines of code, docstrings apart (the host loop 560: its calls, time limits and
    estimate); in training/ and stages/ no function body over 60 lines."""
    import ast

    pkg = ROOT / "cgmpinn_jax"
    cap = {"_loop.py": 560}
    big = [str(p.relative_to(ROOT)) for p in pkg.rglob("*.py") if _code_lines(p.read_text()) > cap.get(p.name, 400)]
    assert big == []
    long = []
    assert (pkg / "stages").is_dir() and not (pkg / "solvers").exists()
    for sub in ("training", "stages"):
        for p in (pkg / sub).glob("*.py"):
            for node in ast.walk(ast.parse(p.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > 60:
                    long.append(f"{p.name}:{node.name}")
    assert long == []
