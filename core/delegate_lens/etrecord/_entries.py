"""The ETRecord archive: entry names, where the bytes come from, and writing a zip.

An ETRecord is a zip archive of named entries (see ``docs/etrecord.md``). Reading keeps
only the archive's directory and the small JSON entries in memory; the large entries
(serialized programs, state dicts) are read from the archive when asked for, so that
ETRecords of big models stay cheap to open.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, BinaryIO, Protocol, cast

import attrs

from delegate_lens.errors import ETRecordFormatError

MARKER = "ETRECORD_V0"
"""Empty entry marking the archive as an ETRecord (the format version)."""
EDGE_PROGRAM_PREFIX = "edge_dialect_exported_program"
"""``edge_dialect_exported_program/<method>``: one method's edge program (JSON)."""
EXPORTED_PROGRAM = "exported_program"
"""Optional: the ATen program before lowering (JSON), same serializer."""
DEBUG_HANDLE_MAP = "debug_handle_map"
DELEGATE_MAP = "delegate_map"
NUM_OUTS_MAP = "instruction_id_to_num_outs_map"
EXPORT_GRAPH_ID = "export_graph_id"
REFERENCE_OUTPUTS = "reference_outputs"
REPRESENTATIVE_INPUTS = "representative_inputs"
ARTIFACT_SUFFIXES = ("_state_dict", "_constants", "_example_inputs")
"""Suffixes of the three binary artifacts that accompany every serialized program."""

DEFAULT_MAX_ENTRY_SIZE = 1 << 30
"""Default cap on one entry's uncompressed size (1 GiB); see :func:`read_limits`."""
DEFAULT_MAX_COMPRESSION_RATIO = 100
"""Default cap on how many times its stored size one compressed entry may inflate to."""
DEFAULT_MAX_INFLATED_TOTAL = 16 << 20
"""Default cap on the bytes an archive's compressed entries may inflate to beyond their
stored size, all entries together (16 MiB). Entries stored uncompressed (as the reference
writes them) count nothing: their bytes are the file's own."""
RATIO_SLACK = 1 << 20
"""An entry may always inflate to this many bytes (a small entry of zeros compresses
far past any ratio)."""
_READ_CHUNK = 1 << 20
_LOCAL_HEADER = b"PK\x03\x04"
_END_RECORD = b"PK\x05\x06"


@attrs.frozen
class ReadLimits:
    """What reading one ETRecord archive may cost (see ``docs/trust.md``).

    :param max_entry_size: bytes one entry may inflate to.
    :param max_compression_ratio: times its stored size one compressed entry may inflate
        to (plus :data:`RATIO_SLACK`).
    :param max_inflated_total: bytes the compressed entries of one archive may inflate to
        beyond their stored sizes, together.
    """

    max_entry_size: int = DEFAULT_MAX_ENTRY_SIZE
    max_compression_ratio: float = DEFAULT_MAX_COMPRESSION_RATIO
    max_inflated_total: int = DEFAULT_MAX_INFLATED_TOTAL


_LIMIT_KEYS = {
    "max_entry_size": DEFAULT_MAX_ENTRY_SIZE,
    "max_compression_ratio": DEFAULT_MAX_COMPRESSION_RATIO,
    "max_inflated_total": DEFAULT_MAX_INFLATED_TOTAL,
}


def read_limits() -> ReadLimits:
    """The limits of the ``[etrecord]`` configuration table, else the defaults.

    A limit is raised above its default only by the configuration the user chose (the
    file named by ``DELEGATE_LENS_CONFIG``, or ``DELEGATE_LENS_OPTIONS``); a
    ``delegate-lens.toml`` or ``pyproject.toml`` that merely lies in the current folder
    may lower a limit, never raise it."""
    from delegate_lens.config import chosen_config, get_config

    found = get_config().section("etrecord")
    found.check_keys(set(_LIMIT_KEYS))
    chosen = chosen_config().section("etrecord")
    values: dict[str, int | float] = {}
    for key, default in _LIMIT_KEYS.items():
        section = chosen if key in chosen else found
        value = section.get_number(key, default, positive=True)
        if key != "max_compression_ratio" and not isinstance(value, int):
            raise section.error(key, f"expected a whole number of bytes, got {value!r}")
        values[key] = value if section is chosen else min(value, default)
    return ReadLimits(**values)  # type: ignore[arg-type]


def describe_foreign(head: bytes) -> str | None:
    """What a file that is not an ETRecord is, from its first bytes (None if unknown)."""
    for base in (4, 8):
        ident = head[base : base + 4]
        if ident == b"ED00":
            return "an ETDump (flatbuffer identifier 'ED00'), not an ETRecord"
        if len(ident) == 4 and ident[:2] == b"ET" and ident[2:].isdigit():
            return f"an ExecuTorch program (.pte, identifier {ident.decode()!r}), not an ETRecord"
    return None


