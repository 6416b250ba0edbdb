"""delegate_lens.bundled_program: the .bpte codec, the reference's own file, validation.

Torch-free: programs are made by hand as ProgramData.
"""

from __future__ import annotations

import contextlib
import math
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from delegate_lens.bundled_program import (
    FILE_IDENTIFIER,
    BundledProgram,
    MethodTestCase,
    MethodTestSuite,
    compare_outputs,
    deserialize_from_flatbuffer_to_bundled_program,
    serialize_from_bundled_program_to_flatbuffer,
)
from delegate_lens.bundled_program import _flatbuffer as fb
from delegate_lens.bundled_program.schema import SCALAR_TYPES
from delegate_lens.errors import BundledProgramError
from delegate_lens.program import (
    IntValue,
    MethodData,
    OperatorInstruction,
    ProgramData,
    TensorValue,
    serialize,
)

REFERENCE = Path(__file__).parent / "data" / "bundled_program" / "reference_add.bpte"


def add_program() -> ProgramData:
    """forward(x: float32[2, 3], n: int64[3]) -> (x + x, n * n); scale(x: float32[4], k: int)."""
    values = [
        TensorValue("float32", (2, 3)),
        TensorValue("int64", (3,)),
        TensorValue("float32", (2, 3)),
        TensorValue("int64", (3,)),
    ]
    insts = [
        OperatorInstruction("aten.add.Tensor", [0, 0], [2]),
        OperatorInstruction("aten.mul.Tensor", [1, 1], [3]),
    ]
    scale_values = [TensorValue("float32", (4,)), IntValue(2), TensorValue("float32", (4,))]
    scale = MethodData(
        "scale", [0, 1], [2], scale_values, [OperatorInstruction("aten.mul.Tensor", [0, 1], [2])]
    )
    return ProgramData([MethodData("forward", [0, 1], [2, 3], values, insts), scale])


def add_case(k: float = 1.0) -> MethodTestCase:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) * k
    n = np.array([1, -2, 3], dtype=np.int64)
    return MethodTestCase([x, n], [x + x, n * n])


# --------------------------------------------------------------------------- reference file


def test_reference_file_parses_to_its_test_cases() -> None:
    data = REFERENCE.read_bytes()
    bundled = deserialize_from_flatbuffer_to_bundled_program(data)
    assert bundled.version == 2
    assert bundled.method_names == ["forward"]
    assert not bundled.is_delegate_lens_program
    assert bundled.program_buffer[4:8] == b"ET12"  # an ExecuTorch .pte, kept as bytes
    cases = bundled.method_test_suite("forward").test_cases
    assert len(cases) == 2
    for k, case in enumerate(cases, start=1):
        x = np.arange(6, dtype=np.float32).reshape(2, 3) * k
        y = np.array([1, -2, 3], dtype=np.int64) * k
        assert case == MethodTestCase([x, y], [x + 1.0, y * 2])
        assert case.inputs[0].dtype == np.float32 and case.inputs[1].dtype == np.int64


def test_reference_file_reserializes_byte_for_byte() -> None:
    data = REFERENCE.read_bytes()
    bundled = deserialize_from_flatbuffer_to_bundled_program(data)
    assert serialize_from_bundled_program_to_flatbuffer(bundled) == data


def test_reference_program_cannot_run_clear_error() -> None:
    bundled = BundledProgram.load(REFERENCE)
    with pytest.raises(BundledProgramError, match="not a delegate-lens program"):
        _ = bundled.program


# --------------------------------------------------------------------------- our files


def test_round_trip_with_program_and_identifier(tmp_path: Path) -> None:
    program = add_program()
    bundled = BundledProgram(
        program,
        [
            MethodTestSuite(
                "forward", [add_case(1), add_case(2), MethodTestCase(add_case().inputs)]
            ),
            MethodTestSuite("scale", [MethodTestCase([np.ones(4, np.float32), 3])]),
        ],
    )
    path = bundled.save(tmp_path / "p.bpte")
    data = path.read_bytes()
    assert data[4:8] == FILE_IDENTIFIER
    (root,) = struct.unpack_from("<I", data)
    back = BundledProgram.load(path)
    assert back.program == program
    assert back.method_test_suites == bundled.method_test_suites
    assert back.method_test_suite("forward").test_cases[2].expected_outputs == ()
    assert back.test_case("scale", 0).inputs[1] == 3
    assert root < len(data)


