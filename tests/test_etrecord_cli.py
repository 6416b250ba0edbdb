"""`delegate-lens etrecord show`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main

MLP = VECTORS / "mlp_xnnpack" / "etrecord.bin"
GPT = VECTORS / "gpt_portable" / "etrecord.bin"


def test_show_summarizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["etrecord", "show", str(MLP)]) == 0
    out = capsys.readouterr().out
    assert f"ETRecord {MLP}" in out
    assert "methods:          forward" in out
    assert "nodes:            6" in out
    assert "debug handles:    5 (1..5)" in out
    assert "instruction 1: backend XnnpackBackend, 0 identifier(s), 5 handle(s)" in out
    assert "export graph id:  140234037006416" in out
    assert "aten_linear_default" not in out  # nodes only with --nodes


def test_show_nodes_lists_handle_op_type_and_module_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["etrecord", "show", str(MLP), "--nodes", "--method", "forward"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.strip().startswith(("1 ", "3 ", "5 "))]
    assert ["1", "aten.linear.default", "aten_linear_default", "l1"] in rows
    assert ["3", "aten.linear.default", "aten_linear_default_1", "l2"] in rows
    assert ["5", "aten.add.Tensor", "aten_add_tensor", "(root)"] in rows


def test_show_gpt_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["etrecord", "show", str(GPT), "--nodes"]) == 0
    out = capsys.readouterr().out
    assert "nodes:            193" in out
    assert "delegate calls:   0" in out
    assert "74  aten.view_copy.default" in out
    assert out.count("aten.view_copy.default") == 1 + 74


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"definitely not a zip", "not an ETRecord"),
        (b"", "not an ETRecord"),
    ],
)
def test_bad_file_is_one_line_and_exit_2(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.etrecord"
    path.write_bytes(content)
    result = _run("etrecord", "show", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {path}: {expected}")


@pytest.mark.parametrize(
    ("entry", "data"),
    [
        ("edge_dialect_exported_program/forward", b'{"graph_module": 5}'),
        ("exported_program", b"not json"),
    ],
)
def test_broken_graph_entry_is_one_line_and_no_partial_summary(
    tmp_path: Path, entry: str, data: bytes
) -> None:
    import zipfile

    path = tmp_path / "broken.etrecord"
    with zipfile.ZipFile(MLP) as src, zipfile.ZipFile(path, "w") as out:
        for name in src.namelist():
            out.writestr(name, data if name == entry else src.read(name))
    result = _run("etrecord", "show", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert f"entry {entry!r}" in result.stderr


def test_missing_file_and_unknown_method_exit_2(tmp_path: Path) -> None:
    result = _run("etrecord", "show", str(tmp_path / "absent"))
    assert result.returncode == 2 and "No such file" in result.stderr
    assert result.stderr.count("\n") == 1
    result = _run("etrecord", "show", str(MLP), "--method", "decode")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {MLP}: no method 'decode' (methods: forward)"


def test_show_does_not_import_torch() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from delegate_lens.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['etrecord', 'show', {str(GPT)!r}, '--nodes']) == 0\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_show_prints_int_identifiers_as_ints_and_str_identifiers_quoted() -> None:
    import io

    from delegate_lens.cli._etrecord_cmd import write_summary
    from delegate_lens.etrecord import ETRecord, parse_etrecord
    from delegate_lens.etrecord._maps import dumps_json

    entries = parse_etrecord(MLP).entries()
    entries["delegate_map"] = dumps_json(
        {"forward": {1: {"name": "NPU", "delegate_map": {7: [1], "fused relu": [1, 2]}}}}
    )
    out = io.StringIO()
    write_summary(ETRecord.from_entries(entries), ("forward",), nodes=False, out=out)
    lines = out.getvalue().splitlines()
    assert "      7 -> 1" in lines
    assert "      'fused relu' -> 1, 2" in lines
