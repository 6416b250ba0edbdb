"""The Inspector with installed plugins found through their entry points: the cycle-clock
plugin (plugins/cycle-clock) converts a delegate's clock as its configuration file says,
from Python and from ``delegate-lens inspect``; a converter callable still wins."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_inspector_synthetic import DELEGATED, delegate_run, make_etrecord

from delegate_lens.cli import main
from delegate_lens.config import CONFIG_ENV, OPTIONS_ENV, reset_config
from delegate_lens.etdump import ETDump, dumps
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import AUTOLOAD_ENV, reset_plugin_manager

try:
    importlib.metadata.distribution("delegate-lens-cycle-clock")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - plugin not installed
    pytest.skip("the cycle-clock plugin is not installed", allow_module_level=True)


@pytest.fixture(autouse=True)
def _configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Entry-point plugins on; a configuration giving TestNPU a 500 MHz clock."""
    for name in (CONFIG_ENV, OPTIONS_ENV, AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(
        '[cycle_clock]\nunit = "ns"\n\n[cycle_clock.backends]\nTestNPU = "500 MHz"\n'
    )
    reset_config()
    reset_plugin_manager()
    yield tmp_path
    reset_plugin_manager()
    reset_config()


def _etdump() -> bytes:
    # row "7": a delegate event from cycle 100 to cycle 300 of TestNPU's clock
    return dumps(ETDump(run_data=[delegate_run(0)]))


def _samples(inspector: Inspector) -> dict[str, Any]:
    return {
        e.name: e.perf_data.raw if e.perf_data else None for e in inspector.event_blocks[0].events
    }


def test_cycle_clock_plugin_converts_the_delegate_clock() -> None:
    inspector = Inspector(etdump_data=_etdump(), etrecord=make_etrecord(DELEGATED))
    samples = _samples(inspector)
    # 200 cycles at 500 MHz = 400 ns = 0.0004 ms
    assert samples["7"] == [pytest.approx(400 / 1e6)]
    # events of the runtime's own clock are not converted
    assert samples["DELEGATE_CALL"] == [890 / 1e6]


def test_backend_not_configured_keeps_the_factor(tmp_path: Path) -> None:
    (tmp_path / "delegate-lens.toml").write_text('[cycle_clock.backends]\nOtherNPU = "1 GHz"\n')
    reset_config()
    inspector = Inspector(etdump_data=_etdump(), etrecord=make_etrecord(DELEGATED))
    assert _samples(inspector)["7"] == [300 / 1e6 - 100 / 1e6]


def test_converter_callable_wins_over_the_plugin() -> None:
    inspector = Inspector(
        etdump_data=_etdump(),
        etrecord=make_etrecord(DELEGATED),
        delegate_time_scale_converter=lambda name, ticks: ticks / 1000,  # target units
    )
    assert _samples(inspector)["7"] == [pytest.approx(0.2)]


def test_cli_uses_the_configured_clock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    etdump = tmp_path / "etdump.etdp"
    etdump.write_bytes(_etdump())
    record = tmp_path / "etrecord.bin"
    make_etrecord(DELEGATED).save(record)
    assert main(["inspect", str(etdump), "--etrecord", str(record), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(e for e in doc["blocks"][0]["events"] if e["name"] == "7")
    assert row["delegate_backend_name"] == "TestNPU"
    assert row["perf_data"]["raw"] == [pytest.approx(400 / 1e6)]
    # blocking the plugin by name brings the plain factor back
    assert (
        main(
            [
                "inspect",
                str(etdump),
                "--etrecord",
                str(record),
                "-f",
                "json",
                "-p",
                "no:cycle_clock",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    row = next(e for e in doc["blocks"][0]["events"] if e["name"] == "7")
    assert row["perf_data"]["raw"] == [pytest.approx(200 / 1e6)]
