"""Finding the ETDumps to collect, with their ETRecord and label sidecars.

Globs (``**`` recurses), folders (searched recursively for ``*.etdp`` and ``*.etdump``) and
files. An ETDump ``X.etdp`` takes its ETRecord from ``--etrecord``, else ``X.etrecord``,
``X.etrecord.bin``, else ``etrecord.bin`` in its folder; its labels from ``X.labels.json``,
else ``labels.json`` in its folder, overridden key by key by ``--label``.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping

import attrs

from delegate_lens.dataset._cycles import no_cycle_collection
from delegate_lens.errors import UsageError

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
    program: str | None = None
    """The program that ran (``--program``), for maps recovered from it; with an ETRecord."""


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


_OWN_SIDECARS = (".etrecord", ".etrecord.bin", ".labels.json")


def _join(folder: str, name: str) -> str:
    """``os.path.join(folder, name)`` for a name without separators, as concatenation."""
    return folder + name if not folder or folder.endswith(os.sep) else folder + os.sep + name


class _Folder:
    """One folder: its file names, listed once, and its sidecars (an ETDump's are then a
    set lookup or two, not a ``stat`` per candidate)."""

    def __init__(self, path: str, names: frozenset[str]) -> None:
        self.path = path
        self.prefix = _join(path, "")  # + a name: its path
        self.names = names
        # any ETDump's own sidecar here? (else every ETDump of the folder takes the shared ones)
        self.own = any(name.endswith(_OWN_SIDECARS) for name in names)
        self._is_file: dict[str, str | None] = {}
        self.etrecord = self.file("etrecord.bin")
        self.labels = self.file("labels.json")

    def file(self, name: str) -> str | None:
        """The path of ``name`` in this folder if it is a file (or a link to one)."""
        if name not in self.names:
            return None
        if name not in self._is_file:
            path = _join(self.path, name)
            self._is_file[name] = path if os.path.isfile(path) else None
        return self._is_file[name]

    def sidecars(self, name: str) -> tuple[str | None, str | None]:
        """The ETRecord and labels sidecars of the ETDump ``name`` in this folder."""
        if not self.own:
            return self.etrecord, self.labels
        stem = name.rsplit(".", 1)[0]
        record = self.file(f"{stem}.etrecord") or self.file(f"{stem}.etrecord.bin")
        return record or self.etrecord, self.file(f"{stem}.labels.json") or self.labels


class _Folders:
    """Each folder's :class:`_Folder`, made once."""

    def __init__(self) -> None:
        self._folders: dict[str, _Folder] = {}

    def get(self, path: str, names: frozenset[str] | None = None) -> _Folder:
        folder = self._folders.get(path)
        if folder is None:
            if names is None:
                try:
                    names = frozenset(os.listdir(path or "."))
                except OSError:
                    names = frozenset()
            folder = self._folders[path] = _Folder(path, names)
        return folder


_Found = tuple[_Folder, str, "os.stat_result | None"]  # folder, name, stat (None: failed)


def _stat(path: str, dir_fd: int | None = None) -> os.stat_result | None:
    try:
        return os.stat(path, dir_fd=dir_fd)
    except OSError:  # e.g. a broken link: collect reports it as a file it cannot read
        return None


# list a folder and stat its files through an open descriptor of it where the OS can
_BY_FD = (
    hasattr(os, "O_DIRECTORY") and os.scandir in os.supports_fd and os.stat in os.supports_dir_fd
)


def _listing(where: int | str) -> tuple[list[str], list[str]]:
    """(file names, names of subfolders not reached through a link) of a folder (an open
    descriptor of it, or its path)."""
    names: list[str] = []
    subfolders: list[str] = []
    with os.scandir(where) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                names.append(entry.name)
            elif not entry.is_symlink():
                subfolders.append(entry.name)
    return names, subfolders


