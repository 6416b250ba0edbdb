"""The hook calls (``delegate_lens.hookcalls``): a failing plugin is named (with its
distribution), our own errors pass unchanged, ``call_hook_or_warn`` falls back with a
warning, ``call_each`` answers in registration order; and the plugin host does not import
them. Discovery, -p options and load failures are tested in ``test_plugin_host.py``."""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings

import pluggy
import pytest

# the plugin host's tests' fixtures: a fresh host for each test (autouse) and fake
# distributions on sys.path
from test_plugin_host import FakeDist
from test_plugin_host import _fresh_host as _fresh_host
from test_plugin_host import fake as fake

from delegate_lens import hookimpl
from delegate_lens.config import ConfigError
from delegate_lens.errors import MappingError, PluginError, UsageError
from delegate_lens.hookcalls import call_each, call_hook, call_hook_or_warn
from delegate_lens.pluginmanager import (
    PluginWarning,
    build_plugin_manager,
    has_implementations,
)


class _Quiet:
    @hookimpl
    def dl_parse_delegate_metadata(self, backend_id: str, metadatas: list[bytes]) -> None:
        return None


class _Raises:
    @hookimpl
    def dl_parse_delegate_metadata(self, backend_id: str, metadatas: list[bytes]) -> None:
        raise ValueError(f"cannot parse {backend_id}")


def _logged(function):  # type: ignore[no-untyped-def]
    @functools.wraps(function)
    def inner(*args, **kwargs):  # type: ignore[no-untyped-def]
        return function(*args, **kwargs)

    return inner


class _RaisesDecorated:
    @hookimpl
    @_logged
    def dl_delegate_time_scale(self, backend_id: str, ticks: int) -> float:
        return 1 / 0


def _pm_with(*plugins: tuple[str, object]) -> pluggy.PluginManager:
    pm = build_plugin_manager(autoload=False)
    for name, plugin in plugins:
        pm.register(plugin, name=name)
    return pm


def test_call_hook_names_the_plugin_that_raised() -> None:
    # registered later = asked first: 'quiet' answers None, then 'raiser' raises
    pm = _pm_with(("raiser", _Raises()), ("quiet", _Quiet()))
    with pytest.raises(PluginError) as info:
        call_hook("dl_parse_delegate_metadata", pm=pm, backend_id="NPU", metadatas=[b"x"])
    assert str(info.value) == (
        "plugin 'raiser' (registered) failed in dl_parse_delegate_metadata: "
        "ValueError: cannot parse NPU"
    )
    assert isinstance(info.value.__cause__, ValueError)


def test_call_hook_names_a_decorated_implementation() -> None:
    pm = _pm_with(("quiet", _Quiet()), ("divider", _RaisesDecorated()))
    with pytest.raises(PluginError, match=r"plugin 'divider'.*ZeroDivisionError"):
        call_hook("dl_delegate_time_scale", pm=pm, backend_id="b", event_name="e", ticks=1)


def test_call_hook_names_entry_point_distribution(fake: FakeDist) -> None:
    fake.plugin(
        "raising-dist",
        "3.1",
        "raising",
        """
        def dl_delegate_time_scale(ticks):
            raise KeyError(ticks)
        """,
    )
    with pytest.raises(PluginError, match=r"^plugin 'raising' \(raising-dist 3.1\) failed in"):
        call_hook("dl_delegate_time_scale", backend_id="b", event_name="e", ticks=7)


def test_our_own_errors_propagate_unchanged() -> None:
    class Rejects:
        @hookimpl
        def dl_delegate_mapping(self, backend_id: str) -> None:
            raise MappingError(f"backend {backend_id!r}: identifier 3 is bad")

    pm = _pm_with(("rejects", Rejects()))
    with pytest.raises(MappingError, match="identifier 3"):
        call_hook(
            "dl_delegate_mapping", pm=pm, backend_id="B", edge_program=None, debug_handle_map=None
        )


def test_call_hook_or_warn_falls_back() -> None:
    pm = _pm_with(("raiser", _Raises()))
    with pytest.warns(PluginWarning, match="plugin 'raiser' .*dl_parse_delegate_metadata"):
        result = call_hook_or_warn(
            "dl_parse_delegate_metadata", pm=pm, backend_id="NPU", metadatas=[b"x"]
        )
    assert result is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = build_plugin_manager(["no:metadata_fallback"], autoload=False)
        pm.register(_Quiet(), name="quiet")
        assert (
            call_hook_or_warn("dl_parse_delegate_metadata", pm=pm, backend_id="N", metadatas=[])
            is None
        )


def test_call_hook_or_warn_lets_config_errors_through() -> None:
    class BadConfig:
        @hookimpl
        def dl_delegate_time_scale(self) -> None:
            raise ConfigError("delegate-lens.toml: cycle_clock.unit: bad")

    pm = _pm_with(("bad", BadConfig()))
    with pytest.raises(ConfigError, match=r"cycle_clock\.unit"):
        call_hook_or_warn("dl_delegate_time_scale", pm=pm, backend_id="b", event_name="e", ticks=1)


def test_call_each_in_registration_order() -> None:
    class Answers:
        def __init__(self, value: object) -> None:
            self.value = value

        @hookimpl
        def dl_delegate_mapping(self, backend_id: str) -> object:
            if self.value == "raise":
                raise ZeroDivisionError("division by zero")
            return self.value

    pm = _pm_with(("a", Answers(1.0)), ("none", Answers(None)), ("b", Answers(2.0)))
    kwargs = {"backend_id": "x", "edge_program": None, "debug_handle_map": None}
    got = call_each("dl_delegate_mapping", pm=pm, **kwargs)
    assert got == [("a", 1.0), ("b", 2.0)]
    pm.register(Answers("raise"), name="div")
    with pytest.raises(PluginError, match=r"plugin 'div'.*ZeroDivisionError"):
        call_each("dl_delegate_mapping", pm=pm, **kwargs)
    with pytest.raises(UsageError, match="backend_id"):
        call_each("dl_delegate_mapping", pm=pm, edge_program=None, debug_handle_map=None)
    with pytest.raises(UsageError, match="firstresult"):  # one answer: call_hook_answered
        call_each("dl_delegate_time_scale", pm=pm, backend_id="x", event_name="e", ticks=0)


def test_has_implementations_and_unknown_hook() -> None:
    pm = build_plugin_manager(["no:demo_backend", "no:metadata_fallback"], autoload=False)
    assert has_implementations("dl_delegate_mapping", pm)  # the built-in validator
    assert not has_implementations("dl_parse_delegate_metadata", pm)
    assert has_implementations("dl_runtime_backend", _pm_with())  # the built-in demo backend
    pm.register(_Quiet(), name="quiet")
    assert has_implementations("dl_parse_delegate_metadata", pm)
    with pytest.raises(UsageError, match="unknown hook 'dl_nope'"):
        call_hook("dl_nope", pm=pm)


def test_the_plugin_host_and_the_hook_calls_import_one_way() -> None:
    from delegate_lens import hookcalls, pluginmanager

    for name in ("call_hook", "call_hook_or_warn", "call_each", "call_hook_or_skip"):
        assert name in hookcalls.__all__
        assert not hasattr(pluginmanager, name)  # no re-export: one home
    code = "import delegate_lens.pluginmanager, sys; assert 'delegate_lens.hookcalls' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
