"""Code written for the reference runs with its imports changed (issue 32, item 8):
``parse_etrecord(etrecord_path=...)``, ``inspector._inspector_utils``'s
``get_aot_debug_handle_to_op_name_mapping``, ``ETRecord().graph_map is None``, and a
``RuntimeError`` wherever the reference raises one. The reference is run in a subprocess
where it tells what it does."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import NO_REFERENCE, REFERENCE_PYTHON, VECTORS, needs_reference

MLP = VECTORS / "mlp_xnnpack"


def _reference(code: str, *args: str) -> Any:
    """Run ``code`` with the reference; its last stdout line, parsed as JSON."""
    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    proc = subprocess.run(
        [REFERENCE_PYTHON, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- parse_etrecord


def test_parse_etrecord_takes_the_references_keyword() -> None:
    from delegate_lens import parse_etrecord

    by_keyword = parse_etrecord(etrecord_path=MLP / "etrecord.bin")
    assert by_keyword.methods == parse_etrecord(MLP / "etrecord.bin").methods == ("forward",)
    assert parse_etrecord(etrecord_path=str(MLP / "etrecord.bin")).debug_handle_map
    with pytest.raises(TypeError, match="once"):
        parse_etrecord(MLP / "etrecord.bin", etrecord_path=MLP / "etrecord.bin")
    with pytest.raises(TypeError, match="once"):
        parse_etrecord()


# --------------------------------------------------------------------------- _inspector_utils

_MLP_MAPPING = {  # what the reference gives for the vector (checked below when installed)
    (1,): ["aten_linear_default"],
    (2,): ["aten_relu_default"],
    (3,): ["aten_linear_default_1"],
    (4,): ["aten_relu_default_1"],
    (5,): ["dim_order_ops__to_dim_order_copy_default", "aten_add_tensor"],
}


def test_op_name_mapping_from_our_graphs_without_torch() -> None:
    code = (
        "import sys\n"
        "from delegate_lens import parse_etrecord\n"
        "from delegate_lens.inspector._inspector_utils import "
        "get_aot_debug_handle_to_op_name_mapping as f\n"
        f"record = parse_etrecord({str(MLP / 'etrecord.bin')!r})\n"
        "assert f(record) == f(record.graph('forward'))\n"
        "print(sorted((list(k), v) for k, v in f(record).items()))\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == str(sorted((list(k), v) for k, v in _MLP_MAPPING.items()))


def test_op_name_mapping_reads_torch_graphs_by_their_attributes() -> None:
    from delegate_lens.errors import UsageError
    from delegate_lens.inspector._inspector_utils import (
        get_aot_debug_handle_to_op_name_mapping as mapping,
    )

    class Node:
        def __init__(self, name: str, op: str = "call_function", **meta: Any) -> None:
            self.name, self.op, self.meta = name, op, meta

    class Graph:
        nodes = [
            Node("x", "placeholder", debug_handle=9),
            Node("conv", debug_handle=1),
            Node("split", debug_handle=[2, 3]),
            Node("getitem", debug_handle=2),
            Node("relu", debug_handle=1),
            Node("no_handle"),
        ]

    class GraphModule:
        graph = Graph()

    assert mapping(GraphModule()) == mapping(Graph()) == {(1,): ["conv", "relu"], (2, 3): ["split"]}
    assert list(inspect.signature(mapping).parameters) == ["graph_module"]
    with pytest.raises(UsageError, match="GraphModule"):
        mapping(42)


_MAPPING = """
import inspect, json, sys, warnings
warnings.simplefilter("ignore")
from executorch.devtools.etrecord import parse_etrecord
from executorch.devtools.inspector._inspector_utils import (
    get_aot_debug_handle_to_op_name_mapping as f,
)
out = {"signature": list(inspect.signature(f).parameters)}
for path in sys.argv[1:]:
    mapping = f(parse_etrecord(path).edge_dialect_program.module())
    out[path] = [[list(k), v] for k, v in mapping.items()]
