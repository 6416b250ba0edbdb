"""delegate_lens.exporters: the Exporter value class and the registry built on dl_exporters."""

from __future__ import annotations

import io
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delegate_lens import hookimpl
from delegate_lens.errors import PluginError
from delegate_lens.exporters import Exporter, get_exporters
from delegate_lens.hookcalls import call_hook
from delegate_lens.pluginmanager import PluginSource, build_plugin_manager


def _write_names(inspector: Any, stream: Any) -> None:
    for name in inspector:
        stream.write(f"{name}\n")


class Offers:
    def __init__(self, *exporters: Any) -> None:
        self.exporters = exporters

    @hookimpl
    def dl_exporters(self) -> Any:
        return list(self.exporters)


def _pm(*plugins: tuple[str, Any]) -> Any:
    # without the built-in exporters, whose names would change these tests' expectations
    pm = build_plugin_manager(["no:delegate_lens.builtins.exporters"], autoload=False)
    for name, plugin in plugins:
        pm.register(plugin, name=name)
    return pm


def test_exporter_value_class() -> None:
    exporter = Exporter("names", "one name per line", _write_names)
    stream = io.StringIO()
    exporter.write(["a", "b"], stream)
    assert stream.getvalue() == "a\nb\n"
    assert exporter.binary is False
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        exporter.name = "other"  # type: ignore[misc]
    for bad in ("", "two words", "-dash", None):
        with pytest.raises(ValueError, match="exporter name"):
            Exporter(bad, "d", _write_names)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Exporter("x", "d", "not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Exporter("x", "d", _write_names, binary="yes")  # type: ignore[arg-type]


def test_exporters_of_all_plugins_are_combined() -> None:
    a = Exporter("names", "names", _write_names)
    b = Exporter("chrome-trace.v2", "trace", _write_names, binary=True)
    c = Exporter("tsv", "tabs", _write_names)
    pm = _pm(("one", Offers(a)), ("two", Offers(b, c)), ("none", Offers()))
    found = get_exporters(pm)
    assert found["names"] is a and found["chrome-trace.v2"] is b and found["tsv"] is c
    assert list(found) == ["names", "chrome-trace.v2", "tsv"]


def test_duplicate_name_names_both_plugins() -> None:
    pm = _pm(
        ("first", Offers(Exporter("csv", "one", _write_names))),
        ("second", Offers(Exporter("csv", "two", _write_names))),
    )
    pm.plugin_sources["second"] = PluginSource("entry point", "second-dist", "1.5")
    with pytest.raises(PluginError) as info:
        get_exporters(pm)
    assert str(info.value) == (
        "exporter name 'csv' is given by two plugins: 'first' (registered) and "
        "'second' (second-dist 1.5)"
    )


def test_wrong_results_are_named() -> None:
    pm = _pm(("odd", Offers({"name": "csv"})))
    with pytest.raises(PluginError, match=r"plugin 'odd' .*returned dict from dl_exporters"):
        get_exporters(pm)

    class Scalar:
        @hookimpl
        def dl_exporters(self) -> Any:
            return 3

    with pytest.raises(PluginError, match=r"plugin 'scalar' .*returned int"):
        get_exporters(_pm(("scalar", Scalar())))


def test_single_exporter_and_raising_plugin() -> None:
    class One:
        @hookimpl
        def dl_exporters(self) -> Any:
            return Exporter("one", "d", _write_names)

    class Broken:
        @hookimpl
        def dl_exporters(self) -> Any:
            raise RuntimeError("exporters unavailable")

    assert "one" in get_exporters(_pm(("one", One())))
    with pytest.raises(PluginError, match=r"plugin 'broken' .*RuntimeError: exporters unavailable"):
        get_exporters(_pm(("one", One()), ("broken", Broken())))


def test_raising_plugin_is_named_as_call_hook_names_it() -> None:
    class Broken:
        @hookimpl
        def dl_exporters(self) -> Any:
            raise RuntimeError("exporters unavailable")

    pm = _pm(("broken", Broken()))
    expected = (
        "plugin 'broken' (registered) failed in dl_exporters: RuntimeError: exporters unavailable"
    )
    with pytest.raises(PluginError) as by_call_each:
        get_exporters(pm)
    with pytest.raises(PluginError) as by_call_hook:
        call_hook("dl_exporters", pm=pm)
    assert str(by_call_each.value) == str(by_call_hook.value) == expected
    assert isinstance(by_call_each.value.__cause__, RuntimeError)


def test_default_manager_has_no_duplicates() -> None:
    found = get_exporters()
    assert all(isinstance(exporter, Exporter) for exporter in found.values())
    assert all(name == exporter.name for name, exporter in found.items())


def test_a_plugin_clashing_with_a_builtin_is_named() -> None:
    builtin = get_exporters(build_plugin_manager(autoload=False))
    if not builtin:
        pytest.skip("no built-in exporter yet")
    name = next(iter(builtin))
    pm = build_plugin_manager(autoload=False)
    pm.register(Offers(Exporter(name, "mine", _write_names)), name="mine")
    with pytest.raises(PluginError, match=rf"'{name}' is given by two plugins: 'delegate_lens"):
        get_exporters(pm)


@settings(max_examples=60, deadline=None)
@given(
    offers=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=3), max_size=4
    )
)
def test_registry_is_all_names_in_order_or_the_first_clash(offers: list[list[str]]) -> None:
    plugins = [
        (f"p{i}", Offers(*(Exporter(name, f"{name} of p{i}", _write_names) for name in names)))
        for i, names in enumerate(offers)
    ]
    pm = _pm(*plugins)
    owners: dict[str, str] = {}
    clash = None
    for i, names in enumerate(offers):
        for name in names:
            if name in owners and clash is None:
                clash = (name, owners[name], f"p{i}")
            owners.setdefault(name, f"p{i}")
    if clash is None:
        found = get_exporters(pm)
        assert list(found) == list(owners)
        assert all(found[name].description == f"{name} of {owners[name]}" for name in found)
    else:
        name, first, second = clash
        with pytest.raises(PluginError) as info:
            get_exporters(pm)
        assert str(info.value) == (
            f"exporter name {name!r} is given by two plugins: "
            f"{first!r} (registered) and {second!r} (registered)"
        )
