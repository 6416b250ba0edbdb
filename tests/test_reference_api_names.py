"""The reference's devtools names and outputs, piece by piece: every public module path of
``executorch.devtools`` (1.5.1) is importable as ``delegate_lens.X`` with its public names;
the Inspector's printed table and TSV are byte for byte what the reference wrote for the
reference vectors (``tests/data/reference_api``); the bundled-program schema objects and JSON;
the ETRecord's reference fields and methods; the comparator classes."""

from __future__ import annotations

import importlib
import io
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "reference_api"
BPTE = Path(__file__).parent / "data" / "bundled_program" / "reference_add.bpte"

# module path under executorch.devtools -> its public names (ExecuTorch 1.5.1's __all__, or
# its public attributes where it has none; intermediate_output_tap is tested on its own)
REFERENCE_NAMES: dict[str, list[str]] = {
    "": [
        "BundledProgram",
        "ETRecord",
        "Inspector",
        "generate_etrecord",
        "inspector",
        "parse_etrecord",
    ],
    "etrecord": ["ETRecord", "generate_etrecord", "parse_etrecord"],
    "inspector": [
        "Event",
        "EventBlock",
        "Inspector",
        "PerfData",
        "TimeScale",
        "compare_results",
        "parse_vgf_neural_statistics_delegate_metadata",
        "parse_vgf_neural_statistics_metadata",
    ],
    "inspector._inspector_utils": [
        "TimeScale",
        "calculate_time_scale_factor",
        "compare_results",
        "convert_to_float_tensor",
        "find_op_names",
        "get_aot_debug_handle_to_op_name_mapping",
        "is_inference_output_equal",
    ],
    "inspector.numerical_comparator": [
        "DebugHandle",
        "IntermediateOutputMapping",
        "L1Comparator",
        "MSEComparator",
        "NumericalComparatorBase",
        "SNRComparator",
    ],
    "inspector.numerical_comparator.l1_numerical_comparator": ["L1Comparator"],
    "inspector.numerical_comparator.mse_numerical_comparator": ["MSEComparator"],
    "inspector.numerical_comparator.snr_numerical_comparator": ["SNRComparator"],
    "inspector.numerical_comparator.numerical_comparator_base": [
        "IntermediateOutputMapping",
        "NumericalComparatorBase",
    ],
    "bundled_program.config": [
        "ConfigValue",
        "DataContainer",
        "MethodInputType",
        "MethodOutputType",
        "MethodTestCase",
        "MethodTestSuite",
    ],
    "bundled_program.core": ["BundledProgram"],
    "bundled_program.serialize": [
        "BUNDLED_PROGRAM_SCHEMA_NAME",
        "SCALAR_TYPE_SCHEMA_NAME",
        "convert_from_flatbuffer",
        "convert_to_flatbuffer",
        "deserialize_from_flatbuffer_to_bundled_program",
        "deserialize_from_json_to_bundled_program",
        "serialize_from_bundled_program_to_flatbuffer",
        "serialize_from_bundled_program_to_json",
    ],
    "bundled_program.schema": [
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
    ],
    "bundled_program.schema.bundled_program_schema": [
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
    ],
    "bundled_program.version": ["BUNDLED_PROGRAM_SCHEMA_VERSION"],
    "backend_debug": ["DelegationBreakdown", "get_delegation_info", "print_delegation_info"],
    "backend_debug.delegation_info": [
        "DelegationBreakdown",
        "DelegationInfo",
        "get_delegation_info",
        "print_delegation_info",
    ],
    "etdump.serialize": [
        "ETDUMP_FLATCC_SCHEMA_NAME",
        "SCALAR_TYPE_SCHEMA_NAME",
        "ETDumpFlatCC",
        "deserialize_from_etdump_flatcc",
        "serialize_to_etdump_flatcc",
    ],
    "etdump.schema_flatcc": [
        "AllocationEvent",
        "Allocator",
        "Bool",
        "DebugEvent",
        "Double",
        "ETDumpFlatCC",
        "Event",
        "Float",
        "Int",
        "PROFILE_EVENT_ENUM",
        "ProfileEvent",
        "RunData",
        "ScalarType",
        "String",
        "Tensor",
        "TensorList",
        "Value",
        "ValueType",
    ],
}


@pytest.mark.parametrize("path", sorted(REFERENCE_NAMES))
def test_every_reference_path_has_its_names(path: str) -> None:
    module = importlib.import_module("delegate_lens" + ("." + path if path else ""))
    missing = [n for n in REFERENCE_NAMES[path] if not hasattr(module, n)]
    assert not missing, f"delegate_lens.{path} lacks {missing}"


def test_faces_import_without_torch() -> None:
    faces = [p for p in REFERENCE_NAMES if not p.startswith("backend_debug")]
    code = "import sys\n" + "".join(f"import delegate_lens{'.' + p if p else ''}\n" for p in faces)
    code += "import delegate_lens as d; d.BundledProgram; d.ETRecord; d.Inspector\n"
    code += "assert 'torch' not in sys.modules, 'torch imported'\n"
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- tables


