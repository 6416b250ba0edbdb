"""One batch of ``collect``: read, hash and decode some ETDumps, write them as one part.

What each worker runs (:func:`collect_batch`). Files are decoded together, many small
files in one vectorized pass; a file with an ETRecord then goes through an Inspector for
its links. Small local files are read straight into one buffer per group, at the places
:func:`~delegate_lens.etdump._reader.joined_layout` gives them, and decoded from there
(:func:`~delegate_lens.etdump._reader.decode_joined`): no bytes object per file, no copy to
join them. A file that cannot be read or decoded is reported and skipped; the others of its
batch are still collected. A file of more than ``PIECE_ROWS`` events is written as a part
of its own, a piece of ``PIECE_ROWS`` events at a time (its whole table is never held:
about 150 bytes per event with its links), and a memory-mapped file's pages are let go
once it is decoded.
"""

from __future__ import annotations

import hashlib
import itertools
import mmap
import os
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from delegate_lens.dataset._arrow import to_numpy
from delegate_lens.dataset._cycles import no_cycle_collection
from delegate_lens.dataset._extras import require
from delegate_lens.dataset._reading import _ALONE_BYTES, _GROUP_BYTES, _Block, _read_all
from delegate_lens.dataset._sources import Source, read_labels
from delegate_lens.dataset._store import DatasetStore

if TYPE_CHECKING:
    import pyarrow

    from delegate_lens.etdump import DecodedColumns
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector import FileColumns, Inspector
    from delegate_lens.program import ProgramDelegates

_Outcome = tuple[list["_Pending"], "pyarrow.Table | _Pieces"] | tuple["_Pending", Exception]
"""What became of files decoded together: ``(files, table)`` for what was collected,
``(file, error)`` for a bad file."""


PIECE_ROWS = 1 << 17  # a file with more events is written as a part of its own, in pieces


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


def content_hash(data: bytes | memoryview) -> str:
    """The hash incremental collection skips by (SHA-256, 128 bits in hex)."""
    return hashlib.sha256(data).hexdigest()[:32]


_identities: dict[tuple[str, int, int], str] = {}


