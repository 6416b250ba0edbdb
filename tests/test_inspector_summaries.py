"""Per-op-type summary, memory per allocator, and the table fitted to a terminal."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import VECTORS

from delegate_lens.etdump import (
    AllocationEvent,
    Allocator,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    dumps,
)
from delegate_lens.inspector import Inspector
from delegate_lens.inspector._memory import AllocatorUsage

MLP = VECTORS / "mlp_xnnpack"
GPT = VECTORS / "gpt_portable"


@pytest.fixture(scope="module")
def mlp() -> Inspector:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(etdump_path=MLP / "etdump.etdp", etrecord=MLP / "etrecord.bin")


def test_op_type_summary_charges_kernels_and_names_the_rest(mlp: Inspector) -> None:
    rows = mlp.get_op_type_summary("Execute")
    by_type = {r.op_type: r for r in rows}
    execute = next(b for b in mlp.event_blocks if b.name == "Execute")
    events = {e.name: e for e in execute.events}
    call = events["DELEGATE_CALL"]
    kernel = events["native_call__to_dim_order_copy.out"]
    assert call.perf_data is not None and kernel.perf_data is not None
    # the kernel is charged to the op it ran, not to the add sharing its handle
    dim_order = by_type["dim_order_ops._to_dim_order_copy.default"]
    assert (dim_order.kind, dim_order.count) == ("op", 1)
    assert dim_order.time_per_run == pytest.approx(float(np.mean(kernel.perf_data.raw)))
    assert dim_order.total_time == pytest.approx(float(np.sum(kernel.perf_data.raw)))
    assert dim_order.p50 == pytest.approx(float(np.median(kernel.perf_data.raw)))
    assert "aten.add.Tensor" not in by_type and "aten.linear.default" not in by_type
    # XNNPACK's events link to nothing: under their names; the call's rest, unattributed
    logged = sum(np.asarray(e.perf_data.raw) for e in execute.events if e.is_delegated_op)
    rest = by_type["XnnpackBackend (unattributed)"]
    assert rest.total_time == pytest.approx(float(np.sum(np.asarray(call.perf_data.raw) - logged)))
    assert by_type["Add (ND) #1"].kind == "event"
    run = float(np.sum(events["Method::execute"].perf_data.raw))  # type: ignore[union-attr]
    assert dim_order.share == pytest.approx(float(np.sum(kernel.perf_data.raw)) / run)
    assert {r.denominator for r in rows} == {"Method::execute"}
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert [r.total_time for r in rows] == sorted((r.total_time for r in rows), reverse=True)
    assert mlp.get_op_type_summary() == rows  # 'Default' has nothing charged
    assert mlp.get_op_type_summary(execute) == rows
    with pytest.raises(Exception, match="no event block named 'Nope'"):
        mlp.get_op_type_summary("Nope")


def _with_allocations() -> bytes:
    def run(sizes: list[tuple[int, int]]) -> RunData:
        events = [
            Event(profile_event=ProfileEvent(name="Method::execute", start_time=10, end_time=90))
        ]
        events += [
            Event(allocation_event=AllocationEvent(allocator_id=a, allocation_size=s))
            for a, s in sizes
        ]
        return RunData(
            name="Execute", allocators=[Allocator("planned"), Allocator(None)], events=events
        )

    return dumps(ETDump(run_data=[run([(0, 64), (0, 32), (1, 8)]), run([(0, 16), (5, 1)])]))


def test_memory_per_allocator_per_run_in_api_table_and_trace() -> None:
    inspector = Inspector(etdump_data=_with_allocations())
    assert inspector.get_memory_usage() == [
        AllocatorUsage(0, "Execute", 0, "planned", 2, 96, 64),
        AllocatorUsage(0, "Execute", 1, None, 1, 8, 8),
        AllocatorUsage(1, "Execute", 0, "planned", 1, 16, 16),
        AllocatorUsage(1, "Execute", 5, None, 1, 1, 1),
    ]
    from delegate_lens.exporters import get_exporters

    out = io.StringIO()
    get_exporters()["table"].write(inspector, out)
    text = out.getvalue()
    assert "memory allocated per run and allocator:" in text
    assert any(
        line.split() == ["0", "Execute", "planned", "2", "96", "64"] for line in text.splitlines()
    )
    out = io.StringIO()
    get_exporters()["chrome-trace"].write(inspector, out)
    counters = [e for e in json.loads(out.getvalue())["traceEvents"] if e["ph"] == "C"]
    assert [(c["tid"], c["args"]) for c in counters] == [
        (0, {"planned": 96, "allocator 1": 8}),
        (0, {"planned": 0, "allocator 1": 0}),
        (1, {"planned": 16, "allocator 5": 1}),
        (1, {"planned": 0, "allocator 5": 0}),
    ]
    assert counters[1]["ts"] - counters[0]["ts"] == pytest.approx(0.08)  # 80 ns


def test_table_fits_the_terminal_and_is_unchanged_without_a_width() -> None:
    from delegate_lens.exporters import write_table
    from delegate_lens.inspector import table_input

    inspector = Inspector(etdump_path=GPT / "etdump.etdp", etrecord=GPT / "etrecord.bin")
    wide = io.StringIO()
    write_table(table_input(inspector), wide)
    plain = io.StringIO()
    inspector.print_data_tabular(file=plain)
    assert plain.getvalue().startswith("╒")  # print_data_tabular prints the reference's grid
    assert max(map(len, wide.getvalue().splitlines())) > 160
    fitted = io.StringIO()
    write_table(table_input(inspector), fitted, width=160)
    lines = fitted.getvalue().splitlines()
    assert max(map(len, lines)) <= 160
    assert len(lines) == len(wide.getvalue().splitlines())
    assert any("..." in line for line in lines)


def test_cli_by_op_type() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "delegate_lens",
                "inspect",
                str(MLP / "etdump.etdp"),
                "--etrecord",
                str(MLP / "etrecord.bin"),
                "--by",
                "op-type",
                *args,
            ],
            capture_output=True,
            text=True,
        )

    proc = run("-f", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["time_scale"] == "ms"
    ops = {r["op_type"] for r in data["op_types"]}
    assert ops >= {"dim_order_ops._to_dim_order_copy.default", "XnnpackBackend (unattributed)"}
    proc = run()
    assert proc.returncode == 0 and proc.stdout.splitlines()[0].split()[:3] == [
        "event_block_name",
        "op_type",
        "kind",
    ]
    proc = run("-f", "csv")
    assert proc.returncode == 0 and proc.stdout.startswith("block,op_type,kind,count,")
    proc = run("-f", "chrome-trace")
    assert (
        proc.returncode == 2 and "--by op-type writes the formats table, json, csv" in proc.stderr
    )


def test_terminal_view_names_delegate_rows_and_shows_metadata() -> None:
    from delegate_lens.exporters import write_table
    from delegate_lens.inspector import table_input

    xnnpack = Inspector(etdump_path=MLP / "etdump.etdp", etrecord=MLP / "etrecord.bin")
    out = io.StringIO()
    write_table(table_input(xnnpack), out, width=400)
    names = [line.split("  ")[1] for line in out.getvalue().splitlines()[2:]]
    assert "XnnpackBackend: Fully Connected (NC, F32) GEMM #1" in names
    assert out.getvalue().splitlines()[0].split()[-3:] == ["delegated", "backend", "metadata"]

    events = [
        Event(profile_event=ProfileEvent(name="Method::execute", start_time=1, end_time=50)),
        Event(
            profile_event=ProfileEvent(
                delegate_debug_id_int=3, delegate_debug_metadata=b"\x07", start_time=2, end_time=9
            )
        ),
    ]
    inspector = Inspector(
        etdump_data=dumps(ETDump(run_data=[RunData(name="Execute", events=events)]))
    )
    out = io.StringIO()
    write_table(table_input(inspector), out, width=400)
    row = next(line for line in out.getvalue().splitlines() if "#3" in line)
    assert row.split()[1:3] == ["delegate", "#3"]
    assert "b'\\x07'" in row  # raw metadata when no parser knows the backend
    plain = io.StringIO()
    inspector.print_data_tabular(file=plain)
    assert "#3" not in plain.getvalue()  # the reference's table keeps its names


def test_typed_rows_match_the_event_blocks(mlp: Inspector) -> None:
    from delegate_lens.exporters import RowStats
    from delegate_lens.inspector import table_rows

    rows = list(table_rows(mlp))
    events = [(b.name, e) for b in mlp.event_blocks for e in b.events]
    assert len(rows) == len(events)
    for row, (block, event) in zip(rows, events):
        assert (row.block, row.event_name, list(row.op_types)) == (
            block,
            event.name,
            event.op_types,
        )
        assert row.is_delegated_op == event.is_delegated_op
        assert row.delegate_backend_name == event.delegate_backend_name
        perf = event.perf_data
        if perf is None:
            assert row.stats is None
        else:
            assert row.stats == RowStats(perf.p10, perf.p50, perf.p90, perf.avg, perf.min, perf.max)
            assert all(type(v) is float for v in row.stats.as_tuple())


def test_decoded_file_wide_columns_are_used_once_without_copies() -> None:
    from delegate_lens.etdump import load
    from delegate_lens.etdump._columns import file_wide_columns
    from delegate_lens.inspector._build import concat_runs

    etdump = load(MLP / "etdump.etdp")
    runs = [run.columns for run in etdump.run_data]
    wide = file_wide_columns(runs)
    assert wide is not None and len(wide["start_time"]) == sum(len(c) for c in runs)
    fc = concat_runs(etdump)
    assert np.shares_memory(fc.start_time, wide["start_time"])
    assert np.shares_memory(fc.end_time, wide["end_time"])
    # reordered or rebuilt runs are not the decoder's slices: concatenated, same values
    assert file_wide_columns(runs[::-1]) is None
    rebuilt = ETDump(
        run_data=[RunData(name=r.name, events=list(r.events)) for r in etdump.run_data]
    )
    assert file_wide_columns([r.columns for r in rebuilt.run_data]) is None
    again = concat_runs(rebuilt)
    assert not np.shares_memory(again.start_time, wide["start_time"])
    assert np.array_equal(again.start_time, fc.start_time)
    names = [fc.string(int(c)) for c in fc.name]
    assert [again.string(int(c)) for c in again.name] == names  # codes of its own table
