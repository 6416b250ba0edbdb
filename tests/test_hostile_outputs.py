"""Outputs that are not plain files (issue 24, defects 1, 6 and 10): a FIFO, a device or
a link is written through, never replaced; ``-o -`` is standard output; a socket is
refused; an output that is one of the inputs is refused; a temporary file left by a killed
writer is removed by the next write to the same place."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.etdump import load, loads
from delegate_lens.fileio import write_atomic

ETDUMP = VECTORS / "mlp_xnnpack" / "etdump.etdp"
ETDUMP_JSON = VECTORS / "mlp_xnnpack" / "etdump.json"
ETRECORD = VECTORS / "mlp_xnnpack" / "etrecord.bin"


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    last = err.splitlines()[-1]  # warnings may come first, one line each
    assert last.startswith("error: ") and err.count("error: ") == 1, err
    return last


# ---------------------------------------------------------------- defect 1: not a regular file


def test_fifo_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["etdump", "from-json", str(ETDUMP_JSON), "-o", str(fifo)]) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still the FIFO
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
    assert len(got) == 1 and loads(got[0]) == load(ETDUMP)


def test_terminal_is_written_into(tmp_path: Path) -> None:
    # a pseudo-terminal's device (never /dev/null: replacing it, as root, breaks the machine)
    master, slave = os.openpty()
    try:
        device = os.ttyname(slave)
        before = os.stat(device)
        write_atomic(device, lambda stream: stream.write("hello"))
        after = os.stat(device)
        assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
        assert os.read(master, 100).replace(b"\r", b"") == b"hello"
    finally:
        os.close(slave)
        os.close(master)


def test_link_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.etdp"
    real.write_bytes(b"old")
    link = tmp_path / "link.etdp"
    link.symlink_to(real)
    assert main(["etdump", "from-json", str(ETDUMP_JSON), "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert load(real) == load(ETDUMP)


def test_dash_is_standard_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["etdump", "from-json", str(ETDUMP_JSON), "-o", "-"]) == 0
    assert loads(capfdbinary.readouterr().out) == load(ETDUMP)
    assert not Path("-").exists()


def test_dash_for_a_text_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["inspect", str(ETDUMP), "--etrecord", str(ETRECORD), "-f", "csv", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("block,event_block_name,event_name,")
    assert not Path("-").exists()


def test_socket_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(SystemExit) as info:
            main(["etdump", "from-json", str(ETDUMP_JSON), "-o", str(path)])
        assert info.value.code == 2
        assert "not a regular file, a FIFO or a terminal" in _error(capsys)
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        server.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sock"]


# ---------------------------------------------------------------- defect 6: output == input


@pytest.mark.parametrize("command", ["inspect", "report", "from-json"])
def test_output_that_is_an_input_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    etdump = tmp_path / "same.etdp"
    etdump.write_bytes(ETDUMP.read_bytes())
    source = tmp_path / "view.json"
    source.write_bytes(ETDUMP_JSON.read_bytes())
    argv = {
        "inspect": ["inspect", str(etdump), "-o", str(etdump)],
        "report": ["report", str(etdump), "-o", str(etdump)],
        "from-json": ["etdump", "from-json", str(source), "-o", str(source)],
    }[command]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "is an input of this command" in _error(capsys)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_etrecord_as_output_is_refused_through_a_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "etrecord.bin"
    record.write_bytes(ETRECORD.read_bytes())
    link = tmp_path / "out.csv"
    link.symlink_to(record)
    with pytest.raises(SystemExit):
        main(["inspect", str(ETDUMP), "--etrecord", str(record), "-f", "csv", "-o", str(link)])
    assert "is an input of this command" in _error(capsys)
    assert record.read_bytes() == ETRECORD.read_bytes()


def test_outside_the_command_line_an_input_may_be_rewritten(tmp_path: Path) -> None:
    from delegate_lens.fileio import read_input, write_bytes_atomic

    path = tmp_path / "f.bin"
    path.write_bytes(b"a")
    read_input(path, "file")
    write_bytes_atomic(path, b"b")  # a library caller may read, then rewrite a file
    assert path.read_bytes() == b"b"


# ---------------------------------------------------------------- defect 10: stale temporaries

_SLOW_WRITER = textwrap.dedent(
    """
    import sys, time
    from delegate_lens.fileio import write_atomic

    def write(stream):
        stream.write("partial")
        stream.flush()
        print("writing", flush=True)
        time.sleep(60)

    write_atomic(sys.argv[1], write)
    """
)


def test_temporary_of_a_killed_writer_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    writer = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, str(target)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        left = [p.name for p in tmp_path.iterdir()]
        assert len(left) == 1 and left[0].startswith(".report.html.")
        # a live writer's temporary is not touched by another write
        write_atomic(tmp_path / "report.html", lambda stream: stream.write("other"))
        assert (tmp_path / left[0]).exists()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert (tmp_path / left[0]).exists()  # kill -9: nothing cleaned it up
    write_atomic(target, lambda stream: stream.write("done"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    assert target.read_text() == "done"


def test_stale_temporary_folder_is_removed(tmp_path: Path) -> None:
    from delegate_lens.fileio import write_folder_atomic

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = tmp_path / f".out.{int(dead.stdout)}-abcd1234.tmp"
    stale.mkdir()
    (stale / "half.json").write_text("{")
    write_folder_atomic(tmp_path / "out", lambda folder: (folder / "a.txt").write_text("a"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
