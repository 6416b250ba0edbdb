"""The package's map, checked: every import (at module level or inside a function; not the
ones under ``if TYPE_CHECKING:``) goes down the layers or stays in its own unit, and no two
units import each other. A unit is a subpackage or a top-level module of delegate_lens;
CONTRIBUTING.md ("The map") says what each may import. How packages meet (at their faces)
is checked in ``test_import_faces.py``."""

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