def test_suites_are_sorted_by_method_name() -> None:
    suites = [
        MethodTestSuite("scale", [MethodTestCase([np.ones(4, np.float32), 1])]),
        MethodTestSuite("forward", [add_case()]),
    ]
    assert BundledProgram(add_program(), suites).method_names == ["forward", "scale"]


def test_torch_tensors_become_numpy_without_torch_in_the_package() -> None:
    code = (
        "import sys, delegate_lens.bundled_program as b, delegate_lens.runtime._bundled\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


values = st.one_of(
    hnp.arrays(
        st.sampled_from(sorted(SCALAR_TYPES)).map(np.dtype),
        hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
    ),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
)
cases = st.builds(
    MethodTestCase,
    st.lists(values, max_size=4),
    st.one_of(st.none(), st.lists(values, max_size=3)),
)
suites = st.dictionaries(
    st.text(min_size=1, max_size=12), st.lists(cases, max_size=3), max_size=3
).map(lambda d: [MethodTestSuite(name, c) for name, c in d.items()])


@settings(max_examples=60, deadline=None)
@given(suites, st.binary(max_size=200), st.integers(0, 2**32 - 1))
def test_round_trip_property(suites: list[MethodTestSuite], program: bytes, version: int) -> None:
    program = b"XX" + program  # never our magic: kept as bytes, not validated
    bundled = BundledProgram(program, suites, version=version)
    data = serialize_from_bundled_program_to_flatbuffer(bundled)
    back = deserialize_from_flatbuffer_to_bundled_program(data)
    assert back.program_buffer == program
    assert back.version == version
    assert back.method_test_suites == bundled.method_test_suites
    assert serialize_from_bundled_program_to_flatbuffer(back) == data


# --------------------------------------------------------------------------- bad bytes


def test_every_truncation_is_our_error() -> None:
    data = REFERENCE.read_bytes()
    for n in range(len(data)):
        with pytest.raises(BundledProgramError, match="bundled program"):
            deserialize_from_flatbuffer_to_bundled_program(data[:n])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_bytes_parse_or_raise_our_error(data: st.DataObject) -> None:
    raw = bytearray(REFERENCE.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    with contextlib.suppress(BundledProgramError):  # parsing is fine too
        deserialize_from_flatbuffer_to_bundled_program(bytes(raw))


def test_wrong_identifier_names_the_field() -> None:
    data = bytearray(REFERENCE.read_bytes())
    data[4:8] = b"ET12"
    with pytest.raises(BundledProgramError, match=r"file_identifier: expected 'BP08'"):
        deserialize_from_flatbuffer_to_bundled_program(bytes(data))


def test_tensor_size_that_disagrees_with_data_names_the_field() -> None:
    data = REFERENCE.read_bytes()
    sizes = struct.pack("<3I", 2, 2, 3)  # the [2, 3] sizes vector of the first input
    at = data.rfind(sizes)  # the builder writes back to front: the first value is last
    assert at > 0
    bad = data[:at] + struct.pack("<3I", 2, 2, 4) + data[at + len(sizes) :]
    with pytest.raises(
        BundledProgramError,
        match=r"method_test_suites\[0\]\.test_cases\[0\]\.inputs\[0\]\.val\.data: "
        r"float32\[2, 4\] needs 32 bytes",
    ):
        deserialize_from_flatbuffer_to_bundled_program(bad)


def test_unsupported_scalar_type_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(fb.SCALAR_TYPES, "float32", 15)
    data = serialize_from_bundled_program_to_flatbuffer(
        BundledProgram(b"x", [MethodTestSuite("f", [MethodTestCase([np.zeros(2, np.float32)])])])
    )
    with pytest.raises(BundledProgramError, match=r"inputs\[0\]\.val\.scalar_type: .*BFLOAT16"):
        deserialize_from_flatbuffer_to_bundled_program(data)


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.bpte"
    path.write_bytes(REFERENCE.read_bytes()[:40])
    with pytest.raises(BundledProgramError, match=r"bad\.bpte: bundled program: "):
        BundledProgram.load(path)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("suites", "message"),
    [
        (
            [MethodTestSuite("nope", [])],
            r"method 'nope', which the program lacks \(methods: forward, scale\)",
        ),
        ([MethodTestSuite("forward", []), MethodTestSuite("forward", [])], "two test suites"),
        (
            [MethodTestSuite("forward", [MethodTestCase([np.zeros((2, 3), np.float32)])])],
            r"test case 0: 1 inputs, method 'forward' has 2",
        ),
        (
            [
                MethodTestSuite(
                    "forward", [MethodTestCase([np.zeros((2, 3)), np.zeros(3, np.int64)])]
                )
            ],
            r"inputs\[0\]: dtype float64, the program expects float32",
        ),
        (
            [
                MethodTestSuite(
                    "forward",
                    [
                        add_case(),
                        MethodTestCase([np.zeros((3, 2), np.float32), np.zeros(3, np.int64)]),
                    ],
                )
            ],
            r"test case 1\.inputs\[0\]: shape \[3, 2\], the program expects \[2, 3\]",
        ),
        (
            [
                MethodTestSuite(
                    "forward", [MethodTestCase(add_case().inputs, [np.zeros((2, 3), np.float32)])]
                )
            ],
            r"1 expected_outputs, method 'forward' has 2",
        ),
        (
            [MethodTestSuite("scale", [MethodTestCase([np.ones(4, np.float32), 2.5])])],
            r"inputs\[1\]: expected int, got float",
        ),
        (
            [MethodTestSuite("scale", [MethodTestCase([3, 2])])],
            r"inputs\[0\]: expected a tensor float32\[4\], got int",
        ),
    ],
)
def test_test_cases_must_fit_the_program(suites: list[MethodTestSuite], message: str) -> None:
    with pytest.raises(BundledProgramError, match=message):
        BundledProgram(add_program(), suites)
    # the same check when reading a file whose cases do not fit its program
    unchecked = BundledProgram(b"XX", suites)
    unchecked.program_buffer = serialize(add_program())
    data = serialize_from_bundled_program_to_flatbuffer(unchecked)
    with pytest.raises(BundledProgramError, match=message):
        deserialize_from_flatbuffer_to_bundled_program(data)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MethodTestCase(["text"]), r"inputs\[0\]: str is not a supported value"),
        (lambda: MethodTestCase([np.zeros(2, np.complex64)]), "dtype complex64 are not supported"),
        (lambda: MethodTestSuite("", []), "method_name must be a non-empty str"),
        (lambda: MethodTestSuite("f", [1]), r"test_cases\[0\] is a int"),
        (lambda: BundledProgram(3, []), "program_manager must be"),
        (lambda: BundledProgram(b"x", [3]), r"method_test_suites\[0\] is a int"),
        (
            lambda: BundledProgram(b"x", [MethodTestSuite("f", [])]).test_case("f", 0),
            "no test_index 0",
        ),
        (lambda: BundledProgram(b"x", []).test_case("g", 0), "no test suite for method 'g'"),
    ],
)
def test_bad_arguments_are_our_error(make: Any, message: str) -> None:
    with pytest.raises(BundledProgramError, match=message):
        make()


