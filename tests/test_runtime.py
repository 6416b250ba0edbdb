"""The simulated runtime: outputs equal eager PyTorch (hand-made and exported programs),
bad programs are named. The ETDump it writes is tested in ``test_runtime_event_layout.py``."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import delegate_lens as dl  # noqa: E402
from delegate_lens.errors import ProgramFormatError, RuntimeBackendError  # noqa: E402
from delegate_lens.etdump import loads  # noqa: E402
from delegate_lens.etdump._jsonview import to_json  # noqa: E402
from delegate_lens.program import (  # noqa: E402
    DelegateCallInstruction,
    DelegateData,
    IntValue,
    ListValue,
    MethodData,
    NoneValue,
    OperatorInstruction,
    ProgramData,
    TensorValue,
    serialize,
)
from delegate_lens.runtime import ETDumpGen, Program  # noqa: E402

# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


def counter_clock() -> Any:
    it = itertools.count(1000, 10)
    return lambda: next(it)


def t(x: Any) -> TensorValue:
    return TensorValue("float32", tuple(x.shape), x.detach().numpy().tobytes())


# --------------------------------------------------------------------------- hand-made programs


def test_hand_made_program_lists_kwargs_multi_outputs() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 6)
    w, b = torch.randn(6), torch.randn(6)
    values = [
        TensorValue("float32", (2, 6)),  # 0 input
        t(w),  # 1
        t(b),  # 2
        ListValue([4]),  # 3 normalized_shape
        IntValue(6),  # 4
        TensorValue("float32", (2, 6)),  # 5 layer norm out
        TensorValue("float32", (2, 3)),  # 6 split a
        TensorValue("float32", (2, 3)),  # 7 split b
        ListValue([6, 7]),  # 8 split outputs
        IntValue(3),  # 9
        ListValue([9, 9]),  # 10 split sizes
        IntValue(1),  # 11 dim
        ListValue([7, 6, 0]),  # 12 cat inputs (runtime tensors)
        TensorValue("float32", (2, 12)),  # 13 cat out
        NoneValue(),  # 14
    ]
    insts = [
        OperatorInstruction(
            "aten.native_layer_norm.default", [0, 3, 1, 2], [5, -1, -1], {"eps": 15}
        ),
        OperatorInstruction("aten.split_with_sizes.default", [5, 10, 11], [8]),
        OperatorInstruction("aten.cat.default", [12], [13], {"dim": 11}),
    ]
    from delegate_lens.program import FloatValue

    values.append(FloatValue(1e-5))  # 15
    program = Program.load(
        serialize(ProgramData([MethodData("forward", [0], [13, 5], values, insts)]))
    )
    out, ln = program.load_method().execute([x])
    ref_ln = torch.nn.functional.layer_norm(x, (6,), w, b, 1e-5)
    a, c = ref_ln.split([3, 3], dim=1)
    torch.testing.assert_close(ln, ref_ln, rtol=0, atol=0)
    torch.testing.assert_close(out, torch.cat([c[:, :3], a, x], dim=1), rtol=0, atol=0)


def test_numpy_inputs_and_input_count() -> None:
    values = [TensorValue("float32", (3,)), TensorValue("float32", (3,))]
    program = Program.load(
        serialize(
            ProgramData(
                [
                    MethodData(
                        "f", [0], [1], values, [OperatorInstruction("aten.relu.default", [0], [1])]
                    )
                ]
            )
        )
    )
    method = program.load_method("f")
    import numpy as np

    (out,) = method.execute([np.array([-1.0, 0.0, 2.0], np.float32)])
    assert out.tolist() == [0.0, 0.0, 2.0]
    with pytest.raises(RuntimeBackendError, match="takes 1 inputs, got 2"):
        method.execute([out, out])
    # a bare tensor is not a list of inputs (its length used to be taken as the count)
    for bare in (torch.ones(3), np.ones(3, np.float32)):
        with pytest.raises(RuntimeBackendError, match=r"list or tuple of inputs.*\[x\]"):
            method.execute(bare)  # type: ignore[arg-type]
    with pytest.raises(ProgramFormatError, match="no method 'forward'"):
        program.load_method("forward")


def test_unknown_operator_and_kernel_failure_are_named() -> None:
    values = [TensorValue("float32", (3,)), TensorValue("float32", (3,))]
    bad = ProgramData(
        [
            MethodData(
                "forward", [0], [1], values, [OperatorInstruction("aten.nope.default", [0], [1])]
            )
        ]
    )
    with pytest.raises(RuntimeBackendError, match=r"instruction 0: operator 'aten.nope.default'"):
        Program.load(serialize(bad)).load_method()
    fails = ProgramData(
        [
            MethodData(
                "forward", [0], [1], values, [OperatorInstruction("aten.mm.default", [0, 0], [1])]
            )
        ]
    )
    with pytest.raises(RuntimeBackendError, match=r"instruction 0 \(aten.mm.default\) failed"):
        Program.load(serialize(fails)).load_method().execute([torch.ones(3)])


def test_unknown_backend_is_named_at_load() -> None:
    values = [TensorValue("float32", (3,)), TensorValue("float32", (3,))]
    data = ProgramData(
        [MethodData("forward", [0], [1], values, [DelegateCallInstruction(0, [0], [1])])],
        [DelegateData("NoSuchBackend", b"")],
    )
    with pytest.raises(RuntimeBackendError, match="'NoSuchBackend'"):
        Program.load(serialize(data)).load_method()


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("device", r"value 2: unknown device 'bogus'"),
        ("memory_format", r"value 2: unknown memory format 'nn'"),
        ("layout", r"value 2: unknown layout 'float32'"),
    ],
)
def test_bad_enum_values_are_named(value: str, match: str) -> None:
    from delegate_lens.program import DeviceValue, LayoutValue, MemoryFormatValue

    extra = {
        "device": DeviceValue("bogus"),  # torch.device raised its own RuntimeError
        "memory_format": MemoryFormatValue("nn"),  # torch.nn was taken as a memory format
        "layout": LayoutValue("float32"),  # torch.float32 was taken as a layout
    }[value]
    values = [TensorValue("float32", (3,)), TensorValue("float32", (3,)), extra]
    inst = OperatorInstruction("aten.relu.default", [0], [1])
    data = ProgramData([MethodData("forward", [0], [1], values, [inst])])
    with pytest.raises(RuntimeBackendError, match=rf"method 'forward' {match}"):
        Program.load(serialize(data)).load_method()


def test_an_output_nothing_produces_is_a_format_error() -> None:
    values = [TensorValue("float32", (3,)), TensorValue("float32", (3,))]
    data = ProgramData([MethodData("forward", [0], [1], values, [])])  # returned None
    with pytest.raises(ProgramFormatError, match="output value 1 is never produced"):
        Program.load(serialize(data)).load_method()
    # an input or a constant returned as is is fine
    const = TensorValue("float32", (1,), b"\x00\x00\x80\x3f")
    data = ProgramData([MethodData("forward", [0], [0, 1], [values[0], const], [])])
    x = torch.ones(3)
    outputs = Program.load(serialize(data)).load_method().execute([x])
    assert outputs[0] is x and outputs[1].tolist() == [1.0]


def test_bad_program_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "p.dlp"
    path.write_bytes(b"garbage!" * 8)
    with pytest.raises(ProgramFormatError, match=r"p\.dlp.*bad magic"):
        Program.load(path)


# --------------------------------------------------------------------------- exported models


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 8)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.l2(torch.relu(self.l1(x)))) + 1


def _eager_vs_runtime(module: Any, inputs: tuple[Any, ...], partitioner: Any = None) -> Any:
    module.eval()
    ep = torch.export.export(module, inputs)
    if partitioner is None:
        edge = dl.to_edge(ep)
    else:
        edge = dl.to_edge_transform_and_lower(ep, partitioner=[partitioner])
    manager = edge.to_program()
    method = Program.load(manager.buffer).load_method("forward")
    with torch.no_grad():
        expected = module(*inputs)
    outputs = method.execute(list(inputs))
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    return manager


def test_portable_mlp_equals_eager() -> None:
    torch.manual_seed(0)
    _eager_vs_runtime(MLP(), (torch.randn(4, 16),))


class DtypeCast(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return (x.to(torch.float64) * 2).sum(dim=1)


def test_operators_without_outputs_run_for_their_checks() -> None:
    # .to(dtype) exports an aten._assert_tensor_metadata node that returns nothing
    manager = _eager_vs_runtime(DtypeCast(), (torch.randn(3, 4),))
    ops = [i.op for i in manager.program.methods[0].instructions]
    assert "aten._assert_tensor_metadata.default" in ops
    tracer = ETDumpGen(debug_buffer_size=1 << 16, clock=counter_clock())
    method = Program.load(manager.buffer).load_method("forward", event_tracer=tracer)
    x = torch.randn(3, 4)
    torch.testing.assert_close(method.execute([x])[0], DtypeCast()(x))
    names = [
        e["profile_event"]["name"]
        for r in to_json(loads(tracer.get_etdump_data()))["run_data"]
        for e in r["events"]
        if "profile_event" in e
    ]
    assert "native_call__assert_tensor_metadata.out" in names


def test_portable_tiny_gpt_equals_eager() -> None:
    from delegate_lens.backends_demo._models import make_model

    module, inputs = make_model("gpt")
    _eager_vs_runtime(module, inputs)
