"""delegate-lens-cycle-clock, as delegate-lens finds it: through its entry point."""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from delegate_lens.config import ConfigError
from delegate_lens.hookcalls import call_hook
from delegate_lens.pluginmanager import AUTOLOAD_ENV, build_plugin_manager

DIST = "delegate-lens-cycle-clock"


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("DELEGATE_LENS_CONFIG", "DELEGATE_LENS_OPTIONS", AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(
        '[cycle_clock.backends]\nNPU = "800 MHz"\nDSP = 1.2e9\nMCU = "32768 Hz"\n'
    )
    return tmp_path


@pytest.fixture(scope="module")
def pm() -> Any:
    return build_plugin_manager()


def to_time(pm: Any, backend: str, ticks: int, event: str = "0") -> Any:
    return call_hook(
        "dl_delegate_time_scale", pm=pm, backend_id=backend, event_name=event, ticks=ticks
    )


def test_found_through_its_entry_point(pm: Any) -> None:
    (ep,) = importlib.metadata.entry_points(group="delegate_lens", name="cycle_clock")
    assert ep.dist is not None and ep.dist.metadata["Name"] == DIST
    plugin = pm.get_plugin("cycle_clock")
    assert plugin is not None and plugin is ep.load()
    assert pm.plugin_sources["cycle_clock"].version == importlib.metadata.version(DIST)
    assert sorted(caller.name for caller in pm.get_hookcallers(plugin)) == [
        "dl_delegate_time_scale",
        "dl_delegate_time_scale_array",
    ]


def test_cycles_to_nanoseconds(pm: Any) -> None:
    assert to_time(pm, "NPU", 1600) == pytest.approx(2000.0)
    assert to_time(pm, "DSP", 1200) == pytest.approx(1000.0)
    assert to_time(pm, "MCU", 32768) == pytest.approx(1e9)
    assert to_time(pm, "NPU", 0) == 0.0


def test_unit_setting(pm: Any, _config_dir: Path) -> None:
    (_config_dir / "delegate-lens.toml").write_text(
        '[cycle_clock]\nunit = "us"\n[cycle_clock.backends]\nNPU = "2 GHz"\n'
    )
    assert to_time(pm, "NPU", 4000) == pytest.approx(2.0)


def test_unconfigured_backend_is_left_alone(pm: Any) -> None:
    assert to_time(pm, "Other", 1600) is None


def test_environment_override(pm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", 'cycle_clock.backends.NPU = "1 kHz"')
    assert to_time(pm, "NPU", 3) == pytest.approx(3e6)
    assert to_time(pm, "DSP", 1200) == pytest.approx(1000.0)


@pytest.mark.parametrize(
    ("toml", "key", "problem"),
    [
        ('[cycle_clock.backends]\nNPU = "fast"\n', "cycle_clock.backends.NPU", "'800 MHz'"),
        ("[cycle_clock.backends]\nNPU = -5\n", "cycle_clock.backends.NPU", "positive"),
        ('[cycle_clock]\nunit = "min"\n', "cycle_clock.unit", "one of"),
        ('[cycle_clock]\nunti = "ns"\n', "cycle_clock.unti", "did you mean 'unit'"),
        ('[cycle_clock]\nbackends = "NPU"\n', "cycle_clock.backends", "expected a table"),
    ],
)
def test_bad_configuration_names_file_and_key(
    pm: Any, _config_dir: Path, toml: str, key: str, problem: str
) -> None:
    (_config_dir / "delegate-lens.toml").write_text(toml)
    with pytest.raises(ConfigError, match=rf"^delegate-lens\.toml: {key}: ") as info:
        to_time(pm, "NPU", 1)
    assert problem in str(info.value)


def test_parse_rate() -> None:
    from delegate_lens_cycle_clock import parse_rate

    assert parse_rate("800 MHz") == 8e8
    assert parse_rate("1.5GHz") == 1.5e9
    assert parse_rate("32.768 kHz") == pytest.approx(32768.0)
    assert parse_rate("100") == 100.0
    assert parse_rate(5) == 5.0
    for bad in ("", "MHz", "1 THz", "0 Hz", float("inf"), True, None, "1e400"):
        with pytest.raises(ValueError):
            parse_rate(bad)


@given(
    ticks=st.integers(0, 2**63),
    rate=st.floats(1.0, 1e12, allow_nan=False),
)
def test_conversion_is_ticks_over_rate(ticks: int, rate: float) -> None:
    from delegate_lens_cycle_clock.plugin import time_factors

    from delegate_lens.config import Config

    config = Config({"cycle_clock": {"backends": {"X": rate}}})
    factor = time_factors(config)["X"]
    assert math.isclose(ticks * factor, ticks / rate * 1e9, rel_tol=1e-12, abs_tol=1e-300)
