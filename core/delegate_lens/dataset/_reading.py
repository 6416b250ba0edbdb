"""Reading ``collect``'s files: big local files memory-mapped, small ones straight into
one buffer per group, at the places :func:`~delegate_lens.etdump._reader.joined_layout`
gives them (decoded from there: no bytes object per file, no copy to join them)."""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.dataset._extras import require
from delegate_lens.dataset._sources import Source

_ALONE_BYTES = 4 << 20  # a file this big is decoded on its own
_GROUP_BYTES = 32 << 20  # smaller files are decoded together, this many bytes at a time
_GAP = 16  # joined_layout's bytes after the last file


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


@attrs.define(eq=False)
class _Block:
    """Small files read straight into one buffer, each where
    :func:`~delegate_lens.etdump._reader.joined_layout` places it."""

    data: memoryview
    starts: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    # every file read in its place (none failed, none changed size since it was found)
    whole: bool = True


def _read_block(sources: Sequence[Source]) -> tuple[_Block, list[bytes | memoryview | Exception]]:
    """Read ``sources`` (local, each smaller than ``_ALONE_BYTES``) into one buffer: the
    block, and each file's bytes (a view of the block) or why it could not be read. A file
    whose size changed since it was found is read again on its own (its bytes are then not
    a view of the block, and the block is not ``whole``)."""
    from delegate_lens.etdump import joined_layout

    starts, sizes = joined_layout([source.size for source in sources])
    # numpy's zeroed memory: fresh pages, which numpy marks for huge pages when big (one
    # fault per 2 MB where the kernel can, against 512 for a bytearray's)
    view = np.zeros(int(starts[-1] + sizes[-1]) + _GAP, np.uint8).data
    block = _Block(view, starts, sizes)
    out: list[bytes | memoryview | Exception] = []
    for source, start, size in zip(sources, starts.tolist(), sizes.tolist()):
        try:
            try:
                fd = os.open(source.path, os.O_RDONLY)
                try:
                    # one byte more, into the gap after the file: a file that grew is seen
                    got = os.readv(fd, [view[start : start + size + 1]])
                finally:
                    os.close(fd)
            except OSError as exc:
                from delegate_lens.fileio import reraise_as_input_error

                reraise_as_input_error(exc, source.path, "ETDump")
            if got == size:
                out.append(view[start : start + size])
                continue
            block.whole = False
            out.append(_read(source.path))  # changed since found: read whole, on its own
        except Exception as exc:
            block.whole = False
            out.append(exc)
    return block, out


def _read_all(
    sources: Sequence[Source],
) -> list[tuple[bytes | memoryview | Exception, _Block | None]]:
    """Every file's bytes (or why it could not be read), and the block it was read into:
    small local files in blocks of up to ``_GROUP_BYTES``, one block per ETRecord (files
    with the same ETRecord are decoded together), others alone."""
    out: list[tuple[bytes | memoryview | Exception, _Block | None]] = [(b"", None)] * len(sources)
    gathering: dict[str | None, tuple[list[int], int]] = {}  # etrecord -> (indices, bytes)
    groups: list[list[int]] = []
    for i, source in enumerate(sources):
        if 0 <= source.size < _ALONE_BYTES and "://" not in source.path:
            indices, size = gathering.get(source.etrecord, ([], 0))
            if indices and size + source.size > _GROUP_BYTES:
                groups.append(indices)
                indices, size = [], 0
            indices.append(i)
            gathering[source.etrecord] = (indices, size + source.size)
            continue
        try:
            out[i] = (_read(source.path, source.size), None)
        except Exception as exc:
            out[i] = (exc, None)
    groups.extend(indices for indices, _ in gathering.values())
    for indices in groups:
        block, datas = _read_block([sources[i] for i in indices])
        for i, data in zip(indices, datas):
            out[i] = (data, block)
    return out
