"""delegate-lens-cycle-clock's array hook: bit for bit the per-tick hook, a row at a time,
and what the Inspector asks (the per-tick hook is no longer called for its rows)."""

from __future__ import annotations

import math
import os
import runpy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from delegate_lens_cycle_clock import plugin
from hypothesis import example, given
from hypothesis import strategies as st

from delegate_lens import hookimpl
from delegate_lens.config import OPTIONS_ENV
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import (
    AUTOLOAD_ENV,
    apply_plugin_options,
    build_plugin_manager,
    get_plugin_manager,
    reset_plugin_manager,
)

REPO = Path(__file__).resolve().parents[3]
VECTORS: Path = runpy.run_path(str(REPO / "tests" / "data" / "vectors" / "unpack.py"))["unpack"]()
U64_MAX = 2**64 - 1
EDGES = [
    0,
    1,
    2**53 - 1,
    2**53 + 1,  # first integer float64 cannot hold: rounds to even
    2**53 + 3,
    2**63 - 1,
    2**63,  # top bit set: the unsigned cast path
    2**63 + 1025,  # above 2**63 a tie broken by a low bit
    2**63 + 3072,  # an exact tie: rounds to even
    2**64 - 1025,
    U64_MAX,  # the counter's last value before it wraps: rounds up to 2**64
]
"""Ticks where an int -> float64 conversion can go wrong."""


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("DELEGATE_LENS_CONFIG", OPTIONS_ENV, AUTOLOAD_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    reset_plugin_manager()
    yield tmp_path
    reset_plugin_manager()


@contextmanager
def options(text: str) -> Iterator[None]:
    """``DELEGATE_LENS_OPTIONS`` for one hypothesis example (monkeypatch is per test)."""
    os.environ[OPTIONS_ENV] = text
    try:
        yield
    finally:
        del os.environ[OPTIONS_ENV]


def per_tick(backend: str, ticks: list[int]) -> npt.NDArray[np.float64]:
    values = [plugin.dl_delegate_time_scale(backend, tick) for tick in ticks]
    assert all(value is not None for value in values)
    return np.array(values, dtype=np.float64)


def assert_bit_identical(backend: str, ticks: list[int]) -> None:
    array = np.array(ticks, dtype=np.uint64)
    kept = array.copy()
    got = plugin.dl_delegate_time_scale_array(backend, array)
    assert got is not None and got.dtype == np.float64 and got.shape == array.shape
    assert got.tobytes() == per_tick(backend, ticks).tobytes()  # NaN and -0.0 included
    assert array.tobytes() == kept.tobytes()  # the Inspector's ticks are not modified


@given(
    ticks=st.lists(st.integers(0, U64_MAX) | st.sampled_from(EDGES), max_size=40),
    rate=st.floats(min_value=0.0, exclude_min=True, allow_infinity=False, allow_nan=False),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
)
@example(ticks=EDGES, rate=8e8, unit="ns")
@example(ticks=EDGES, rate=1.2e9, unit="ns")  # an inexact factor (5/6)
@example(ticks=EDGES, rate=32768.0, unit="us")
@example(ticks=EDGES, rate=5e-324, unit="ns")  # factor inf: tick 0 is NaN either way
@example(ticks=EDGES, rate=1.7e308, unit="s")  # a subnormal factor
@example(ticks=[], rate=8e8, unit="ns")
def test_array_equals_per_tick_bit_for_bit(ticks: list[int], rate: float, unit: str) -> None:
    with options(f'cycle_clock.unit = "{unit}"\ncycle_clock.backends.NPU = {rate!r}'):
        assert_bit_identical("NPU", ticks)


def test_array_edge_cases() -> None:
    with options('cycle_clock.backends.NPU = "800 MHz"'):
        got = plugin.dl_delegate_time_scale_array("NPU", np.array(EDGES, dtype=np.uint64))
        assert got is not None
        assert got[-1] == 2.0**64 * 1.25  # U64_MAX as a float is 2**64
        assert got[0] == 0.0 and math.copysign(1.0, got[0]) == 1.0
        strided = np.array(EDGES, dtype=np.uint64)[::3]  # any 1-D array, not only contiguous
        got = plugin.dl_delegate_time_scale_array("NPU", strided)
        assert got is not None
        assert got.tolist() == [plugin.dl_delegate_time_scale("NPU", int(t)) for t in strided]
        ticks = np.array([1600], dtype=np.uint64)
        assert plugin.dl_delegate_time_scale_array("Other", ticks) is None  # not configured


def test_the_array_hook_answers_before_tick_clock() -> None:
    calls: list[int] = []

    class Spy:
        """A per-tick plugin: tick_clock would ask it if it asked the per-tick hook."""

        @hookimpl
        def dl_delegate_time_scale(self, ticks: int) -> None:
            calls.append(ticks)

    pm = build_plugin_manager()
    pm.register(Spy(), name="spy")
    ticks = np.array([1600, 2**64 - 1], dtype=np.uint64)
    with options('cycle_clock.backends.NPU = "800 MHz"'):
        got = pm.hook.dl_delegate_time_scale_array(backend_id="NPU", event_name="e", ticks=ticks)
        assert got.tolist() == [2000.0, 2.0**64 * 1.25]
        assert calls == []  # firstresult: tick_clock (trylast) was not asked
        # a backend it does not know: tick_clock asks the per-tick plugins, then the fallback
        got = pm.hook.dl_delegate_time_scale_array(backend_id="DSP", event_name="e", ticks=ticks)
        assert got.tolist() == [1600.0, 2.0**64] and calls == [1600]


def _inspect(vector: str) -> Inspector:
    folder = VECTORS / vector
    if not folder.is_dir():
        pytest.fail(f"the reference vectors are missing: {folder}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Inspector(etdump_path=folder / "etdump.etdp", etrecord=str(folder / "etrecord.bin"))


def _samples(vector: str) -> list[bytes]:
    return [table.samples.tobytes() for table in _inspect(vector).tables]


class PerTickOnly:
    """The plugin as it was: its per-tick hook alone, asked by the built-in tick_clock."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def dl_delegate_time_scale(self, backend_id: str, ticks: int) -> float | None:
        self.calls += 1
        return plugin.dl_delegate_time_scale(backend_id, ticks)


@pytest.mark.parametrize("vector", ["mlp_xnnpack", "conv_xnnpack"])
def test_inspector_samples_are_the_same_as_through_the_per_tick_hook(
    vector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _samples(vector)  # XnnpackBackend not configured: the source/target factor
    monkeypatch.setenv(OPTIONS_ENV, "cycle_clock.backends.XnnpackBackend = 1.2e9")

    before = PerTickOnly()
    apply_plugin_options(["no:cycle_clock"]).register(before, name="per_tick_only")
    expected = _samples(vector)
    assert before.calls > 0 and expected != plain  # the clock was converted, tick by tick

    reset_plugin_manager()
    assert get_plugin_manager().get_plugin("cycle_clock") is plugin
    spy = PerTickOnly()
    get_plugin_manager().register(spy, name="spy")
    assert _samples(vector) == expected  # bit for bit
    assert spy.calls == 0  # the per-tick hook is not called for the plugin's rows

    converted = 0
    for table, got, unscaled in zip(_inspect(vector).tables, expected, plain):
        a = np.frombuffer(got).reshape(table.samples.shape)
        b = np.frombuffer(unscaled).reshape(table.samples.shape)
        for row, (key, link) in enumerate(zip(table.keys, table.links)):
            if key.identifier is not None and link.delegate_backend_name == "XnnpackBackend":
                # 1.2 GHz: 1/1.2 ns per tick; end - start of large ticks: atol 1 fs (in ms)
                np.testing.assert_allclose(a[row], b[row] / 1.2, rtol=1e-9, atol=1e-12)
                converted += 1
            else:
                assert a[row].tobytes() == b[row].tobytes()  # other rows are left alone
    assert converted > 0
