"""Bundled programs as the reference's schema objects: reading, converting, JSON.

* :func:`read_schema` — a ``.bpte`` buffer as :mod:`~delegate_lens.bundled_program.schema`
  objects, read field by field: any scalar type, any program bytes (an ExecuTorch ``.pte``
  too); only a buffer that is not a well-formed bundled program is an error
  (:class:`~delegate_lens.errors.BundledProgramError` naming the field);
* :func:`to_schema` / :func:`from_schema` — between our
  :class:`~delegate_lens.bundled_program.BundledProgram` and the schema objects;
* :func:`to_json` / :func:`from_json` — the reference's JSON of the schema objects
  (``serialize_from_bundled_program_to_json``: union members tagged ``val_type``, bytes as
  lists of ints).
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from delegate_lens.bundled_program.schema import (
    FILE_IDENTIFIER,
    SCALAR_TYPES,
    TAG_BOOL,
    TAG_DOUBLE,
    TAG_INT,
    TAG_TENSOR,
)
from delegate_lens.bundled_program.schema import bundled_program_schema as bp
from delegate_lens.errors import BundledProgramError
from delegate_lens.etdump import ScalarType

if TYPE_CHECKING:
    from delegate_lens.bundled_program.config import BundledValue
    from delegate_lens.bundled_program.core import BundledProgram


def _scalar_type(code: int) -> ScalarType | int:
    try:
        return ScalarType(code)
    except ValueError:
        return code


# --------------------------------------------------------------------------- reading


def read_schema(flatbuffer: bytes | bytearray | memoryview) -> bp.BundledProgram:
    """The schema objects of a ``.bpte`` buffer (see the module text)."""
    from delegate_lens.bundled_program._flatbuffer import _Reader, _Table

    data = bytes(flatbuffer)
    r = _Reader(data)
    if len(data) < 8:
        raise r.fail("header", f"{len(data)} bytes is too short for a bundled program")
    if data[4:8] != FILE_IDENTIFIER:
        raise r.fail(
            "file_identifier",
            f"expected {FILE_IDENTIFIER.decode()!r}, got {data[4:8]!r} (not a bundled program)",
        )

    def text(t: _Table, slot: int, name: str) -> str:
        pos = r.ref(t, slot, name)
        if pos is None:
            raise r.fail(f"{t.path}.{name}", "missing")
        length = r.unpack("<I", pos, f"{t.path}.{name}")
        raw = data[pos + 4 : pos + 4 + length]
        if len(raw) != length:
            raise r.fail(f"{t.path}.{name}", "string overruns the buffer")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise r.fail(f"{t.path}.{name}", "not valid UTF-8") from None

    def value(t: _Table) -> bp.Value:
        tag = r.scalar(t, 0, "<B", 0, "val_type")
        pos = r.ref(t, 1, "val")
        if pos is None:
            raise r.fail(f"{t.path}.val", "missing")
        member = r.table(pos, f"{t.path}.val")
        if tag == TAG_TENSOR:
            vec = r.vector(member, 1, 4, "sizes")
            sizes = list(struct.unpack_from(f"<{vec[1]}i", data, vec[0])) if vec else []
            order = r.blob(member, 3, "dim_order")
            return bp.Value(
                bp.Tensor(
                    _scalar_type(r.scalar(member, 0, "<b", 0, "scalar_type")),
                    sizes,
                    r.blob(member, 2, "data") or b"",
                    list(order) if order else [],
                )
            )
        if tag == TAG_INT:
            return bp.Value(bp.Int(int(r.scalar(member, 0, "<q", 0, "int_val"))))
        if tag == TAG_BOOL:
            return bp.Value(bp.Bool(bool(r.scalar(member, 0, "<B", 0, "bool_val"))))
        if tag == TAG_DOUBLE:
            return bp.Value(bp.Double(float(r.scalar(member, 0, "<d", 0.0, "double_val"))))
        raise r.fail(f"{t.path}.val_type", f"unknown value type {tag}")

    root = r.table(r.unpack("<I", 0, "root"), "BundledProgram")
    suites = []
    for st in r.tables(root, 1, "method_test_suites"):
        cases = [
            bp.BundledMethodTestCase(
                [value(v) for v in r.tables(ct, 0, "inputs")],
                [value(v) for v in r.tables(ct, 1, "expected_outputs")],
            )
            for ct in r.tables(st, 1, "test_cases")
        ]
        suites.append(bp.BundledMethodTestSuite(text(st, 0, "method_name"), cases))
    program = r.blob(root, 2, "program")
    if program is None:
        raise r.fail("BundledProgram.program", "missing")
    return bp.BundledProgram(int(r.scalar(root, 0, "<I", 0, "version")), suites, program)


# --------------------------------------------------------------------------- conversions


def _schema_value(value: BundledValue) -> bp.Value:
    if isinstance(value, np.ndarray):
        code = SCALAR_TYPES[value.dtype.name]
        array = np.ascontiguousarray(value)
        return bp.Value(
            bp.Tensor(
                _scalar_type(code),
                list(array.shape),
                array.astype(array.dtype.newbyteorder("<")).tobytes(),
                list(range(array.ndim)),
            )
        )
    if isinstance(value, bool):
        return bp.Value(bp.Bool(value))
    if isinstance(value, int):
        return bp.Value(bp.Int(value))
    return bp.Value(bp.Double(float(value)))


def to_schema(bundled: BundledProgram) -> bp.BundledProgram:
    """Our :class:`~delegate_lens.bundled_program.BundledProgram` as schema objects."""
    suites = [
        bp.BundledMethodTestSuite(
            suite.method_name,
            [
                bp.BundledMethodTestCase(
                    [_schema_value(v) for v in case.inputs],
                    [_schema_value(v) for v in case.expected_outputs],
                )
                for case in suite.test_cases
            ],
        )
        for suite in bundled.method_test_suites
    ]
    return bp.BundledProgram(bundled.version, suites, bytes(bundled.program_buffer))


def _plain_value(value: bp.Value, where: str) -> BundledValue:
    val = value.val
    if isinstance(val, bp.Tensor):
        from delegate_lens.bundled_program._flatbuffer import _DTYPES

        dtype = _DTYPES.get(int(val.scalar_type))
        if dtype is None:
            raise BundledProgramError(
                f"{where}: scalar type {val.scalar_type!r} has no numpy dtype; such a test "
                "case can be read as schema objects but not turned into arrays"
            )
        order = list(val.dim_order) or list(range(len(val.sizes)))
        flat = np.frombuffer(val.data, dtype=dtype.newbyteorder("<")).astype(dtype)
        array = flat.reshape([val.sizes[d] for d in order]).transpose(np.argsort(order))
        return np.ascontiguousarray(array)
    if isinstance(val, bp.Int):
        return int(val.int_val)
    if isinstance(val, bp.Bool):
        return bool(val.bool_val)
    return float(val.double_val)


def from_schema(schema: bp.BundledProgram) -> BundledProgram:
    """Schema objects as our :class:`~delegate_lens.bundled_program.BundledProgram`."""
    from delegate_lens.bundled_program.config import MethodTestCase, MethodTestSuite
    from delegate_lens.bundled_program.core import BundledProgram

    suites = []
    for suite in schema.method_test_suites:
        cases = []
        for k, case in enumerate(suite.test_cases):
            where = f"method {suite.method_name!r} test case {k}"
            cases.append(
                MethodTestCase(
                    [_plain_value(v, f"{where} inputs") for v in case.inputs],
                    [_plain_value(v, f"{where} expected_outputs") for v in case.expected_outputs],
                )
            )
        suites.append(MethodTestSuite(suite.method_name, cases))
    return BundledProgram(bytes(schema.program), suites, version=schema.version)


# --------------------------------------------------------------------------- JSON


def _jsonable(obj: object) -> Any:
    if isinstance(obj, bp.Value):
        return {"val": _jsonable(obj.val), "val_type": type(obj.val).__name__}
    if isinstance(obj, (bytes, bytearray)):
        return list(obj)
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "__attrs_attrs__"):
        return {a.name: _jsonable(getattr(obj, a.name)) for a in obj.__attrs_attrs__}
    return int(obj) if isinstance(obj, ScalarType) else obj


def to_json(schema: bp.BundledProgram) -> str:
    """The reference's JSON of the schema objects."""
    return json.dumps(_jsonable(schema))


