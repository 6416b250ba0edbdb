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
import stat
from collections.abc import Iterable, Mapping

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


class _Folders:
    """The file names of each folder, listed once (sidecar lookups are then set lookups,
    not a ``stat`` per candidate per ETDump)."""

    def __init__(self) -> None:
        self._names: dict[str, frozenset[str]] = {}
        self._is_file: dict[str, bool] = {}

    def names(self, folder: str) -> frozenset[str]:
        names = self._names.get(folder)
        if names is None:
            try:
                names = frozenset(os.listdir(folder or "."))
            except OSError:
                names = frozenset()
            self._names[folder] = names
        return names

    def first_existing(self, folder: str, *candidates: str) -> str | None:
        names = self.names(folder)
        for name in candidates:
            if name in names:
                path = os.path.join(folder, name)
                is_file = self._is_file.get(path)
                if is_file is None:
                    is_file = self._is_file[path] = os.path.isfile(path)
                if is_file:
                    return path
        return None


def _walk(folder: str, folders: _Folders) -> list[tuple[str, str]]:
    """Every ETDump under ``folder`` as (its folder, its name), in path order (symlinked
    folders are not followed)."""
    found: list[tuple[list[str], str, str]] = []
    for root, _dirs, files in os.walk(folder):
        root = os.path.normpath(root)
        folders._names.setdefault(root, frozenset(files))
        parts = root.split(os.sep)
        found.extend((parts, root, f) for f in files if f.endswith(ETDUMP_SUFFIXES))
    found.sort(key=lambda item: (item[0], item[2]))  # folder by folder, as pathlib sorts
    return [(root, name) for _, root, name in found]


def _expand(pattern: str, folders: _Folders) -> list[tuple[str, str]]:
    if _GLOB_CHARS & set(pattern):
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise UsageError(f"{pattern}: no file matches")
        found: list[tuple[str, str]] = []
        for match in matches:
            found.extend(_expand(match, folders) if os.path.isdir(match) else [_split(match)])
        return found
    if os.path.isdir(pattern):
        found = _walk(pattern, folders)
        if not found:
            raise UsageError(f"{pattern}: no ETDump (*.etdp, *.etdump) in this folder")
        return found
    if not os.path.exists(pattern):
        raise UsageError(f"{pattern}: no such file or folder")
    return [_split(pattern)]


def _split(path: str) -> tuple[str, str]:
    return os.path.split(os.path.normpath(path))


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
    seen: set[tuple[int, int]] = set()
    folders = _Folders()
    shared = dict(labels or {})  # read, never changed: one copy for all
    for pattern in paths:
        for folder, name in _expand(os.fspath(pattern), folders):
            path = os.path.join(folder, name)
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                continue  # e.g. a folder named like an ETDump
            identity = (info.st_dev, info.st_ino)  # the same file by any path, once
            if identity in seen:
                continue
            seen.add(identity)
            stem = name.rsplit(".", 1)[0]
            record = etrecord or folders.first_existing(
                folder, f"{stem}.etrecord", f"{stem}.etrecord.bin", "etrecord.bin"
            )
            labels_file = folders.first_existing(folder, f"{stem}.labels.json", "labels.json")
            sources.append(Source(path, info.st_size, record, labels_file, shared))
    return sources
