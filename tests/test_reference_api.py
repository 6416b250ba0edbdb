"""Scripts written against ExecuTorch 1.5.1's devtools API run against delegate-lens with only
their imports changed: the flows of the reference's devtools tutorials (profiling with an
ETRecord, numeric debugging with representative inputs, bundled programs, delegate
debugging) and the reference's own numerics recipe on an ETRecord ``generate_etrecord``
wrote, which ends in an AssertionError in the reference.

The import changes are the table :data:`IMPORTS`: the XNNPACK partitioner becomes the demo
backend's, ``executorch.devtools.X`` becomes ``delegate_lens.X``, ``executorch.exir``'s
lowering functions are delegate-lens's. ``executorch.runtime`` has no face in delegate-lens;
:data:`FACES` stands in for it (a few lines over ``delegate_lens.runtime``), and for the
reference's ``EdgeCompileConfig`` (a settings object our lowering accepts and ignores).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]

PROLOGUE = """
import copy
import io
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import ExportedProgram, export

from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower
from executorch.runtime import Runtime, Verification

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 6 * 6, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return torch.tan(self.fc2(x))


model = Net().eval()
model_inputs = (torch.randn(1, 1, 8, 8),)
results = {}


def run(pte_path, inputs, runs=1, debug_buffer_size=0):
    program = Runtime.get().load_program(
        pte_path,
        verification=Verification.Minimal,
        enable_etdump=True,
        debug_buffer_size=debug_buffer_size,
    )
    method = program.load_method("forward")
    for _ in range(runs):
        outputs = method.execute(inputs)
    program.write_etdump_result_to_file("etdump.etdp", "debug_output.bin")
    return outputs
"""

PROFILING = """
from executorch.devtools import Inspector, generate_etrecord
from executorch.devtools.etrecord import parse_etrecord

# devtools-integration tutorial: ETRecord from to_edge and a copy of the edge manager
aten_model: ExportedProgram = export(model, model_inputs, strict=True)
edge_program_manager = to_edge(aten_model, compile_config=EdgeCompileConfig(_check_ir_validity=True))
edge_program_manager_copy = copy.deepcopy(edge_program_manager)
et_program_manager = edge_program_manager.to_executorch()
etrecord_path = "etrecord.bin"
generate_etrecord(etrecord_path, edge_program_manager_copy, et_program_manager)
with open("net.pte", "wb") as f:
    f.write(et_program_manager.buffer)
run("net.pte", list(model_inputs), runs=3)

inspector = Inspector(etdump_path="etdump.etdp", etrecord=etrecord_path)
table = io.StringIO()
inspector.print_data_tabular(file=table)
with open("inspector.tsv", "w") as f:
    inspector.save_data_to_tsv(f)
for event_block in inspector.event_blocks:
    if event_block.name == "Execute":
        block_frame = event_block.to_dataframe()
        for event in event_block.events:
            if event.name == "native_call_convolution.out":
                conv = event
                conv_row = event.to_dataframe(_units=" (ms)")
df = inspector.to_dataframe()
record = parse_etrecord(etrecord_path)
results["profiling"] = dict(
    table=table.getvalue(), frame=df, block_frame=block_frame, conv=conv, conv_row=conv_row,
    record=record, edge=inspector.get_exported_program(),
    total=inspector.find_total_for_module("conv1"),
)

# the newer recipe: ETRecord from to_edge_transform_and_lower(generate_etrecord=True)
edge = to_edge_transform_and_lower(aten_model, partitioner=[XnnpackPartitioner()], generate_etrecord=True)
et_program = edge.to_executorch()
etrecord = et_program.get_etrecord()
etrecord.save("lowered_etrecord.bin")
results["lowered_record"] = etrecord
"""

NUMERICS = """
from executorch.devtools import Inspector
from executorch.devtools.inspector.numerical_comparator import NumericalComparatorBase

