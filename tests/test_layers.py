"""The floor plan: the layering contracts of pyproject.toml hold (import-linter), no two
modules of the package import each other, directly or through others (lazy imports inside
functions count), and no module imports another subpackage's private module."""

from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contracts_hold():
    assert (
        importlinter_cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
        == 0
    )


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


def _private_reaches(graph) -> list[tuple[str, str]]:
    """Imports of a subpackage's private module (``pkg.sub._mod``) from outside ``pkg.sub``;
    the root package's own private modules (``cgmpinn_jax._checks``, ...) are shared."""
    out = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            parts = imported.split(".")
            for i, part in enumerate(parts[1:], 1):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])
                    inside = importer == owner or importer.startswith(owner + ".")
                    if i > 1 and not inside:
                        out.append((importer, imported))
                    break
    return out


def test_no_module_reaches_into_another_subpackages_private_module():
    assert _private_reaches(grimp.build_graph("cgmpinn_jax")) == []


def test_private_reach_detection_finds_one():
    graph = grimp.ImportGraph()
    for m in ("p", "p._shared", "p.a", "p.a._impl", "p.b"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="p.a._impl")
    graph.add_import(importer="p.b", imported="p._shared")
    assert _private_reaches(graph) == []
    graph.add_import(importer="p.b", imported="p.a._impl")
    assert _private_reaches(graph) == [("p.b", "p.a._impl")]


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
