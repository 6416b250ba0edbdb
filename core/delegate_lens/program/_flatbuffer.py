"""Checked reads of FlatBuffers: tables, scalars, strings, vectors and unions by slot.

The ``.pte`` reader (:mod:`delegate_lens.program._pte`) reads ExecuTorch's program with it,
and a backend's recovery plugin may read its own delegate blob with it (public as
:class:`FlatBuffer` on :mod:`delegate_lens.program`). Every read is bounds-checked: a
truncated or damaged buffer is a :class:`~delegate_lens.errors.ProgramFormatError` naming
the buffer and the field path (``execution_plan[0].delegates[1].id``), never an IndexError
or a wrong value read from outside the buffer.

A slot is a field's position in its table as the schema declares it (0 for the first
field); a union field takes two slots, its type (a ``ubyte``) and then its value.
"""

from __future__ import annotations

import struct

from delegate_lens.errors import ProgramFormatError

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")

_SCALARS = {
    "bool": struct.Struct("<?"),
    "byte": struct.Struct("<b"),
    "ubyte": _U8,
    "short": struct.Struct("<h"),
    "ushort": _U16,
    "int": _I32,
    "uint": _U32,
    "long": struct.Struct("<q"),
    "ulong": struct.Struct("<Q"),
    "float": struct.Struct("<f"),
    "double": struct.Struct("<d"),
}
"""The schema language's scalar types, little-endian as FlatBuffers stores them."""


class FlatBuffer:
    """A FlatBuffer to read: ``data`` (bytes or a memoryview of them) and ``origin``, what
    errors name it by (a file, or ``"delegate 0 of forward"``)."""

    __slots__ = ("data", "origin", "size")

    def __init__(self, data: bytes | bytearray | memoryview, origin: str) -> None:
        self.data = data
        self.origin = origin
        self.size = len(data)

    def fail(self, path: str, message: str) -> ProgramFormatError:
        """The error of a bad read at field ``path``."""
        where = f"{self.origin}: {path}: " if path else f"{self.origin}: "
        return ProgramFormatError(where + message)

    def read(self, fmt: struct.Struct, pos: int, path: str) -> int:
        if pos < 0 or pos + fmt.size > self.size:
            raise self.fail(
                path, f"offset {pos} (+{fmt.size} bytes) is outside the {self.size}-byte buffer"
            )
        value: int = fmt.unpack_from(self.data, pos)[0]
        return value

    def identifier(self) -> bytes:
        """The four-byte file identifier (bytes 4-8; empty when the buffer is shorter)."""
        return bytes(self.data[4:8]) if self.size >= 8 else b""

    def root(self, identifier: bytes | None = None, path: str = "root") -> FlatTable:
        """The root table; with ``identifier``, the buffer must carry it."""
        if identifier is not None and self.identifier() != identifier:
            raise self.fail(
                "", f"not a {identifier.decode()} FlatBuffer (identifier {self.identifier()!r})"
            )
        return self.table_at(self.read(_U32, 0, path), path)

    def table_at(self, pos: int, path: str) -> FlatTable:
        """The table whose start is at ``pos``."""
        vtable = pos - self.read(_I32, pos, path)
        vlen = self.read(_U16, vtable, f"{path} (vtable)")
        tlen = self.read(_U16, vtable + 2, f"{path} (vtable)")
        if vlen < 4 or vlen % 2 or vtable + vlen > self.size:
            raise self.fail(path, f"bad vtable at offset {vtable} (length {vlen})")
        if tlen < 4 or pos + tlen > self.size:
            raise self.fail(path, f"table at offset {pos} of {tlen} bytes overruns the buffer")
        return FlatTable(self, pos, vtable, vlen, tlen, path)


