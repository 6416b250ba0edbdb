"""Faces declare each name once (issue 31): a lazy face's names are the re-exports of the
stub beside it (``__init__.pyi``, or ``_internal.pyi`` for a package's internal face), which
type checkers read and ``delegate_lens._lazy`` turns into ``__all__`` and the name ->
module map when the face is first asked for a name."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from delegate_lens._lazy import stub_exports

PACKAGE = Path(__file__).resolve().parents[1] / "core" / "delegate_lens"
STUBS = sorted(p for p in PACKAGE.rglob("*.pyi") if p.name in ("__init__.pyi", "_internal.pyi"))


def _module(stub: Path) -> str:
    parts = list(stub.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(stub: Path) -> bool:
    return stub.name == "__init__.pyi"


def test_the_faces_are_found() -> None:
    names = {_module(s) for s in STUBS}
    assert {"delegate_lens", "delegate_lens.inspector", "delegate_lens.etdump"} <= names
    assert "delegate_lens.inspector._internal" in names


def _parsed_exports(source: str, module: str, *, is_package: bool) -> dict[str, str | None]:
    """What Python's parser says a stub exports (the rules of ``delegate_lens._lazy``, whose
    scanner reads stubs without the parser at import time)."""
    package = module if is_package else module.rpartition(".")[0]
    out: dict[str, str | None] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            home = (
                ".".join([*base, node.module] if node.module else base)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                if alias.asname == alias.name:
                    out.setdefault(alias.name, home)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.setdefault(node.name, None)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, None)
    return {
        name: home
        for name, home in out.items()
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__"))
    }


SNIPPET = (
    "# a comment: from delegate_lens.p._z import Z as Z\n"
    "from typing import Any\n"
    "from delegate_lens.p._a import One as One, two as two\n"
    "from delegate_lens.p._a import helper\n"  # not re-exported: the stub's own use
    "from delegate_lens.p._a import (\n"
    "    a_very_long_name as a_very_long_name,  # wrapped by the formatter\n"
    "    other as renamed,\n"
    ")\n"
    "from ._b import Three as Three\n"
    "from .._c import four as four\n"
    "from . import five as five\n"
    "from delegate_lens.p._a import _private as _private\n"
    "__version__: str\n"
    "LIMIT: int\n"
    "def defined_here() -> Any: ...\n"
    "async def also_async(x: int) -> None: ...\n"
    "class AlsoHere: ...\n"
    "class Derived(AlsoHere):\n"
    "    inner: int\n"
    "    def method(self) -> None: ...\n"
)


def test_a_stub_declares_exports_once() -> None:
    expected = {
        "One": "delegate_lens.p._a",
        "two": "delegate_lens.p._a",
        "a_very_long_name": "delegate_lens.p._a",
        "Three": "delegate_lens.p._b",
        "four": "delegate_lens._c",
        "five": "delegate_lens.p",
        "__version__": None,
        "LIMIT": None,
        "defined_here": None,
        "also_async": None,
        "AlsoHere": None,
        "Derived": None,
    }
    assert _parsed_exports(SNIPPET, "delegate_lens.p", is_package=True) == expected
    got = stub_exports(SNIPPET, "delegate_lens.p", is_package=True)
    assert got == expected and list(got) == list(expected)
    internal = stub_exports(
        "from ._b import x as x\n", "delegate_lens.p._internal", is_package=False
    )
    assert internal == {"x": "delegate_lens.p._b"}


@pytest.mark.parametrize("stub", STUBS, ids=_module)
def test_the_scanner_reads_every_stub_as_python_does(stub: Path) -> None:
    source = stub.read_text(encoding="utf-8")
    name, is_package = _module(stub), _is_package(stub)
    scanned = stub_exports(source, name, is_package=is_package)
    parsed = _parsed_exports(source, name, is_package=is_package)
    assert scanned == parsed and list(scanned) == list(parsed)


@pytest.mark.parametrize("stub", STUBS, ids=_module)
def test_every_import_of_ours_in_a_stub_is_an_export(stub: Path) -> None:
    """An import not in the re-export form (``X as X``) would be no name of the face, for
    type checkers and at run time alike: a stub imports our names only to export them."""
    bare = [
        f"line {node.lineno}: {alias.name}"
        for node in ast.parse(stub.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom)
        and (node.level or "delegate_lens" in (node.module or ""))
        for alias in node.names
        if alias.asname != alias.name
    ]
    assert bare == []


@pytest.mark.parametrize("stub", STUBS, ids=_module)
def test_the_face_beside_a_stub_names_nothing_itself(stub: Path) -> None:
    """The module of a stub is the one line ``attach_stub(__name__, __file__)`` (and what the
    face defines itself, declared in the stub): no ``__all__``, no name -> module map, no
    ``TYPE_CHECKING`` imports to keep in step."""
    tree = ast.parse(stub.with_suffix(".py").read_text(encoding="utf-8"))
    assigned = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert not assigned & {"__all__", "_HOME", "_LAZY"}
    assert not any(isinstance(node, ast.If) for node in tree.body)
    assert "attach_stub(__name__, __file__)" in ast.unparse(tree)


def test_every_name_of_every_face_loads() -> None:
    """In a fresh interpreter: each face's ``__all__`` is its stub's exports (a package's)
    and every name of every face resolves (this imports torch, for the aot names)."""
    faces = {_module(s): _is_package(s) for s in STUBS}
    code = (
        "import importlib, json, sys\n"
        f"faces = {faces!r}\n"
        "out = {}\n"
        "for name, is_package in faces.items():\n"
        "    face = importlib.import_module(name)\n"
        "    names = [n for n in dir(face) if not n.startswith('_') or n == '__version__']\n"
        "    out[name] = {\n"
        "        'all': list(face.__all__) if is_package else hasattr(face, '__all__'),\n"
        "        'missing': [n for n in names if getattr(face, n, None) is None],\n"
        "    }\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    for stub in STUBS:
        name = _module(stub)
        exports = stub_exports(stub.read_text(encoding="utf-8"), name, is_package=_is_package(stub))
        assert exports, name
        # a package's __all__ is its stub's exports; an internal face has none
        assert report[name]["all"] == (list(exports) if _is_package(stub) else False), name
        assert report[name]["missing"] == [], name


def test_a_face_loads_a_name_when_first_asked_for(tmp_path: Path) -> None:
    package = tmp_path / "lazy_face_example"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from delegate_lens._lazy import attach_stub\n"
        "__getattr__, __dir__ = attach_stub(__name__, __file__)\n"
        "def here() -> int:\n    return 1\n"
    )
    (package / "__init__.pyi").write_text(
        "from lazy_face_example._m import Value as Value\n"
        "from . import sub as sub\n"
        "def here() -> int: ...\n"
    )
    (package / "_m.py").write_text("Value = 42\n")
    (package / "sub.py").write_text("NAME = 'sub'\n")
    code = (
        "import sys\n"
        "import lazy_face_example as face\n"
        "assert '__all__' not in vars(face)  # the stub is read on first use\n"
        "assert face.__all__ == ['Value', 'sub', 'here'], face.__all__\n"
        "assert 'lazy_face_example._m' not in sys.modules\n"
        "assert {'Value', 'sub', 'here', '__name__'} <= set(dir(face))\n"
        "assert face.Value == 42 and 'Value' in vars(face)\n"
        "assert face.sub.NAME == 'sub' and face.here() == 1\n"
        "try:\n    face.missing\nexcept AttributeError as exc:\n"
        "    assert str(exc) == \"module 'lazy_face_example' has no attribute 'missing'\"\n"
        "else:\n    raise AssertionError('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