print(json.dumps(out))
"""


@pytest.mark.slow
@needs_reference
def test_op_name_mapping_is_the_references() -> None:
    from delegate_lens import parse_etrecord
    from delegate_lens.inspector._inspector_utils import (
        get_aot_debug_handle_to_op_name_mapping as mapping,
    )

    paths = [str(VECTORS / n / "etrecord.bin") for n in ("mlp_xnnpack", "conv_xnnpack")]
    paths.append(str(VECTORS / "gpt_portable" / "etrecord.bin"))
    seen = _reference(_MAPPING, *paths)
    assert seen.pop("signature") == list(inspect.signature(mapping).parameters)
    assert seen[paths[0]] == [[list(k), v] for k, v in _MLP_MAPPING.items()]
    for path in paths:
        ours = mapping(parse_etrecord(path))
        assert [[list(k), v] for k, v in ours.items()] == seen[path], path
    pytest.importorskip("torch")
    conv = parse_etrecord(paths[1])  # plain torch reads this one's edge program
    live = mapping(conv.edge_program().module())
    assert [[list(k), v] for k, v in live.items()] == seen[paths[1]]


# --------------------------------------------------------------------------- graph_map


def test_graph_map_is_none_until_given() -> None:
    from delegate_lens.etrecord import ETRecord, parse_etrecord

    assert ETRecord().graph_map is None
    assert ETRecord(graph_map={}).graph_map == {}
    assert parse_etrecord(MLP / "etrecord.bin").graph_map == {}  # read: a dict, as the reference
    record = ETRecord(graph_map={})
    record.graph_map = None
    assert record.graph_map is None and record.copy().graph_map is None
    assert ETRecord(graph_map={}).copy().graph_map == {}


@pytest.mark.torch
def test_graph_map_of_our_flow_is_none_until_extras_are_added() -> None:
    import torch

    import delegate_lens as dl

    class Add(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x + 1

    ep = torch.export.export(Add(), (torch.ones(2),))
    record = dl.to_edge(ep, generate_etrecord=True).to_program().get_etrecord()
    assert record.graph_map is None  # as the reference's flow (no transform passes)
    record.add_extra_export_modules({"aten": ep})
    assert list(record.graph_map or {}) == ["aten/forward"]
    fresh = dl.etrecord.ETRecord()
    fresh.add_extra_export_modules({})
    assert fresh.graph_map == {}  # the reference makes the dict before adding


_GRAPH_MAP = """
import json, sys
from executorch.devtools.etrecord import ETRecord, parse_etrecord
print(json.dumps([ETRecord().graph_map, parse_etrecord(etrecord_path=sys.argv[1]).graph_map]))
"""


@pytest.mark.slow
@needs_reference
def test_graph_map_as_the_reference() -> None:
    from delegate_lens.etrecord import ETRecord, parse_etrecord

    assert _reference(_GRAPH_MAP, str(MLP / "etrecord.bin")) == [
        ETRecord().graph_map,
        parse_etrecord(etrecord_path=MLP / "etrecord.bin").graph_map,
    ]


# --------------------------------------------------------------------------- RuntimeError


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buffer.getvalue()


def _parse_not_a_zip(tmp: Path) -> None:
    from delegate_lens import parse_etrecord

    (tmp / "bad.bin").write_bytes(b"not a zip at all")
    parse_etrecord(etrecord_path=tmp / "bad.bin")


def _parse_without_marker(tmp: Path) -> None:
    from delegate_lens import parse_etrecord

    (tmp / "nomarker.bin").write_bytes(_zip({"x": b"y"}))
    parse_etrecord(tmp / "nomarker.bin")


def _unreadable_representative_inputs(tmp: Path) -> None:
    from delegate_lens.etrecord import REPRESENTATIVE_INPUTS, ETRecord, parse_etrecord

    entries = parse_etrecord(MLP / "etrecord.bin").entries()
    entries[REPRESENTATIVE_INPUTS] = b"not a pickle"
    ETRecord.from_entries(entries)._representative_inputs  # noqa: B018


def _reserved_module_name(tmp: Path) -> None:
    from delegate_lens.etrecord import ETRecord

    ETRecord().add_extra_export_modules({"debug_handle_map": object()})


def _unsupported_module_type(tmp: Path) -> None:
    from delegate_lens.etrecord import ETRecord

    ETRecord().add_extra_export_modules({"mine": object()})


def _unsupported_edge_program_type(tmp: Path) -> None:
    from delegate_lens.etrecord import ETRecord

    ETRecord().add_edge_dialect_program(object())


def _save_without_programs(tmp: Path) -> None:
    from delegate_lens.etrecord import ETRecord

    ETRecord().save(tmp / "empty.etrecord")


def _bundled_program_without_program(tmp: Path) -> None:
    from delegate_lens.bundled_program import BundledProgram

    BundledProgram(None, [])


def _bundled_program_with_both(tmp: Path) -> None:
    from delegate_lens.bundled_program import BundledProgram

    BundledProgram((MLP / "model.pte").read_bytes(), [], pte_file_path=MLP / "model.pte")


def _cycles_with_milliseconds(tmp: Path) -> None:
    from delegate_lens import Inspector
    from delegate_lens.inspector import TimeScale

    Inspector(etdump_path=MLP / "etdump.etdp", source_time_scale=TimeScale.CYCLES)


def _numeric_gap_without_inputs(tmp: Path) -> None:
    from delegate_lens import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(etdump_path=MLP / "etdump.etdp", etrecord=MLP / "etrecord.bin")
    inspector.calculate_numeric_gap("MSE")


RUNTIME_ERRORS: dict[str, Callable[[Path], None]] = {
    "parse a file that is not a zip": _parse_not_a_zip,
    "parse a zip without the marker": _parse_without_marker,
    "representative inputs that cannot be read": _unreadable_representative_inputs,
    "a reserved extra module name": _reserved_module_name,
    "an extra module of an unsupported type": _unsupported_module_type,
    "an edge program of an unsupported type": _unsupported_edge_program_type,
    "save without programs": _save_without_programs,
    "a bundled program of nothing": _bundled_program_without_program,
    "a bundled program of a program and a file": _bundled_program_with_both,
    "a source time scale in cycles, a target in ms": _cycles_with_milliseconds,
    "calculate_numeric_gap without representative inputs": _numeric_gap_without_inputs,
}


@pytest.mark.parametrize("case", sorted(RUNTIME_ERRORS))
def test_a_runtime_error_where_the_reference_raises_one(case: str, tmp_path: Path) -> None:
    from delegate_lens.errors import DelegateLensError

    if case in ("an extra module of an unsupported type", "an edge program of an unsupported type"):
        pytest.importorskip("torch")  # an ExportedProgram is looked for
    with pytest.raises(RuntimeError) as caught:
        RUNTIME_ERRORS[case](tmp_path)
    assert isinstance(caught.value, DelegateLensError)  # ours, with its message


def test_runtime_errors_keep_their_other_bases() -> None:
    from delegate_lens import errors
    from delegate_lens.etrecord import ETRecordStateError

    for cls in (errors.ETRecordFormatError, errors.BundledProgramError):
        assert issubclass(cls, ValueError) and issubclass(cls, RuntimeError)
    for cls in (errors.ConflictingArgumentsError, ETRecordStateError):
        assert issubclass(cls, errors.UsageError) and issubclass(cls, RuntimeError)
    assert issubclass(errors.InspectorError, RuntimeError)


_RUNTIME_ERRORS = """
import json, sys, warnings, zipfile
warnings.simplefilter("ignore")
from executorch.devtools import BundledProgram, Inspector, parse_etrecord
from executorch.devtools.etrecord import ETRecord
from executorch.devtools.inspector import TimeScale
tmp, mlp = sys.argv[1], sys.argv[2]
open(tmp + "/bad.bin", "wb").write(b"not a zip at all")
with zipfile.ZipFile(tmp + "/nomarker.bin", "w") as z:
    z.writestr("x", b"y")
