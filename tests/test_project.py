"""The project's own promises: install commands, CI, lazy imports."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quick, flags=re.S)


def test_readme_quick_start_has_exactly_two_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    test_command = _readme_commands()[1]
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_import_is_torch_free() -> None:
    code = (
        "import sys, delegate_lens, delegate_lens.errors, delegate_lens.hookspecs;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_error_hierarchy() -> None:
    from delegate_lens import errors

    for name in errors.__all__:
        cls = getattr(errors, name)
        base = errors.DelegateLensWarning if name.endswith("Warning") else errors.DelegateLensError
        assert issubclass(cls, base), name
    assert issubclass(errors.PluginWarning, UserWarning)
    assert issubclass(errors.ETDumpFormatError, ValueError)
    assert issubclass(errors.MappingError, ValueError)


def test_one_attrs_import_style() -> None:
    offenders = [
        str(path.relative_to(REPO))
        for folder in ("core", "plugins")
        for path in sorted((REPO / folder).rglob("*.py"))
        if ".venv" not in path.parts
        and re.search(r"^\s*from attrs? import", path.read_text(encoding="utf-8"), re.M)
    ]
    assert offenders == []  # `import attrs`, then attrs.define / attrs.frozen / attrs.field
