"""The two plugin distributions of plugins/, end to end through their real entry points.

A backend "MyNPU" logs structured metadata and cycle timestamps through the runtime's
ETDumpGen; json-metadata encodes it (runtime) and parses it back (Inspector), cycle-clock
turns the cycles into time; both read ``delegate-lens.toml`` in the working directory, as
a user would configure them, and ``delegate-lens inspect`` runs as a separate process.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_inspector_synthetic import make_etrecord

from delegate_lens.config import reset_config
from delegate_lens.etdump import load
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager
from delegate_lens.runtime import _event_tracer as et
from delegate_lens.runtime._etdump_gen import ETDumpGen

DISTS = ("delegate-lens-json-metadata", "delegate-lens-cycle-clock")

CONFIG = """\
[json_metadata]
backends = ["MyNPU"]

[cycle_clock]
unit = "ns"

[cycle_clock.backends]
MyNPU = "500 MHz"   # 2 ns per cycle
"""

ETRECORD = {
    "forward": {
        "nodes": [
            ("aten_conv", "aten.convolution.default", 1),
            ("aten_relu", "aten.relu.default", 2),
        ],
        "handles": {0: [1, 2]},
        "delegates": {0: {"name": "MyNPU", "delegate_map": {"7": [1, 2]}}},
    }
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for dist in DISTS:
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{dist} is not installed: run scripts/install.sh --dev")
    for name in ("DELEGATE_LENS_CONFIG", "DELEGATE_LENS_OPTIONS", AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(CONFIG)
    reset_plugin_manager()
    reset_config()
    yield tmp_path
    reset_plugin_manager()
    reset_config()


def _trace(path: Path, runs: int) -> None:
    """What a runtime with the MyNPU backend records: one delegate event per run."""
    gen = ETDumpGen(clock=iter(range(0, 10**9, 1000)).__next__)
    for i in range(runs):
        gen.create_event_block("Execute")
        gen.set_chain_debug_handle(0, 0)
        gen.delegate_backend_id = "MyNPU"
        start, end = 100, 300 + 50 * i  # device cycles, read back after the run
        metadata = {"flops": 1000 + i, "kernel": "gemm"}
        et.event_tracer_log_profiling_delegate(gen, None, 7, start, end, metadata)
        gen.delegate_backend_id = None
        gen.add_profile_event("Method::execute", 0, -1, 10_000 * i, 10_000 * i + 900)
    gen.write(path)


def _inspect(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _row(result: subprocess.CompletedProcess[str], name: str) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    blocks = json.loads(result.stdout)["blocks"]
    row: dict[str, Any] = next(e for b in blocks for e in b["events"] if e["name"] == name)
    return row


def test_json_metadata_and_cycle_clock_through_inspect(workdir: Path) -> None:
    _trace(workdir / "run.etdp", runs=3)
    make_etrecord(ETRECORD).save(workdir / "etrecord.bin")

    # runtime: json-metadata encoded the dicts as compact JSON
    cols = load(workdir / "run.etdp").run_data[0].columns
    delegate = next(i for i in range(len(cols)) if cols.delegate_debug_id_int[i] == 7)
    assert json.loads(cols.metadata(delegate)) == {"flops": 1000, "kernel": "gemm"}

    args = ["inspect", "run.etdp", "--etrecord", "etrecord.bin", "-f", "json"]
    row = _row(_inspect(workdir, *args), "7")
    assert row["delegate_backend_name"] == "MyNPU" and row["is_delegated_op"] is True
    assert row["op_types"] == ["aten.convolution.default", "aten.relu.default"]
    # Inspector: json-metadata parsed one row's samples into a dict of lists
    assert row["delegate_debug_metadatas"] == {
        "flops": [1000, 1001, 1002],
        "kernel": ["gemm", "gemm", "gemm"],
    }
    # cycle-clock: (end - start) cycles at 500 MHz = 2 ns each, reported in ms
    expected = [(200 + 50 * i) * 2 / 1e6 for i in range(3)]
    assert row["perf_data"]["raw"] == pytest.approx(expected, rel=1e-9)
    # the runtime's own events keep the runtime clock (ns)
    execute = _row(_inspect(workdir, *args), "Method::execute")
    assert execute["perf_data"]["raw"] == pytest.approx([900 / 1e6] * 3)


def test_blocking_the_plugins_keeps_raw_values(workdir: Path) -> None:
    _trace(workdir / "run.etdp", runs=2)
    make_etrecord(ETRECORD).save(workdir / "etrecord.bin")
    args = ["-p", "no:json_metadata", "inspect", "run.etdp", "--etrecord", "etrecord.bin"]
    row = _row(_inspect(workdir, *args, "-p", "no:cycle_clock", "-f", "json"), "7")
    # nothing parses MyNPU's bytes: the Inspector keeps them (hex in JSON); times are the
    # raw ticks read as ns
    raw = [b'{"flops":%d,"kernel":"gemm"}' % (1000 + i) for i in range(2)]
    assert row["delegate_debug_metadatas"] == [data.hex() for data in raw]
    assert row["perf_data"]["raw"] == pytest.approx([200 / 1e6, 250 / 1e6])


def test_bad_clock_rate_is_one_line_naming_file_and_key(workdir: Path) -> None:
    _trace(workdir / "run.etdp", runs=1)
    make_etrecord(ETRECORD).save(workdir / "etrecord.bin")
    (workdir / "delegate-lens.toml").write_text(CONFIG.replace('"500 MHz"', '"fast"'))
    result = _inspect(workdir, "inspect", "run.etdp", "--etrecord", "etrecord.bin")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: delegate-lens.toml: cycle_clock.backends.MyNPU: expected a clock rate such "
        "as '800 MHz' or a number of Hz, got 'fast'"
    ]
