"""The Inspector's fallbacks are built-in plugins asked last: ``metadata_fallback`` on
``dl_parse_delegate_metadata``, ``tick_clock`` and ``time_scale_fallback`` on
``dl_delegate_time_scale_array``; listed, outranked by any plugin, blockable, and the
user's callables still come first."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_inspector_synthetic import DELEGATED, delegate_run, inspect, make_etrecord

from delegate_lens import hookimpl
from delegate_lens.cli import main
from delegate_lens.errors import InspectorError, PluginError, PluginWarning
from delegate_lens.etdump import ETDump, RunData, dumps
from delegate_lens.hookcalls import call_hook_or_skip
from delegate_lens.inspector import Inspector
from delegate_lens.pluginmanager import (
    apply_plugin_options,
    build_plugin_manager,
    get_plugin_manager,
    list_plugins,
    reset_plugin_manager,
)

FALLBACKS = {
    "metadata_fallback": ("dl_parse_delegate_metadata",),
    "tick_clock": ("dl_delegate_time_scale_array",),
    "time_scale_fallback": ("dl_delegate_time_scale_array",),
}
DEFAULT = [300 / 1e6 - 100 / 1e6]  # row '7' of delegate_run: start and end each / 1e6


# installed plugins (entry points) stay out of these tests
pytestmark = pytest.mark.usefixtures("builtin_plugins_only")


class ArrayClock:
    """TestNPU ticks at 500 MHz, converted a row at a time."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []

    @hookimpl
    def dl_delegate_time_scale_array(
        self, backend_id: str, event_name: str, ticks: npt.NDArray[np.uint64]
    ) -> npt.NDArray[np.float64] | None:
        if backend_id != "TestNPU":
            return None
        self.calls.append((event_name, ticks.tolist()))
        return ticks * 2.0


class TickClock:
    """TestNPU ticks at 250 MHz, one tick at a time (the per-tick hook)."""

    @hookimpl
    def dl_delegate_time_scale(self, backend_id: str, ticks: int) -> float | None:
        return ticks * 4.0 if backend_id == "TestNPU" else None


class Parser:
    def __init__(self, tag: str) -> None:
        self.tag = tag

    @hookimpl
    def dl_parse_delegate_metadata(self, backend_id: str, metadatas: Sequence[bytes]) -> Any:
        return {self.tag: [m.decode() for m in metadatas]} if backend_id == "TestNPU" else None


class Raises:
    @hookimpl
    def dl_parse_delegate_metadata(self, metadatas: Sequence[bytes]) -> Any:
        raise ValueError("unreadable")

    @hookimpl
    def dl_delegate_time_scale_array(self, ticks: npt.NDArray[np.uint64]) -> Any:
        raise ZeroDivisionError("no clock rate")


def seven(inspector: Inspector) -> Any:
    return next(e for e in inspector.event_blocks[0].events if e.name == "7")


def delegated(**kw: Any) -> Inspector:
    return inspect([delegate_run(0, b"gemm"), delegate_run(5000, b"conv")], **kw)


def linked(**kw: Any) -> Inspector:
    return delegated(etrecord=make_etrecord(DELEGATED), **kw)


# ----------------------------------------------------------------------------- listed


def test_fallbacks_are_listed_as_built_ins(capsys: pytest.CaptureFixture[str]) -> None:
    rows = {row.name.rsplit(".", 1)[-1]: row for row in list_plugins()}  # module names
    for name, hooks in FALLBACKS.items():
        assert rows[name].hooks == hooks
        assert rows[name].distribution_label == "built-in"
        for hook in hooks:  # asked after every plugin
            impls = getattr(get_plugin_manager().hook, hook).get_hookimpls()
            (impl,) = [i for i in impls if i.plugin_name == rows[name].name]
            assert impl.trylast
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name, hooks in FALLBACKS.items():
        assert any(line.split()[:3] == [name, "built-in", "-"] for line in lines), name
        assert any(line.startswith(name) and hooks[0] in line for line in lines)


