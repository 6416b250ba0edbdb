"""The simulated runtime's ETDump: its event layout is the reference's (blocks, operator
events nested in their OPERATOR_CALL, debug offsets), and each value is logged as the
reference's kernels log it (every out argument, tensors in C order; a value without an
ETDump scalar type is skipped). Running programs is tested in ``test_runtime.py``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_runtime import MLP, counter_clock  # noqa: E402

import delegate_lens as dl  # noqa: E402
from delegate_lens.etdump import loads  # noqa: E402
from delegate_lens.etdump._jsonview import to_json  # noqa: E402
from delegate_lens.program import (  # noqa: E402
    DelegateCallInstruction,
    DelegateData,
    MethodData,
    OperatorInstruction,
    ProgramData,
    TensorValue,
    serialize,
)
from delegate_lens.runtime import ETDumpGen, Program  # noqa: E402

# torch; a fresh plugin manager with every installed plugin, as for a user
pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


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