# What a damaged zip can raise from the standard library while being read.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    struct.error,
    OverflowError,
    KeyError,
    IndexError,
)


class EntrySource(Protocol):
    """Where an ETRecord's entries come from (an archive or a mapping in memory)."""

    origin: str

    @property
    def names(self) -> tuple[str, ...]: ...

    def size(self, name: str) -> int: ...

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]: ...


class MemorySource:
    """Entries held in memory (``ETRecord.from_entries``)."""

    def __init__(self, entries: Mapping[str, bytes], origin: str) -> None:
        self.origin = origin
        self._entries: dict[str, bytes] = {}
        for name, data in entries.items():
            if not isinstance(name, str) or not name:
                raise ETRecordFormatError(
                    f"{origin}: entry names must be non-empty str, got {name!r}"
                )
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise ETRecordFormatError(
                    f"{origin}: entry {name!r} must be bytes, got {type(data).__name__}"
                )
            self._entries[name] = bytes(data)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def size(self, name: str) -> int:
        return len(self._entries[name])

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        return {name: self._entries[name] for name in names}


class ZipSource:
    """Entries of a zip archive: a file (re-opened on each read) or bytes in memory."""

    def __init__(
        self,
        source: str | os.PathLike[str] | bytes,
        origin: str,
        *,
        max_entry_size: int | None = None,
        limits: ReadLimits | None = None,
    ) -> None:
        self.origin = origin
        self._path: str | None = None
        self._data: bytes | None = None
        limits = read_limits() if limits is None else limits
        if max_entry_size is not None:
            limits = attrs.evolve(limits, max_entry_size=max_entry_size)
        self.limits = limits
        self.max_entry_size = limits.max_entry_size
        self._inflated: dict[str, int] = {}  # bytes each compressed entry inflated beyond
        if isinstance(source, bytes):
            self._data = source
        else:
            self._path = os.fspath(source)
        with self._open() as archive:
            if self._path is not None:
                from delegate_lens.fileio import note_input

                note_input(self._path)
            try:
                infos = archive.infolist()
            except _ZIP_ERRORS as exc:  # pragma: no cover - infolist is a plain list
                raise self._error(None, exc) from None
            self._check_complete(archive)
        # zipfile keeps the last of duplicated names, so do we.
        self._sizes: dict[str, int] = {info.filename: info.file_size for info in infos}

    def _open(self) -> zipfile.ZipFile:
        target: str | BinaryIO = (
            self._path if self._path is not None else io.BytesIO(self._data or b"")
        )
        try:
            return zipfile.ZipFile(target, "r")
        except OSError as exc:
            if self._path is not None and not isinstance(exc, zipfile.BadZipFile):
                from delegate_lens.fileio import reraise_as_input_error

                reraise_as_input_error(exc, self._path, "ETRecord")
            raise self._error(None, exc) from None
        except _ZIP_ERRORS as exc:
            raise self._error(None, exc) from None

    def _head_and_size(self) -> tuple[bytes, int]:
        if self._data is not None:
            return self._data[:16], len(self._data)
        assert self._path is not None
        with open(self._path, "rb") as handle:
            return handle.read(16), os.fstat(handle.fileno()).st_size

    def _check_complete(self, archive: zipfile.ZipFile) -> None:
        """A cut archive can expose a zip nested in its entries (a torch state dict): the
        end record must close the file, else the archive is truncated."""
        _, size = self._head_and_size()
        end = size - 22 - len(archive.comment)
        if self._data is not None:
            tail = self._data[end : end + 4] if end >= 0 else b""
        else:
            assert self._path is not None
            with open(self._path, "rb") as handle:
                handle.seek(max(end, 0))
                tail = handle.read(4) if end >= 0 else b""
        if tail != _END_RECORD:
            raise ETRecordFormatError(
                f"{self.origin}: not an ETRecord: truncated ({size} bytes; not a complete "
                "zip archive: its end record is missing)"
            )

    def _error(self, name: str | None, exc: BaseException) -> ETRecordFormatError:
        reason = str(exc) or type(exc).__name__
        if name is None:
            head, size = self._head_and_size()
            foreign = describe_foreign(head)
            if foreign is not None:
                return ETRecordFormatError(f"{self.origin}: not an ETRecord: this is {foreign}")
            if head.startswith(_LOCAL_HEADER):
                return ETRecordFormatError(
                    f"{self.origin}: not an ETRecord: truncated ({size} bytes; starts as a zip "
                    "archive but is not a complete zip archive: its end record is missing)"
                )
            return ETRecordFormatError(
                f"{self.origin}: not an ETRecord (not a valid zip archive: {reason})"
            )
        return ETRecordFormatError(f"{self.origin}: entry {name!r} cannot be read: {reason}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._sizes)

    def size(self, name: str) -> int:
        return self._sizes[name]

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        wanted = list(names)
        out: dict[str, bytes] = {}
        if not wanted:
            return out
        with self._open() as archive:
            for name in wanted:
                try:
                    out[name] = self._read_capped(archive, name)
                except ETRecordFormatError:
                    raise
                except OSError as exc:
                    if isinstance(exc, zipfile.BadZipFile):
                        raise self._error(name, exc) from None
                    raise
                except _ZIP_ERRORS as exc:
                    raise self._error(name, exc) from None
        return out

    def _read_capped(self, archive: zipfile.ZipFile, name: str) -> bytes:
        """One entry, refused when its header or its inflated bytes exceed a limit: the
        entry cap, the compression ratio, the archive's total (:class:`ReadLimits`)."""
        limits = self.limits
        info = archive.getinfo(name)
        declared = info.file_size
        cap = limits.max_entry_size
        if declared > cap:
            raise self._too_big(name, f"its header declares {declared:,} bytes")
        compressed = info.compress_type != zipfile.ZIP_STORED
        if compressed:
            by_ratio = int(limits.max_compression_ratio * info.compress_size) + RATIO_SLACK
            spent = sum(v for k, v in self._inflated.items() if k != name)
            by_total = limits.max_inflated_total - spent + info.compress_size
            if declared > by_ratio:
                raise self._bomb(name, f"its header declares {declared:,} bytes", info)
            if declared > by_total:
                raise self._over_total(name, declared, spent)
            cap = min(cap, by_ratio, max(by_total, 0))
        buffer = io.BytesIO()
        total = 0
        with archive.open(name) as stream:
            while True:
                chunk = stream.read(min(_READ_CHUNK, cap + 1 - total))
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    if total > limits.max_entry_size:
                        raise self._too_big(name, "it inflates past the cap")
                    if compressed and total > by_ratio:
                        raise self._bomb(name, "it inflates past that", info)
                    raise self._over_total(name, total, spent)
                buffer.write(chunk)
        if compressed:
            self._inflated[name] = max(0, total - info.compress_size)
        return buffer.getvalue()

    def _too_big(self, name: str, why: str) -> ETRecordFormatError:
        return ETRecordFormatError(
            f"{self.origin}: entry {name!r} is larger than the {self.max_entry_size:,}-byte "
            f"cap on an entry's uncompressed size ({why}); raise [etrecord] max_entry_size "
            "or pass max_entry_size= to parse_etrecord if the file is trusted"
        )

    def _bomb(self, name: str, why: str, info: zipfile.ZipInfo) -> ETRecordFormatError:
        ratio = self.limits.max_compression_ratio
        return ETRecordFormatError(
            f"{self.origin}: entry {name!r} inflates more than {ratio:g} times its "
            f"{info.compress_size:,} stored bytes ({why}; a zip bomb?); if the file is "
            "trusted, raise [etrecord] max_compression_ratio (see docs/trust.md)"
        )

    def _over_total(self, name: str, size: int, spent: int) -> ETRecordFormatError:
        return ETRecordFormatError(
            f"{self.origin}: entry {name!r} would take the archive's compressed entries past "
            f"{self.limits.max_inflated_total:,} inflated bytes ({spent:,} so far, this one "
            f"{size:,}); if the file is trusted, raise [etrecord] max_inflated_total "
            "(see docs/trust.md)"
        )


def zip_bytes(entries: Iterable[tuple[str, bytes]]) -> bytes:
    """The zip archive (entries stored uncompressed, as the reference writes them)."""
    buffer = io.BytesIO()
    _write_zip(buffer, entries)
    return buffer.getvalue()


def _write_zip(target: BinaryIO, entries: Iterable[tuple[str, bytes]]) -> None:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in entries:
            # A fixed timestamp keeps saved ETRecords reproducible.
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def write_zip_atomic(path: str | os.PathLike[str], entries: Iterable[tuple[str, bytes]]) -> Path:
    """Write the archive to a temporary file next to ``path``, then rename it into place.

    On any failure the temporary file is removed and ``path`` is left as it was.
    """
    from delegate_lens.fileio import write_atomic

    def write(handle: IO[bytes]) -> None:
        _write_zip(cast(BinaryIO, handle), entries)
        handle.flush()
        with contextlib.suppress(OSError):  # a FIFO or a terminal has nothing to sync
            os.fsync(handle.fileno())

    return write_atomic(path, write, binary=True)