class FlatTable:
    """One table of a :class:`FlatBuffer`; ``path`` names it in errors."""

    __slots__ = ("buffer", "path", "pos", "tlen", "vlen", "vtable")

    def __init__(
        self, buffer: FlatBuffer, pos: int, vtable: int, vlen: int, tlen: int, path: str
    ) -> None:
        self.buffer, self.pos, self.vtable, self.vlen, self.tlen, self.path = (
            buffer,
            pos,
            vtable,
            vlen,
            tlen,
            path,
        )

    def _field(self, slot: int, size: int, name: str) -> int | None:
        entry = 4 + 2 * slot
        if entry + 2 > self.vlen:
            return None  # a field newer than the writer's schema: absent
        off = self.buffer.read(_U16, self.vtable + entry, f"{self.path}.{name}")
        if off == 0:
            return None
        if off + size > self.tlen:
            raise self.buffer.fail(f"{self.path}.{name}", f"field at +{off} lies outside its table")
        return self.pos + off

    def scalar(self, slot: int, kind: str, name: str, default: float = 0) -> int | float:
        """A scalar field of the schema type ``kind`` (``"uint"``, ``"float"``, ...), or
        ``default`` when absent."""
        fmt = _SCALARS[kind]
        pos = self._field(slot, fmt.size, name)
        if pos is None:
            return default
        value: int | float = fmt.unpack_from(self.buffer.data, pos)[0]
        return value

    def integer(self, slot: int, kind: str, name: str, default: int = 0) -> int:
        """An integer field (``"int"``, ``"uint"``, ``"ulong"``, ...), or ``default``."""
        return int(self.scalar(slot, kind, name, default))

    def _ref(self, slot: int, name: str) -> int | None:
        pos = self._field(slot, 4, name)
        if pos is None:
            return None
        return pos + self.buffer.read(_U32, pos, f"{self.path}.{name}")

    def table(self, slot: int, name: str) -> FlatTable | None:
        """A table field, or None when absent."""
        pos = self._ref(slot, name)
        return None if pos is None else self.buffer.table_at(pos, f"{self.path}.{name}")

    def _vector(self, slot: int, elem: int, name: str) -> tuple[int, int] | None:
        start = self._ref(slot, name)
        if start is None:
            return None
        path = f"{self.path}.{name}"
        count = self.buffer.read(_U32, start, path)
        if start + 4 + count * elem > self.buffer.size:
            raise self.buffer.fail(
                path, f"vector of {count} element(s) at offset {start} overruns the buffer"
            )
        return start + 4, count

    def tables(self, slot: int, name: str) -> list[FlatTable]:
        """A vector of tables (``[]`` when absent)."""
        vec = self._vector(slot, 4, name)
        if vec is None:
            return []
        start, count = vec
        buffer = self.buffer
        out = []
        for i in range(count):
            at = start + 4 * i
            path = f"{self.path}.{name}[{i}]"
            out.append(buffer.table_at(at + buffer.read(_U32, at, path), path))
        return out

    def vector_length(self, slot: int, name: str) -> int:
        """The number of elements of a vector field (0 when absent)."""
        vec = self._vector(slot, 0, name)
        return 0 if vec is None else vec[1]

    def scalars(self, slot: int, kind: str, name: str) -> list[int | float]:
        """A vector of scalars of the schema type ``kind`` (``[]`` when absent)."""
        fmt = _SCALARS[kind]
        vec = self._vector(slot, fmt.size, name)
        if vec is None:
            return []
        start, count = vec
        return [fmt.unpack_from(self.buffer.data, start + fmt.size * i)[0] for i in range(count)]

    def bytes(self, slot: int, name: str) -> memoryview | None:
        """A ``[ubyte]`` field as a read-only view into the buffer, or None when absent."""
        vec = self._vector(slot, 1, name)
        if vec is None:
            return None
        start, count = vec
        return memoryview(self.buffer.data).toreadonly()[start : start + count]

    def string(self, slot: int, name: str) -> str | None:
        """A string field, or None when absent; bad UTF-8 is an error naming the field."""
        raw = self.bytes(slot, name)
        if raw is None:
            return None
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise self.buffer.fail(f"{self.path}.{name}", f"not UTF-8 ({exc.reason})") from None

    def union(self, slot: int, name: str) -> tuple[int, FlatTable | None]:
        """A union field: its type (the member's 1-based position in the union, 0 for
        none) from ``slot`` and its table from ``slot + 1``."""
        kind = self.integer(slot, "ubyte", f"{name}_type")
        if kind == 0:
            return 0, None
        return kind, self.table(slot + 1, name)