def _inspector(vectors_dir: Path, name: str) -> Any:
    from delegate_lens import Inspector

    folder = vectors_dir / name
    debug = folder / "debug.bin"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(
            etdump_path=folder / "etdump.etdp",
            etrecord=folder / "etrecord.bin",
            debug_buffer_path=debug if debug.exists() else None,
        )


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack"])
@pytest.mark.parametrize("units", [True, False])
def test_tables_are_the_references_byte_for_byte(vectors_dir: Path, name: str, units: bool) -> None:
    inspector = _inspector(vectors_dir, name)
    suffix = "" if units else "_nounits"
    printed = io.StringIO()
    inspector.print_data_tabular(file=printed, include_units=units)
    assert printed.getvalue() == (DATA / f"{name}_print{suffix}.txt").read_text()
    tsv = io.StringIO()
    inspector.save_data_to_tsv(tsv, include_units=units)
    assert tsv.getvalue() == (DATA / f"{name}{suffix}.tsv").read_text()


def test_grid_aligns_numbers_on_their_point() -> None:
    from delegate_lens._texttable import format_fancy_grid

    text = format_fancy_grid(["x", "name"], [[0.5, "a"], [12.0, None], [1e-05, "ccc"], [None, "d"]])
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert rows == [  # what tabulate 0.10 prints for this DataFrame (checked side by side)
        "│    │      x │ name   │",
        "│  0 │  0.5   │ a      │",
        "│  1 │ 12     │        │",
        "│  2 │  1e-05 │ ccc    │",
        "│  3 │        │ d      │",
    ]


def test_tsv_quotes_as_the_csv_module() -> None:
    from delegate_lens.exporters import write_reference_tsv

    out = io.StringIO()
    write_reference_tsv(["a", "b"], [['say "hi"', 0.1 + 0.2], ["tab\there", None]], out)
    assert out.getvalue() == '\ta\tb\n0\t"say ""hi"""\t0.30000000000000004\n1\t"tab\there"\t\n'


# --------------------------------------------------------------------------- events


def test_event_and_block_attributes(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir, "mlp_xnnpack")
    block = inspector.event_blocks[1]
    call = next(e for e in block.events if e.name == "DELEGATE_CALL")
    assert call.num_outputs == 1 and call._instruction_id == call.instruction_id
    assert call._delegate_debug_metadatas == call.raw_delegate_debug_metadatas
    assert call._start_time == call.start_time and len(call.start_time) == 5
    row = call.asdict(_units=" (ms)")
    assert list(row)[:3] == ["event_name", "raw", "p10 (ms)"]
    assert row["raw"] == [call.perf_data.raw] and row["start_time"] == [call.start_time]
    assert row["op_types"] == [
        "['aten.linear.default', 'aten.relu.default' ... 'aten.add.Tensor'] (6 total)"
    ]
    frame = call.to_dataframe()
    assert len(frame) == 1 and frame["p50"][0] == call.perf_data.p50
    assert block.reference_output is None  # no bundled input, no reference outputs
    assert list(block.to_dataframe().columns)[:2] == ["event_block_name", "event_name"]


def test_reference_graph_name(vectors_dir: Path) -> None:
    from delegate_lens import Inspector
    from delegate_lens.errors import UnknownNameError, UsageError

    folder = vectors_dir / "conv_xnnpack"
    files = {"etdump_path": folder / "etdump.etdp", "etrecord": folder / "etrecord.bin"}
    Inspector(**files, reference_graph_name="edge_dialect_graph_module")
    with pytest.raises(UnknownNameError, match="edge_dialect_graph_module") as raised:
        Inspector(**files, reference_graph_name="other/forward")
    # a KeyError too, as the reference's lookup of the name fails
    assert isinstance(raised.value, UsageError) and isinstance(raised.value, KeyError)
    # without an ETRecord the name is not used, as in the reference
    Inspector(etdump_path=folder / "etdump.etdp", reference_graph_name="other/forward")


# --------------------------------------------------------------------------- bundled program


def test_reference_bundled_program_as_schema_objects() -> None:
    from delegate_lens.bundled_program.schema import ScalarType
    from delegate_lens.bundled_program.serialize import (
        convert_from_flatbuffer,
        convert_to_flatbuffer,
        deserialize_from_flatbuffer_to_bundled_program,
        deserialize_from_json_to_bundled_program,
        serialize_from_bundled_program_to_flatbuffer,
        serialize_from_bundled_program_to_json,
    )

    data = BPTE.read_bytes()
    schema = deserialize_from_flatbuffer_to_bundled_program(data)
    assert isinstance(schema.program, bytes) and schema.program[4:8] == b"ET12"
    case = schema.method_test_suites[0].test_cases[1]
    x, y = (v.val for v in case.inputs)
    assert x.scalar_type == ScalarType.FLOAT and x.sizes == [2, 3] and x.dim_order == [0, 1]
    assert y.scalar_type == ScalarType.LONG and y.data[:8] == (2).to_bytes(8, "little")
    reference_json = (DATA / "reference_add.bpte.json").read_text()
    assert serialize_from_bundled_program_to_json(schema) == reference_json
    assert json.loads(convert_from_flatbuffer(data)) == json.loads(reference_json)
    again = deserialize_from_json_to_bundled_program(reference_json)
    assert again == schema
    assert serialize_from_bundled_program_to_flatbuffer(again) == data
    assert convert_to_flatbuffer(reference_json) == data