def etrecord_identity(path: str) -> str:
    """The content hash of the ETRecord at ``path`` (kept per file, size and mtime)."""
    info = os.stat(path)
    key = (os.path.abspath(path), info.st_size, info.st_mtime_ns)
    found = _identities.get(key)
    if found is None:
        digest = hashlib.sha256()
        with open(path, "rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
        found = _identities[key] = digest.hexdigest()[:32]
    return found


def dataset_key(file_hash: str, etrecord: str | None) -> str:
    """What incremental collection skips by: the ETDump's hash, with the identity of the
    ETRecord that links it (``hash+identity``) when there is one; a file given again with
    another ETRecord is collected again and replaces its old rows (see
    :func:`delegate_lens.dataset._collector.known_keys`)."""
    return file_hash if etrecord is None else f"{file_hash}+{etrecord}"


@attrs.define(eq=False)
class _Pending:
    """A file read and hashed, waiting to be decoded."""

    index: int  # in the batch
    source: Source
    data: bytes | memoryview
    file_hash: str
    labels: Mapping[str, str]
    block: _Block | None  # the buffer it was read into, if any
    etrecord: str | None = None  # the identity of the ETRecord that links it


def _message(path: str, exc: BaseException) -> str:
    text = str(exc).strip()
    message = text.splitlines()[0] if text else type(exc).__name__
    return message if path in message else f"{path}: {message}"


def _groups(pending: Sequence[_Pending]) -> Iterator[list[_Pending]]:
    """Files to decode together: those read into one block together, each big file
    alone, other small ones up to ``_GROUP_BYTES``."""
    blocks: dict[int, list[_Pending]] = {}
    group: list[_Pending] = []
    size = 0
    for item in pending:
        if item.block is not None:
            blocks.setdefault(id(item.block), []).append(item)
            continue
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
    yield from blocks.values()


def _joined(blocks: Sequence[_Block | None]) -> _Block | None:
    """The block holding exactly the files read into ``blocks`` (one entry per file, in
    order), when there is one (then they are decoded in place); else None (their bytes are
    joined in a copy)."""
    block = blocks[0]
    if block is None or not block.whole or len(block.sizes) != len(blocks):
        return None
    return block if all(other is block for other in blocks) else None


def _decode(datas: Sequence[bytes | memoryview], block: _Block | None) -> DecodedColumns:
    """Files decoded together (a ``DecodedColumns``): in place in ``block`` (from
    :func:`_joined`), else joined in a copy."""
    from delegate_lens.etdump import decode_joined, decode_many

    if block is not None:
        return decode_joined(block.data, block.starts, block.sizes)
    decoded = decode_many(datas)
    for data in datas:  # a mapped file's pages, read: the page cache has them
        if isinstance(data, memoryview) and isinstance(data.obj, mmap.mmap):
            data.obj.madvise(mmap.MADV_DONTNEED)  # (read again from there if need be)
    return decoded


@attrs.define(eq=False)
class _Pieces:
    """A big file's table in pieces of ``PIECE_ROWS`` events, made as they are written
    (into a part of its own): ``rows`` in all."""

    rows: int
    tables: Iterator[pyarrow.Table]


def _table_of(pieces: Iterator[pyarrow.Table], fc: FileColumns) -> pyarrow.Table | _Pieces:
    """One file's table: whole when small, else in pieces (the first made now)."""
    from delegate_lens.etdump import EventKind

    rows = int(np.count_nonzero(fc.kind == EventKind.PROFILE))
    first = next(pieces)
    return first if rows <= PIECE_ROWS else _Pieces(rows, itertools.chain([first], pieces))


def _rows_per_file(table: pyarrow.Table, files: int) -> list[int]:
    """Rows of each file in a table from ``files_table`` (its ``source`` codes)."""
    source = table.column("source").combine_chunks()
    return np.bincount(to_numpy(source.indices, np.int32), minlength=files).tolist()


def _decode_group(group: list[_Pending], label_names: Sequence[str]) -> Iterator[_Outcome]:
    """Tables of ``group`` (all files in one, when all decode), or per file on failure:
    ``(files, table)`` for what was collected, ``(file, error)`` for a bad file."""
    from delegate_lens.dataset._event_table import labelled_pieces
    from delegate_lens.inspector import decoded_file_columns

    def table(items: list[_Pending], block: _Block | None = None) -> pyarrow.Table | _Pieces:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            decoded = _decode([item.data for item in items], block)
            fc = decoded_file_columns(decoded)
            pieces = labelled_pieces(
                fc,
                decoded.run_file,
                [item.source.path for item in items],
                [item.file_hash for item in items],
                [item.labels for item in items],
                label_names=label_names,
                piece_rows=PIECE_ROWS if len(items) == 1 else None,
            )
            return _table_of(pieces, fc) if len(items) == 1 else next(pieces)

    try:
        yield group, table(group, _joined([item.block for item in group]))
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
    group: list[_Pending],
    etrecord: ETRecord,
    label_names: Sequence[str],
    program: ProgramDelegates | None = None,
) -> Iterator[_Outcome]:
    """As :func:`_decode_group` for files with an ETRecord: decoded together, then one
    Inspector per file (for its links); one file at a time when the group fails."""
    from delegate_lens.dataset._event_table import labelled_pieces
    from delegate_lens.inspector import Inspector

    def table(item: _Pending, inspector: Inspector) -> pyarrow.Table | _Pieces:
        fc = inspector.file_columns
        pieces = labelled_pieces(
            fc,
            np.zeros(len(fc.run_names), dtype=np.int64),
            [item.source.path],
            [item.file_hash],
            [item.labels],
            inspector=inspector,
            label_names=label_names,
            piece_rows=PIECE_ROWS,
        )
        return _table_of(pieces, fc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            decoded = _decode(
                [item.data for item in group], _joined([item.block for item in group])
            )
        except Exception:  # a bad file among them: one at a time, to tell which
            decoded = None
        for k, item in enumerate(group):
            try:
                if decoded is not None:
                    etdump = decoded.etdump(k)
                    inspector = Inspector(etdump=etdump, etrecord=etrecord, program=program)
                else:
                    data = item.data
                    inspector = Inspector(etdump_data=data, etrecord=etrecord, program=program)
                yield [item], table(item, inspector)
            except Exception as exc:
                yield item, exc


def _listing(items: Sequence[_Pending], rows: Mapping[int, int]) -> list[dict[str, object]]:
    """A part's file list: each file's hash, path, rows and ETRecord identity."""
    return [
        {"hash": item.file_hash, "source": item.source.path, "rows": rows[item.index]}
        | ({} if item.etrecord is None else {"etrecord": item.etrecord})
        for item in items
    ]


def _labels_of(
    source: Source, cache: dict[tuple[str | None, int], Mapping[str, str] | Exception]
) -> Mapping[str, str]:
    """``source``'s labels: its sidecar's, overridden by the command line's. One dict per
    sidecar and command line (shared by their files, never changed), each sidecar read once."""
    key = (source.labels_file, id(source.labels))
    labels = cache.get(key)
    if labels is None:
        try:
            mine = read_labels(source.labels_file) if source.labels_file else {}
            mine.update(source.labels)
            labels = mine
        except Exception as exc:
            labels = exc
        cache[key] = labels
    if isinstance(labels, Exception):
        raise labels
    return labels


def collect_batch(
    location: str, sources: Sequence[Source], known: Collection[str] = frozenset()
) -> list[FileResult]:
    """Collect ``sources`` into one new part of the dataset at ``location`` (what each
    worker runs); files whose hash is in ``known`` are skipped.

    Files are decoded together, many small files in one vectorized pass
    (:func:`~delegate_lens.etdump._reader.decode_joined`, straight from the buffer they were
    read into); a file with an ETRecord then goes through an Inspector of its own for its
    links. A file repeated within the batch is skipped, or fails as its first copy did.
    """
    with no_cycle_collection():
        return _collect_batch(location, sources, known)


def _collect_batch(
    location: str, sources: Sequence[Source], known: Collection[str]
) -> list[FileResult]:
    from delegate_lens.etrecord import load_etrecord
    from delegate_lens.program import read_delegates

    pa = require("pyarrow", "collect")
    results: list[FileResult | None] = [None] * len(sources)
    first_of: dict[str, int] = {}  # hash -> index of its first copy in the batch
    copies: list[tuple[int, str, int]] = []  # (index, hash, size) of later copies
    plain: list[_Pending] = []
    linked: list[_Pending] = []
    label_cache: dict[tuple[str | None, int], Mapping[str, str] | Exception] = {}
    for i, (source, (data, block)) in enumerate(zip(sources, _read_all(sources))):
        file_hash = None
        try:
            if isinstance(data, Exception):
                raise data
            file_hash = content_hash(data)
            identity = None if source.etrecord is None else etrecord_identity(source.etrecord)
            if identity is not None and source.program is not None:
                identity += "+" + etrecord_identity(source.program)  # links differ with it
            if dataset_key(file_hash, identity) in known:
                results[i] = FileResult(source.path, "skipped", len(data), 0, file_hash)
                continue
            if file_hash in first_of:
                copies.append((i, file_hash, len(data)))
                continue
            labels = _labels_of(source, label_cache)
        except Exception as exc:  # a bad file is reported and skipped, never fatal
            results[i] = FileResult(
                source.path, "failed", 0, 0, file_hash, _message(source.path, exc)
            )
            continue
        first_of[file_hash] = i
        item = _Pending(i, source, data, file_hash, labels, block, identity)
        (plain if source.etrecord is None else linked).append(item)

    distinct = {
        id(labels): labels for labels in label_cache.values() if not isinstance(labels, Exception)
    }
    names = sorted({name for labels in distinct.values() for name in labels})
    tables: list[tuple[list[_Pending], pyarrow.Table]] = []
    collected: list[_Pending] = []
    failed: dict[int, str] = {}
    rows: dict[int, int] = {}
    alone: dict[int, str] = {}  # a big file's own part
    store = DatasetStore(location)

    def take(outcomes: Iterator[_Outcome]) -> None:
        for done, outcome in outcomes:
            if isinstance(outcome, Exception):
                assert not isinstance(done, list)
                failed[done.index] = _message(done.source.path, outcome)
            elif isinstance(outcome, _Pieces):  # written now, a piece at a time
                assert isinstance(done, list)
                (item,) = done
                rows[item.index] = outcome.rows
                store.create()
                alone[item.index] = store.write_part(outcome.tables, _listing([item], rows))
            else:
                assert isinstance(done, list)
                tables.append((done, outcome))
                collected.extend(done)

    for group in _groups(plain):
        take(_decode_group(group, names))
    by_record: dict[tuple[str, str | None], list[_Pending]] = {}
    for item in linked:
        assert item.source.etrecord is not None
        by_record.setdefault((item.source.etrecord, item.source.program), []).append(item)
    for (path, program_path), items in by_record.items():
        try:
            etrecord = load_etrecord(path)
            program = None if program_path is None else read_delegates(program_path)
        except Exception as exc:  # a bad ETRecord or program: its files are skipped
            for item in items:
                failed[item.index] = _message(item.source.path, exc)
            continue
        for group in _groups(items):
            take(_linked_group(group, etrecord, names, program))

    for done, table in tables:
        for item, count in zip(done, _rows_per_file(table, len(done))):
            rows[item.index] = count
    part = None
    if tables:
        tables.sort(key=lambda pair: pair[0][0].index)  # the part's rows in input order
        collected.sort(key=lambda item: item.index)
        store.create()
        part = store.write_part(
            pa.concat_tables([table for _, table in tables]), _listing(collected, rows)
        )
    for item in (*plain, *linked):
        i = item.index
        if i in failed:
            results[i] = FileResult(item.source.path, "failed", 0, 0, item.file_hash, failed[i])
        else:
            results[i] = FileResult(
                item.source.path,
                "collected",
                len(item.data),
                rows[i],
                item.file_hash,
                None,
                alone.get(i, part),
            )
    for i, file_hash, size in copies:  # a repeated file: as its first copy went
        first = first_of[file_hash]
        if first in failed:
            message = failed[first].replace(sources[first].path, sources[i].path, 1)
            results[i] = FileResult(sources[i].path, "failed", 0, 0, file_hash, message)
        else:
            results[i] = FileResult(sources[i].path, "skipped", size, 0, file_hash)
    return [r for r in results if r is not None]
