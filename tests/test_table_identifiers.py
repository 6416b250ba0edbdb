"""`inspect`'s table on a narrow terminal keeps what tells delegate rows apart, the
identifier at the end of their names: the backend prefix or the middle of the name is cut
instead (``DemoBa... #3``, ``Convolut...IGEMM #1``). A pipe gets the same rows, whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.exporters import RowStats, TableInput, TableRow, table_cells
from delegate_lens.exporters._table import _delegate_row_name

pytestmark = pytest.mark.usefixtures("fresh_plugin_manager")

CELLS = re.compile(r"\S+(?: \S+)*")  # cells are two or more spaces apart


def _row(i: int, name: str, identifier: int | str | None, backend: str | None) -> TableRow:
    return TableRow(
        block="Execute",
        block_index=1,
        row=i,
        event_name=name,
        stats=RowStats(0.5, 0.5, 0.5, 0.5, 0.5, 0.5),
        instruction_id=0,
        identifier=identifier,
        op_types=("aten.linear.default", "aten.relu.default", "aten.tan.default"),
        delegate_backend_name=backend,
        method="forward",
        n_samples=1,
    )


@pytest.mark.parametrize("width", [100, 90, 80])
def test_demo_rows_keep_their_number_on_a_narrow_terminal(width: int) -> None:
    # as the demo logs them: int identifiers, the event named by its identifier
    rows = [_row(i, str(i), i, "DemoBackend") for i in range(7)]
    rows.append(_row(7, "DELEGATE_CALL", None, "DemoBackend"))
    _headers, body = table_cells(TableInput(unit="ms", rows=rows), width=width)
    names = [row[1] for row in body[:7]]
    assert [name.rsplit(" ", 1)[-1] for name in names] == [f"#{i}" for i in range(7)]
    assert all(name.startswith("DemoBa") and "..." in name for name in names)  # prefix cut
    assert body[7][1] in ("DELEGATE_CALL", "DELEGATE_...")  # other names lose their end


def test_each_form_of_name_keeps_its_identifier() -> None:
    demo = _delegate_row_name("3", "DemoBackend", 3)
    assert str(demo) == "DemoBackend #3" and demo.cut(14) == "DemoBackend #3"
    assert demo.cut(12) == "DemoBa... #3"
    add = _delegate_row_name("Add (ND) #1", "XnnpackBackend", "Add (ND) #1")
    assert add.cut(20) == "Xnnpac...Add (ND) #1"  # the backend prefix is cut first
    assert add.cut(12) == "Add (ND) #1"  # then dropped
    conv = "Convolution (NHWC, F32) IGEMM #1"
    long = _delegate_row_name(conv, "XnnpackBackend", conv)
    assert long.cut(19) == "Convolut...IGEMM #1"  # then the middle of the name goes
    assert long.cut(12).endswith(" #1") and len(long.cut(12)) == 12
    named = _delegate_row_name("conv_layer_one", "NPU", 3)
    assert str(named) == "conv_layer_one [NPU #3]"
    assert named.cut(15) == "conv_lay... #3]"
    label = _delegate_row_name("linear_relu#0", "DemoBackend", "linear_relu#0")
    assert label.cut(12) == "line...elu#0"
    for width in range(12, 40):
        for name in (demo, add, long, named, label):
            assert len(name.cut(width)) <= width


def _delegate_names(capsys: pytest.CaptureFixture[str], vector: str) -> list[str]:
    folder = VECTORS / vector
    argv = ["inspect", str(folder / "etdump.etdp"), "--etrecord", str(folder / "etrecord.bin")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [CELLS.findall(line) for line in lines[2:]]
    return [
        cells[1]
        for cells in rows
        if cells and cells[-1] == "XnnpackBackend" and {"yes", "True"} & set(cells)
    ]


@pytest.mark.parametrize("columns", ["150", "120"])
@pytest.mark.parametrize("vector", ["mlp_xnnpack", "conv_xnnpack"])
def test_xnnpack_rows_stay_apart_at_the_terminal_width(
    vector: str,
    columns: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    whole = _delegate_names(capsys, vector)  # a pipe: every name whole
    assert whole and all(name.startswith("XnnpackBackend: ") for name in whole)
    monkeypatch.setenv("COLUMNS", columns)
    cut = _delegate_names(capsys, vector)
    assert len(cut) == len(whole)
    assert any(a != b for a, b in zip(cut, whole))  # the terminal is narrower than the names
    for short, full in zip(cut, whole):
        assert short.endswith(full[-3:])  # "... #1": the identifier's number stays
        assert not short.endswith("...")
    assert len(set(cut)) == len(cut)  # and the rows can still be told apart


def test_a_pipe_gets_the_view_with_the_reference_s_column_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What docs/inspector.md says a pipe gets: the command's view (delegate rows named
    with their backend), the reference's column names, no cell shortened."""
    monkeypatch.delenv("COLUMNS", raising=False)
    folder: Path = VECTORS / "mlp_xnnpack"
    assert (
        main(["inspect", str(folder / "etdump.etdp"), "--etrecord", str(folder / "etrecord.bin")])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert CELLS.findall(lines[0])[:2] == ["event_block_name", "event_name"]
    assert "is_delegated_op" in lines[0] and "delegate_backend_name" in lines[0]
    names = [CELLS.findall(line)[1] for line in lines[2:] if line.strip()]
    assert "XnnpackBackend: Fully Connected (NC, F32) GEMM #1" in names
    assert not any(cell.endswith("...") for line in lines for cell in CELLS.findall(line))
