"""A corrupt ETRecord entry is an error wherever an ETRecord is named (issue 24 defect 5):
``inspect``, ``report`` and ``collect --etrecord`` exit 2 naming the entry, never rows
without op types; a corrupt sidecar fails its files in ``collect``."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main

MLP = VECTORS / "mlp_xnnpack"


def _corrupt_graph(tmp_path: Path) -> tuple[Path, str]:
    """The MLP ETRecord with its edge program's JSON cut in half."""
    source = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
    graph = next(n for n in source.namelist() if n.startswith("edge_dialect_exported_program/"))
    out = tmp_path / "corrupt.etrecord"
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            archive.writestr(info, data[: len(data) // 2] if info.filename == graph else data)
    return out, graph


@pytest.mark.parametrize("command", ["inspect", "report", "collect"])
def test_named_corrupt_etrecord_is_exit_2(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record, graph = _corrupt_graph(tmp_path)
    etdump = str(MLP / "etdump.etdp")
    out = str(tmp_path / "out")
    argv = {
        "inspect": ["inspect", etdump, "--etrecord", str(record)],
        "report": ["report", etdump, "--etrecord", str(record), "-o", out + ".html"],
        "collect": ["collect", etdump, "--etrecord", str(record), "-o", out, "-q"],
    }[command]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("error: ") and str(record) in last and repr(graph) in last
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.etrecord"]


def test_corrupt_sidecar_fails_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    record, graph = _corrupt_graph(tmp_path)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.etdp").write_bytes((MLP / "etdump.etdp").read_bytes())
    record.rename(folder / "a.etrecord")
    with pytest.raises(SystemExit):  # its only file failed: nothing collected
        main(["collect", str(folder), "-o", str(tmp_path / "D"), "-q"])
    err = capsys.readouterr().err
    assert "warning: skipped" in err and repr(graph) in err
    assert not (tmp_path / "D").exists()
