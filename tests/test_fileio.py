"""Atomic writes: a failure never leaves a partial file nor destroys the old one."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Any

import pytest

from delegate_lens.fileio import write_atomic, write_bytes_atomic


def test_writes_bytes_and_text(tmp_path: Path) -> None:
    write_bytes_atomic(tmp_path / "a.bin", b"\x00\x01")
    write_atomic(tmp_path / "a.txt", lambda f: f.write("héllo"))
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "héllo"


def test_failure_keeps_the_old_file_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")

    def explode(stream: IO[Any]) -> None:
        stream.write("half a fi")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_atomic(target, explode)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "x.bin"
    target.write_bytes(b"a")
    os.chmod(target, 0o600)
    write_bytes_atomic(target, b"b")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_bytes() == b"b"


def test_missing_folder_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "f.bin"
    with pytest.raises(OSError) as info:
        write_bytes_atomic(target, b"x")
    assert info.value.filename == str(target)


def test_target_that_is_a_folder_names_it_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    with pytest.raises(OSError) as info:
        write_bytes_atomic(target, b"x")
    assert info.value.filename == str(target)
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any(target.iterdir())


@pytest.mark.parametrize("what", ["etdump", "etrecord", "inspector-debug-buffer"])
def test_missing_input_files_are_our_error_and_still_oserrors(tmp_path: Path, what: str) -> None:
    from delegate_lens.errors import DelegateLensError, InputFileError, MissingFileError

    missing = tmp_path / "nope.bin"
    with pytest.raises(MissingFileError) as info:
        if what == "etdump":
            from delegate_lens.etdump import load

            load(missing)
        elif what == "etrecord":
            from delegate_lens.etrecord import parse_etrecord

            parse_etrecord(missing)
        else:
            from conftest import VECTORS

            from delegate_lens.inspector import Inspector

            Inspector(
                etdump_path=VECTORS / "mlp_xnnpack" / "etdump.etdp", debug_buffer_path=missing
            )
    err = info.value
    assert isinstance(err, DelegateLensError) and isinstance(err, InputFileError)
    assert isinstance(err, FileNotFoundError) and err.filename == str(missing)
    assert str(err).startswith(f"{missing}: cannot read the ")


def test_a_folder_given_as_input_is_an_input_file_error(tmp_path: Path) -> None:
    from delegate_lens.errors import InputFileError, MissingFileError
    from delegate_lens.etdump import load

    with pytest.raises(InputFileError) as info:
        load(tmp_path)
    assert not isinstance(info.value, MissingFileError)
    assert str(tmp_path) in str(info.value)
