"""Packages meet at their faces, checked: a module imports a sibling package only through
its face (``__init__``) or its internal face (``_internal``), at run time and for type
checkers alike; the plugins' distributions only through public faces; a package's private
modules never import their own package's face (docs/architecture.md, "Faces"). The layers
themselves are checked in ``test_import_layers.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_import_layers import PACKAGE, _is_private, _is_type_checking, _module_name

PLUGIN_SOURCES = sorted(PACKAGE.parents[1].glob("plugins/*/src"))
INTERNAL_FACE = "_internal"  # one per package: what its siblings share and users do not


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The module ``node`` imports from, a relative one resolved in ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _all_imports(tree: ast.AST, package: str) -> list[tuple[int, str, bool]]:
    """``(line, module, under TYPE_CHECKING)`` of every import in ``tree`` (module level,
    in functions, under ``if TYPE_CHECKING:``), relative ones resolved against ``package``;
    ``from m import n`` gives ``m`` and ``m.n``."""
    out: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, typing_only)
            return
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, typing_only) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _from_module(node, package)
            out.append((node.lineno, target, typing_only))
            out.extend((node.lineno, f"{target}.{a.name}", typing_only) for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child, typing_only)

    visit(tree, False)
    return out


def _private_imports(source: str, module: str, *, is_package: bool, plugin: bool) -> list[str]:
    """Where ``source`` (module ``module``) imports a private part (``_name``) of a package
    it is not inside: ``delegate_lens.etdump._columns`` from outside ``etdump/``, a
    private name of a face (``from delegate_lens.etdump import _x``). A package of
    delegate-lens may import a sibling's internal face (``delegate_lens.etdump._internal``);
    a plugin, a distribution of its own, imports public faces only."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for line, target, typing_only in _all_imports(ast.parse(source), package):
        parts = target.split(".")
        if parts[0] != "delegate_lens":
            continue
        private = [i for i, part in enumerate(parts) if i and _is_private(part)]
        if not private:
            continue
        owner = ".".join(parts[: private[0]])
        inside = module == owner or module.startswith(owner + ".")
        internal_face = parts[private[0]] == INTERNAL_FACE and len(private) == 1
        if plugin or not (inside or internal_face):
            found.append(f"line {line}: {target}{' (type only)' if typing_only else ''}")
    return sorted(set(found))


def _sources() -> list[tuple[Path, str, bool]]:
    """Every module and stub of delegate_lens and of the plugins' distributions: ``(path,
    module name, is a plugin's)``."""
    found = []
    for root, plugin in [(PACKAGE.parent, False)] + [(src, True) for src in PLUGIN_SOURCES]:
        top = PACKAGE if not plugin else root
        for path in sorted([*top.rglob("*.py"), *top.rglob("*.pyi")]):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((path, ".".join(parts), plugin))
    return found


def test_packages_import_each_other_through_their_faces() -> None:
    """Issue 31: a package imports a sibling only through its face (``__init__``) or its
    internal face (``_internal``), at run time and for type checkers alike; the plugins,
    separate distributions, only through public faces (docs/architecture.md, "Faces")."""
    sources = _sources()
    assert sum(plugin for *_, plugin in sources) > 10 and any(
        p.suffix == ".pyi" for p, *_ in sources
    )
    found = [
        f"{path.relative_to(PACKAGE.parents[1])} {where}"
        for path, module, plugin in sources
        for where in _private_imports(
            path.read_text(encoding="utf-8"),
            module,
            is_package=path.stem == "__init__",
            plugin=plugin,
        )
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "module"),
    [
        ("from delegate_lens.etdump._columns import EventKind\n", "delegate_lens.inspector._build"),
        ("import delegate_lens.etdump._columns\n", "delegate_lens.inspector._build"),
        ("from delegate_lens.etdump import _columns\n", "delegate_lens.inspector._build"),
        ("from ..etdump._columns import EventKind\n", "delegate_lens.inspector._build"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from delegate_lens.inspector._api import Inspector\n",
            "delegate_lens.report._data",
        ),
        ("def f():\n    from delegate_lens.inspector._tables import T\n", "delegate_lens.cli._x"),
        (
            "from delegate_lens.inspector.numerical_comparator._x import y\n",
            "delegate_lens.inspector._api",
        ),
        ("from delegate_lens.etdump._internal import _x\n", "delegate_lens.inspector._build"),
        ("from delegate_lens.etdump._internal._more import x\n", "delegate_lens.inspector._a"),
    ],
)
def test_the_face_check_can_fail(source: str, module: str) -> None:
    assert _private_imports(source, module, is_package=False, plugin=False), source


@pytest.mark.parametrize(
    "source",
    [
        "from delegate_lens.etrecord._internal import load_json\n",
        "from delegate_lens._lazy import attach_stub\n",
        "def f():\n    from delegate_lens.testing import _conformance as kit\n",
    ],
)
def test_the_face_check_holds_plugins_to_public_faces(source: str) -> None:
    assert _private_imports(source, "my_plugin.plugin", is_package=False, plugin=True), source


def test_the_face_check_passes_faces_and_a_package_s_own_modules() -> None:
    source = (
        "from delegate_lens.inspector._tables import BlockTable\n"
        "from delegate_lens.etdump import EventKind\n"
        "from delegate_lens.etdump._internal import file_wide_columns\n"
        "from delegate_lens._lazy import attach_stub\n"
        "from . import _tables\n"
        "import delegate_lens.inspector\n"
    )
    for module in (
        "delegate_lens.inspector._api",
        "delegate_lens.inspector.numerical_comparator._x",
    ):
        assert _private_imports(source, module, is_package=False, plugin=False) == []
    face = "from delegate_lens.inspector._api import Inspector as Inspector\n"
    assert _private_imports(face, "delegate_lens.inspector", is_package=True, plugin=False) == []


def _own_face_imports(source: str, module: str, submodules: set[str]) -> list[str]:
    """Where the private module ``module`` imports a name from its own package's face
    (``from delegate_lens.etrecord import ETRecord`` in ``etrecord/_writer.py``): the face
    imports its modules, so that import runs in a circle; the module imports the module
    that defines the name instead. A submodule of the package (one of ``submodules``,
    ``from delegate_lens.etdump import _fastwalk``) is no face name."""
    package = module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and _from_module(node, package) == package:
            names = [a.name for a in node.names if a.name not in submodules]
            found += [f"line {node.lineno}: {name}" for name in names]
    return found


def test_no_private_module_imports_its_own_package_s_face() -> None:
    """A package's own private modules import the modules they need, never its face (the
    public modules inside a package, the reference's module paths, use it as users do)."""
    found = []
    for path in sorted(PACKAGE.rglob("_*.py")):
        if path.name == "__init__.py" or path.parent == PACKAGE:
            continue
        submodules = {p.stem for p in path.parent.glob("*.py")} | {
            p.name for p in path.parent.iterdir() if (p / "__init__.py").is_file()
        }
        found += [
            f"{path.relative_to(PACKAGE)} {where}"
            for where in _own_face_imports(
                path.read_text(encoding="utf-8"), _module_name(path), submodules
            )
        ]
    assert found == []


def test_the_own_face_check_can_fail() -> None:
    module = "delegate_lens.etrecord._writer"
    assert _own_face_imports("from delegate_lens.etrecord import ETRecord\n", module, set())
    assert _own_face_imports("def f():\n    from . import ETRecord\n", module, set())
    ok = "from delegate_lens.etrecord import _entries\nfrom delegate_lens.etdump import ETDump\n"
    assert _own_face_imports(ok, module, {"_entries"}) == []
