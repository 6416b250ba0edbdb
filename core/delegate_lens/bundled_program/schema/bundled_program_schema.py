"""The reference's bundled-program schema objects (``bundled_program_schema``).

What ``deserialize_from_flatbuffer_to_bundled_program`` (in
:mod:`delegate_lens.bundled_program.serialize`) returns and
``BundledProgram.serialize_to_schema()`` gives: the file's tables as plain objects with
the reference's attribute paths (``.method_test_suites[i].test_cases[j].inputs[k].val``,
``.program`` as bytes). A tensor keeps its bytes as stored (any scalar type, also those
numpy cannot hold).
"""

from __future__ import annotations

from typing import TypeAlias

import attrs

from delegate_lens.etdump import ScalarType

__all__ = [
    "Bool",
    "BundledMethodTestCase",
    "BundledMethodTestSuite",
    "BundledProgram",
    "Double",
    "Int",
    "ScalarType",
    "Tensor",
    "Value",
    "ValueUnion",
]


@attrs.define
class Tensor:
    """A tensor value: scalar type (``ScalarType``, or the int code when unknown), sizes,
    the data bytes as stored (in ``dim_order``) and the dim order."""

    scalar_type: ScalarType | int
    sizes: list[int]
    data: bytes
    dim_order: list[int]


@attrs.define
class Int:
    int_val: int


@attrs.define
class Bool:
    bool_val: bool


@attrs.define
class Double:
    double_val: float


ValueUnion: TypeAlias = Tensor | Int | Double | Bool


@attrs.define
class Value:
    """One input or expected output."""

    val: ValueUnion


@attrs.define
class BundledMethodTestCase:
    """The inputs of one run of a method and the outputs it must give."""

    inputs: list[Value]
    expected_outputs: list[Value]


@attrs.define
class BundledMethodTestSuite:
    """The test cases of one method."""

    method_name: str
    test_cases: list[BundledMethodTestCase]


@attrs.define
class BundledProgram:
    """The file: schema version, test suites and the program's bytes."""

    version: int
    method_test_suites: list[BundledMethodTestSuite]
    program: bytes
