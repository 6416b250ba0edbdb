"""Checks of a command's output paths, made before any work: a command that would fail
to write its result says so at once, not after running everything."""

from __future__ import annotations

from pathlib import Path

from delegate_lens.errors import UsageError


def check_output_file(path: str | Path) -> Path:
    """``path`` as a :class:`Path` when a file can be written there (its folder exists and
    it is not a folder); else a :class:`UsageError` naming it."""
    out = Path(path)
    if out.is_dir():
        raise UsageError(f"cannot write {out}: it is a folder; give a file name")
    if not out.parent.is_dir():
        raise UsageError(f"cannot write {out}: folder {out.parent} does not exist")
    return out


def check_output_files(*paths: str | Path | None) -> None:
    """:func:`check_output_file` for each given path, and no two of them the same file."""
    seen: dict[Path, str | Path] = {}
    for path in paths:
        if path is None:
            continue
        resolved = check_output_file(path).resolve()
        if resolved in seen:
            raise UsageError(f"cannot write {path}: it is also the output {seen[resolved]}")
        seen[resolved] = path