_MEMBERS: dict[str, Any] = {
    "Tensor": bp.Tensor,
    "Int": bp.Int,
    "Bool": bp.Bool,
    "Double": bp.Double,
}


def from_json(text: str | bytes) -> bp.BundledProgram:
    """Schema objects from the JSON :func:`to_json` writes; BundledProgramError naming the
    field when it does not fit."""
    try:
        doc = json.loads(text)

        def value(v: object) -> bp.Value:
            if not isinstance(v, dict):
                raise TypeError(f"a value is a {type(v).__name__}, not an object")
            kind = _MEMBERS[v["val_type"]]
            fields = dict(v["val"])
            if kind is bp.Tensor:
                fields["data"] = bytes(fields["data"])
                fields["scalar_type"] = _scalar_type(int(fields["scalar_type"]))
            return bp.Value(kind(**fields))

        return bp.BundledProgram(
            int(doc["version"]),
            [
                bp.BundledMethodTestSuite(
                    str(s["method_name"]),
                    [
                        bp.BundledMethodTestCase(
                            [value(v) for v in c["inputs"]],
                            [value(v) for v in c["expected_outputs"]],
                        )
                        for c in s["test_cases"]
                    ],
                )
                for s in doc["method_test_suites"]
            ],
            bytes(doc["program"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise BundledProgramError(
            f"not the JSON of a bundled program: {type(exc).__name__}: {exc}"
        ) from None