def _walk(top: str, folders: _Folders, *, first_only: bool = False) -> Iterator[_Found]:
    """Every ETDump under ``top``, folder by folder in path order (a folder's files by
    name, then its subfolders by name, as pathlib sorts paths), made as asked for;
    symlinked folders are not followed, unreadable ones skipped (as ``os.walk`` does).
    One ``stat`` per ETDump, relative to its open folder (no path walk) where the OS can.
    ``first_only``: stop at the first ETDump, without a ``stat`` (is there any?)."""
    pending = [os.path.normpath(top)]
    while pending:
        root = pending.pop()
        fd: int | None = None
        if _BY_FD:
            try:
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
        try:
            try:
                names, subfolders = _listing(root if fd is None else fd)
            except OSError:
                continue
            if first_only:
                if any(name.endswith(ETDUMP_SUFFIXES) for name in names):
                    yield folders.get(root, frozenset(names)), "", None
                    return
            else:
                folder = folders.get(root, frozenset(names))
                names.sort()
                for name in names:
                    if name.endswith(ETDUMP_SUFFIXES):
                        if fd is None:
                            yield folder, name, _stat(folder.prefix + name)
                        else:
                            yield folder, name, _stat(name, fd)
        finally:
            if fd is not None:
                os.close(fd)
        subfolders.sort(reverse=True)  # popped in name order
        pending.extend(os.path.normpath(_join(root, name)) for name in subfolders)


def _expand(pattern: str, folders: _Folders) -> Iterator[_Found]:
    """The ETDumps ``pattern`` names, found as asked for; a pattern that names none is a
    :class:`UsageError` now, before any is asked for."""
    if _GLOB_CHARS & set(pattern):
        matches = sorted(glob.glob(pattern, recursive=True))
        if not matches:
            raise UsageError(f"{pattern}: no file matches")
        return itertools.chain.from_iterable(
            [  # a list: every match is checked now
                _expand(match, folders) if os.path.isdir(match) else _one(match, folders)
                for match in matches
            ]
        )
    if os.path.isdir(pattern):
        if next(_walk(pattern, folders, first_only=True), None) is None:
            raise UsageError(f"{pattern}: no ETDump (*.etdp, *.etdump) in this folder")
        return _walk(pattern, folders)
    if not os.path.exists(pattern):
        raise UsageError(f"{pattern}: no such file or folder")
    return _one(pattern, folders)


def _one(path: str, folders: _Folders) -> Iterator[_Found]:
    yield _file(path, folders)


def _file(path: str, folders: _Folders) -> _Found:
    folder, name = os.path.split(os.path.normpath(path))
    return folders.get(folder), name, _stat(_join(folder, name))


def find_sources(
    paths: Iterable[str],
    *,
    etrecord: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[Source]:
    """The ETDumps named by ``paths`` (each once, in order, the same file by any path or
    link counted once), with their sidecars. A file found but not readable (a broken
    link) is kept, with size 0: collect reports it as a file it cannot read."""
    found = iter_sources(paths, etrecord=etrecord, labels=labels)
    with no_cycle_collection():
        return list(found)


def iter_sources(
    paths: Iterable[str],
    *,
    etrecord: str | None = None,
    labels: Mapping[str, str] | None = None,
    program: str | None = None,
) -> Iterator[Source]:
    """:func:`find_sources`, made as asked for (``collect`` starts on the first files while
    it is still finding the rest). Every argument is checked now: a path that names no
    ETDump, or a missing ``etrecord``, raises :class:`UsageError` before any is made."""
    if etrecord is not None and not os.path.isfile(etrecord):
        raise UsageError(f"--etrecord {etrecord}: no such file")
    if program is not None and not os.path.isfile(program):
        raise UsageError(f"--program {program}: no such file")
    folders = _Folders()
    found = [_expand(os.fspath(pattern), folders) for pattern in paths]  # checks each
    chained = itertools.chain.from_iterable(found)
    return _sources(chained, etrecord, dict(labels or {}), program)


def _sources(
    found: Iterable[_Found],
    etrecord: str | None,
    shared: Mapping[str, str],
    program: str | None = None,
) -> Iterator[Source]:
    seen: set[tuple[int, int] | str] = set()
    is_regular = stat.S_ISREG
    for folder, name, info in found:
        path = folder.prefix + name
        if info is None:
            identity: tuple[int, int] | str = path
            size = 0
        elif not is_regular(info.st_mode):
            continue  # e.g. a FIFO named like an ETDump
        else:
            identity = (info.st_dev, info.st_ino)  # the same file by any path, once
            size = info.st_size
        if identity in seen:
            continue
        seen.add(identity)
        record, labels_file = folder.sidecars(name)
        # ``shared`` is read, never changed: one copy for all
        linked = etrecord or record
        yield Source(path, size, linked, labels_file, shared, program if linked else None)
