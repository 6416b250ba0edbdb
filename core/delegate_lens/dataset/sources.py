"""Finding the ETDumps to collect, with their ETRecord and label sidecars.

Globs (``**`` recurses), folders (searched recursively for ``*.etdp`` and ``*.etdump``) and
files. An ETDump ``X.etdp`` takes its ETRecord from ``--etrecord``, else ``X.etrecord``,
``X.etrecord.bin``, else ``etrecord.bin`` in its folder; its labels from ``X.labels.json``,
else ``labels.json`` in its folder, overridden key by key by ``--label``.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from delegate_lens.errors import UsageError

__all__ = ["Source", "find_sources", "parse_labels", "read_labels"]

ETDUMP_SUFFIXES = (".etdp", ".etdump")
_GLOB_CHARS = frozenset("*?[")


@attrs.frozen
class Source:
    """One ETDump to collect."""

    path: str
    size: int
    etrecord: str | None = None
    labels_file: str | None = None
    # from the command line; win over the file
    labels: Mapping[str, str] = attrs.field(factory=dict)


def parse_labels(items: Iterable[str]) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a malformed item is a :class:`UsageError`."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--label {item!r}: expected NAME=VALUE")
        labels[key.strip()] = value
    return labels


def read_labels(path: str) -> dict[str, str]:
    """A JSON sidecar's labels: an object of names to strings, numbers or booleans."""
    with open(path, encoding="utf-8") as stream:
        try:
            data = json.load(stream)
        except ValueError as exc:
            raise UsageError(f"{path}: labels sidecar is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: labels sidecar must be a JSON object")
    labels: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, bool):
            labels[key] = str(value).lower()
        elif isinstance(value, (str, int, float)):
            labels[key] = str(value)
        else:
            raise UsageError(f"{path}: label {key!r} must be a string, number or boolean")
    return labels


def _first_existing(*candidates: Path) -> str | None:
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    return None


def _expand(pattern: str) -> list[Path]:
    if _GLOB_CHARS & set(pattern):
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise UsageError(f"{pattern}: no file matches")
        found: list[Path] = []
        for match in matches:
            found.extend(_expand(match) if os.path.isdir(match) else [Path(match)])
        return found
    path = Path(pattern)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.suffix in ETDUMP_SUFFIXES and p.is_file())
        if not found:
            raise UsageError(f"{pattern}: no ETDump (*.etdp, *.etdump) in this folder")
        return found
    if not path.exists():
        raise UsageError(f"{pattern}: no such file or folder")
    return [path]


def find_sources(
    paths: Iterable[str],
    *,
    etrecord: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[Source]:
    """The ETDumps named by ``paths`` (each once, in order), with their sidecars."""
    if etrecord is not None and not os.path.isfile(etrecord):
        raise UsageError(f"--etrecord {etrecord}: no such file")
    sources: list[Source] = []
    seen: set[Path] = set()
    for pattern in paths:
        for path in _expand(pattern):
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            stem = path.name.rsplit(".", 1)[0]
            folder = path.parent
            record = etrecord or _first_existing(
                folder / f"{stem}.etrecord",
                folder / f"{stem}.etrecord.bin",
                folder / "etrecord.bin",
            )
            labels_file = _first_existing(folder / f"{stem}.labels.json", folder / "labels.json")
            sources.append(
                Source(
                    path=str(path),
                    size=path.stat().st_size,
                    etrecord=record,
                    labels_file=labels_file,
                    labels=dict(labels or {}),
                )
            )
    return sources
