"""Hostile or mistaken inputs: zip bombs, truncated archives, one format given for another."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.errors import ConfigError, ETDumpFormatError, ETRecordFormatError
from delegate_lens.etdump import loads
from delegate_lens.etrecord import parse_etrecord

MLP = VECTORS / "mlp_xnnpack"


def _bomb(inflated: int, *, lie_to: int | None = None) -> bytes:
    """The MLP ETRecord with ``debug_handle_map`` replaced by ``inflated`` bytes that deflate
    to almost nothing; ``lie_to`` rewrites the headers' uncompressed size."""
    source = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            if info.filename == "debug_handle_map":
                data = b'{"forward": {}}' + b" " * (inflated - 15)
                archive.writestr("debug_handle_map", data, compress_type=zipfile.ZIP_DEFLATED)
            else:
                archive.writestr(info, source.read(info.filename))
    raw = bytearray(out.getvalue())
    if lie_to is not None:
        name = b"debug_handle_map"
        local = raw.find(b"PK\x03\x04")
        while local >= 0:  # every local header and central directory entry of the entry
            if raw[local + 30 : local + 30 + len(name)] == name:
                struct.pack_into("<I", raw, local + 22, lie_to)
            local = raw.find(b"PK\x03\x04", local + 4)
        central = raw.find(b"PK\x01\x02")
        while central >= 0:
            if raw[central + 46 : central + 46 + len(name)] == name:
                struct.pack_into("<I", raw, central + 24, lie_to)
            central = raw.find(b"PK\x01\x02", central + 4)
    return bytes(raw)


@pytest.fixture
def ratio_raised(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The compression-ratio limit raised on purpose (these bombs test the entry cap)."""
    from delegate_lens.config import reset_config

    monkeypatch.setenv(
        "DELEGATE_LENS_OPTIONS",
        "etrecord.max_compression_ratio = 1e9; etrecord.max_inflated_total = 1073741824",
    )
    reset_config()
    yield
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS")
    reset_config()


@pytest.mark.usefixtures("ratio_raised")
def test_zip_bomb_refused_from_its_header() -> None:
    bomb = _bomb(8 << 20)
    assert len(bomb) < 200_000  # 8 MiB of JSON deflates to a few KiB
    with pytest.raises(ETRecordFormatError) as info:
        parse_etrecord(bomb, max_entry_size=1 << 20)
    message = str(info.value)
    assert "entry 'debug_handle_map'" in message and "1,048,576-byte cap" in message
    assert "header declares 8,388,608 bytes" in message
    # under the cap it reads fine: the cap is what refused it
    assert parse_etrecord(bomb, max_entry_size=16 << 20).debug_handle_map == {"forward": {}}


@pytest.mark.usefixtures("ratio_raised")
def test_zip_bomb_with_lying_header_never_inflates_past_it() -> None:
    bomb = _bomb(8 << 20, lie_to=100)
    with pytest.raises(ETRecordFormatError) as info:
        parse_etrecord(bomb, max_entry_size=1 << 20)
    assert "entry 'debug_handle_map'" in str(info.value)


def test_cap_comes_from_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from delegate_lens.config import reset_config

    bomb = _bomb(4 << 20)
    raised = "etrecord.max_compression_ratio = 1e9"
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", f"{raised}; etrecord.max_entry_size = 1048576")
    reset_config()
    try:
        with pytest.raises(ETRecordFormatError, match="1,048,576-byte cap"):
            parse_etrecord(bomb)
        monkeypatch.setenv("DELEGATE_LENS_OPTIONS", f"{raised}; etrecord.max_entry_size = 'big'")
        reset_config()
        with pytest.raises(ConfigError, match=r"etrecord\.max_entry_size"):
            parse_etrecord(bomb)
        monkeypatch.setenv("DELEGATE_LENS_OPTIONS", raised)
        reset_config()
        assert parse_etrecord(bomb).methods == ("forward",)  # default entry cap: 1 GiB
    finally:
        monkeypatch.delenv("DELEGATE_LENS_OPTIONS")
        reset_config()
    with pytest.raises(ETRecordFormatError, match="inflates more than 100 times"):
        parse_etrecord(bomb)  # default ratio: 100


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.999])
def test_truncated_etrecord_says_truncated(cut: float) -> None:
    data = (MLP / "etrecord.bin").read_bytes()
    with pytest.raises(ETRecordFormatError) as info:
        parse_etrecord(data[: int(len(data) * cut)])
    message = str(info.value)
    assert "truncated" in message and "not a complete zip archive" in message
    assert "ETRECORD_V0" not in message


def test_etdump_given_as_etrecord_and_reverse() -> None:
    with pytest.raises(ETRecordFormatError, match="this is an ETDump"):
        parse_etrecord(MLP / "etdump.etdp")
    with pytest.raises(ETRecordFormatError, match=r"ExecuTorch program \(\.pte"):
        parse_etrecord(MLP / "model.pte")
    with pytest.raises(ETDumpFormatError, match=r"this is a zip archive \(an ETRecord\?\)"):
        loads((MLP / "etrecord.bin").read_bytes())
    with pytest.raises(ETDumpFormatError, match=r"ExecuTorch program \(\.pte"):
        loads((MLP / "model.pte").read_bytes())


def test_cli_names_the_wrong_kind_of_file(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "delegate_lens", *args], capture_output=True, text=True
        )

    proc = run("etdump", "summary", str(MLP / "etrecord.bin"))
    assert proc.returncode == 2 and "an ETRecord?" in proc.stderr
    proc = run("etrecord", "show", str(MLP / "etdump.etdp"))
    assert proc.returncode == 2 and "this is an ETDump" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_demo_backend_is_built_in_even_without_autoload() -> None:
    from delegate_lens.pluginmanager import build_plugin_manager, describe_plugin

    pm = build_plugin_manager(autoload=False)
    plugin = pm.get_plugin("demo_backend")
    assert plugin is not None and plugin.__name__ == "delegate_lens.backends_demo._plugin"
    assert describe_plugin("demo_backend", pm).endswith("(built-in)")
    assert pm.hook.dl_runtime_backend(backend_id="DemoBackend") is not None
    # -p MODULE naming it again is not a second registration
    pm = build_plugin_manager(["delegate_lens.backends_demo._plugin"], autoload=False)
    assert len([p for p in pm.get_plugins() if p is plugin]) == 1
    for option in ("no:demo_backend", "no:delegate_lens.backends_demo._plugin"):
        pm = build_plugin_manager([option], autoload=False)
        assert pm.get_plugin("demo_backend") is None
        assert pm.hook.dl_runtime_backend(backend_id="DemoBackend") is None