# devtools-debugging tutorial, Python pipeline
aten_model: ExportedProgram = export(model, model_inputs, strict=True)
edge_program_manager = to_edge_transform_and_lower(
    aten_model,
    partitioner=[XnnpackPartitioner()],
    compile_config=EdgeCompileConfig(),
    generate_etrecord=True,
)
et_program_manager = edge_program_manager.to_executorch()
pte_path = "model.pte"
et_program_manager.save(pte_path)
etrecord = et_program_manager.get_etrecord()
etrecord.update_representative_inputs(model_inputs)
etrecord_path = "etrecord.bin"
etrecord.save(etrecord_path)

runtime_outputs = run(pte_path, list(model_inputs), debug_buffer_size=1024 * 1024)
with torch.no_grad():
    eager_output = model(*model_inputs)
runtime_output = runtime_outputs[0] if isinstance(runtime_outputs, (list, tuple)) else runtime_outputs
mse = torch.mean((eager_output - torch.as_tensor(runtime_output)) ** 2).item()

inspector = Inspector(
    etdump_path="etdump.etdp", etrecord=etrecord_path, debug_buffer_path="debug_output.bin"
)
df = inspector.calculate_numeric_gap(distance="MSE")
df_sorted = df.sort_values(
    by="gap", ascending=False, key=lambda x: x.apply(lambda y: y[0] if isinstance(y, list) else y)
)
threshold = 1e-4
problematic_ops = df[df["gap"].apply(lambda x: x[0] > threshold if isinstance(x, list) else x > threshold)]
traces = []
for idx, row in df.iterrows():
    for op_name, trace in row["stacktraces"].items():
        if trace:
            traces.append((op_name, trace.split("\\n")[:3]))


class MaxAbsComparator(NumericalComparatorBase):
    def element_compare(self, a, b):
        return torch.max(torch.abs(a - b)).item()


custom = inspector.calculate_numeric_gap(distance=MaxAbsComparator())
snr = inspector.calculate_numeric_gap(distance="SNR")
try:
    inspector.calculate_numeric_gap(distance="nope")
    unknown = None
except ValueError as exc:
    unknown = exc
results["numerics"] = dict(
    mse=mse, df=df, sorted=df_sorted, problematic=problematic_ops, traces=traces,
    custom=custom, snr=snr, unknown=unknown,
)
"""

BUNDLED = """
from executorch.devtools import BundledProgram, Inspector, generate_etrecord
from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program,
    serialize_from_bundled_program_to_flatbuffer,
)

aten_model: ExportedProgram = export(model, model_inputs, strict=True)
edge_program_manager = to_edge_transform_and_lower(aten_model, partitioner=[XnnpackPartitioner()])
edge_copy = copy.deepcopy(edge_program_manager)
et_program_manager = edge_program_manager.to_executorch()
et_program_manager.save("model.pte")

m_name = "forward"
test_inputs = [model_inputs, (torch.randn(1, 1, 8, 8),)]
method_test_suites = [
    MethodTestSuite(
        method_name=m_name,
        test_cases=[MethodTestCase(inputs=inp, expected_outputs=model(*inp)) for inp in test_inputs],
    )
]
bundled_program = BundledProgram(et_program_manager, method_test_suites)
serialized_bundled_program = serialize_from_bundled_program_to_flatbuffer(bundled_program)
with open("bundled_program.bpte", "wb") as f:
    f.write(serialized_bundled_program)
schema = deserialize_from_flatbuffer_to_bundled_program(serialized_bundled_program)

# an ETRecord from the bundled program: its expected outputs and first inputs go in
generate_etrecord("etrecord.bin", edge_copy, bundled_program)
run("model.pte", list(test_inputs[0]), debug_buffer_size=1 << 20)
inspector = Inspector(
    etdump_path="etdump.etdp", etrecord="etrecord.bin", debug_buffer_path="debug_output.bin"
)
results["bundled"] = dict(
    schema=schema, bytes=serialized_bundled_program, inspector=inspector,
    gaps=inspector.calculate_numeric_gap("MSE"),
)
"""

DELEGATES = """
from executorch.devtools import Inspector
from executorch.devtools.backend_debug import get_delegation_info, print_delegation_info

