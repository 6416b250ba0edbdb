"""The package's map, checked: every import (at module level or inside a function; not the
ones under ``if TYPE_CHECKING:``) goes down the layers or stays in its own unit, and no two
units import each other. A unit is a subpackage or a top-level module of delegate_lens;
CONTRIBUTING.md ("The map") says what each may import."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "core" / "delegate_lens"

# bottom to top; a unit may import units of its own layer's lower layers only
LAYERS: list[set[str]] = [
    {"errors", "_texttable", "_lazy"},
    {"config", "fileio"},
    {
        "_bridge_protocol",
        "hookspecs",
        "pluginmanager",
        "hookcalls",
        "_hookanswers",
        "hooks",
        "_bridge",
    },
    {"program", "backend"},
    {"etdump", "etrecord"},
    {"numerics", "exporters"},
    {"inspector", "runtime", "aot", "bundled_program"},
    {"report", "compare", "dataset", "testing", "intermediate_output_tap", "backend_debug"},
    {"builtins", "backends_demo"},
    {"cli", "__main__"},
]
FACE = "__init__"  # the root face: lazy names from every unit, imported by none

LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else FACE


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """The delegate_lens modules ``path`` imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("delegate_lens"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("delegate_lens"):
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)
        for sub in ast.iter_child_nodes(node):
            visit(sub)

    visit(tree)
    return out


def _unit_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        source = _module_name(path)
        mine = _unit(source)
        for target in _imports(path):
            theirs = _unit(target)
            if (
                theirs != mine
                and theirs != FACE
                and ((PACKAGE / theirs).is_dir() or (PACKAGE / f"{theirs}.py").is_file())
            ):
                edges[(mine, theirs)].append(f"{source} -> {target}")
    return edges


def test_every_unit_has_a_layer() -> None:
    units = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    }
    units -= {FACE}
    assert sorted(units - set(LAYER)) == [], "add new units to LAYERS and CONTRIBUTING.md"


def test_imports_go_down_the_layers() -> None:
    up = [
        f"{a} (layer {LAYER[a]}) imports {b} (layer {LAYER[b]}): {where[0]}"
        for (a, b), where in sorted(_unit_edges().items())
        if a in LAYER and b in LAYER and LAYER[b] > LAYER[a]
    ]
    assert up == []


def test_no_two_units_import_each_other() -> None:
    edges = _unit_edges()
    circles = sorted(
        f"{a} <-> {b}: {edges[(a, b)][0]} / {edges[(b, a)][0]}"
        for (a, b) in edges
        if a < b and (b, a) in edges
    )
    assert circles == []


@pytest.mark.parametrize("limit", [500])
def test_no_module_over_the_limit(limit: int) -> None:
    long = sorted(
        f"{p.relative_to(PACKAGE)}: {n}"
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > limit
    )
    assert long == []


def test_the_documented_map_names_every_unit_in_its_layer() -> None:
    import re

    doc = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    items = re.split(r"\n(?=\d+\. \*\*)", doc)[1:]  # one numbered item per layer
    assert len(items) == len(LAYERS)
    for level, (units, item) in enumerate(zip(LAYERS, items, strict=True)):
        assert item.startswith(f"{level + 1}. **")
        for unit in units - {"__main__"}:
            assert f"`{unit}`" in item, f"docs/architecture.md: {unit} not in layer {level + 1}"


@pytest.mark.parametrize("unit", ["inspector", "exporters"])
def test_no_import_circle_inside(unit: str) -> None:
    """The modules of the Inspector and of the writers import each other one way (the
    writers take typed rows: none imports the Inspector back)."""
    modules = {_module_name(p): p for p in sorted((PACKAGE / unit).rglob("*.py"))}
    edges: dict[str, set[str]] = defaultdict(set)
    for source, path in modules.items():
        for target in _imports(path):
            while target and target not in modules:  # a name's module
                target = target.rpartition(".")[0]
            if target and target != source and target != f"delegate_lens.{unit}":
                edges[source].add(target)
    assert _a_circle(edges) == []


