"""The serialized program (contract C): round trips and bad bytes."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.errors import ProgramFormatError
from delegate_lens.program import (
    DTYPE_ITEMSIZE,
    BoolValue,
    CompileSpecData,
    DelegateCallInstruction,
    DelegateData,
    DeviceValue,
    DTypeValue,
    FloatValue,
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
    deserialize,
    serialize,
)


def small_program() -> ProgramData:
    weight = TensorValue("float32", (2, 3), bytes(range(24)))
    values = [
        TensorValue("float32", (1, 3)),  # 0 input
        weight,  # 1
        TensorValue("float32", (1, 2)),  # 2 linear out
        TensorValue("float32", (1, 2)),  # 3 delegate out
        IntValue(-5),  # 4
        FloatValue(float("inf")),  # 5
        BoolValue(True),  # 6
        StringValue("tanh"),  # 7
        NoneValue(),  # 8
        ListValue([4, 4]),  # 9
        DTypeValue("int64"),  # 10
        MemoryFormatValue("contiguous_format"),  # 11
        LayoutValue("strided"),  # 12
        DeviceValue("cpu"),  # 13
    ]
    instructions = [
        OperatorInstruction("aten.linear.default", [0, 1, 8], [2], {"x": 5}, [1, 2]),
        DelegateCallInstruction(0, [2], [3], [3, 4, 5]),
    ]
    method = MethodData("forward", [0], [3], values, instructions)
    delegate = DelegateData("DemoBackend", b"\x01blob", [("key", b"v"), CompileSpecData("k2", b"")])
    return ProgramData([method], [delegate])


def test_round_trip_small() -> None:
    program = small_program()
    data = serialize(program)
    assert data[:4] == b"DLPG"
    again = deserialize(data)
    assert again == program
    assert serialize(again) == data
    assert again.method("forward").values[1].data == bytes(range(24))  # type: ignore[union-attr]


def test_constants_are_aligned() -> None:
    data = serialize(small_program())
    data_offset = struct.unpack_from("<Q", data, 16)[0]
    assert data_offset % 64 == 0
    # the first constant (delegate blob) starts on the boundary
    assert data[data_offset : data_offset + 5] == b"\x01blob"


def test_unknown_method_names_known() -> None:
    with pytest.raises(ProgramFormatError, match="forward"):
        small_program().method("nope")


def test_compile_spec_objects_with_key_value_are_accepted() -> None:
    class Spec:
        key = "a"
        value = b"b"

    assert DelegateData("X", b"", [Spec()]).compile_specs == (CompileSpecData("a", b"b"),)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d[:10], "truncated"),
        (lambda d: b"XXXX" + d[4:], "bad magic"),
        (lambda d: d[:4] + struct.pack("<H", 99) + d[6:], "version 99"),
        (lambda d: d[:8] + struct.pack("<I", 10**8) + d[12:], "header length"),
        (lambda d: d[:-1], "data section"),
    ],
)
def test_bad_fixed_header(mutate, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProgramFormatError, match=match):
        deserialize(mutate(serialize(small_program())))


def test_corrupt_header_and_data_detected() -> None:
    data = bytearray(serialize(small_program()))
    data[40] ^= 0xFF
    with pytest.raises(ProgramFormatError, match="header checksum"):
        deserialize(bytes(data))
    data = bytearray(serialize(small_program()))
    data[-1] ^= 0xFF
    with pytest.raises(ProgramFormatError, match="data section checksum"):
        deserialize(bytes(data))


def _with_header(header: bytes, payload: bytes = b"") -> bytes:
    off = 32 + len(header)
    off += -off % 64
    fixed = struct.pack(
        "<4sHHIIQII",
        b"DLPG",
        1,
        0,
        len(header),
        zlib.crc32(header),
        off,
        len(payload),
        zlib.crc32(payload),
    )
    return fixed + header + b"\0" * (off - 32 - len(header)) + payload


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "expected an object"),
        (b'{"delegates": []}', r"header\.methods: missing"),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[0],"outputs":[],'
            b'"values":[],"instructions":[]}]}',
            r"methods\[0\] \(f\)\.inputs\[0\]: value id 0 out of range",
        ),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
            b'"values":[{"kind":"blob"}],"instructions":[]}]}',
            r"values\[0\]\.kind: unknown value kind",
        ),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
            b'"values":[{"kind":"tensor","dtype":"float32","shape":[2],'
            b'"data":{"offset":0,"length":8}}],"instructions":[]}]}',
            r"values\[0\]\.data: data range \[0, 8\) outside",
        ),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
            b'"values":[{"kind":"tensor","dtype":"float99","shape":[2]}],"instructions":[]}]}',
            r"values\[0\]: unknown dtype 'float99'",
        ),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
            b'"values":[],"instructions":[{"kind":"delegate","delegate_index":0,'
            b'"args":[],"outputs":[],"debug_handles":[]}]}]}',
            r"delegate_index: delegate 0 out of range",
        ),
        (
            b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
            b'"values":[{"kind":"int","value":true}],"instructions":[]}]}',
            r"values\[0\]\.value: expected an integer, got a bool",
        ),
    ],
)
def test_bad_header_names_where(header: bytes, match: str) -> None:
    with pytest.raises(ProgramFormatError, match=match):
        deserialize(_with_header(header))


def test_tensor_data_size_checked() -> None:
    header = (
        b'{"delegates":[],"methods":[{"name":"f","inputs":[],"outputs":[],'
        b'"values":[{"kind":"tensor","dtype":"float32","shape":[3],'
        b'"data":{"offset":0,"length":8}}],"instructions":[]}]}'
    )
    with pytest.raises(ProgramFormatError, match="needs 12 bytes, got 8"):
        deserialize(_with_header(header, b"\0" * 8))


# --------------------------------------------------------------------------- properties

_scalars = st.one_of(
    st.builds(IntValue, st.integers(-(2**63), 2**63 - 1)),
    st.builds(FloatValue, st.floats(allow_nan=False)),
    st.builds(BoolValue, st.booleans()),
    st.builds(StringValue, st.text(max_size=8)),
    st.just(NoneValue()),
    st.builds(DTypeValue, st.sampled_from(sorted(DTYPE_ITEMSIZE))),
    st.builds(MemoryFormatValue, st.sampled_from(["contiguous_format", "channels_last"])),
)


@st.composite
def _tensors(draw: st.DrawFn) -> TensorValue:
    dtype = draw(st.sampled_from(sorted(DTYPE_ITEMSIZE)))
    shape = draw(st.lists(st.integers(0, 4), max_size=3))
    constant = draw(st.booleans())
    t = TensorValue(dtype, shape)
    return TensorValue(
        dtype, shape, draw(st.binary(min_size=t.nbytes, max_size=t.nbytes)) if constant else None
    )


@st.composite
def _programs(draw: st.DrawFn) -> ProgramData:
    delegates = draw(
        st.lists(
            st.builds(
                DelegateData,
                st.text(min_size=1, max_size=6),
                st.binary(max_size=70),
                st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=5)), max_size=2),
            ),
            max_size=2,
        )
    )
    methods = []
    for name in draw(
        st.lists(st.text(min_size=1, max_size=5), unique=True, min_size=1, max_size=2)
    ):
        values = draw(st.lists(st.one_of(_scalars, _tensors()), min_size=1, max_size=8))
        n = len(values)
        ids = st.lists(st.integers(0, n - 1), max_size=4)
        values.append(ListValue(draw(ids)))
        n += 1
        ids = st.lists(st.integers(0, n - 1), max_size=4)
        ops = st.builds(
            OperatorInstruction,
            st.sampled_from(["aten.add.Tensor", "aten.linear.default"]),
            ids,
            ids,
            st.dictionaries(st.text(max_size=3), st.integers(0, n - 1), max_size=2),
            st.lists(st.integers(0, 100), max_size=3),
        )
        choices = [ops]
        if delegates:
            choices.append(
                st.builds(DelegateCallInstruction, st.integers(0, len(delegates) - 1), ids, ids)
            )
        insts = draw(st.lists(st.one_of(*choices), max_size=5))
        methods.append(MethodData(name, draw(ids), draw(ids), values, insts))
    return ProgramData(methods, delegates)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_round_trip_property(program: ProgramData) -> None:
    data = serialize(program)
    assert deserialize(data) == program
    assert deserialize(bytearray(data)) == program


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_corruption_never_crashes(data: st.DataObject) -> None:
    good = serialize(small_program())
    buf = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    try:
        result = deserialize(bytes(buf[:cut]))
    except ProgramFormatError:
        return
    assert isinstance(result, ProgramData)


def test_program_format_imports_no_torch() -> None:
    code = "import delegate_lens.program, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_program_package_has_one_face_and_private_modules() -> None:
    import delegate_lens.program as face
    from delegate_lens.program import _flatbuffer, _format, _model, _pte

    homes = (_model, _format, _pte, _flatbuffer)
    for name in face.__all__:
        home = next(m for m in homes if hasattr(m, name))
        assert getattr(face, name) is getattr(home, name)
    assert not any(hasattr(m, "__all__") for m in homes)
