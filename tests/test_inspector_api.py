"""Inspector API on the reference vectors: mismatched inputs, debug buffer problems, tables,
find_total_for_module, get_op_list, to_dataframe, and the torch-free import."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from delegate_lens.errors import ETDumpFormatError, MissingExtraError
from delegate_lens.exporters import write_csv, write_json
from delegate_lens.inspector import Inspector, InspectorWarning, json_input, table_input


@pytest.fixture(scope="module")
def mlp(vectors_dir: Path) -> Inspector:
    v = vectors_dir / "mlp_xnnpack"
    return Inspector(
        etdump_path=v / "etdump.etdp",
        etrecord=str(v / "etrecord.bin"),
        debug_buffer_path=v / "debug.bin",
    )


@pytest.fixture(scope="module")
def gpt(vectors_dir: Path) -> Inspector:
    v = vectors_dir / "gpt_portable"
    return Inspector(etdump_path=v / "etdump.etdp", etrecord=str(v / "etrecord.bin"))


def test_etrecord_of_another_model_warns_and_still_gives_the_table(vectors_dir: Path) -> None:
    v = vectors_dir / "mlp_xnnpack"
    with pytest.warns(InspectorWarning, match=r"does not match the ETDump.*instruction 0") as rec:
        inspector = Inspector(
            etdump_path=v / "etdump.etdp",
            etrecord=str(vectors_dir / "gpt_portable" / "etrecord.bin"),
            debug_buffer_path=v / "debug.bin",
        )
    message = str(rec[0].message)
    assert "native_call__to_dim_order_copy.out" in message and "aten.embedding.default" in message
    assert "instruction 1" in message  # a delegate call where gpt has an operator
    execute = inspector.event_blocks[1]
    assert [e.name for e in execute.events][:2] == [
        "native_call__to_dim_order_copy.out",
        "OPERATOR_CALL",
    ]
    assert all(e.op_types == [] for e in execute.events)  # nothing linked to the wrong ops
    out = io.StringIO()
    inspector.print_data_tabular(file=out)
    assert "DELEGATE_CALL" in out.getvalue()


def test_truncated_debug_buffer_warns_and_marks_values_unavailable(
    vectors_dir: Path, tmp_path: Path
) -> None:
    v = vectors_dir / "mlp_xnnpack"
    short = tmp_path / "debug.bin"
    short.write_bytes((v / "debug.bin").read_bytes()[:200])  # offsets go up to 1,000s
    inspector = Inspector(
        etdump_path=v / "etdump.etdp", etrecord=str(v / "etrecord.bin"), debug_buffer_path=short
    )
    with pytest.warns(InspectorWarning, match=r"beyond the debug buffer \(200 bytes\)"):
        call = next(e for e in inspector.event_blocks[1].events if e.name == "DELEGATE_CALL")
    assert len(call.debug_data) == 3
    assert call.debug_data[0] is not None  # offset 64, 128 bytes: inside
    assert call.debug_data[2] is None  # offset 256: beyond 200 bytes


def test_missing_debug_buffer_warns_once_where_debug_values_are_used(vectors_dir: Path) -> None:
    v = vectors_dir / "mlp_xnnpack"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # times, tables and summaries need no debug buffer
        inspector = Inspector(etdump_path=v / "etdump.etdp", etrecord=v / "etrecord.bin")
        inspector.print_data_tabular(file=io.StringIO())
        write_csv(table_input(inspector), io.StringIO())
    with pytest.warns(InspectorWarning, match="none was given") as caught:
        call = next(e for e in inspector.event_blocks[1].events if e.name == "DELEGATE_CALL")
        write_json(
            json_input(inspector), io.StringIO()
        )  # the JSON shows the values too: not said again
    assert len(caught) == 1
    # the reference's values without a buffer: zeros of the logged shapes (a 0-d one too)
    assert [tuple(v.shape) for v in call.debug_data] == [(2, 16), (), (2, 8)]
    assert all(not v.any() for v in call.debug_data)


def test_no_etrecord_gives_unlinked_rows(vectors_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inspector = Inspector(etdump_path=vectors_dir / "conv_xnnpack" / "etdump.etdp")
    rows = inspector.event_blocks[1].events
    assert all(e.op_types == [] and e.delegate_backend_name is None for e in rows)
    assert rows[0].is_delegated_op and rows[0].name == "Transpose (ND, X32) #1"
    with pytest.warns(InspectorWarning, match="needs an ETRecord"):
        assert inspector.get_exported_program() is None


def test_bad_etdump_bytes_are_our_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"\x10\x00\x00\x00not an etdump at all")
    with pytest.raises(ETDumpFormatError):
        Inspector(etdump_path=bad)


def test_find_total_for_module(gpt: Inspector) -> None:
    total = gpt.find_total_for_module("blocks.0.ln1")
    layer_norm = [
        e
        for e in gpt.event_blocks[1].events
        if e.name == "native_call_native_layer_norm.out"
        and any("L__self__blocks.0.ln1" in (h or {}) for h in e.module_hierarchy.values())
    ]
    assert len(layer_norm) == 1 and layer_norm[0].perf_data is not None
    assert total == pytest.approx(layer_norm[0].perf_data.avg)
    # by module key, OPERATOR_CALL rows not counted twice
    assert gpt.find_total_for_module("L__self__blocks.0.ln1") == pytest.approx(total)
    assert gpt.find_total_for_module("no_such_module") == 0.0


def test_get_op_list(mlp: Inspector) -> None:
    ops = mlp.get_op_list("Execute")
    assert [e.name for e in ops["aten.add.Tensor"]] == [
        "native_call__to_dim_order_copy.out",
        "DELEGATE_CALL",
    ]
    assert [e.name for e in ops["aten.linear.default"]] == ["DELEGATE_CALL"]
    without = mlp.get_op_list(mlp.event_blocks[1], show_delegated_ops=False)
    assert set(without) == {"dim_order_ops._to_dim_order_copy.default", "aten.add.Tensor"}
    with pytest.raises(Exception, match="no event block named"):
        mlp.get_op_list("Nope")


def test_print_tsv_and_dataframe(mlp: Inspector, tmp_path: Path) -> None:
    out = io.StringIO()
    mlp.print_data_tabular(file=out)
    text = out.getvalue()
    assert "OPERATOR_CALL" not in text and "Fully Connected (NC, F32) GEMM #1" in text
    header = [cell.strip() for cell in text.splitlines()[1].split("│")[1:6]]
    assert header == [
        "",
        "event_block_name",
        "event_name",
        "p10 (ms)",
        "p50 (ms)",
    ]  # as the reference
    path = tmp_path / "table.tsv"
    mlp.save_data_to_tsv(path)
    lines = path.read_text().splitlines()
    assert lines[0].split("\t")[1:4] == ["event_block_name", "event_name", "p10 (ms)"]
    assert len(lines) == 1 + 2 + 6  # header, Default rows, Execute rows without OPERATOR_CALL
    assert not list(tmp_path.glob(".*tmp"))
    df = mlp.to_dataframe()
    assert list(df["event_name"])[:3] == [
        "Method::init",
        "Program::load_method",
        "native_call__to_dim_order_copy.out",
    ]
    assert "p50 (ms)" in df.columns and len(df) == 9
    block_df = mlp.event_blocks[1].to_dataframe()
    assert len(block_df) == 7 and "p50" in block_df.columns
    assert list(block_df["event_block_name"].unique()) == ["Execute"]


def test_to_dataframe_without_pandas_names_the_extra(
    mlp: Inspector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"delegate-lens\[pandas\]"):
        mlp.to_dataframe()


def test_events_are_made_lazily_and_cached(mlp: Inspector) -> None:
    block = mlp.event_blocks[1]
    assert block.events[0] is block.events[0]
    assert block.events[-1].name == "Method::execute"
    assert [e.name for e in block.events[1:3]] == [
        "OPERATOR_CALL",
        "Fully Connected (NC, F32) GEMM #1",
    ]


def test_importing_the_inspector_imports_no_torch() -> None:
    code = (
        "import sys\n"
        "import delegate_lens\n"
        "from delegate_lens import Inspector, TimeScale, EventBlock\n"
        "import delegate_lens.builtins.exporters, delegate_lens.cli._inspect_cmd\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_inspecting_with_an_etrecord_imports_no_torch(vectors_dir: Path) -> None:
    """Not just the import: linking through the ETRecord, events, tables and every export."""
    v = vectors_dir / "mlp_xnnpack"
    code = (
        "import io, sys\n"
        "from delegate_lens import Inspector\n"
        "from delegate_lens.exporters import get_exporters\n"
        f"i = Inspector(etdump_path={str(v / 'etdump.etdp')!r}, "
        f"etrecord={str(v / 'etrecord.bin')!r}, debug_buffer_path={str(v / 'debug.bin')!r})\n"
        "events = [e for b in i.event_blocks for e in b.events]\n"
        "assert any(e.op_types for e in events)\n"
        "i.print_data_tabular(file=io.StringIO()); i.find_total_for_module('x')\n"
        "i.get_op_list('Execute')\n"
        "import pathlib, tempfile\n"
        "for exporter in get_exporters().values():\n"
        "    if exporter.folder:  # writes files into a folder\n"
        "        exporter.write(i, pathlib.Path(tempfile.mkdtemp()))\n"
        "        continue\n"
        "    exporter.write(i, io.BytesIO() if exporter.binary else io.StringIO())\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.torch
def test_get_exported_program_deserializes_on_request(vectors_dir: Path) -> None:
    v = vectors_dir / "conv_xnnpack"
    inspector = Inspector(etdump_path=v / "etdump.etdp", etrecord=str(v / "etrecord.bin"))
    program = inspector.get_exported_program()
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert targets == [
        "aten.convolution.default",
        "aten.relu.default",
        "aten.convolution.default",
        "aten.relu.default",
        "aten.tan.default",
    ]


def test_run_output_is_the_first_runs_final_output(mlp: Inspector, vectors_dir: Path) -> None:
    import numpy as np

    execute = mlp.event_blocks[1]
    (output,) = execute.run_output
    buffer = (vectors_dir / "mlp_xnnpack" / "debug.bin").read_bytes()
    expected = np.frombuffer(buffer, dtype=np.float32, count=16, offset=320).reshape(2, 8)
    np.testing.assert_array_equal(output, expected)
    assert mlp.event_blocks[0].run_output == []


def test_output_flags_of_decoded_and_in_memory_runs_agree(mlp: Inspector) -> None:
    """Decoded runs give their output flags as a column; runs built from Event objects
    are read value by value: both must flag the same events."""
    from delegate_lens.etdump import ETDump, EventColumns, RunData
    from delegate_lens.inspector._build import concat_runs

    decoded = mlp.etdump
    rebuilt = ETDump(
        version=decoded.version,
        run_data=[
            RunData.from_columns(
                run.name,
                run.bundled_input_index,
                run.allocators,
                EventColumns.from_events(run.columns.event(i) for i in range(len(run.columns))),
            )
            for run in decoded.run_data
        ],
    )
    flags = mlp.file_columns.is_output
    assert flags.sum() == 5
    assert concat_runs(rebuilt).is_output.tolist() == flags.tolist()


def test_print_data_tabular_defaults_to_the_current_stdout(
    mlp: Inspector, capsys: pytest.CaptureFixture[str]
) -> None:
    mlp.print_data_tabular()  # file=None: sys.stdout as it is at the call
    out = capsys.readouterr().out
    assert "│ event_block_name" in out.splitlines()[1] and "DELEGATE_CALL" in out
    stream = io.StringIO()
    mlp.print_data_tabular(stream)
    assert stream.getvalue() == out
