"""One batch of ``collect``: read, hash and decode some ETDumps, write them as one part.

What each worker runs (:func:`collect_batch`). Files are decoded together, many small
files in one vectorized pass; a file with an ETRecord then goes through an Inspector for
its links. A file that cannot be read or decoded is reported and skipped; the
others of its batch are still collected.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import warnings
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from delegate_lens.dataset._extras import require
from delegate_lens.dataset.sources import Source, read_labels
from delegate_lens.dataset.store import DatasetStore

__all__ = ["FileResult", "collect_batch", "content_hash"]

_ALONE_BYTES = 4 << 20  # a file this big is decoded on its own
_GROUP_BYTES = 16 << 20  # smaller files are decoded together, this many bytes at a time


@attrs.frozen
class FileResult:
    """What happened to one ETDump: ``status`` is collected, skipped (already in the
    dataset, or a duplicate) or failed (``error`` says why)."""

    source: str
    status: str
    nbytes: int = 0
    rows: int = 0
    file_hash: str | None = None
    error: str | None = None
    part: str | None = None


def _read(path: str, size: int = -1) -> bytes | memoryview:
    """The file's bytes: a read-only memory map for a big local file (no copy: the
    decoder and the hash read the page cache directly), else read whole. ``size`` is the
    size the file had when found (-1: unknown)."""
    if "://" in path:
        fs = require("pyarrow.fs", "collect")
        filesystem, inner = fs.FileSystem.from_uri(path)
        with filesystem.open_input_stream(inner) as stream:
            return bytes(stream.read())
    from delegate_lens.fileio import reraise_as_input_error

    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            if size < 0:
                size = os.fstat(fd).st_size
            if size >= _ALONE_BYTES:
                return memoryview(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
            data = os.read(fd, size + 1)  # one more: a file that grew is read whole
            if len(data) <= size:
                return data
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    except OSError as exc:
        reraise_as_input_error(exc, path, "ETDump")


def content_hash(data: bytes | memoryview) -> str:
    """The hash incremental collection skips by (SHA-256, 128 bits in hex)."""
    return hashlib.sha256(data).hexdigest()[:32]


@attrs.frozen
class _Pending:
    """A file read and hashed, waiting to be decoded."""

    index: int  # in the batch
    source: Source
    data: bytes | memoryview
    file_hash: str
    labels: dict[str, str]


def _message(path: str, exc: BaseException) -> str:
    text = str(exc).strip()
    message = text.splitlines()[0] if text else type(exc).__name__
    return message if path in message else f"{path}: {message}"


def _groups(pending: Sequence[_Pending]) -> Iterator[list[_Pending]]:
    """Files to decode together: each big file alone, small ones up to ``_GROUP_BYTES``."""
    group: list[_Pending] = []
    size = 0
    for item in pending:
        if len(item.data) >= _ALONE_BYTES:
            yield [item]
            continue
        if group and size + len(item.data) > _GROUP_BYTES:
            yield group
            group, size = [], 0
        group.append(item)
        size += len(item.data)
    if group:
        yield group


def _rows_per_file(table: Any, files: int) -> list[int]:
    """Rows of each file in a table from ``files_table`` (its ``source`` codes)."""
    source = table.column("source").combine_chunks()
    return np.bincount(source.indices.to_numpy(), minlength=files).tolist()


def _decode_group(
    group: list[_Pending], label_names: Sequence[str]
) -> Iterator[tuple[list[_Pending], Any] | tuple[_Pending, Exception]]:
    """Tables of ``group`` (all files in one, when all decode), or per file on failure:
    ``(files, table)`` for what was collected, ``(file, error)`` for a bad file."""
    from delegate_lens.dataset.rows import FileLabels, files_columns, files_table

    def table(items: list[_Pending]) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fc, run_file = files_columns([item.data for item in items])
            files = [FileLabels(i.source.path, i.file_hash, i.labels) for i in items]
            return files_table(fc, run_file, files, label_names=label_names)

    try:
        yield group, table(group)
        return
    except Exception as exc:  # a bad file is reported and skipped, never fatal
        if len(group) == 1:
            yield group[0], exc
            return
    for item in group:  # one file at a time, to tell the bad from the good
        try:
            yield [item], table([item])
        except Exception as exc:
            yield item, exc


def _linked_group(
    group: list[_Pending], etrecord: Any, label_names: Sequence[str]
) -> Iterator[tuple[list[_Pending], Any] | tuple[_Pending, Exception]]:
    """As :func:`_decode_group` for files with an ETRecord: decoded together, then one
    Inspector per file (for its links); one file at a time when the group fails."""
    from delegate_lens.dataset.rows import events_table
    from delegate_lens.etdump import decode_many
    from delegate_lens.inspector import Inspector

    def table(item: _Pending, inspector: Any) -> Any:
        return events_table(
            inspector.file_columns,
            source=item.source.path,
            file_hash=item.file_hash,
            labels=item.labels,
            inspector=inspector,
            label_names=label_names,
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            decoded = decode_many([item.data for item in group])
        except Exception:  # a bad file among them: one at a time, to tell which
            decoded = None
        for k, item in enumerate(group):
            try:
                if decoded is not None:
                    inspector = Inspector(etdump=decoded.etdump(k), etrecord=etrecord)
                else:
                    inspector = Inspector(etdump_data=item.data, etrecord=etrecord)
                yield [item], table(item, inspector)
            except Exception as exc:
                yield item, exc


def collect_batch(
    location: str, sources: Sequence[Source], known: Collection[str] = frozenset()
) -> list[FileResult]:
    """Collect ``sources`` into one new part of the dataset at ``location`` (what each
    worker runs); files whose hash is in ``known`` are skipped.

    Files are decoded together, many small files in one vectorized pass
    (:func:`~delegate_lens.etdump.reader.decode_many`); a file with an ETRecord then goes
    through an Inspector of its own for its links. A file repeated within the batch is
    skipped, or fails as its first copy did.
    """
    from delegate_lens.etrecord import load_etrecord

    pa = require("pyarrow", "collect")
    results: list[FileResult | None] = [None] * len(sources)
    first_of: dict[str, int] = {}  # hash -> index of its first copy in the batch
    copies: list[tuple[int, str, int]] = []  # (index, hash, size) of later copies
    plain: list[_Pending] = []
    linked: list[_Pending] = []
    for i, source in enumerate(sources):
        file_hash = None
        try:
            data = _read(source.path, source.size)
            file_hash = content_hash(data)
            if file_hash in known:
                results[i] = FileResult(source.path, "skipped", len(data), 0, file_hash)
                continue
            if file_hash in first_of:
                copies.append((i, file_hash, len(data)))
                continue
            labels = read_labels(source.labels_file) if source.labels_file else {}
            labels.update(source.labels)
        except Exception as exc:  # a bad file is reported and skipped, never fatal
            results[i] = FileResult(
                source.path, "failed", 0, 0, file_hash, _message(source.path, exc)
            )
            continue
        first_of[file_hash] = i
        item = _Pending(i, source, data, file_hash, labels)
        (plain if source.etrecord is None else linked).append(item)

    names = sorted({name for item in (*plain, *linked) for name in item.labels})
    tables: list[tuple[list[_Pending], Any]] = []
    collected: list[_Pending] = []
    failed: dict[int, str] = {}

    def take(outcomes: Iterator[tuple[list[_Pending], Any] | tuple[_Pending, Exception]]) -> None:
        for done, outcome in outcomes:
            if isinstance(done, list):
                tables.append((done, outcome))
                collected.extend(done)
            else:
                failed[done.index] = _message(done.source.path, outcome)

    for group in _groups(plain):
        take(_decode_group(group, names))
    records: dict[str, Any] = {}
    by_record: dict[str, list[_Pending]] = {}
    for item in linked:
        assert item.source.etrecord is not None
        by_record.setdefault(item.source.etrecord, []).append(item)
    for path, items in by_record.items():
        try:
            records[path] = load_etrecord(path)
        except Exception as exc:  # a bad ETRecord: its files are reported and skipped
            for item in items:
                failed[item.index] = _message(item.source.path, exc)
            continue
        for group in _groups(items):
            take(_linked_group(group, records[path], names))

    rows: dict[int, int] = {}
    for done, table in tables:
        for item, count in zip(done, _rows_per_file(table, len(done))):
            rows[item.index] = count
    part = None
    if tables:
        files = [
            {"hash": item.file_hash, "source": item.source.path, "rows": rows[item.index]}
            for item in sorted(collected, key=lambda item: item.index)
        ]
        store = DatasetStore(location)
        store.create()
        part = store.write_part(pa.concat_tables([table for _, table in tables]), files)
    pending = {item.index: item for item in (*plain, *linked)}
    for i, item in pending.items():
        if i in failed:
            results[i] = FileResult(item.source.path, "failed", 0, 0, item.file_hash, failed[i])
        else:
            results[i] = FileResult(
                item.source.path, "collected", len(item.data), rows[i], item.file_hash, None, part
            )
    for i, file_hash, size in copies:  # a repeated file: as its first copy went
        first = first_of[file_hash]
        if first in failed:
            message = failed[first].replace(sources[first].path, sources[i].path, 1)
            results[i] = FileResult(sources[i].path, "failed", 0, 0, file_hash, message)
        else:
            results[i] = FileResult(sources[i].path, "skipped", size, 0, file_hash)
    return [r for r in results if r is not None]