def test_nested_outputs_are_flattened() -> None:
    a, b = np.zeros(2, np.float32), np.ones(3, np.int64)
    case = MethodTestCase([a], ((a,), [b]))
    assert len(case.expected_outputs) == 2
    assert case.expected_outputs[1].dtype == np.int64


# --------------------------------------------------------------------------- comparing


def test_compare_outputs_errors_and_tolerances() -> None:
    expected = [np.array([1.0, 2.0, 0.0], np.float32), np.array([3, 4], np.int64)]
    same = compare_outputs([e.copy() for e in expected], expected)
    assert same.passed and same.max_abs_error == 0 and same.max_rel_error == 0
    near = compare_outputs([expected[0] + np.float32(1e-6), expected[1]], expected)
    assert not near.passed  # 1e-6 > 1e-8 + 1e-5 * 0 on the zero element
    assert near.max_abs_error == pytest.approx(1e-6, rel=1e-3)
    assert near.max_rel_error == math.inf
    assert compare_outputs([expected[0] + np.float32(1e-6), expected[1]], expected, atol=1e-5)
    wrong_type = compare_outputs([expected[0], expected[1].astype(np.int32)], expected)
    assert not wrong_type.passed and "output 1: int32[2], expected int64[2]" in wrong_type.message
    nan = np.array([np.nan], np.float32)
    assert compare_outputs([nan], [nan]).passed
    inf = np.array([np.inf, -np.inf], np.float32)
    assert compare_outputs([inf], [inf]).passed
    assert not compare_outputs([inf[::-1].copy()], [inf]).passed
    assert not compare_outputs([np.zeros(1, np.float32)], [nan]).passed
    assert "2 outputs, 1 expected" in compare_outputs(expected, expected[:1]).message
    ran_only = compare_outputs(expected, [])
    assert ran_only.passed and "no expected outputs" in ran_only.line()