aten_model: ExportedProgram = export(model, model_inputs, strict=True)
edge_manager = to_edge_transform_and_lower(aten_model, partitioner=[XnnpackPartitioner()], generate_etrecord=True)
graph_module = edge_manager.exported_program().graph_module
delegation_info = get_delegation_info(graph_module)
summary = delegation_info.get_summary()
df = delegation_info.get_operator_delegation_dataframe()
print_delegation_info(graph_module)
et_program = edge_manager.to_executorch()
et_program.save("model.pte")
et_program.get_etrecord().save("etrecord.bin")
run("model.pte", list(model_inputs), runs=2)


def parse_delegate_metadata(delegate_metadatas):
    return {"metadata_bytes": [len(m) for m in delegate_metadatas]}


def convert_delegate_time(event_name, input_time):
    return input_time / 1e6


inspector = Inspector(
    etdump_path="etdump.etdp",
    etrecord="etrecord.bin",
    delegate_metadata_parser=parse_delegate_metadata,
    delegate_time_scale_converter=convert_delegate_time,
)
delegated = [
    event
    for block in inspector.event_blocks
    for event in block.events
    if event.is_delegated_op
]
results["delegates"] = dict(
    info=delegation_info, summary=summary, df=df, delegated=delegated, inspector=inspector
)
"""

RECIPE = """
from executorch.devtools import Inspector
from executorch.devtools.etrecord import generate_etrecord, parse_etrecord

# the reference's numerics recipe on an ETRecord generate_etrecord wrote (the reference 1.5.1
# ends it in an AssertionError)
aten_model: ExportedProgram = export(model, model_inputs, strict=True)
edge = to_edge_transform_and_lower(aten_model, partitioner=[XnnpackPartitioner()])
edge_copy = copy.deepcopy(edge)
et_program = edge.to_executorch()
et_program.save("model.pte")
generate_etrecord("etrecord.bin", edge_copy, et_program, exported_program=aten_model)
run("model.pte", list(model_inputs), debug_buffer_size=1 << 20)

etrecord = parse_etrecord("etrecord.bin")
etrecord.update_representative_inputs(list(model_inputs))
etrecord.save("etrecord_with_inputs.bin")
inspector = Inspector(
    etdump_path="etdump.etdp", etrecord="etrecord_with_inputs.bin", debug_buffer_path="debug_output.bin"
)
results["recipe"] = dict(gaps=inspector.calculate_numeric_gap("MSE"), record=etrecord)
"""

SCRIPTS = {
    "profiling": PROFILING,
    "numerics": NUMERICS,
    "bundled": BUNDLED,
    "delegates": DELEGATES,
    "recipe": RECIPE,
}

FACE_MODULE = "_reference_api_faces"

IMPORTS = {
    "from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner": (
        "from delegate_lens.backends_demo import DemoPartitioner as XnnpackPartitioner"
    ),
    "from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower": (
        f"from {FACE_MODULE} import EdgeCompileConfig; "
        "from delegate_lens import to_edge, to_edge_transform_and_lower"
    ),
    "from executorch.runtime import Runtime, Verification": (
        f"from {FACE_MODULE} import Runtime, Verification"
    ),
}
"""Import lines that are not ``executorch.devtools`` (those map by rule: see _ported)."""

FACES = """
import enum

from delegate_lens.runtime import ETDumpGen, Program


class EdgeCompileConfig:
    def __init__(self, **settings):
        self.settings = settings


class Verification(enum.Enum):
    Minimal = 0
    InternalConsistency = 1


