"""The docs import delegate-lens only through its faces: a package's ``__init__`` or a
top-level module, never a module inside a subpackage (``delegate_lens.testing._harness``)."""

from __future__ import annotations

import ast

import pytest
from docblocks import DOCS, blocks

PACKAGE = DOCS.parent / "core" / "delegate_lens"
FENCES = ("python", "ipython")


def _is_face(module: str) -> bool:
    parts = module.split(".")[1:]
    if not parts:
        return True
    path = PACKAGE.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return True  # a package: its __init__ is its face
    return len(parts) == 1 and path.with_suffix(".py").is_file()  # a top-level module


def _imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [m for m in found if m == "delegate_lens" or m.startswith("delegate_lens.")]


def _doc_imports() -> list[tuple[str, str]]:
    out = []
    for doc in sorted(DOCS.glob("*.md")):
        for fence in FENCES:
            for line, source in blocks(doc, fence):
                out += [(f"{doc.name}:{line}", module) for module in _imports(source)]
    return out


def test_docs_import_delegate_lens() -> None:
    assert len(_doc_imports()) > 50  # the check looks at real blocks


@pytest.mark.parametrize("where, module", _doc_imports())
def test_docs_import_only_faces(where: str, module: str) -> None:
    assert _is_face(module), f"{where} imports {module}, not a face"


def test_the_check_can_fail() -> None:
    assert not _is_face("delegate_lens.testing._harness")
    assert _is_face("delegate_lens.testing") and _is_face("delegate_lens.errors")
    assert _is_face("delegate_lens.inspector.numerical_comparator")  # a package
