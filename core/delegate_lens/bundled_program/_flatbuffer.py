"""The ``.bpte`` wire format: a :class:`BundledProgram` to FlatBuffer bytes and back.

Written with the ``flatbuffers`` package's builder; read with bounds-checked reads of our
own, so a truncated or corrupted file is a :class:`~delegate_lens.errors.BundledProgramError`
naming the field (``method_test_suites[0].test_cases[2].inputs[1].data``), never an
IndexError. See :mod:`delegate_lens.bundled_program.schema` for the layout.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

import flatbuffers
import numpy as np
import numpy.typing as npt

from delegate_lens.bundled_program.config import MethodTestCase, MethodTestSuite
from delegate_lens.bundled_program.schema import (
    FILE_IDENTIFIER,
    SCALAR_TYPE_NAMES,
    SCALAR_TYPES,
    TAG_BOOL,
    TAG_DOUBLE,
    TAG_INT,
    TAG_TENSOR,
)
from delegate_lens.errors import BundledProgramError

if TYPE_CHECKING:
    from delegate_lens.bundled_program.config import BundledValue
    from delegate_lens.bundled_program.core import BundledProgram


_DTYPES = {code: np.dtype(name) for name, code in SCALAR_TYPES.items()}

# --------------------------------------------------------------------------- writing


def _byte_vector(b: flatbuffers.Builder, data: bytes, alignment: int) -> int:
    b.StartVector(1, len(data), alignment)
    b.head = b.head - len(data)
    b.Bytes[b.head : b.head + len(data)] = data
    return int(b.EndVector())


def _offset_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return int(b.EndVector())


def _write_value(b: flatbuffers.Builder, value: BundledValue) -> int:
    if isinstance(value, np.ndarray):
        sizes_list = [int(s) for s in value.shape]
        b.StartVector(4, len(sizes_list), 4)
        for s in reversed(sizes_list):
            b.PrependInt32(s)
        sizes = b.EndVector()
        data = _byte_vector(
            b, np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes(), 16
        )
        dim_order = _byte_vector(b, bytes(range(value.ndim)), 1)
        b.StartObject(4)
        b.PrependInt8Slot(0, SCALAR_TYPES[value.dtype.name], 0)
        b.PrependUOffsetTRelativeSlot(1, sizes, 0)
        b.PrependUOffsetTRelativeSlot(2, data, 0)
        b.PrependUOffsetTRelativeSlot(3, dim_order, 0)
        member, tag = b.EndObject(), TAG_TENSOR
    elif isinstance(value, bool):
        b.StartObject(1)
        b.PrependBoolSlot(0, value, False)
        member, tag = b.EndObject(), TAG_BOOL
    elif isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise BundledProgramError(f"int value {value} does not fit the schema's int64")
        b.StartObject(1)
        b.PrependInt64Slot(0, value, 0)
        member, tag = b.EndObject(), TAG_INT
    else:
        b.StartObject(1)
        b.PrependFloat64Slot(0, float(value), 0.0)
        member, tag = b.EndObject(), TAG_DOUBLE
    b.StartObject(2)
    b.PrependUint8Slot(0, tag, 0)
    b.PrependUOffsetTRelativeSlot(1, member, 0)
    return int(b.EndObject())


def _write_case(b: flatbuffers.Builder, case: MethodTestCase) -> int:
    inputs = _offset_vector(b, [_write_value(b, v) for v in case.inputs])
    outputs = _offset_vector(b, [_write_value(b, v) for v in case.expected_outputs])
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, inputs, 0)
    b.PrependUOffsetTRelativeSlot(1, outputs, 0)
    return int(b.EndObject())


def serialize_from_bundled_program_to_flatbuffer(bundled_program: BundledProgram) -> bytes:
    """The ``.bpte`` bytes of ``bundled_program`` (the reference's schema and identifier)."""
    program_bytes = bundled_program.program_buffer
    b = flatbuffers.Builder(len(program_bytes) + 1024)
    # objects in the order the reference's builder makes them, so the bytes are the same
    suites = []
    for suite in bundled_program.method_test_suites:
        name = b.CreateString(suite.method_name)
        cases = _offset_vector(b, [_write_case(b, c) for c in suite.test_cases])
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, name, 0)
        b.PrependUOffsetTRelativeSlot(1, cases, 0)
        suites.append(b.EndObject())
    suite_vector = _offset_vector(b, suites)
    program = _byte_vector(b, program_bytes, 32)
    b.StartObject(3)
    b.PrependUint32Slot(0, bundled_program.version, 0)
    b.PrependUOffsetTRelativeSlot(1, suite_vector, 0)
    b.PrependUOffsetTRelativeSlot(2, program, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=FILE_IDENTIFIER)
    return bytes(b.Output())


