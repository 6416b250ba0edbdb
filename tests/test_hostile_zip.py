"""Zip bombs in an ETRecord (issue 24, defect 2): refused by compression ratio and by a
total, whatever the entry cap; limits raised only by a configuration the user chose; each
ETRecord read once per process. The bombs are made here."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.config import reset_config
from delegate_lens.errors import ETRecordFormatError
from delegate_lens.etrecord import load_etrecord, parse_etrecord

MLP = VECTORS / "mlp_xnnpack"


@pytest.fixture(autouse=True)
def fresh_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS", raising=False)
    monkeypatch.delenv("DELEGATE_LENS_CONFIG", raising=False)
    reset_config()
    yield
    reset_config()


def _rewrite(replace: dict[str, bytes], *, lie: bool = False) -> bytes:
    """The MLP ETRecord with the entries of ``replace`` deflated in; ``lie``: their
    headers claim 100 bytes."""
    source = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            data = replace.get(info.filename)
            if data is None:
                archive.writestr(info, source.read(info.filename))
            else:
                archive.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    raw = bytearray(out.getvalue())
    if lie:
        for name in replace:
            key = name.encode()
            for magic, name_at, size_at in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
                at = raw.find(magic)
                while at >= 0:
                    if raw[at + name_at : at + name_at + len(key)] == key:
                        struct.pack_into("<I", raw, at + size_at, 100)
                    at = raw.find(magic, at + 4)
    return bytes(raw)


def _padded_map(size: int) -> bytes:
    return b'{"forward": {}}' + b" " * (size - 15)


def test_bomb_under_the_entry_cap_is_refused_by_its_ratio() -> None:
    bomb = _rewrite({"debug_handle_map": _padded_map(64 << 20)})
    assert len(bomb) < 1 << 20  # 64 MiB in under a MiB: far under the 1 GiB entry cap
    with pytest.raises(ETRecordFormatError) as info:
        parse_etrecord(bomb)
    assert "entry 'debug_handle_map' inflates more than 100 times" in str(info.value)


def test_lying_header_is_refused_without_inflating() -> None:
    bomb = _rewrite({"debug_handle_map": _padded_map(64 << 20)}, lie=True)
    tracemalloc.start()
    try:
        with pytest.raises(ETRecordFormatError, match="entry 'debug_handle_map'"):
            parse_etrecord(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # never near the 64 MiB it would inflate to


def _whitespace(size: int) -> bytes:
    """JSON whitespace that deflates only about 4 times (2 bits a byte)."""
    import random

    return bytes(random.Random(size).choices(b" \t\n\r", k=size))


def test_many_modest_entries_are_refused_by_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    # each entry alone is within the ratio; together they pass the archive's total
    record = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
    graph = next(n for n in record.namelist() if n.startswith("edge_dialect_exported_program/"))
    pad = _whitespace(6 << 20)  # each entry inflates about 4.5 MiB past its stored size
    bomb = _rewrite(
        {graph: record.read(graph) + pad, "debug_handle_map": record.read("debug_handle_map") + pad}
    )
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "etrecord.max_inflated_total = 6291456")
    reset_config()
    parsed = parse_etrecord(bomb)  # the maps alone: within the 6 MiB
    with pytest.raises(ETRecordFormatError, match="past 6,291,456 inflated bytes"):
        parsed.validate()  # the graph's bytes go past the total
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "etrecord.max_inflated_total = 16777216")
    reset_config()
    parse_etrecord(bomb).validate()


def test_cli_refuses_a_bomb_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bomb.etrecord"
    path.write_bytes(_rewrite({"debug_handle_map": _padded_map(64 << 20)}))
    with pytest.raises(SystemExit) as info:
        main(["etrecord", "show", str(path)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a zip bomb?" in err and str(path) in err


def test_settings_file_in_the_current_folder_cannot_raise_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = _rewrite({"debug_handle_map": _padded_map(8 << 20)})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(
        "[etrecord]\nmax_compression_ratio = 1e9\nmax_inflated_total = 1073741824\n"
    )
    reset_config()
    with pytest.raises(ETRecordFormatError, match="inflates more than 100 times"):
        parse_etrecord(bomb)
    # ... but it may lower one
    (tmp_path / "delegate-lens.toml").write_text("[etrecord]\nmax_compression_ratio = 2\n")
    reset_config()
    with pytest.raises(ETRecordFormatError, match="inflates more than 2 times"):
        parse_etrecord(_rewrite({"debug_handle_map": _padded_map(4 << 20)}))
    # the user raises it on purpose: a file named by DELEGATE_LENS_CONFIG, or the options
    chosen = tmp_path / "chosen.toml"
    chosen.write_text("[etrecord]\nmax_compression_ratio = 1e9\n")
    monkeypatch.setenv("DELEGATE_LENS_CONFIG", str(chosen))
    reset_config()
    assert parse_etrecord(bomb).debug_handle_map == {"forward": {}}
    monkeypatch.delenv("DELEGATE_LENS_CONFIG")
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "etrecord.max_compression_ratio = 1e9")
    reset_config()
    assert parse_etrecord(bomb).debug_handle_map == {"forward": {}}


def test_an_etrecord_is_read_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import delegate_lens.etrecord._record as record_module

    path = tmp_path / "e.etrecord"
    path.write_bytes((MLP / "etrecord.bin").read_bytes())
    calls: list[str] = []
    real = record_module.parse_etrecord

    def counting(source: object, **kwargs: object) -> object:
        calls.append(str(source))
        return real(source, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(record_module, "parse_etrecord", counting)
    etdump = str(MLP / "etdump.etdp")
    main(["compare", etdump, etdump, "--etrecord", str(path), "--alpha", "0.1"])  # 5 runs
    capsys.readouterr()
    assert calls == [str(path)]
    assert load_etrecord(path) is load_etrecord(path)
    path.write_bytes(path.read_bytes())  # rewritten: read again
    before = load_etrecord(str(path))
    path.touch()
    import os

    os.utime(path, ns=(1, 1))
    assert load_etrecord(str(path)) is not before
