"""`delegate-lens inspect`'s table: the same rows on a terminal and in a pipe (delegate rows
named with their backend), delegate metadata as one readable column per key (the first
sample's value), and a narrow terminal cutting the widest columns first, fairly."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("fresh_plugin_manager")]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from delegate_lens.backends_demo._demo import run_demo

    out = tmp_path_factory.mktemp("view")
    quiet = {"echo": lambda _: None, "show_table": False, "debug_buffer_size": 0}
    return run_demo("mlp", runs=2, out_dir=out, identifiers="str", **quiet).paths


def _table(
    demo: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    columns: str | None,
    mp: pytest.MonkeyPatch,
) -> list[list[str]]:
    if columns is None:
        mp.delenv("COLUMNS", raising=False)
    else:
        mp.setenv("COLUMNS", columns)
    capsys.readouterr()
    assert main(["inspect", str(demo["etdump"]), "--etrecord", str(demo["etrecord"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    return [
        line.split("  ") for line in lines if line.startswith(("Execute", "block", "event_block"))
    ]


def _cells(line: list[str]) -> list[str]:
    return [c.strip() for c in line if c.strip()]


def test_pipe_and_terminal_show_the_same_rows_and_metadata(
    demo: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipe = _table(demo, capsys, None, monkeypatch)
    wide = _table(demo, capsys, "400", monkeypatch)  # a terminal wide enough to cut nothing
    assert [_cells(r)[1] for r in pipe[1:]] == [_cells(r)[1] for r in wide[1:]]
    names = [_cells(r)[1] for r in pipe[1:]]
    assert "DemoBackend: linear_relu#0" in names and "DemoBackend: tan/div#4" in names
    for header in (pipe[0], wide[0]):
        assert _cells(header)[-3:] == ["kernel", "flops", "bytes_moved"]
    linear_relu = next(_cells(r) for r in pipe if "DemoBackend: linear_relu#0" in _cells(r))
    assert linear_relu[-3:] == ["demo_linear_relu_f32", "2,048", "2,560"]  # first sample


def test_a_narrow_terminal_cuts_fairly(
    demo: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _table(demo, capsys, "200", monkeypatch)
    row = next(_cells(r) for r in rows if "linear_relu" in "".join(r))
    assert row[-3] == "demo_linear_relu_f32"  # metadata no longer cut to 12 characters
    assert row[1] == "DemoBackend: linear_relu#0"
    assert row[8].endswith("...")  # the widest column (op types) gives up room first


@pytest.mark.parametrize("columns", ["150", "120"])
def test_a_narrow_terminal_keeps_the_identifier_of_delegate_rows(
    columns: str,
    demo: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 150 columns or fewer every delegate row read ``DemoBacke...``: the identifier
    that tells them apart was what got cut. Now the backend prefix or the middle goes."""
    pipe = [_cells(r)[1] for r in _table(demo, capsys, None, monkeypatch)[1:]]
    whole = [name for name in pipe if name.startswith("DemoBackend: ")]  # every cell whole
    assert len(whole) == 7
    cut = [_cells(r)[1] for r in _table(demo, capsys, columns, monkeypatch)[1:]]
    cut = [name for name in cut if any(name.endswith(full[-4:]) for full in whole)]
    assert len(cut) == 7 and len(set(cut)) == 7  # "#0".."#5", "...ition": still apart
    for short, full in zip(cut, whole):
        assert short != full and short.endswith(full[-4:])