# --------------------------------------------------------------------------- reading


class _Table:
    __slots__ = ("path", "pos", "tlen", "vlen", "vtable")

    def __init__(self, pos: int, vtable: int, vlen: int, tlen: int, path: str) -> None:
        self.pos, self.vtable, self.vlen, self.tlen, self.path = pos, vtable, vlen, tlen, path


class _Reader:
    """Checked reads of a FlatBuffer; every error names the field path."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n = len(data)

    def fail(self, path: str, message: str) -> BundledProgramError:
        return BundledProgramError(f"bundled program: {path}: {message}")

    def unpack(self, fmt: str, pos: int, path: str) -> Any:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > self.n:
            raise self.fail(
                path, f"offset {pos} (+{size} bytes) is outside the {self.n}-byte buffer"
            )
        return struct.unpack_from(fmt, self.data, pos)[0]

    def table(self, pos: int, path: str) -> _Table:
        vtable = pos - self.unpack("<i", pos, path)
        vlen = self.unpack("<H", vtable, f"{path} (vtable)")
        tlen = self.unpack("<H", vtable + 2, f"{path} (vtable)")
        if vlen < 4 or vlen % 2 or vtable + vlen > self.n:
            raise self.fail(path, f"bad vtable at offset {vtable} (length {vlen})")
        if tlen < 4 or pos + tlen > self.n:
            raise self.fail(path, f"table at offset {pos} of {tlen} bytes overruns the buffer")
        return _Table(pos, vtable, vlen, tlen, path)

    def field(self, t: _Table, slot: int, size: int, name: str) -> int | None:
        entry = 4 + 2 * slot
        if entry >= t.vlen:
            return None
        off = self.unpack("<H", t.vtable + entry, f"{t.path}.{name}")
        if off == 0:
            return None
        if off + size > t.tlen:
            raise self.fail(f"{t.path}.{name}", f"field at +{off} lies outside its table")
        return t.pos + off

    def scalar(self, t: _Table, slot: int, fmt: str, default: object, name: str) -> Any:
        pos = self.field(t, slot, struct.calcsize(fmt), name)
        return default if pos is None else self.unpack(fmt, pos, f"{t.path}.{name}")

    def ref(self, t: _Table, slot: int, name: str) -> int | None:
        pos = self.field(t, slot, 4, name)
        if pos is None:
            return None
        return pos + self.unpack("<I", pos, f"{t.path}.{name}")

    def vector(self, t: _Table, slot: int, elem: int, name: str) -> tuple[int, int] | None:
        start = self.ref(t, slot, name)
        if start is None:
            return None
        path = f"{t.path}.{name}"
        count = self.unpack("<I", start, path)
        if start + 4 + count * elem > self.n:
            raise self.fail(
                path, f"vector of {count} element(s) at offset {start} overruns the buffer"
            )
        return start + 4, count

    def tables(self, t: _Table, slot: int, name: str) -> list[_Table]:
        vec = self.vector(t, slot, 4, name)
        if vec is None:
            return []
        start, count = vec
        out = []
        for i in range(count):
            pos = start + 4 * i
            path = f"{t.path}.{name}[{i}]".lstrip(".")
            out.append(self.table(pos + self.unpack("<I", pos, path), path))
        return out

    def blob(self, t: _Table, slot: int, name: str) -> bytes | None:
        vec = self.vector(t, slot, 1, name)
        if vec is None:
            return None
        start, count = vec
        return bytes(self.data[start : start + count])


def _read_tensor(r: _Reader, t: _Table) -> npt.NDArray[np.generic]:
    code = r.scalar(t, 0, "<b", 0, "scalar_type")
    dtype = _DTYPES.get(code)
    if dtype is None:
        name = SCALAR_TYPE_NAMES.get(code, "unknown")
        raise r.fail(f"{t.path}.scalar_type", f"scalar type {code} ({name}) is not supported")
    vec = r.vector(t, 1, 4, "sizes")
    sizes: list[int] = []
    if vec is not None:
        start, count = vec
        sizes = list(struct.unpack_from(f"<{count}i", r.data, start))
    if any(s < 0 for s in sizes):
        raise r.fail(f"{t.path}.sizes", f"negative size in {sizes}")
    data = r.blob(t, 2, "data") or b""
    need = math.prod(sizes) * dtype.itemsize
    if len(data) != need:
        raise r.fail(
            f"{t.path}.data",
            f"{dtype.name}{sizes} needs {need} bytes, the buffer holds {len(data)}",
        )
    order = r.blob(t, 3, "dim_order")
    dim_order = list(order) if order else list(range(len(sizes)))
    if sorted(dim_order) != list(range(len(sizes))):
        raise r.fail(
            f"{t.path}.dim_order", f"{dim_order} is not a permutation of the {len(sizes)} dims"
        )
    flat = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)
    array = flat.reshape([sizes[d] for d in dim_order]).transpose(np.argsort(dim_order))
    out = np.ascontiguousarray(array)
    out.flags.writeable = False
    return out


def _read_value(r: _Reader, t: _Table) -> BundledValue:
    tag = r.scalar(t, 0, "<B", 0, "val_type")
    pos = r.ref(t, 1, "val")
    if pos is None or tag == 0:
        raise r.fail(f"{t.path}.val", "missing value")
    member = r.table(pos, f"{t.path}.val")
    if tag == TAG_TENSOR:
        return _read_tensor(r, member)
    if tag == TAG_INT:
        return int(r.scalar(member, 0, "<q", 0, "int_val"))
    if tag == TAG_BOOL:
        return bool(r.scalar(member, 0, "<B", 0, "bool_val"))
    if tag == TAG_DOUBLE:
        return float(r.scalar(member, 0, "<d", 0.0, "double_val"))
    raise r.fail(
        f"{t.path}.val_type", f"unknown value type {tag} (known: 1 Tensor, 2 Int, 3 Bool, 4 Double)"
    )


def deserialize_from_flatbuffer_to_bundled_program(flatbuffer: bytes) -> BundledProgram:
    """Read ``.bpte`` bytes (ours or the reference's) into a :class:`BundledProgram`.

    Our programs are checked against their test cases; a program in another format (an
    ExecuTorch ``.pte``) is kept as bytes and its test cases are read as they are.
    """
    from delegate_lens.bundled_program.core import BundledProgram

    data = bytes(flatbuffer)
    r = _Reader(data)
    if len(data) < 8:
        raise r.fail("header", f"{len(data)} bytes is too short for a bundled program")
    if data[4:8] != FILE_IDENTIFIER:
        raise r.fail(
            "file_identifier",
            f"expected {FILE_IDENTIFIER.decode()!r}, got {data[4:8]!r} (not a bundled program)",
        )
    root = r.table(r.unpack("<I", 0, "root"), "")
    root.path = "BundledProgram"
    version = r.scalar(root, 0, "<I", 0, "version")
    program = r.blob(root, 2, "program")
    if program is None:
        raise r.fail("BundledProgram.program", "missing")
    suites = []
    for st in r.tables(root, 1, "method_test_suites"):
        st.path = st.path.removeprefix("BundledProgram.")
        name_pos = r.ref(st, 0, "method_name")
        if name_pos is None:
            raise r.fail(f"{st.path}.method_name", "missing")
        length = r.unpack("<I", name_pos, f"{st.path}.method_name")
        raw = data[name_pos + 4 : name_pos + 4 + length]
        if len(raw) != length or data[name_pos + 4 + length : name_pos + 5 + length] != b"\0":
            raise r.fail(f"{st.path}.method_name", "string overruns the buffer or lacks its NUL")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise r.fail(f"{st.path}.method_name", "not valid UTF-8") from None
        cases = []
        for ct in r.tables(st, 1, "test_cases"):
            inputs = [_read_value(r, v) for v in r.tables(ct, 0, "inputs")]
            outputs = [_read_value(r, v) for v in r.tables(ct, 1, "expected_outputs")]
            cases.append(MethodTestCase(inputs, outputs))
        try:
            suites.append(MethodTestSuite(name, cases))
        except BundledProgramError as exc:
            raise r.fail(st.path, str(exc)) from None
    return BundledProgram(program, suites, version=version)
