"""`delegate-lens etdump to-json / from-json / summary`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import VECTOR_NAMES, VECTORS

from delegate_lens.cli import main
from delegate_lens.etdump import load


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_to_json_prints_the_reference_view(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["etdump", "to-json", str(VECTORS / name / "etdump.etdp")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((VECTORS / name / "etdump.json").read_text())


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_from_json_then_to_json_round_trip(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = VECTORS / name / "etdump.json"
    out = tmp_path / "back.etdp"
    assert main(["etdump", "from-json", str(reference), "-o", str(out)]) == 0
    assert load(out) == load(VECTORS / name / "etdump.etdp")
    capsys.readouterr()
    assert main(["etdump", "to-json", "--compact", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(reference.read_text())


def test_console_script_round_trip(tmp_path: Path) -> None:
    src = VECTORS / "mlp_xnnpack" / "etdump.etdp"
    view = subprocess.run(
        [sys.executable, "-m", "delegate_lens", "etdump", "to-json", str(src)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "v.json").write_text(view)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "delegate_lens",
            "etdump",
            "from-json",
            str(tmp_path / "v.json"),
            "-o",
            str(tmp_path / "v.etdp"),
        ],
        check=True,
    )
    assert load(tmp_path / "v.etdp") == load(src)


def test_summary_of_the_big_vector(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["etdump", "summary", str(VECTORS / "gpt_portable_big" / "etdump.etdp")]) == 0
    out = capsys.readouterr().out
    assert "2,001 runs" in out and "482,002 events" in out
    assert "Execute" in out and "x2000" in out
    assert "OPERATOR_CALL" in out and "240,000" in out
    assert "allocators: none" in out
    assert "time span:" in out


def test_summary_counts_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from delegate_lens.etdump import ETDump, Event, ProfileEvent, RunData, dump

    one = ETDump(
        run_data=[RunData(name="Execute", events=[Event(profile_event=ProfileEvent("x"))])]
    )
    dump(one, tmp_path / "one.etdp")
    assert main(["etdump", "summary", str(tmp_path / "one.etdp")]) == 0
    assert "version 0, 1 run, 1 event\n" in capsys.readouterr().out


def test_summary_names_delegate_events_by_their_identifier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["etdump", "summary", str(VECTORS / "mlp_xnnpack" / "etdump.etdp")]) == 0
    out = capsys.readouterr().out
    assert "debug" in out and "25" in out
    assert "Fully Connected (NC, F32) GEMM #1" in out
    # unnamed debug events have no times: no "0 ticks" that reads like zero-length events
    assert [line.split() for line in out.splitlines() if "(no name)" in line] == [
        ["(no", "name)", "0", "-", "-", "25"]
    ]
    gemm2 = next(line for line in out.splitlines() if "GEMM #2" in line)
    assert gemm2.split()[-4:] == ["5", "0", "0", "0"]  # profiled, and really 0 ticks long


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *args], capture_output=True, text=True, check=False
    )


def test_bad_etdump_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"\x10\x00\x00\x00garbage-not-an-etdump")
    for action in ("to-json", "summary"):
        proc = _run_cli("etdump", action, str(bad))
        assert proc.returncode == 2
        assert proc.stdout == ""
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        assert str(bad) in lines[0] and "byte offset" in lines[0]


def test_missing_file_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = _run_cli("etdump", "summary", str(tmp_path / "nope.etdp"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "nope.etdp" in proc.stderr


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", ["not valid JSON", "line 1"]),
        (
            '{"run_data": [{"events": [{"profile_event": {"start_time": -1}}]}]}',
            ["run_data[0].events[0].profile_event.start_time"],
        ),
        ('{"run_data": [{"events": [{"profile_event": {"nme": "x"}}]}]}', ["unknown field 'nme'"]),
        (
            '{"run_data": [{"events": [{"debug_event": {"debug_entry": {"val": "Tensorr"}}}]}]}',
            ["unknown ValueType"],
        ),
        ('{"run_data": [{"events": [{"profile_event": {}, "debug_event": {}}]}]}', ["only one"]),
        (
            '{"run_data": [{"events": [{"profile_event": {"delegate_debug_metadata": [1, 256]}}]}]}',
            ["0..255"],
        ),
        ("[1, 2]", ["expected an object"]),
        (
            '{"run_data": [{"name": "a\\ud800", "events": []}]}',
            ["run_data[0].name: not valid Unicode"],
        ),
        ("{}", ["top level: missing field 'run_data'"]),
        ('{"run_data": [{"name": "x"}]}', ["run_data[0]: missing field 'events'"]),
    ],
)
def test_bad_json_is_a_format_error_naming_file_and_field(
    tmp_path: Path, content: str, words: list[str]
) -> None:
    src = tmp_path / "in.json"
    src.write_text(content)
    out = tmp_path / "out.etdp"
    proc = _run_cli("etdump", "from-json", str(src), "-o", str(out))
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: ")
    assert str(src) in line
    for word in words:
        assert word in line
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.json"]  # no partial or temporary file


def test_json_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text('{"run_data": ' + "[" * 100_000 + "]" * 100_000 + "}")
    proc = _run_cli("etdump", "from-json", str(src), "-o", str(tmp_path / "out.etdp"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {src}: not an ETDump JSON view (arrays or objects nested too deeply)"
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["in.json"]


@pytest.mark.parametrize("content", [b"\xff\xfe{}", b'{"run_data": [], "x": "\xc3\x28"}'])
def test_json_that_is_not_utf8_names_the_file(tmp_path: Path, content: bytes) -> None:
    src = tmp_path / "in.json"
    src.write_bytes(content)
    out = tmp_path / "out.etdp"
    proc = _run_cli("etdump", "from-json", str(src), "-o", str(out))
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith(f"error: {src}: not UTF-8 text") and "byte offset" in line
    assert [p.name for p in tmp_path.iterdir()] == ["in.json"]


def test_output_that_is_a_folder_names_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    proc = _run_cli(
        "etdump", "from-json", str(VECTORS / "mlp_xnnpack" / "etdump.json"), "-o", str(folder)
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {folder}: Is a directory"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any(folder.iterdir())


@pytest.mark.parametrize("top", ["-1", "x"])
def test_summary_top_must_be_a_count(top: str) -> None:
    proc = _run_cli("etdump", "summary", "--top", top, str(VECTORS / "mlp_xnnpack" / "etdump.etdp"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: delegate-lens etdump summary: argument --top: expected a number >= 0, got {top!r}"
    ]


def test_summary_counts_profile_and_debug_events_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A delegate logs a timed event and its output under one identifier: the mean ticks
    are over the profile events, and their count stands beside them, the debug events in a
    column of their own (the count of both used to stand beside the profile events' mean)."""
    from delegate_lens.etdump import (
        AllocationEvent,
        DebugEvent,
        ETDump,
        Event,
        ProfileEvent,
        RunData,
        dump,
    )

    events = [
        Event(profile_event=ProfileEvent(delegate_debug_id_int=0, start_time=100, end_time=400)),
        Event(debug_event=DebugEvent(delegate_debug_id_int=0)),
        Event(profile_event=ProfileEvent(delegate_debug_id_int=0, start_time=500, end_time=600)),
        Event(debug_event=DebugEvent(delegate_debug_id_int=0)),
        Event(profile_event=ProfileEvent("Method::execute", start_time=50, end_time=700)),
    ]
    dump(ETDump(run_data=[RunData(name="Execute", events=events)]), tmp_path / "d.etdp")
    assert main(["etdump", "summary", str(tmp_path / "d.etdp")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines.index("events by name (2 names):") + 1
    assert lines[head].split() == ["name", "profile", "mean", "ticks", "total", "ticks", "debug"]
    rows = {line[:20].strip(): line[20:].split() for line in lines[head + 1 :]}
    assert rows["(delegate id 0)"] == ["2", "200", "400", "2"]  # 2 timed, mean of those 2
    assert rows["Method::execute"] == ["1", "650", "650", "0"]

    # events of another kind (allocations) get a column of their own, only when present
    events.append(Event(allocation_event=AllocationEvent(allocator_id=0, allocation_size=64)))
    dump(ETDump(run_data=[RunData(name="Execute", events=events)]), tmp_path / "a.etdp")
    assert main(["etdump", "summary", str(tmp_path / "a.etdp")]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("events by name")) + 1
    assert lines[head].split()[-2:] == ["debug", "other"]
    no_name = next(line for line in lines if "(no name)" in line)
    assert no_name.split()[2:] == ["0", "-", "-", "0", "1"]