def test_fallbacks_are_asked_last() -> None:
    pm = build_plugin_manager(autoload=False)
    ticks = np.array([100, 300], dtype=np.uint64)
    args = {"backend_id": "TestNPU", "event_name": "7", "ticks": ticks}
    assert pm.hook.dl_delegate_time_scale_array(**args).tolist() == [100.0, 300.0]
    pm.register(TickClock(), name="tick")  # per tick, through the built-in tick_clock
    assert pm.hook.dl_delegate_time_scale_array(**args).tolist() == [400.0, 1200.0]
    pm.register(ArrayClock(), name="array")  # an array plugin wins over the per-tick one
    assert pm.hook.dl_delegate_time_scale_array(**args).tolist() == [200.0, 600.0]
    assert pm.hook.dl_delegate_time_scale_array(**{**args, "backend_id": "Other"}).tolist() == [
        100.0,
        300.0,
    ]
    given_list = [b"x"]
    assert pm.hook.dl_parse_delegate_metadata(backend_id="N", metadatas=given_list) is given_list
    pm.register(Parser("p"), name="parser")
    assert pm.hook.dl_parse_delegate_metadata(backend_id="TestNPU", metadatas=[b"x"]) == {
        "p": ["x"]
    }


# ----------------------------------------------------------------------------- the Inspector


def test_plugins_win_over_the_fallbacks_in_the_inspector() -> None:
    assert seven(linked()).perf_data.raw == DEFAULT * 2
    assert seven(linked()).delegate_debug_metadatas == [b"gemm", b"conv"]
    pm = get_plugin_manager()
    pm.register(TickClock(), name="tick")
    assert seven(linked()).perf_data.raw == [4 * 300 / 1e6 - 4 * 100 / 1e6] * 2
    clock = ArrayClock()
    pm.register(clock, name="array")
    pm.register(Parser("kernel"), name="parser")
    event = seven(linked())
    assert event.perf_data.raw == [600 / 1e6 - 200 / 1e6] * 2
    # one call per row: the starts of both runs, then the ends
    assert clock.calls == [("7", [100, 100, 300, 300]), ("fused", [300, 300, 400, 400])]
    assert event.delegate_debug_metadatas == {"kernel": ["gemm", "conv"]}
    assert event.raw_delegate_debug_metadatas == [b"gemm", b"conv"]


def test_user_callables_win_over_every_plugin() -> None:
    clock = ArrayClock()
    get_plugin_manager().register(clock, name="array")
    get_plugin_manager().register(Parser("kernel"), name="parser")
    event = seven(
        linked(
            delegate_metadata_parser=lambda raws: [r.hex() for r in raws],
            delegate_time_scale_converter=lambda name, ticks: ticks / 1000.0,
        )
    )
    assert event.delegate_debug_metadatas == ["67656d6d", "636f6e76"]
    assert event.perf_data.raw == [0.3 - 0.1] * 2
    assert clock.calls == []


def test_blocked_time_scale_fallback_makes_unconverted_clocks_an_error() -> None:
    apply_plugin_options(["no:time_scale_fallback"])
    with pytest.raises(InspectorError) as info:
        linked()
    message = str(info.value)
    assert "row '7'" in message and "'TestNPU'" in message
    assert "time_scale_fallback is blocked" in message
    assert seven(delegated()).perf_data.raw == DEFAULT * 2  # no ETRecord: no backend, no hook
    get_plugin_manager().register(TickClock(), name="tick")
    assert seven(linked()).perf_data.raw == [4 * 300 / 1e6 - 4 * 100 / 1e6] * 2


def test_blocked_tick_clock_turns_the_per_tick_hook_off() -> None:
    apply_plugin_options(["no:tick_clock"])
    get_plugin_manager().register(TickClock(), name="tick")
    assert seven(linked()).perf_data.raw == DEFAULT * 2