with zipfile.ZipFile(mlp + "/etrecord.bin") as src, zipfile.ZipFile(tmp + "/in.bin", "w") as z:
    for name in src.namelist():
        z.writestr(name, src.read(name))
    z.writestr("representative_inputs", b"not a pickle")
cases = {
    "parse a file that is not a zip": lambda: parse_etrecord(tmp + "/bad.bin"),
    "parse a zip without the marker": lambda: parse_etrecord(tmp + "/nomarker.bin"),
    "representative inputs that cannot be read": lambda: parse_etrecord(tmp + "/in.bin"),
    "a reserved extra module name":
        lambda: ETRecord().add_extra_export_modules({"debug_handle_map": object()}),
    "an extra module of an unsupported type":
        lambda: ETRecord().add_extra_export_modules({"mine": object()}),
    "an edge program of an unsupported type":
        lambda: ETRecord().add_edge_dialect_program(object()),
    "save without programs": lambda: ETRecord().save(tmp + "/empty.etrecord"),
    "a bundled program of nothing": lambda: BundledProgram(None, []),
    "a bundled program of a program and a file":
        lambda: BundledProgram(object(), [], pte_file_path=mlp + "/model.pte"),
    "a source time scale in cycles, a target in ms":
        lambda: Inspector(etdump_path=mlp + "/etdump.etdp", source_time_scale=TimeScale.CYCLES),
    "calculate_numeric_gap without representative inputs":
        lambda: Inspector(etdump_path=mlp + "/etdump.etdp", etrecord=mlp + "/etrecord.bin")
        .calculate_numeric_gap("MSE"),
}
out = {}
for name, case in cases.items():
    try:
        case()
        out[name] = None
    except Exception as exc:
        out[name] = isinstance(exc, RuntimeError)
print(json.dumps(out))
"""


@pytest.mark.slow
@needs_reference
def test_the_reference_raises_runtime_error_in_these_cases(tmp_path: Path) -> None:
    seen = _reference(_RUNTIME_ERRORS, str(tmp_path), str(MLP))
    assert set(seen) == set(RUNTIME_ERRORS)
    assert seen == dict.fromkeys(seen, True)
