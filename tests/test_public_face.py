"""The public/private line (docs/architecture.md): inside a package every module is private
(``_name.py``, no ``__all__``) and the package's ``__init__`` is its face; the only public
modules are the top-level module faces, the reference's module paths (``executorch.devtools``'s,
kept for drop-in imports), the built-in plugins (registered under their module names) and the
pytest plugin (an entry point)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "core" / "delegate_lens"

# public modules inside packages, each with its reason
PUBLIC_INSIDE = {
    # the reference's module paths (tests/test_reference_api_names.py imports each)
    "backend_debug/delegation_info.py",
    "bundled_program/config.py",
    "bundled_program/core.py",
    "bundled_program/version.py",
    "bundled_program/schema/bundled_program_schema.py",
    "etdump/serialize.py",
    "etdump/schema_flatcc.py",
    "inspector/numerical_comparator/l1_numerical_comparator.py",
    "inspector/numerical_comparator/mse_numerical_comparator.py",
    "inspector/numerical_comparator/numerical_comparator_base.py",
    "inspector/numerical_comparator/snr_numerical_comparator.py",
    "inspector/_inspector_utils.py",  # named with "_" as the reference's is
    # an entry point of group pytest11
    "testing/pytest_plugin.py",
    # a namespace of hypothesis strategies, as hypothesis.strategies
    "testing/strategies.py",
    # mutant backends and the mutation score, a namespace as strategies is
    "testing/mutants.py",
}
PLUGIN_PACKAGES = ("builtins/",)  # each module is a plugin, registered under its name


def _modules() -> list[str]:
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


def _is_public_module(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return not name.startswith("_") or name in ("__init__.py", "__main__.py")


def _declares_all(path: Path) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return True
    return False


def test_the_tree_is_read() -> None:
    assert len(_modules()) > 100


@pytest.mark.parametrize("rel", _modules())
def test_modules_inside_packages_are_private(rel: str) -> None:
    if "/" not in rel or not _is_public_module(rel) or rel.endswith(("__init__.py", "__main__.py")):
        return
    if rel in PUBLIC_INSIDE or rel.startswith(PLUGIN_PACKAGES):
        return
    pytest.fail(f"{rel} is a public module inside a package: name it _{rel.rsplit('/', 1)[-1]}")


@pytest.mark.parametrize(
    "rel", [m for m in _modules() if not _is_public_module(m) and m not in PUBLIC_INSIDE]
)
def test_private_modules_declare_no_all(rel: str) -> None:
    assert not _declares_all(PACKAGE / rel), f"{rel} is private but declares __all__"


def test_the_allow_list_is_current() -> None:
    modules = set(_modules())
    missing = PUBLIC_INSIDE - modules
    assert not missing, sorted(missing)


def test_the_checks_can_fail(tmp_path: Path) -> None:
    assert _is_public_module("inspector/api.py") and not _is_public_module("inspector/_api.py")
    module = tmp_path / "m.py"
    module.write_text('"""x"""\n\n__all__ = ["f"]\n\ndef f() -> None: ...\n')
    assert _declares_all(module)
