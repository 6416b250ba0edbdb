"""`delegate-lens inspect` and the built-in exporters: the JSON contract, the Chrome trace
nesting, csv/tsv/table, atomic -o, and one-line errors and warnings."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from delegate_lens.cli import main
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import reset_plugin_manager

# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


def _args(vector: Path) -> list[str]:
    args = [str(vector / "etdump.etdp"), "--etrecord", str(vector / "etrecord.bin")]
    if (vector / "debug.bin").exists():
        args += ["--debug-buffer", str(vector / "debug.bin")]
    return args


def _inspector(vector: Path) -> Inspector:
    debug = vector / "debug.bin"
    return Inspector(
        etdump_path=vector / "etdump.etdp",
        etrecord=str(vector / "etrecord.bin"),
        debug_buffer_path=debug if debug.exists() else None,
    )


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
def test_json_export_matches_the_event_blocks(vectors_dir: Path, tmp_path: Path, name: str) -> None:
    vector = vectors_dir / name
    out = tmp_path / "out.json"
    assert main(["inspect", *_args(vector), "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    inspector = _inspector(vector)
    assert [b["name"] for b in doc["blocks"]] == [b.name for b in inspector.event_blocks]
    for block, jblock in zip(inspector.event_blocks, doc["blocks"]):
        assert jblock["bundled_input_index"] == block.bundled_input_index
        assert len(jblock["events"]) == len(block.events)
        for event, jevent in zip(block.events, jblock["events"]):
            assert jevent["name"] == event.name
            perf = event.perf_data
            assert perf is not None
            jperf = jevent["perf_data"]
            assert jperf["raw"] == perf.raw  # the exact same floats
            assert [jperf[k] for k in ("p10", "p50", "p90", "avg", "min", "max")] == [
                perf.p10,
                perf.p50,
                perf.p90,
                perf.avg,
                perf.min,
                perf.max,
            ]
            assert jevent["op_types"] == event.op_types
            handles = event.debug_handles
            assert jevent["debug_handles"] == handles
            assert jevent["delegate_debug_identifier"] == event.delegate_debug_identifier
            assert jevent["is_delegated_op"] == event.is_delegated_op
            assert jevent["delegate_backend_name"] == event.delegate_backend_name
            assert jevent["stack_traces"] == event.stack_traces
            assert jevent["module_hierarchy"] == {
                node: None if f is None else {k: list(v) for k, v in f.items()}
                for node, f in event.module_hierarchy.items()
            }
            assert len(jevent["debug_data"]) == len(event.debug_data)
            for jvalue, tensor in zip(jevent["debug_data"], event.debug_data):
                value = np.asarray(tensor)  # a torch tensor, as the reference's
                assert jvalue["dtype"] == str(value.dtype)
                assert jvalue["shape"] == list(value.shape)
                np.testing.assert_array_equal(
                    np.asarray(jvalue["values"], dtype=value.dtype), value
                )
            assert jevent["delegate_debug_metadatas"] == event.delegate_debug_metadatas


def _check_nesting(slices: list[dict[str, Any]]) -> None:
    """On one track, slices sorted by start (longest first) must form a tree."""
    eps = 1e-6
    ordered = sorted(slices, key=lambda s: (s["ts"], -s["dur"]))
    stack: list[dict[str, Any]] = []
    for s in ordered:
        end = s["ts"] + s["dur"]
        while stack:
            top_end = stack[-1]["ts"] + stack[-1]["dur"]
            # closed before s starts (a zero-length s exactly at the end stays inside)
            if top_end < s["ts"] - eps or (top_end <= s["ts"] + eps and s["dur"] > 0):
                stack.pop()
            else:
                break
        if stack:
            parent = stack[-1]
            assert parent["ts"] - eps <= s["ts"], (parent, s)
            assert end <= parent["ts"] + parent["dur"] + eps, (parent, s)
        stack.append(s)


def _contains(outer: dict[str, Any], inner: dict[str, Any]) -> bool:
    eps = 1e-6
    return (
        outer["ts"] - eps <= inner["ts"]
        and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + eps
    )


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack"])
def test_chrome_trace_nests_slices_per_run(vectors_dir: Path, tmp_path: Path, name: str) -> None:
    vector = vectors_dir / name
    out = tmp_path / "trace.json"
    assert main(["inspect", *_args(vector), "--format", "chrome-trace", "-o", str(out)]) == 0
    trace = json.loads(out.read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    runs = json.loads((vector / "etdump.json").read_text())["run_data"]
    tracks: dict[int, list[dict[str, Any]]] = {}
    for s in slices:
        tracks.setdefault(s["tid"], []).append(s)
    assert sorted(tracks) == list(range(len(runs)))  # one track per run
    names = {
        e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"
    }
    assert names[0] == "run 0: Default" and names[1] == "run 1: Execute (forward)"
    for tid, track in tracks.items():
        _check_nesting(track)
        profiled = sum(1 for ev in runs[tid]["events"] if "profile_event" in ev)
        assert len(track) == profiled
        if runs[tid]["name"] != "Execute":
            continue
        (execute,) = [s for s in track if s["name"] == "Method::execute"]
        for s in track:
            if s is execute:
                continue
            assert _contains(execute, s), s
            iid = s["args"].get("instruction_id")
            if s["name"].startswith("native_call_"):
                parents = [
                    p
                    for p in track
                    if p["name"] == "OPERATOR_CALL" and p["args"]["instruction_id"] == iid
                ]
                assert len(parents) == 1 and _contains(parents[0], s)
            if "delegate_debug_identifier" in s["args"]:
                parents = [
                    p
                    for p in track
                    if p["name"] == "DELEGATE_CALL" and p["args"]["instruction_id"] == iid
                ]
                assert len(parents) == 1 and _contains(parents[0], s)
                assert s["args"]["backend"] == "XnnpackBackend"
        call = next(s for s in track if s["name"] == "DELEGATE_CALL")
        assert call["args"]["op_types"] and call["args"]["module"]
        assert call["args"]["debug_handles"]


def test_table_tsv_csv_to_stdout(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vector = vectors_dir / "conv_xnnpack"
    assert main(["inspect", *_args(vector)]) == 0
    table = capsys.readouterr().out
    assert "native_call_tan.out" in table and "OPERATOR_CALL" not in table
    assert main(["inspect", *_args(vector), "--format", "tsv"]) == 0
    tsv = capsys.readouterr().out.splitlines()
    assert tsv[0].startswith("\tevent_block_name\tevent_name\tp10 (ms)")
    assert main(["inspect", *_args(vector), "--format", "csv", "--target-time-scale", "us"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2 + 8  # every row, OPERATOR_CALL included
    tan = next(r for r in rows if r["event_name"] == "native_call_tan.out")
    assert tan["op_types"] == "aten.tan.default" and tan["debug_handles"] == "5"
    assert tan["n"] == "10" and tan["module_path"] == ""
    expected = json.loads((vector / "expected.json").read_text())
    ref = next(e for e in expected["blocks"][1]["events"] if e["name"] == "native_call_tan.out")
    assert float(tan["max (us)"]) == pytest.approx(max(ref["raw"]) * 1000)


def test_unknown_format_is_one_line_and_exit_2(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(vectors_dir / "conv_xnnpack" / "etdump.etdp"), "--format", "xml"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unknown format 'xml'" in err and "chrome-trace, csv, json, perfetto, table, tsv" in err


def test_no_exporter_loaded_says_so(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:

    try:
        with pytest.raises(SystemExit) as exc:
            main(
                ["-p", "no:exporters", "inspect", str(vectors_dir / "conv_xnnpack" / "etdump.etdp")]
            )
    finally:
        reset_plugin_manager()  # the -p option rebuilt the process's plugin manager
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no exporter plugin is loaded" in err


def test_bad_input_leaves_no_output_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"garbage!" * 3)
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(bad), "--format", "json", "-o", str(out)])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert list(tmp_path.iterdir()) == [bad]
    with pytest.raises(SystemExit):
        main(["inspect", str(tmp_path / "missing.etdp")])
    assert "missing.etdp" in capsys.readouterr().err


def test_warnings_print_as_one_line(vectors_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "inspect",
        str(vectors_dir / "conv_xnnpack" / "etdump.etdp"),
        "--etrecord",
        str(vectors_dir / "mlp_xnnpack" / "etrecord.bin"),
        "--format",
        "csv",
    ]
    assert main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("warning: ") for line in err)
    assert "does not match the ETDump" in err[0]


def test_output_into_a_missing_folder_is_one_line(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no" / "such" / "out.json"
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(vectors_dir / "conv_xnnpack" / "etdump.etdp"), "-o", str(target)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err and str(target) in err


def test_plugin_option_after_inspect_loads_the_plugin(
    vectors_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the command line: delegate-lens inspect ETDUMP ... -p PLUGIN
    (tmp_path / "names_exporter_plugin.py").write_text(
        "from delegate_lens import hookimpl\n"
        "from delegate_lens.exporters import Exporter\n"
        "def _names(inspector, stream):\n"
        "    stream.write(','.join(t.name for t in inspector.tables) + '\\n')\n"
        "@hookimpl\n"
        "def dl_exporters():\n"
        "    return [Exporter('names', 'block names', _names)]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    etdump = str(vectors_dir / "conv_xnnpack" / "etdump.etdp")
    assert main(["inspect", etdump, "-p", "names_exporter_plugin", "--format", "names"]) == 0
    assert capsys.readouterr().out == "Default,Execute\n"
    with pytest.raises(SystemExit) as exc:
        main(["inspect", etdump, "-p", "no_such_plugin_module_xyz"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_plugin_module_xyz" in err


def test_output_that_is_a_folder_is_one_line(
    vectors_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(vectors_dir / "conv_xnnpack" / "etdump.etdp"), "-o", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == f"error: cannot write {tmp_path}: it is a folder; give a file name\n"
    assert list(tmp_path.iterdir()) == []


def test_json_export_has_the_contract_keys(vectors_dir: Path, tmp_path: Path) -> None:
    """The keys issue 6 lists for ``--format json`` (more may follow; none may go)."""
    out = tmp_path / "out.json"
    assert main(["inspect", *_args(vectors_dir / "mlp_xnnpack"), "-f", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    event_keys = {
        "name",
        "perf_data",
        "op_types",
        "debug_handles",
        "delegate_debug_identifier",
        "is_delegated_op",
        "delegate_backend_name",
        "module_hierarchy",
        "stack_traces",
        "debug_data",
        "delegate_debug_metadatas",
    }
    assert doc["blocks"]
    for block in doc["blocks"]:
        assert {"name", "bundled_input_index", "events"} <= set(block)
        for event in block["events"]:
            assert event_keys <= set(event), set(event) ^ event_keys
            perf = event["perf_data"]
            assert perf is None or set(perf) == {"raw", "p10", "p50", "p90", "avg", "min", "max"}
            for frames in event["module_hierarchy"].values():
                assert frames is None or all(
                    isinstance(v, list) and len(v) == 2 for v in frames.values()
                )
            assert all(isinstance(v, (str, type(None))) for v in event["stack_traces"].values())
            for value in event["debug_data"]:
                assert set(value) == {"dtype", "shape", "values"}
    call = next(e for e in doc["blocks"][1]["events"] if e["name"] == "DELEGATE_CALL")
    assert [v["shape"] for v in call["debug_data"]] == [[2, 16], [], [2, 8]]


def test_module_paths_leave_out_the_root_module(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the delegate runs l1, relu, l2, relu, +1: relu and +1 sit in the root module (path "")
    vector = vectors_dir / "mlp_xnnpack"
    assert main(["inspect", *_args(vector), "--format", "csv"]) == 0
    rows = {r["event_name"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert rows["DELEGATE_CALL"]["module_path"] == "l1;l2"
    assert main(["inspect", *_args(vector), "--format", "chrome-trace"]) == 0
    trace = json.loads(capsys.readouterr().out)
    calls = [e for e in trace["traceEvents"] if e["name"] == "DELEGATE_CALL"]
    assert calls and all(e["args"]["module"] == ["l1", "l2"] for e in calls)


def test_failing_exporter_plugin_is_one_line_naming_it(
    vectors_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "broken_exporter_plugin.py").write_text(
        "from delegate_lens import hookimpl\n"
        "from delegate_lens.exporters import Exporter\n"
        "def write_half(inspector, stream):\n"
        "    stream.write('half a file')\n"
        "    raise KeyError('row')\n"
        "@hookimpl\n"
        "def dl_exporters():\n"
        "    return [Exporter('broken', 'fails half way', write_half)]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out" / "broken.txt"
    out.parent.mkdir()
    etdump = str(vectors_dir / "conv_xnnpack" / "etdump.etdp")
    for extra in (["-o", str(out)], []):
        with pytest.raises(SystemExit) as exc:
            main(["inspect", etdump, "-p", "broken_exporter_plugin", "-f", "broken", *extra])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err == (
            "error: exporter 'broken' (broken_exporter_plugin.write_half) failed: KeyError: 'row'\n"
        )
    assert list(out.parent.iterdir()) == []  # nothing half-written left behind
