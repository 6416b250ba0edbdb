"""The dataset on disk (or in an object store): Parquet parts plus a manifest.

Layout of a dataset ``D``::

    D/part-<id>.parquet     events of one batch of ETDumps (schema: delegate_lens.dataset._schema)
    D/_manifest/<id>.json   {"part": "part-<id>.parquet", "files": [{"hash", "source", "rows"}]}

A part is written to a hidden temporary name and renamed into place (on object stores, where
one PUT is atomic, it is written under its name directly): a crash never leaves a
half-written ``part-*.parquet``. The part's own Parquet metadata holds the same file list as
its manifest entry, so a part whose manifest entry is missing (a crash between the two) is
still known, and its files are not collected twice.

One ``collect`` writes a local dataset at a time: :meth:`DatasetStore.writing` holds an
exclusive lock (``D/_manifest/.lock``) from reading the manifest to the last part, so a
second run waits, then skips what the first collected. Only the process that took the lock
holds it: a child forked meanwhile (``collect``'s workers, kept from run to run) closes its
copy at once. Temporaries left by a killed run are removed when the next run takes the
lock (no one else can be writing then).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delegate_lens.dataset._extras import require

if TYPE_CHECKING:
    import pyarrow


FILES_KEY = b"delegate_lens.files"
MANIFEST = "_manifest"
LOCK = ".lock"


def _write_options(schema: pyarrow.Schema) -> dict[str, object]:
    """``pyarrow.parquet.write_table``'s options for a part (measured with
    ``benchmarks/bench_collect.py --only parquet``): zstd at its default level 1 (level 3
    is no smaller here and a third slower; lz4 and snappy save under a tenth of the time
    for larger files: encoding, not compression, is most of the cost), dictionaries for
    the text columns, delta encoding for the ints that grow (times, runs, chain indices),
    plain for the small ones delta does not shrink (faster to write, as small)."""
    delta = ("run", "chain_index", "start_time", "duration")
    plain = ("event_index", "instruction_id")
    dictionary = [f.name for f in schema if f.name not in delta + plain]
    # min/max statistics only where readers prune with them (which files, labels, runs);
    # those of the per-event columns cost a tenth of the write and rarely prune anything,
    # nor do block's (every part has the same few blocks; 3% of the write)
    with_statistics = [f.name for f in schema if f.name in ("source", "file_hash", "run")]
    if "labels" in schema.names:  # a struct: its leaves are named labels.<name>
        with_statistics += [f"labels.{field.name}" for field in schema.field("labels").type]
    return {
        "compression": "zstd",
        "use_dictionary": dictionary,
        "column_encoding": {
            **dict.fromkeys(delta, "DELTA_BINARY_PACKED"),
            **dict.fromkeys(plain, "PLAIN"),
        },
        "write_statistics": with_statistics,
        "write_batch_size": 1 << 16,  # rows per encoding batch (1,024 by default)
    }


_held: set[int] = set()
"""The descriptors of the write locks this process holds (:meth:`DatasetStore.writing`)."""


def _drop_held_locks() -> None:
    """In a child just forked: close its copies of the parent's lock descriptors. A
    ``flock`` belongs to the open file, which a forked child shares: a child keeping its
    copy (collect's kept workers, or any process forked meanwhile) would hold the lock
    after the parent released it, and the next writer, in this process or another, would
    wait for that child forever. The lock stays the parent's alone (as an ``fcntl``
    record lock would, but those are per process: two runs in two threads of one process
    would not exclude each other)."""
    for fd in _held:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):  # (Unix)
    os.register_at_fork(after_in_child=_drop_held_locks)


class DatasetStore:
    """A dataset at a local path or a URI that ``pyarrow.fs.FileSystem.from_uri`` knows
    (``s3://``, ``gs://``, ``hdfs://``, ``file://``)."""

    def __init__(self, location: str) -> None:
        fs = require("pyarrow.fs", "the dataset")
        self.location = location
        if "://" in location:
            self.fs, self.root = fs.FileSystem.from_uri(location)
            self.local = isinstance(self.fs, fs.LocalFileSystem)
        else:
            self.fs, self.root = fs.LocalFileSystem(), os.path.abspath(location)
            self.local = True
        self._fs_module = fs

    def _path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def create(self) -> None:
        """Make the dataset's folders (a no-op when they exist)."""
        info = self.fs.get_file_info(self.root)
        if info.type == self._fs_module.FileType.File:
            from delegate_lens.errors import UsageError

            raise UsageError(f"{self.location}: is a file, not a dataset folder")
        parent = os.path.dirname(self.root.rstrip("/"))
        missing = info.type == self._fs_module.FileType.NotFound
        if self.local and missing and parent and not os.path.isdir(parent):
            from delegate_lens.errors import UsageError

            raise UsageError(f"cannot write {self.location}: folder {parent} does not exist")
        self.fs.create_dir(self._path(MANIFEST), recursive=True)

    @contextlib.contextmanager
    def writing(self, on_wait: Callable[[], object] | None = None) -> Iterator[None]:
        """Hold the dataset's write lock (a local dataset; elsewhere a no-op): one collect
        at a time. ``on_wait`` is called when another run holds it (then this one waits).
        Temporaries of killed runs are removed once the lock is taken."""
        if not self.local:
            yield
            return
        import fcntl

        fd = os.open(self._path(MANIFEST, LOCK), os.O_RDWR | os.O_CREAT, 0o666)
        _held.add(fd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                fcntl.flock(fd, fcntl.LOCK_EX)
            self.remove_temporaries()
            yield
        finally:
            _held.discard(fd)
            os.close(fd)  # releases the lock

    def remove_temporaries(self) -> list[str]:
        """Remove the hidden temporaries of parts and manifest entries (call only while
        holding :meth:`writing`: then none is being written). Returns their names."""
        removed: list[str] = []
        for folder in (self.root, self._path(MANIFEST)):
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            prefix = ".part-" if folder == self.root else "."
            for name in names:
                if name.startswith(prefix) and name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(folder, name))
                        removed.append(name)
        return removed

    def remove_if_empty(self) -> bool:
        """Remove a local dataset that holds nothing (no part, no manifest entry): what a
        run that failed before writing leaves. True if removed."""
        if not self.local or not self.exists():
            return False
        manifest = self._path(MANIFEST)
        try:
            top = set(os.listdir(self.root))
            entries = set(os.listdir(manifest)) if os.path.isdir(manifest) else set()
        except OSError:
            return False
        if top - {MANIFEST} or entries - {LOCK}:
            return False
        shutil.rmtree(self.root, ignore_errors=True)
        return True

    def exists(self) -> bool:
        return bool(self.fs.get_file_info(self.root).type == self._fs_module.FileType.Directory)

    def is_dataset(self) -> bool:
        """Whether a dataset is here: a folder with ``_manifest/`` (made before any part) or
        a part. Any other folder, an empty one too, is not a dataset."""
        if not self.exists():
            return False
        manifest = self.fs.get_file_info(self._path(MANIFEST))
        return bool(manifest.type == self._fs_module.FileType.Directory) or bool(self.parts())

    def holds(self, path: str | os.PathLike[str]) -> bool:
        """Whether the local file ``path`` is the dataset's folder or lies inside it (its
        parts, its manifest, anything else there), links followed: what a command that
        reads the dataset must not write."""
        if not self.local:
            return False
        root = os.path.realpath(self.root)
        target = os.path.realpath(path)
        return target == root or target.startswith(root.rstrip(os.sep) + os.sep)

    def is_empty_folder(self) -> bool:
        """Whether this is a folder holding nothing."""
        if not self.exists():
            return False
        selector = self._fs_module.FileSelector(self.root, recursive=False)
        return not self.fs.get_file_info(selector)

    def parts(self) -> list[str]:
        """Paths of the committed parts (within the filesystem), sorted."""
        if not self.exists():
            return []
        selector = self._fs_module.FileSelector(self.root, recursive=False)
        names = [
            info.path
            for info in self.fs.get_file_info(selector)
            if info.base_name.startswith("part-")
            and info.base_name.endswith(".parquet")
            and info.type == self._fs_module.FileType.File  # (a folder so named is no part)
        ]
        return sorted(names)

    def part_uris(self) -> list[str]:
        """The parts as paths (local) or URIs others (DuckDB, pyarrow) can open."""
        if self.local:
            return self.parts()
        scheme = self.location.split("://", 1)[0]
        return [f"{scheme}://{path}" for path in self.parts()]

    def manifest(self) -> dict[str, dict[str, Any]]:
        """``{file hash: {"source", "rows", "part"}}`` of every collected ETDump. A damaged
        manifest entry or part is a :class:`~delegate_lens.errors.DatasetError` naming it."""
        known: dict[str, dict[str, Any]] = {}
        listed: set[str] = set()
        for path, entry in self.manifest_entries():
            if isinstance(entry, Exception):
                raise damaged(self.location, path, entry)
            listed.add(entry["part"])
            for item in entry["files"]:
                known[item["hash"]] = {**item, "part": entry["part"]}
        for part in self.parts():
            name = part.rsplit("/", 1)[-1]
            if name in listed:
                continue
            listing = self.part_listing(part)  # manifest entry lost: recover
            if isinstance(listing, Exception):
                raise damaged(self.location, part, listing)
            for item in listing:
                known[item["hash"]] = {**item, "part": name}
        return known

    def manifest_entries(self) -> list[tuple[str, dict[str, Any] | Exception]]:
        """Every manifest entry: its path and its content, or why it cannot be read."""
        folder = self._path(MANIFEST)
        if self.fs.get_file_info(folder).type != self._fs_module.FileType.Directory:
            return []
        out: list[tuple[str, dict[str, Any] | Exception]] = []
        selector = self._fs_module.FileSelector(folder, recursive=False)
        for info in sorted(self.fs.get_file_info(selector), key=lambda i: i.path):
            if not info.base_name.endswith(".json") or info.base_name.startswith("."):
                continue
            try:
                with self.fs.open_input_stream(info.path) as stream:
                    entry = json.loads(stream.read())
                out.append((info.path, _checked_entry(entry)))
            except Exception as exc:  # any damage: reported, never a traceback
                out.append((info.path, exc))
        return out

    def part_listing(self, part: str) -> list[dict[str, Any]] | Exception:
        """The file list a part's own metadata holds, or why it cannot be read."""
        pq = require("pyarrow.parquet", "the dataset")
        try:
            with self.fs.open_input_file(part) as stream:
                meta = pq.read_metadata(stream).metadata or {}
            return _checked_files(json.loads(meta.get(FILES_KEY, b"[]")))
        except Exception as exc:
            return exc

    def _write(self, path: str, write: Callable[[pyarrow.NativeFile], object]) -> None:
        """``write(stream)`` into ``path`` atomically (temporary name + rename when local)."""
        if not self.local:
            with self.fs.open_output_stream(path) as stream:
                write(stream)
            return
        folder, name = path.rsplit("/", 1)
        tmp = f"{folder}/.{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as stream:
                write(stream)
            self.fs.move(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)
            raise

    def write_part(
        self,
        table: pyarrow.Table | Iterator[pyarrow.Table],
        files: Sequence[Mapping[str, object]],
    ) -> str:
        """Commit ``table`` (the events of ``files``; or its pieces, of one schema, each
        written as it comes) as a new part; returns its name."""
        pq = require("pyarrow.parquet", "collect")
        part_id = uuid.uuid4().hex
        name = f"part-{part_id}.parquet"
        listing = json.dumps(list(files), separators=(",", ":")).encode()
        if isinstance(table, Iterator):  # pieces
            pieces = table
            first = next(pieces)
            metadata = {**(first.schema.metadata or {}), FILES_KEY: listing}
            schema = first.schema.with_metadata(metadata)

            def write(stream: pyarrow.NativeFile) -> None:
                with pq.ParquetWriter(stream, schema, **_write_options(schema)) as writer:
                    writer.write_table(first)
                    for piece in pieces:
                        writer.write_table(piece)

            self._write(self._path(name), write)
        else:  # a whole table
            metadata = {**(table.schema.metadata or {}), FILES_KEY: listing}
            whole = table.replace_schema_metadata(metadata)
            options = _write_options(whole.schema)
            self._write(self._path(name), lambda stream: pq.write_table(whole, stream, **options))
        # {"part": name, "files": listing}, the listing encoded once
        entry = b'{"part":%s,"files":%s}' % (json.dumps(name).encode(), listing)
        self._write(self._path(MANIFEST, f"{part_id}.json"), lambda stream: stream.write(entry))
        return name


def _checked_files(files: object) -> list[dict[str, Any]]:
    """``files`` (parsed JSON) when it is a list of objects, each with a ``hash``."""
    if not isinstance(files, list) or not all(
        isinstance(item, dict) and isinstance(item.get("hash"), str) for item in files
    ):
        raise ValueError("its file list is not a list of {hash, source, rows}")
    return files


def _checked_entry(entry: object) -> dict[str, Any]:
    """``entry`` (parsed JSON) when it is a manifest entry ``{"part", "files"}``."""
    if not isinstance(entry, dict) or not isinstance(entry.get("part"), str):
        raise ValueError('not a manifest entry {"part": ..., "files": [...]}')
    _checked_files(entry.get("files"))
    return entry


def damaged(location: str, path: str, exc: BaseException) -> Exception:
    """The :class:`~delegate_lens.errors.DatasetError` for a damaged part or entry."""
    from delegate_lens.errors import DatasetError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatasetError(
        f"{path}: damaged dataset file ({text}); check it with "
        f"'delegate-lens collect --check -o {location}', drop it with --repair"
    )
