"""Decoding an ETDump file through a memory map, never holding the whole file.

:func:`decode_file` is :func:`~delegate_lens.etdump._reader.decode_columns` of a file's
bytes with less memory: a regular file is mapped read-only instead of read, the compiled
walk drops the pages it has read every so many events (``madvise(MADV_DONTNEED)``: a
mapped file's pages are only a cache of the file, dropping them loses nothing), and once
the columns are made, the few bytes still needed (``delegate_debug_metadata`` spans) are
copied out and the map is closed. So the peak holds the columns and about one batch of the
file's pages, not the file; and nothing keeps the file mapped afterwards (a file changed
or truncated later cannot reach the columns).

The columns are those of ``decode_columns``; ``blob`` holds only the metadata spans, one
after the other, and ``metadata_offset`` points into it (``EventColumns.metadata`` gives
the same bytes). A file that cannot be mapped (a pipe, a terminal, an empty file, a
platform without ``madvise``) is read whole, as before.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from types import MappingProxyType
from typing import Any, BinaryIO

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump._buffer import spans
from delegate_lens.etdump._decoded import DecodedColumns


def decode_file(path: str | os.PathLike[str]) -> DecodedColumns:
    """The file-wide columns of the ETDump file ``path`` (see the module docstring);
    errors name the file, as :func:`~delegate_lens.etdump._reader.load`."""
    from delegate_lens.etdump._reader import decode_columns
    from delegate_lens.fileio import note_input, reraise_as_input_error

    try:
        with open(path, "rb") as stream:
            note_input(path)
            mapped = _map(stream)
            data = stream.read() if mapped is None else b""
    except OSError as exc:
        reraise_as_input_error(exc, path, "ETDump")
    try:
        if mapped is None:
            return decode_columns(data)
        view = memoryview(mapped)
        try:
            return detach(decode_columns(view, release=lambda: _drop(mapped)))
        finally:  # a view still held (e.g. by an error's traceback) ends with its holder
            with contextlib.suppress(BufferError):
                view.release()
            _close(mapped)
    except ETDumpFormatError as exc:
        raise ETDumpFormatError(f"{os.fspath(path)}: {exc}") from None


def _map(stream: BinaryIO) -> mmap.mmap | None:
    """A read-only map of a regular, non-empty file (None: read it instead)."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return None
    try:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return None
        return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # e.g. a file system that cannot map
        return None


def _drop(mapped: mmap.mmap) -> None:
    """Forget the pages of the map read so far (they are read again from the file's cache
    if a later event needs them)."""
    mapped.madvise(mmap.MADV_DONTNEED)


def _close(mapped: mmap.mmap) -> None:
    _drop(mapped)
    with contextlib.suppress(BufferError):  # a view is still alive: it closes with the view
        mapped.close()


def detach(decoded: DecodedColumns) -> DecodedColumns:
    """``decoded`` without its buffer: ``blob`` holds only the metadata spans, back to back,
    and ``metadata_offset`` points into it (same bytes from ``EventColumns.metadata``)."""
    cols = dict(decoded.columns)
    length = cols["metadata_length"]
    present = np.flatnonzero(length >= 0) if length.strides[0] else np.zeros(0, np.int64)
    if not len(present):
        return attrs.evolve(decoded, blob=b"")
    offset = cols["metadata_offset"][present]
    sizes = length[present]
    u8 = np.frombuffer(decoded.blob, dtype=np.uint8)
    blob = u8[spans(offset, sizes)].tobytes()
    moved: npt.NDArray[np.int64] = np.zeros(len(length), dtype=np.int64)
    starts = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    moved[present] = starts
    moved.flags.writeable = False
    cols["metadata_offset"] = moved
    mapping: Any = MappingProxyType(cols)
    return attrs.evolve(decoded, columns=mapping, blob=blob)
