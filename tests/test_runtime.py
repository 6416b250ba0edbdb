"""The simulated runtime: outputs equal eager PyTorch; the ETDump layout is the reference's."""

from __future__ import annotations

import itertools
import json
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


# --------------------------------------------------------------------------- event layout


def _tokens(events: list[dict[str, Any]], skip: frozenset[str] = frozenset()) -> list[str]:
    """One token per event, ``skip`` left out, runs of delegate/debug events collapsed."""
    out: list[str] = []
    for e in events:
        if "profile_event" in e:
            name = e["profile_event"].get("name")
            if name is None:
                tok = "delegate"
            elif name.startswith("native_call_"):
                tok = "native_call"
            else:
                tok = name
        else:
            d = e["debug_event"]
            if d["debug_entry"].get("output"):
                tok = "output"
            elif "delegate_debug_id_str" in d or "delegate_debug_id_int" in d:
                tok = "delegate_debug"
            else:
                tok = "debug"
        if tok in skip:
            continue
        if not (out and tok in ("delegate", "debug", "output") and out[-1] == tok):
            out.append(tok)
    return out


def _ids(events: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """(token, chain_index, instruction_id) of every profile event with a name."""
    out = []
    for e in events:
        p = e.get("profile_event")
        if p and "name" in p:
            tok = "native_call" if p["name"].startswith("native_call_") else p["name"]
            out.append((tok, p.get("chain_index", 0), p.get("instruction_id", -1)))
    return out


def _vector_runs(vectors_dir: Path, name: str) -> list[tuple[str, list[dict[str, Any]]]]:
    data = json.loads((vectors_dir / name / "etdump.json").read_text())
    return [(r["name"], r["events"]) for r in data["run_data"]]


def _demo_blob_program(first: str) -> ProgramData:
    """A program shaped as a vector: one portable op and one demo-backend delegate call."""
    from delegate_lens.backends_demo._blob import DemoBlob, DemoOp, to_bytes

    ops = [DemoOp("add", "Add (ND) #1", [0, 1], 2, {}, 1, 1)]
    blob = DemoBlob(3, [0, 1], [2], {}, ops, "Fully Connected (NC, F32) GEMM #1")
    values = [TensorValue("float32", (2, 8)) for _ in range(3)]
    if first == "operator":  # mlp_xnnpack: a copy, then the delegate
        insts: list[Any] = [
            OperatorInstruction("aten.clone.default", [0], [1]),
            DelegateCallInstruction(0, [0, 1], [2]),
        ]
    else:  # conv_xnnpack: the delegate, then tan
        insts = [
            DelegateCallInstruction(0, [0, 0], [1]),
            OperatorInstruction("aten.tan.default", [1], [2]),
        ]
    method = MethodData("forward", [0], [2], values, insts)
    return ProgramData([method], [DelegateData("DemoBackend", to_bytes(blob))])


@pytest.mark.parametrize(
    ("vector", "first", "debug"),
    [("mlp_xnnpack", "operator", True), ("conv_xnnpack", "delegate", False)],
)
def test_event_layout_matches_reference(
    vectors_dir: Path, vector: str, first: str, debug: bool
) -> None:
    reference = _vector_runs(vectors_dir, vector)
    gen = ETDumpGen(debug_buffer_size=(1 << 16) if debug else 0, clock=counter_clock())
    method = Program.load(serialize(_demo_blob_program(first))).load_method(event_tracer=gen)
    runs = 3
    for _ in range(runs):
        method.execute([torch.randn(2, 8)])
    ours = [(r["name"], r["events"]) for r in to_json(loads(gen.get_etdump_data()))["run_data"]]
    assert [n for n, _ in ours] == ["Default"] + ["Execute"] * runs
    assert [n for n, _ in reference[:2]] == ["Default", "Execute"]
    # Default block: same events, same framework conventions (chain -1, instruction 0)
    assert _ids(ours[0][1]) == _ids(reference[0][1])
    # the demo backend logs its intermediate outputs too; XNNPACK does not
    ref_tokens = _tokens(reference[1][1])
    ref_ids = _ids(reference[1][1])
    for _, events in ours[1:]:
        assert _tokens(events, frozenset({"delegate_debug"})) == ref_tokens
        assert _ids(events) == ref_ids

    # every kind of event carries the same fields as the reference's (values aside)
    def shapes(events: list[dict[str, Any]]) -> set[tuple[str, str, frozenset[str]]]:
        out = set()
        for e in events:
            (member, body), *_ = e.items()
            entry = body.get("debug_entry", {})
            keys = frozenset(body) | frozenset(f"entry.{k}" for k in entry)
            keys |= frozenset(f"tensor.{k}" for k in entry.get("tensor", {}))
            out.add((member, _tokens([e])[0], keys - {"tensor.offset"}))
        return out

    ours_shapes = {s for s in shapes(ours[1][1]) if s[1] != "delegate_debug"}
    assert ours_shapes == shapes(reference[1][1])


def test_operator_events_nest_and_debug_offsets(vectors_dir: Path) -> None:
    torch.manual_seed(0)
    module = MLP().eval()
    x = torch.randn(2, 16)
    manager = dl.to_edge(torch.export.export(module, (x,))).to_program()
    gen = ETDumpGen(debug_buffer_size=1 << 16)
    method = Program.load(manager.buffer).load_method(event_tracer=gen)
    (out,) = method.execute([x])
    runs = loads(gen.get_etdump_data()).run_data
    execute = to_json(loads(gen.get_etdump_data()))["run_data"][1]["events"]
    n_inst = len(manager.program.methods[0].instructions)
    profile = [e["profile_event"] for e in execute if "profile_event" in e]
    assert len(profile) == 2 * n_inst + 1
    for i in range(n_inst):
        kernel, op = profile[2 * i], profile[2 * i + 1]
        assert kernel["name"].startswith("native_call_") and op["name"] == "OPERATOR_CALL"
        assert kernel.get("instruction_id") == op.get("instruction_id") == i
        assert op["start_time"] <= kernel["start_time"] <= kernel["end_time"] <= op["end_time"]
    assert profile[-1]["name"] == "Method::execute"
    assert profile[-1]["start_time"] <= profile[0]["start_time"]
    # one debug event per instruction output, then the final output, offsets aligned to 64
    debug = [e["debug_event"] for e in execute if "debug_event" in e]
    assert len(debug) == n_inst + 1
    offsets = [d["debug_entry"]["tensor"].get("offset", 0) for d in debug]
    assert all(o % 64 == 0 for o in offsets) and offsets == sorted(offsets)
    final = debug[-1]
    assert final["chain_index"] == 2**64 - 1 and final["instruction_id"] == 0
    assert final["debug_entry"]["output"] == {"bool_val": True}
    import numpy as np

    stored = np.frombuffer(gen.debug_buffer, np.float32, count=out.numel(), offset=offsets[-1])
    assert np.array_equal(stored, out.numpy().reshape(-1))
    assert runs[1].name == "Execute"


def test_a_clock_that_does_not_return_int_ticks_is_a_clear_error() -> None:
    """A float clock (e.g. time.perf_counter) used to truncate every time to whole units."""
    import time

    from delegate_lens.errors import EventTracerError

    program = Program.load(serialize(_demo_blob_program("operator")))
    with pytest.raises(EventTracerError, match=r"clock returned float .*int ticks"):
        program.load_method(event_tracer=ETDumpGen(clock=time.perf_counter))
    gen = ETDumpGen(clock=counter_clock())
    method = program.load_method(event_tracer=gen)
    gen.clock = lambda: 4.5  # type: ignore[assignment,return-value]
    with pytest.raises(EventTracerError, match=r"clock returned float 4\.5"):
        method.execute([torch.randn(2, 8)])
    with pytest.raises(EventTracerError, match="clock returned int -5"):  # broke the build
        program.load_method(event_tracer=ETDumpGen(clock=lambda: -5))
    numpy_ticks = itertools.count()
    import numpy as np

    gen = ETDumpGen(clock=lambda: np.int64(next(numpy_ticks)))
    program.load_method(event_tracer=gen).execute([torch.randn(2, 8)])
    assert len(loads(gen.get_etdump_data()).run_data) == 2


def test_values_without_an_etdump_scalar_type_are_skipped_not_fatal() -> None:
    """complex has no ScalarType code in the schema (9 was written, which the reference's
    enum lacks); float8 has one (it raised); an int beyond int64 broke the whole build."""
    import numpy as np

    from delegate_lens.etdump import ValueType

    gen = ETDumpGen(debug_buffer_size=4096)
    gen.create_event_block("Execute")
    gen.log_evalue(torch.ones(2, dtype=torch.complex64))
    gen.log_evalue(np.ones(2, dtype=np.complex128))
    gen.log_evalue([torch.ones(2), torch.ones(2, dtype=torch.complex64)])
    gen.log_evalue(1 << 70)
    gen.log_evalue(torch.ones(2, dtype=torch.float8_e4m3fn))
    gen.log_evalue(torch.ones(2, dtype=torch.float8_e5m2))
    gen.log_evalue(-(1 << 63))
    events = to_json(loads(gen.get_etdump_data()))["run_data"][0]["events"]
    entries = [e["debug_event"]["debug_entry"] for e in events]
    assert [e["tensor"]["scalar_type"] for e in entries[:2]] == ["FLOAT8E4M3FN", "FLOAT8E5M2"]
    assert entries[2]["val"] == ValueType.Int.name and gen.dropped_debug_values == 0
    assert len(entries) == 3
    assert (
        gen.debug_buffer[64:66]
        == torch.ones(2, dtype=torch.float8_e5m2).view(torch.uint8).numpy().tobytes()
    )


def test_operator_outputs_are_logged_as_the_reference_kernels_do() -> None:
    """Every out argument once, in order, unused ones too (native_layer_norm's mean and
    rstd); a Tensor[] return (split) is one TensorList debug event, not one per tensor."""

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.LayerNorm(6)

        def forward(self, x: Any) -> Any:
            a, b = torch.split(self.norm(x), [2, 4], dim=1)
            return a.sum() + b.sum()

    x = torch.randn(3, 6)
    manager = dl.to_edge(torch.export.export(M(), (x,))).to_program()
    ops = [i.op for i in manager.program.methods[0].instructions]
    norm, split = (
        ops.index("aten.native_layer_norm.default"),
        ops.index("aten.split_with_sizes.default"),
    )
    gen = ETDumpGen(debug_buffer_size=1 << 16)
    Program.load(manager.buffer).load_method(event_tracer=gen).execute([x])
    debug: dict[int, list[Any]] = {}
    for event in to_json(loads(gen.get_etdump_data()))["run_data"][1]["events"]:
        if "debug_event" in event and "output" not in event["debug_event"]["debug_entry"]:
            body = event["debug_event"]
            debug.setdefault(body.get("instruction_id", 0), []).append(body["debug_entry"])
    assert [e["val"] for e in debug[norm]] == ["Tensor"] * 3
    assert [e["tensor"]["sizes"] for e in debug[norm]] == [[3, 6], [3, 1], [3, 1]]
    [entry] = debug[split]
    assert entry["val"] == "TensorList"
    assert [t["sizes"] for t in entry["tensor_list"]["tensors"]] == [[3, 2], [3, 4]]
    assert all(len(debug[i]) == 1 for i in debug if i not in (norm, split))


def test_untraced_and_traced_give_same_outputs() -> None:
    torch.manual_seed(1)
    module = MLP().eval()
    x = torch.randn(3, 16)
    buffer = dl.to_edge(torch.export.export(module, (x,))).to_program().buffer
    program = Program.load(buffer)
    plain = program.load_method()
    traced = program.load_method(event_tracer=ETDumpGen(debug_buffer_size=1 << 16))
    assert torch.equal(plain.execute([x])[0], traced.execute([x])[0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(2, 3),
        lambda: torch.randn(3, 2).t(),  # not contiguous
        lambda: torch.tensor(1.5),  # 0-d
        lambda: torch.randn(4).to(torch.bfloat16),  # no numpy dtype
        lambda: torch.tensor([True, False, True]),
        lambda: torch.randn(3, requires_grad=True) * 2,
        lambda: torch.arange(6).reshape(2, 3)[:, 1:],
    ],
)
def test_debug_buffer_stores_tensor_bytes_in_c_order(make: Any) -> None:
    import numpy as np

    from delegate_lens.etdump._objects import ScalarType

    tensor = make()
    gen = ETDumpGen(debug_buffer_size=1024)
    gen.log_evalue(tensor)
    [event] = to_json(loads(gen.get_etdump_data()))["run_data"][0]["events"]
    stored = event["debug_event"]["debug_entry"]["tensor"]
    assert stored["sizes"] == list(tensor.shape)
    assert stored["strides"] == list(tensor.contiguous().stride())
    name = str(tensor.dtype).removeprefix("torch.")
    names = {"float32": "FLOAT", "bfloat16": "BFLOAT16", "bool": "BOOL", "int64": "LONG"}
    assert stored["scalar_type"] == names[name] and ScalarType[names[name]] >= 0
    expected = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    assert gen.debug_buffer == expected
    assert np.frombuffer(gen.debug_buffer, np.uint8).size == tensor.numel() * tensor.element_size()