class _Method:
    def __init__(self, method):
        self._method = method

    def execute(self, inputs):
        return self._method.execute(list(inputs))


class _Program:
    def __init__(self, path, enable_etdump, debug_buffer_size):
        self._program = Program.load(path)
        self._tracer = ETDumpGen(debug_buffer_size=debug_buffer_size) if enable_etdump else None

    def load_method(self, name):
        return _Method(self._program.load_method(name, event_tracer=self._tracer))

    def write_etdump_result_to_file(self, etdump_path, debug_buffer_path=None):
        self._tracer.write(etdump_path, debug_buffer_path)


class Runtime:
    @staticmethod
    def get():
        return Runtime()

    def load_program(self, path, verification=Verification.InternalConsistency,
                     enable_etdump=False, debug_buffer_size=0):
        return _Program(path, enable_etdump, debug_buffer_size)
"""


def _ported(script: str) -> str:
    out = []
    for line in script.splitlines():
        if line in IMPORTS:
            line = IMPORTS[line]
        elif line.startswith("from executorch.devtools"):
            line = line.replace("from executorch.devtools", "from delegate_lens", 1)
        out.append(line)
    ported = "\n".join(out)
    assert "from executorch" not in ported and "import executorch" not in ported
    return ported


def test_only_import_lines_change() -> None:
    for name, body in SCRIPTS.items():
        script = PROLOGUE + body
        before, after = script.splitlines(), _ported(script).splitlines()
        assert len(before) == len(after), name
        differing = [a for a, b in zip(before, after) if a != b]
        assert differing and all(a.startswith("from executorch") for a in differing), name


def _run(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    face = types.ModuleType(FACE_MODULE)
    exec(compile(FACES, "<faces>", "exec"), face.__dict__)
    monkeypatch.setitem(sys.modules, FACE_MODULE, face)
    monkeypatch.chdir(tmp_path)
    script = types.ModuleType(f"_reference_{name}_script")  # strict export imports it
    monkeypatch.setitem(sys.modules, script.__name__, script)
    code = compile(_ported(PROLOGUE + SCRIPTS[name]), f"<reference-style {name}>", "exec")
    exec(code, script.__dict__)
    results: dict[str, Any] = script.__dict__["results"]
    return results


@pytest.mark.slow
def test_profiling_tutorial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    results = _run("profiling", monkeypatch, tmp_path)
    got = results["profiling"]
    lines = got["table"].splitlines()
    assert lines[0].startswith("╒") and lines[-1].startswith("╘")
    header = [c.strip() for c in lines[1].split("│")[1:-1]]
    assert header[:4] == ["", "event_block_name", "event_name", "p10 (ms)"]
    assert header[-1] == "start_time" and "OPERATOR_CALL" not in got["table"]
    tsv = (tmp_path / "inspector.tsv").read_text().splitlines()
    assert tsv[0].split("\t") == ["", *header[1:]]
    assert len(tsv) == (len(lines) - 3) // 2 + 1  # one TSV line per printed row
    conv = got["conv"]
    assert conv.op_types == ["aten.convolution.default"] and conv.num_outputs == 1
    assert len(conv.perf_data.raw) == 3 and conv._instruction_id == conv.instruction_id
    assert list(got["conv_row"].columns)[:3] == ["event_name", "raw", "p10 (ms)"]
    assert got["conv_row"]["raw"][0] == conv.perf_data.raw
    assert next(iter(got["block_frame"].columns)) == "event_block_name"
    record = got["record"]
    assert record.edge_dialect_program is not None and record._debug_handle_map["forward"]
    assert isinstance(got["edge"].graph_module.graph, object)
    assert got["total"] >= conv.perf_data.avg > 0
    lowered = results["lowered_record"]
    assert lowered.exported_program is not None and lowered.export_graph_id is not None
    assert (tmp_path / "lowered_etrecord.bin").stat().st_size > 0


@pytest.mark.slow
def test_numerics_tutorial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got = _run("numerics", monkeypatch, tmp_path)["numerics"]
    df = got["df"]
    reference_columns = [
        "aot_debug_handle",
        "aot_ops",
        "aot_intermediate_output",
        "runtime_ops",
        "runtime_debug_handle",
        "runtime_intermediate_output",
        "gap",
        "stacktraces",
    ]
    assert list(df.columns) == reference_columns  # the reference's frame (ours: detailed=True)
    assert len(df) >= 3 and got["mse"] < 1e-10
    assert max(g[0] for g in df["gap"]) < 1e-10  # the demo backend is exact by default
    assert got["problematic"].empty and len(got["sorted"]) == len(df)
    traced = {op for op, _ in got["traces"]}  # stack traces keyed by the rows' AOT ops
    assert traced and traced <= {op for ops in df["aot_ops"] for op in ops}
    assert any("in forward" in line for _, lines in got["traces"] for line in lines)
    # intermediate outputs are torch tensors, as the reference's
    cells = [*df["aot_intermediate_output"], *df["runtime_intermediate_output"]]
    assert all(type(cell).__name__ == "Tensor" for cell in cells)
    custom = got["custom"]
    assert list(custom["aot_ops"]) == list(df["aot_ops"])
    assert all(g[0] < 1e-5 for g in custom["gap"])
    assert all(g[0] > 100 for g in got["snr"]["gap"])  # dB
    assert isinstance(got["unknown"], ValueError) and "nope" in str(got["unknown"])


@pytest.mark.slow
def test_bundled_program_tutorial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import numpy as np

    got = _run("bundled", monkeypatch, tmp_path)["bundled"]
    schema = got["schema"]
    assert schema.program == (tmp_path / "model.pte").read_bytes()
    cases = schema.method_test_suites[0].test_cases
    assert len(cases) == 2 and schema.method_test_suites[0].method_name == "forward"
    tensor = cases[0].inputs[0].val
    assert tensor.sizes == [1, 1, 8, 8] and len(tensor.data) == 64 * 4
    inspector = got["inspector"]
    record = inspector.etrecord
    stored_inputs = record._representative_inputs
    assert np.frombuffer(tensor.data, np.float32).tolist() == stored_inputs[0].flatten().tolist()
    expected = record._reference_outputs["forward"]
    assert len(expected) == 2
    assert max(g[0] for g in got["gaps"]["gap"]) < 1e-10


@pytest.mark.slow
def test_delegate_debugging_tutorial(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = _run("delegates", monkeypatch, tmp_path)["delegates"]
    info = got["info"]
    assert info.num_delegated_subgraphs >= 1 and info.num_delegated_nodes >= 3
    assert "aten_convolution_default" in info.delegation_by_operator  # the reference's spelling
    assert got["summary"].startswith("Total delegated subgraphs: ")
    df = got["df"]
    assert list(df.columns) == [
        "op_type",
        "occurrences_in_delegated_graphs",
        "occurrences_in_non_delegated_graphs",
    ]
    assert df.iloc[-1]["op_type"] == "Total"
    printed = capsys.readouterr().out
    assert "Number of delegated nodes" in printed and "│ aten_convolution_default" in printed
    delegated = got["delegated"]
    assert delegated and all(e.delegate_backend_name == "DemoBackend" for e in delegated)
    assert all(e.delegate_debug_identifier is not None for e in delegated)
    parsed = [e.delegate_debug_metadatas for e in delegated if e.raw_delegate_debug_metadatas]
    assert all(set(p) == {"metadata_bytes"} for p in parsed)


@pytest.mark.slow
def test_reference_recipe_on_a_generated_etrecord(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    got = _run("recipe", monkeypatch, tmp_path)["recipe"]
    gaps = got["gaps"]
    assert len(gaps) >= 3 and max(g[0] for g in gaps["gap"]) < 1e-10
    assert got["record"].export_graph_id is not None