def test_blocked_metadata_fallback_leaves_unparsed_rows_without_a_parsed_form() -> None:
    apply_plugin_options(["no:metadata_fallback"])
    inspector = linked()
    event = seven(inspector)
    assert event.delegate_debug_metadatas is None
    assert event.raw_delegate_debug_metadatas == [b"gemm", b"conv"]
    stream = io.StringIO()
    inspector.print_data_tabular(stream, include_delegate_debug_data=True)  # no crash
    rows = json.loads(_json(inspector))
    assert any(e.get("delegate_debug_metadatas", 0) is None for e in _events(rows))


def _json(inspector: Inspector) -> str:
    from delegate_lens.exporters import get_exporters

    stream = io.StringIO()
    get_exporters()["json"].write(inspector, stream)
    return stream.getvalue()


def _events(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if "delegate_debug_metadatas" in value:
            yield value
        for item in value.values():
            yield from _events(item)
    elif isinstance(value, list):
        for item in value:
            yield from _events(item)


def test_cli_with_the_time_scale_fallback_blocked(
    vectors_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v = vectors_dir / "mlp_xnnpack"
    args = ["inspect", str(v / "etdump.etdp"), "--etrecord", str(v / "etrecord.bin")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SystemExit) as info:
            main(["-p", "no:time_scale_fallback", *args, "-f", "json"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'XnnpackBackend'" in err and "time_scale_fallback is blocked" in err


# ----------------------------------------------------------------------------- failures


def test_a_failing_plugin_is_named_with_its_row_and_the_next_plugin_answers() -> None:
    pm = get_plugin_manager()
    pm.register(Parser("kernel"), name="parser")
    pm.register(Raises(), name="raiser")  # registered later: asked first
    with pytest.warns(PluginWarning) as caught:
        inspector = linked()
        event = seven(inspector)
    messages = [str(w.message) for w in caught]
    assert any(
        m.startswith(
            "plugin 'raiser' (registered) failed in dl_delegate_time_scale_array on row '7' "
            "of block 0 ('Execute', 2 run(s)): ZeroDivisionError: no clock rate"
        )
        for m in messages
    ), messages
    assert any(
        m.startswith(
            "plugin 'raiser' (registered) failed in dl_parse_delegate_metadata on row '7' "
            "of block 0: ValueError: unreadable"
        )
        for m in messages
    ), messages
    assert event.perf_data.raw == DEFAULT * 2  # the fallback answered after it
    assert event.delegate_debug_metadatas == {"kernel": ["gemm", "conv"]}  # the next plugin


def test_failing_user_callables_are_named_with_their_row() -> None:
    def broken_parser(raws: list[bytes]) -> Any:
        raise RuntimeError("bad metadata")

    inspector = linked(delegate_metadata_parser=broken_parser)
    with pytest.warns(UserWarning, match=r"broken_parser failed on row '7' of block 0: Runtime"):
        assert seven(inspector).delegate_debug_metadatas == [b"gemm", b"conv"]


def test_an_array_plugin_with_the_wrong_length_is_named() -> None:
    class Short:
        @hookimpl
        def dl_delegate_time_scale_array(self, ticks: npt.NDArray[np.uint64]) -> Any:
            return ticks[:1] * 1.0

    get_plugin_manager().register(Short(), name="short")
    with pytest.raises(PluginError, match=r"plugin 'short' \(registered\) returned 1 value"):
        linked()

    class Words:
        @hookimpl
        def dl_delegate_time_scale_array(self, ticks: npt.NDArray[np.uint64]) -> Any:
            return ["fast"] * len(ticks)

    # an answer of the wrong type is that plugin's failure, named; the next plugin answers
    # (here the built-in fallback, once 'short' is gone)
    get_plugin_manager().unregister(name="short")
    get_plugin_manager().register(Words(), name="words")
    with pytest.warns(
        PluginWarning, match=r"plugin 'words' \(registered\) .*returned list \['fast'"
    ):
        linked()


def test_call_hook_or_skip() -> None:
    from delegate_lens.config import ConfigError

    pm = build_plugin_manager(autoload=False)
    pm.register(Raises(), name="raiser")
    given_list = [b"x"]
    with pytest.warns(PluginWarning, match=r"'raiser' \(registered\) .* on row 1: ValueError"):
        result = call_hook_or_skip(
            "dl_parse_delegate_metadata", pm=pm, where="row 1", backend_id="N", metadatas=given_list
        )
    assert result is given_list  # the built-in fallback answered after the failing plugin
    pm = build_plugin_manager(["no:metadata_fallback"], autoload=False)
    pm.register(Raises(), name="raiser")
    with pytest.warns(PluginWarning, match="'raiser'"):
        assert (
            call_hook_or_skip("dl_parse_delegate_metadata", pm=pm, backend_id="N", metadatas=[])
            is None
        )

    class BadConfig:
        @hookimpl
        def dl_parse_delegate_metadata(self) -> None:
            raise ConfigError("delegate-lens.toml: json_metadata.backends: bad")

    pm.register(BadConfig(), name="bad")
    with pytest.raises(ConfigError):
        call_hook_or_skip("dl_parse_delegate_metadata", pm=pm, backend_id="N", metadatas=[])


# ----------------------------------------------------------------------------- samples


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), min_size=1, max_size=6).map(
        lambda pairs: [(min(a, b), max(a, b)) for a, b in pairs]
    )
)
def test_samples_are_the_same_through_any_plugin_giving_source_ticks(
    pairs: list[tuple[int, int]],
) -> None:
    reset_plugin_manager()
    runs = [_delegate_run(start, end) for start, end in pairs]
    expected = np.array([end / 1e6 - start / 1e6 for start, end in pairs])
    plain = _samples(runs)
    assert plain.tobytes() == expected.tobytes()

    class Identity:
        @hookimpl
        def dl_delegate_time_scale_array(self, ticks: npt.NDArray[np.uint64]) -> Any:
            return ticks.astype(np.float64)

    apply_plugin_options(["no:time_scale_fallback"])
    get_plugin_manager().register(Identity(), name="identity")
    assert _samples(runs).tobytes() == plain.tobytes()
    reset_plugin_manager()


def _delegate_run(start: int, end: int) -> RunData:
    from test_inspector_synthetic import framework, prof

    return RunData(
        name="Execute",
        events=[
            prof(None, 0, start, end, delegate_debug_id_int=7),
            prof("DELEGATE_CALL", 0, 0, 2**41),
            framework("Method::execute", 0, 2**41 + 10),
        ],
    )


def _samples(runs: list[RunData]) -> npt.NDArray[np.float64]:
    inspector = Inspector(
        etdump_data=dumps(ETDump(run_data=runs)), etrecord=make_etrecord(DELEGATED)
    )
    (table,) = inspector.tables
    row = next(j for j, key in enumerate(table.keys) if key.name == "7")
    return table.samples[row]


def test_vector_samples_are_bit_identical_through_a_plugin(vectors_dir: Path) -> None:
    v = vectors_dir / "mlp_xnnpack"

    def samples() -> list[bytes]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inspector = Inspector(etdump_path=v / "etdump.etdp", etrecord=str(v / "etrecord.bin"))
        assert any(
            link.delegate_backend_name == "XnnpackBackend"
            for t in inspector.tables
            for link, key in zip(t.links, t.keys)
            if key.identifier is not None
        )
        return [t.samples.tobytes() for t in inspector.tables]

    plain = samples()
    clock = ArrayClock()
    apply_plugin_options(["no:time_scale_fallback"])
    get_plugin_manager().register(clock, name="array")  # declines XnnpackBackend

    class Identity:
        @hookimpl
        def dl_delegate_time_scale_array(
            self, backend_id: str, ticks: npt.NDArray[np.uint64]
        ) -> Any:
            return ticks.astype(np.float64) if backend_id == "XnnpackBackend" else None

    get_plugin_manager().register(Identity(), name="identity")
    assert samples() == plain
