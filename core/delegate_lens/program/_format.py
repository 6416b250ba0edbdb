"""The serialized program: what the AOT stage hands to the simulated runtime.

A torch-free data model (attrs value classes) and a compact, versioned container:

.. code-block:: text

    offset 0   fixed header, 32 bytes, little endian
               magic b"DLPG" | version u16 | flags u16 (0) | header_length u32 |
               header_crc32 u32 | data_offset u64 | data_length u32 | data_crc32 u32
    offset 32  JSON header (UTF-8, ``header_length`` bytes): methods, values, instructions,
               delegates; tensor constants reference the data section by offset/length
    data_offset (a multiple of 64)
               raw data section: constant tensor bytes (C-contiguous, little endian) and
               delegate blobs, each starting on a 64-byte boundary

:func:`serialize` turns a :class:`ProgramData` into bytes; :func:`deserialize` checks every
byte it reads (magic, version, lengths, checksums, the JSON schema, value ids, delegate
indexes, tensor sizes) and raises :class:`~delegate_lens.errors.ProgramFormatError` naming
the byte offset or the JSON path of what is wrong.

The data model (values, instructions, methods, :class:`ProgramData`) lives in
:mod:`delegate_lens.program._model`; :mod:`delegate_lens.program` is the face of both.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Iterable
from typing import Any

from delegate_lens.errors import ProgramFormatError
from delegate_lens.program._model import (
    BoolValue,
    CompileSpecData,
    DelegateCallInstruction,
    DelegateData,
    DeviceValue,
    DTypeValue,
    FloatValue,
    Instruction,
    IntValue,
    LayoutValue,
    ListValue,
    MemoryFormatValue,
    MethodData,
    NoneValue,
    OperatorInstruction,
    ProgramData,
    StringValue,
    TensorValue,
    Value,
)

MAGIC = b"DLPG"
FORMAT_VERSION = 1
ALIGNMENT = 64
_FIXED = struct.Struct("<4sHHIIQII")  # 32 bytes

# --------------------------------------------------------------------------- serialize


class _DataSection:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def add(self, data: bytes) -> dict[str, int]:
        pad = -self.size % ALIGNMENT
        if pad:
            self.chunks.append(b"\0" * pad)
            self.size += pad
        ref = {"offset": self.size, "length": len(data)}
        self.chunks.append(data)
        self.size += len(data)
        return ref


_SIMPLE_KINDS: dict[type, str] = {
    IntValue: "int",
    FloatValue: "float",
    BoolValue: "bool",
    StringValue: "str",
}


def _value_to_json(value: Value, data: _DataSection) -> dict[str, Any]:
    if isinstance(value, TensorValue):
        out: dict[str, Any] = {"kind": "tensor", "dtype": value.dtype, "shape": list(value.shape)}
        if value.data is not None:
            out["data"] = data.add(value.data)
        return out
    kind = _SIMPLE_KINDS.get(type(value))
    if kind is not None:
        v = value.value  # type: ignore[union-attr]
        if isinstance(value, FloatValue) and not math.isfinite(value.value):
            return {"kind": kind, "value": repr(v)}  # "inf", "-inf", "nan"
        return {"kind": kind, "value": v}
    if isinstance(value, NoneValue):
        return {"kind": "none"}
    if isinstance(value, ListValue):
        return {"kind": "list", "items": list(value.items)}
    if isinstance(value, DTypeValue):
        return {"kind": "dtype", "value": value.dtype}
    if isinstance(value, MemoryFormatValue):
        return {"kind": "memory_format", "value": value.name}
    if isinstance(value, LayoutValue):
        return {"kind": "layout", "value": value.name}
    if isinstance(value, DeviceValue):
        return {"kind": "device", "value": value.name}
    raise ProgramFormatError(f"cannot serialize value of type {type(value).__name__}")


def _instruction_to_json(inst: Instruction) -> dict[str, Any]:
    if isinstance(inst, OperatorInstruction):
        return {
            "kind": "operator",
            "op": inst.op,
            "args": list(inst.args),
            "kwargs": [[k, v] for k, v in inst.kwargs],
            "outputs": list(inst.outputs),
            "debug_handles": list(inst.debug_handles),
        }
    if isinstance(inst, DelegateCallInstruction):
        return {
            "kind": "delegate",
            "delegate_index": inst.delegate_index,
            "args": list(inst.args),
            "outputs": list(inst.outputs),
            "debug_handles": list(inst.debug_handles),
        }
    raise ProgramFormatError(f"cannot serialize instruction of type {type(inst).__name__}")


def serialize(program: ProgramData) -> bytes:
    """Encode ``program`` as bytes that :func:`deserialize` (and ``Program.load``) read."""
    _check_program(program)
    data = _DataSection()
    header = {
        "delegates": [
            {
                "backend_id": d.backend_id,
                "processed": data.add(d.processed_bytes),
                "compile_specs": [[c.key, data.add(c.value)] for c in d.compile_specs],
            }
            for d in program.delegates
        ],
        "methods": [
            {
                "name": m.name,
                "inputs": list(m.inputs),
                "outputs": list(m.outputs),
                "values": [_value_to_json(v, data) for v in m.values],
                "instructions": [_instruction_to_json(i) for i in m.instructions],
            }
            for m in program.methods
        ],
    }
    header_bytes = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    data_offset = _FIXED.size + len(header_bytes)
    data_offset += -data_offset % ALIGNMENT
    payload = b"".join(data.chunks)
    if len(payload) >= 2**32:
        raise ProgramFormatError("program data section exceeds 4 GiB")
    fixed = _FIXED.pack(
        MAGIC,
        FORMAT_VERSION,
        0,
        len(header_bytes),
        zlib.crc32(header_bytes),
        data_offset,
        len(payload),
        zlib.crc32(payload),
    )
    padding = b"\0" * (data_offset - _FIXED.size - len(header_bytes))
    return b"".join((fixed, header_bytes, padding, payload))


# --------------------------------------------------------------------------- deserialize


def _fail(where: str, message: str) -> ProgramFormatError:
    return ProgramFormatError(f"program: {where}: {message}")


class _Reader:
    """Typed access to the JSON header; every error names its JSON path."""

    def __init__(self, data: memoryview) -> None:
        self.data = data

    def get(self, obj: object, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
        if not isinstance(obj, dict):
            raise _fail(where, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            raise _fail(f"{where}.{key}", "missing")
        value = obj[key]
        if kind is int and isinstance(value, bool):
            raise _fail(f"{where}.{key}", "expected an integer, got a bool")
        if not isinstance(value, kind):
            raise _fail(
                f"{where}.{key}", f"expected {_kind_name(kind)}, got {type(value).__name__}"
            )
        return value

    def ints(self, obj: object, key: str, where: str) -> tuple[int, ...]:
        values = self.get(obj, key, where, list)
        for i, v in enumerate(values):
            if not isinstance(v, int) or isinstance(v, bool):
                raise _fail(f"{where}.{key}[{i}]", f"expected an integer, got {v!r}")
        return tuple(values)

    def blob(self, ref: object, where: str) -> bytes:
        offset = self.get(ref, "offset", where, int)
        length = self.get(ref, "length", where, int)
        if offset < 0 or length < 0 or offset + length > len(self.data):
            raise _fail(
                where,
                f"data range [{offset}, {offset + length}) outside the data section "
                f"of {len(self.data)} bytes",
            )
        return bytes(self.data[offset : offset + length])


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", list: "a list", dict: "an object"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _value_from_json(r: _Reader, obj: object, where: str) -> Value:
    kind = r.get(obj, "kind", where, str)
    try:
        if kind == "tensor":
            shape = r.ints(obj, "shape", where)
            data = None  # obj is a dict: r.get checked it
            if isinstance(obj, dict) and "data" in obj:
                data = r.blob(obj["data"], f"{where}.data")
            return TensorValue(r.get(obj, "dtype", where, str), shape, data)
        if kind == "int":
            return IntValue(r.get(obj, "value", where, int))
        if kind == "float":
            v = r.get(obj, "value", where, (int, float, str))
            if isinstance(v, str) and v not in ("inf", "-inf", "nan"):
                raise _fail(f"{where}.value", f"bad float {v!r}")
            return FloatValue(float(v))
        if kind == "bool":
            return BoolValue(r.get(obj, "value", where, bool))
        if kind == "str":
            return StringValue(r.get(obj, "value", where, str))
        if kind == "none":
            return NoneValue()
        if kind == "list":
            return ListValue(r.ints(obj, "items", where))
        if kind == "dtype":
            return DTypeValue(r.get(obj, "value", where, str))
        if kind == "memory_format":
            return MemoryFormatValue(r.get(obj, "value", where, str))
        if kind == "layout":
            return LayoutValue(r.get(obj, "value", where, str))
        if kind == "device":
            return DeviceValue(r.get(obj, "value", where, str))
    except ProgramFormatError as exc:
        if str(exc).startswith("program:"):
            raise
        raise _fail(where, str(exc)) from None
    except (OverflowError, TypeError, ValueError) as exc:
        raise _fail(where, str(exc)) from None
    raise _fail(f"{where}.kind", f"unknown value kind {kind!r}")


def _instruction_from_json(r: _Reader, obj: object, where: str) -> Instruction:
    kind = r.get(obj, "kind", where, str)
    args = r.ints(obj, "args", where)
    outputs = r.ints(obj, "outputs", where)
    handles = r.ints(obj, "debug_handles", where)
    if kind == "operator":
        kwargs = []
        for i, item in enumerate(r.get(obj, "kwargs", where, list)):
            ok = (
                isinstance(item, list)
                and len(item) == 2
                and isinstance(item[0], str)
                and isinstance(item[1], int)
                and not isinstance(item[1], bool)
            )
            if not ok:
                raise _fail(f"{where}.kwargs[{i}]", f"expected [name, value id], got {item!r}")
            kwargs.append((item[0], item[1]))
        return OperatorInstruction(r.get(obj, "op", where, str), args, outputs, kwargs, handles)
    if kind == "delegate":
        index = r.get(obj, "delegate_index", where, int)
        return DelegateCallInstruction(index, args, outputs, handles)
    raise _fail(f"{where}.kind", f"unknown instruction kind {kind!r}")


def deserialize(data: bytes | bytearray | memoryview) -> ProgramData:
    """Decode bytes made by :func:`serialize`; bad bytes raise ``ProgramFormatError``."""
    view = memoryview(data).cast("B")
    if len(view) < _FIXED.size:
        raise _fail("byte 0", f"truncated: {len(view)} bytes, the fixed header needs {_FIXED.size}")
    magic, version, _flags, hlen, hcrc, doff, dlen, dcrc = _FIXED.unpack_from(view, 0)
    if magic != MAGIC:
        raise _fail("byte 0", f"bad magic {bytes(magic)!r}, expected {MAGIC!r} (not a program?)")
    if version != FORMAT_VERSION:
        raise _fail(
            "byte 4", f"unsupported format version {version} (this reader: {FORMAT_VERSION})"
        )
    if _FIXED.size + hlen > len(view):
        raise _fail("byte 8", f"header length {hlen} runs past the end ({len(view)} bytes)")
    if doff < _FIXED.size + hlen or doff + dlen > len(view):
        raise _fail(
            "byte 16",
            f"data section [{doff}, {doff + dlen}) outside the buffer of {len(view)} bytes",
        )
    header_bytes = view[_FIXED.size : _FIXED.size + hlen]
    if zlib.crc32(header_bytes) != hcrc:
        raise _fail(f"byte {_FIXED.size}", "header checksum mismatch (corrupt file)")
    payload = view[doff : doff + dlen]
    if zlib.crc32(payload) != dcrc:
        raise _fail(f"byte {doff}", "data section checksum mismatch (corrupt file)")
    try:
        header = json.loads(bytes(header_bytes).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(f"byte {_FIXED.size}", f"header is not valid JSON: {exc}") from None
    r = _Reader(payload)
    delegates = []
    if not isinstance(header, dict):
        raise _fail("header", f"expected an object, got {type(header).__name__}")
    for i, d in enumerate(r.get(header, "delegates", "header", list)):
        where = f"delegates[{i}]"
        specs = []
        for j, spec in enumerate(r.get(d, "compile_specs", where, list)):
            if not (isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], str)):
                raise _fail(f"{where}.compile_specs[{j}]", f"expected [key, data], got {spec!r}")
            specs.append(CompileSpecData(spec[0], r.blob(spec[1], f"{where}.compile_specs[{j}]")))
        processed = r.blob(r.get(d, "processed", where, dict), f"{where}.processed")
        delegates.append(DelegateData(r.get(d, "backend_id", where, str), processed, specs))
    methods = []
    for i, m in enumerate(r.get(header, "methods", "header", list)):
        where = f"methods[{i}]"
        values = [
            _value_from_json(r, v, f"{where}.values[{k}]")
            for k, v in enumerate(r.get(m, "values", where, list))
        ]
        instructions = [
            _instruction_from_json(r, v, f"{where}.instructions[{k}]")
            for k, v in enumerate(r.get(m, "instructions", where, list))
        ]
        methods.append(
            MethodData(
                r.get(m, "name", where, str),
                r.ints(m, "inputs", where),
                r.ints(m, "outputs", where),
                values,
                instructions,
            )
        )
    program = ProgramData(methods, delegates)
    _check_program(program)
    return program


def _check_program(program: ProgramData) -> None:
    """Every value id and delegate index must point at something that exists."""
    names = [m.name for m in program.methods]
    if len(set(names)) != len(names):
        raise _fail("methods", f"duplicate method names in {names}")
    for i, m in enumerate(program.methods):
        n = len(m.values)
        where = f"methods[{i}] ({m.name})"

        def check(ids: Iterable[int], path: str, allow_unused: bool = False, n: int = n) -> None:
            for k, vid in enumerate(ids):
                if allow_unused and vid == -1:
                    continue
                if not 0 <= vid < n:
                    raise _fail(f"{path}[{k}]", f"value id {vid} out of range (0..{n - 1})")

        check(m.inputs, f"{where}.inputs")
        check(m.outputs, f"{where}.outputs")
        for k, v in enumerate(m.values):
            if isinstance(v, ListValue):
                check(v.items, f"{where}.values[{k}].items")
        for k, inst in enumerate(m.instructions):
            path = f"{where}.instructions[{k}]"
            check(inst.args, f"{path}.args")
            check(inst.outputs, f"{path}.outputs", allow_unused=True)
            if isinstance(inst, OperatorInstruction):
                check([v for _, v in inst.kwargs], f"{path}.kwargs")
            elif not 0 <= inst.delegate_index < len(program.delegates):
                raise _fail(
                    f"{path}.delegate_index",
                    f"delegate {inst.delegate_index} out of range "
                    f"({len(program.delegates)} delegates)",
                )