def _a_circle(edges: dict[str, set[str]]) -> list[str]:
    """One circle of ``edges`` (its modules, the first repeated at the end), or []."""
    done: set[str] = set()
    path: list[str] = []

    def walk(module: str) -> list[str]:
        path.append(module)
        for nxt in sorted(edges.get(module, ())):
            if nxt in path:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in done and (found := walk(nxt)):
                return found
        done.add(path.pop())
        return []

    for module in sorted(edges):
        if module not in done and (found := walk(module)):
            return found
    return []


def test_the_circle_check_can_fail() -> None:
    assert _a_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


# --------------------------------------------------------------------------- sys.modules


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_reads(source: str) -> list[str]:
    """Where ``source`` reads a module's private name (``_x``, not ``__x__``) through
    ``sys.modules``: on the lookup itself (``sys.modules["m"]._x``, ``.get("m")._x``,
    ``getattr(sys.modules["m"], "_x")``) or on a name bound to one (``m =
    sys.modules.get("m")`` ... ``m._x``, anywhere in the file). An import shows what a
    module reads and the layer checks above see it; a lookup in ``sys.modules`` does not."""
    tree = ast.parse(source)
    table = {  # (from sys import modules [as name])
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "sys"
        for alias in node.names
        if alias.name == "modules"
    }

    def is_table(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Attribute):
            return expr.attr == "modules" and isinstance(expr.value, ast.Name)
        return isinstance(expr, ast.Name) and expr.id in table

    bound: set[str] = set()

    def is_module(expr: ast.expr | None) -> bool:
        """A module looked up in sys.modules (or a name bound to one)."""
        if isinstance(expr, ast.Subscript):
            return is_table(expr.value)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            return expr.func.attr in {"get", "pop", "setdefault"} and is_table(expr.func.value)
        if isinstance(expr, ast.BoolOp):
            return any(is_module(value) for value in expr.values)
        if isinstance(expr, ast.IfExp):
            return is_module(expr.body) or is_module(expr.orelse)
        return isinstance(expr, ast.Name) and expr.id in bound

    def bind(target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name) and is_module(value):
            bound.add(target.id)
        elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
            for one, other in zip(target.elts, value.elts):
                bind(one, other)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr):
            bind(node.target, node.value)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr) and is_module(node.value):
            found.append(f"line {node.lineno}: .{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _is_private(node.args[1].value)
            and is_module(node.args[0])
        ):
            found.append(f"line {node.lineno}: getattr {node.args[1].value}")
    return found


def test_no_private_state_read_through_sys_modules() -> None:
    """What a module needs of another it imports and asks through public functions (issue
    31): none reads another's private globals out of ``sys.modules``."""
    reads = [
        f"{path.relative_to(PACKAGE)} {where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for where in _private_reads(path.read_text(encoding="utf-8"))
    ]
    assert reads == []


@pytest.mark.parametrize(
    "source",
    [
        'import sys\nplugins = sys.modules.get("p")\nif plugins is not None:\n    plugins._pm\n',
        'import sys\ndef f():\n    config = sys.modules.get("c")\n    return config._cache\n',
        'import sys\nx = sys.modules["m"]._state\n',
        'import sys\nx = sys.modules.get("m")._state\n',
        'import sys\nx = getattr(sys.modules["m"], "_state", None)\n',
        'import sys\na, b = sys.modules["a"], 1\na._x\n',
        'import sys\nif (m := sys.modules.get("m")) is not None:\n    m._x\n',
        'import sys\nm = sys.modules.get("m") or None\nm._x\n',
        'from sys import modules as table\ntable["m"]._x\n',
    ],
)
def test_the_sys_modules_check_can_fail(source: str) -> None:
    assert _private_reads(source), source


def test_the_sys_modules_check_passes_public_use() -> None:
    source = (
        "import sys\n"
        'torch = sys.modules.get("torch")\n'
        "torch.Tensor\n"
        'if "delegate_lens.config" in sys.modules:\n'
        "    from delegate_lens.config import cached_config\n"
        "setattr(sys.modules[__name__], 'x', 1)\n"
        "vars(sys.modules[__name__]).__len__()\n"
        "other = object()\n"
        "other._private\n"
    )
    assert _private_reads(source) == []


# ------------------------------------------------------------------ packages meet at faces

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