def test_schema_reads_scalar_types_numpy_lacks() -> None:
    import struct

    from delegate_lens.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )

    data = bytearray(BPTE.read_bytes())
    schema = deserialize_from_flatbuffer_to_bundled_program(bytes(data))
    x = schema.method_test_suites[0].test_cases[0].inputs[0].val
    # the first tensor's scalar_type byte: find it by rewriting FLOAT (6) to BFLOAT16 (15)
    # where the reader found it, then read again
    positions = [i for i in range(len(data)) if data[i] == 6]
    for pos in positions:
        patched = bytearray(data)
        patched[pos] = 15
        try:
            again = deserialize_from_flatbuffer_to_bundled_program(bytes(patched))
        except Exception:
            continue
        val = again.method_test_suites[0].test_cases[0].inputs[0].val
        if val.scalar_type == 15 or getattr(val.scalar_type, "value", None) == 15:
            assert val.data == x.data and val.sizes == x.sizes
            return
    raise AssertionError(f"no scalar_type byte found ({struct.calcsize('b')})")


def test_bundled_program_needs_one_program_source(tmp_path: Path) -> None:
    from delegate_lens.bundled_program.config import MethodTestCase, MethodTestSuite
    from delegate_lens.bundled_program.core import BundledProgram
    from delegate_lens.errors import BundledProgramError

    suites = [MethodTestSuite("forward", [MethodTestCase([1])])]
    with pytest.raises(BundledProgramError, match="neither"):
        BundledProgram(None, suites)
    pte = tmp_path / "p.pte"
    pte.write_bytes(b"\0\0\0\0ET12" + bytes(8))
    with pytest.raises(BundledProgramError, match="both"):
        BundledProgram(b"\0\0\0\0ET12", suites, pte_file_path=pte)
    bundled = BundledProgram(None, suites, pte_file_path=pte)
    assert bundled.program_buffer == pte.read_bytes()
    assert (
        bundled.serialize_to_schema().method_test_suites[0].test_cases[0].inputs[0].val.int_val == 1
    )


# --------------------------------------------------------------------------- etdump face


def test_etdump_serialize_face(vectors_dir: Path) -> None:
    from delegate_lens.errors import ETDumpFormatError
    from delegate_lens.etdump.serialize import (
        deserialize_from_etdump_flatcc,
        serialize_to_etdump_flatcc,
    )

    data = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    etdump = deserialize_from_etdump_flatcc(data)
    assert deserialize_from_etdump_flatcc(serialize_to_etdump_flatcc(etdump)) == etdump
    with pytest.raises(ETDumpFormatError, match="size_prefixed=False"):
        deserialize_from_etdump_flatcc(data, size_prefixed=False)


# --------------------------------------------------------------------------- helpers


def test_compare_results(capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    from delegate_lens.inspector import compare_results

    ref = [np.array([1.0, 2.0, 3.0], np.float32), np.array([1.0, 1.0]), 3]
    run = [np.array([1.0, 2.0, 3.5], np.float32), np.array([1.0, 1.0]), 3]
    out = compare_results(ref, run, metrics=["mse", "cosine_similarity"])
    assert out == {"mse": [0.08, 0.0, None], "cosine_similarity": [1.0, 1.0, None]}
    printed = capsys.readouterr().out
    assert printed.startswith("mse\n--------------------\n0     0.08000\n")


def test_vgf_metadata_parsers() -> None:
    import base64

    from delegate_lens.inspector import (
        parse_vgf_neural_statistics_delegate_metadata,
        parse_vgf_neural_statistics_metadata,
    )

    record = {
        "schema": "executorch.vgf.neural_statistics",
        "schema_version": 1,
        "segments": [
            {
                "debug_database": {
                    "available": True,
                    "encoding": "base64",
                    "data": base64.b64encode(b"db").decode(),
                },
                "statistics_info": {"available": False},
            }
        ],
    }
    raw = json.dumps(record).encode()
    parsed = parse_vgf_neural_statistics_metadata(raw)
    assert parsed["segments"][0]["debug_database"]["raw_data"] == b"db"
    assert parsed["segments"][0]["statistics_info"]["raw_data"] == b""
    assert parse_vgf_neural_statistics_delegate_metadata([b"", b"\x07other", raw]) == [parsed]
    with pytest.raises(ValueError, match="malformed"):
        parse_vgf_neural_statistics_delegate_metadata([b"{executorch.vgf.neural_statistics"])
