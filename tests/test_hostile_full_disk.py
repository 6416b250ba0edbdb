"""A write that fails without naming a file (``ENOSPC``: a full disk, ``/dev/full``) is
one line naming the output: every command writes through :mod:`delegate_lens.fileio`,
which names it (before, ``error: [Errno 28] No space left on device``)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO, Any

import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.fileio import STDOUT_NAME, write_atomic, write_folder_atomic

ETDUMP = VECTORS / "mlp_xnnpack" / "etdump.etdp"
ETDUMP_JSON = VECTORS / "mlp_xnnpack" / "etdump.json"
ETRECORD = VECTORS / "mlp_xnnpack" / "etrecord.bin"
FULL = "/dev/full"

needs_dev_full = pytest.mark.skipif(
    not os.path.exists(FULL), reason="no /dev/full (a device that fails every write: ENOSPC)"
)


def _full_disk(stream: IO[Any]) -> None:
    stream.write("the first bytes")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as a write to a full disk


@needs_dev_full
@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", str(ETDUMP), "-o", FULL],
        ["inspect", str(ETDUMP), "--etrecord", str(ETRECORD), "-f", "json", "-o", FULL],
        ["report", str(ETDUMP), "-o", FULL],
        ["etdump", "from-json", str(ETDUMP_JSON), "-o", FULL],  # a binary output
    ],
    ids=["inspect-table", "inspect-json", "report", "etdump-from-json"],
)
def test_dev_full_is_one_line_naming_the_file(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    last = err.splitlines()[-1]  # warnings may come first, one line each
    assert last == f"error: {FULL}: No space left on device", err


def test_full_disk_names_the_file_not_the_temporary_and_keeps_the_old(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(OSError) as info:
        write_atomic(target, _full_disk)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert str(info.value) == f"[Errno 28] No space left on device: '{target}'"
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


def test_full_disk_in_a_folder_output_names_the_folder(tmp_path: Path) -> None:
    def write(folder: Path) -> None:
        with open(folder / "part.txt", "w") as stream:
            _full_disk(stream)

    with pytest.raises(OSError) as info:
        write_folder_atomic(tmp_path / "out", write)
    assert info.value.filename == str(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_standard_output_is_named_and_a_broken_pipe_stays_one() -> None:
    with pytest.raises(OSError) as info:
        write_atomic("-", _full_disk)
    assert info.value.filename == STDOUT_NAME

    def closed_reader(stream: IO[Any]) -> None:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    with pytest.raises(BrokenPipeError):  # the CLI stops quietly on it, as Unix tools do
        write_atomic("-", closed_reader)


def test_an_error_that_names_its_own_file_keeps_it(tmp_path: Path) -> None:
    def read_elsewhere(stream: IO[Any]) -> None:
        open(tmp_path / "missing.txt").close()

    with pytest.raises(FileNotFoundError) as info:
        write_atomic(tmp_path / "out.txt", read_elsewhere)
    assert info.value.filename == str(tmp_path / "missing.txt")
