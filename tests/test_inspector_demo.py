"""The demo pipeline's ETDump + ETRecord: delegate events map to the fused and decomposed
handles of the demo backend's Debug Handle Map, its metadata is parsed by its plugin."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from delegate_lens.pluginmanager import AUTOLOAD_ENV, apply_plugin_options, reset_plugin_manager

pytestmark = [pytest.mark.torch, pytest.mark.slow]


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    mp = pytest.MonkeyPatch()
    mp.setenv(AUTOLOAD_ENV, "1")  # only the demo backend's plugin, whatever is installed
    apply_plugin_options(["delegate_lens.backends_demo._plugin"])
    try:
        from delegate_lens.backends_demo._demo import run_demo

        out = tmp_path_factory.mktemp("demo")
        result = run_demo("mlp", runs=3, out_dir=out, echo=lambda line: None, show_table=False)
        yield dict(result.paths)
    finally:
        reset_plugin_manager()
        mp.undo()


def test_demo_rows_map_to_fused_and_decomposed_handles(demo_files: dict[str, Path]) -> None:
    from delegate_lens.inspector import Inspector

    inspector = Inspector(
        etdump_path=demo_files["etdump"],
        etrecord=str(demo_files["etrecord"]),
        debug_buffer_path=demo_files["debug_buffer"],
    )
    record = inspector.etrecord
    execute = inspector.event_blocks[-1]
    assert execute.method == "forward" and len(execute.run_indices) == 3
    delegated = [e for e in execute.events if e.is_delegated_op]
    assert delegated
    for event in delegated:
        assert event.delegate_backend_name == "DemoBackend"
        assert event.instruction_id is not None
        written = record.delegate_handles(
            "forward", event.instruction_id, event.delegate_debug_identifier
        )
        expected = [written] if isinstance(written, int) else list(written)
        got = [event.debug_handles] if isinstance(event.debug_handles, int) else event.debug_handles
        assert got == expected
        graph = record.graph("forward")
        assert event.op_types == graph.op_types(expected)
        # the demo backend's metadata, parsed by its plugin (one value per run)
        assert isinstance(event.delegate_debug_metadatas, dict)
        assert len(event.delegate_debug_metadatas["kernel"]) == 3
        assert len(event.raw_delegate_debug_metadatas) == 3
    # fused: one event for several handles; decomposed: several events for one handle
    assert any(isinstance(e.debug_handles, list) and len(e.debug_handles) > 1 for e in delegated)
    single = Counter(
        tuple(e.debug_handles) if isinstance(e.debug_handles, list) else (e.debug_handles,)
        for e in delegated
    )
    assert any(count > 1 for count in single.values())
    call = next(e for e in execute.events if e.name == "DELEGATE_CALL")
    assert call.delegate_backend_name == "DemoBackend" and not call.is_delegated_op


def test_demo_trace_nests_delegate_events(demo_files: dict[str, Path], tmp_path: Path) -> None:
    from delegate_lens.cli import main

    out = tmp_path / "demo.trace.json"
    args = [
        "inspect",
        str(demo_files["etdump"]),
        "--etrecord",
        str(demo_files["etrecord"]),
        "--format",
        "chrome-trace",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    slices = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    for s in slices:
        if "delegate_debug_identifier" not in s["args"]:
            continue
        tid, iid = s["tid"], s["args"]["instruction_id"]
        (call,) = [
            p
            for p in slices
            if p["tid"] == tid
            and p["name"] == "DELEGATE_CALL"
            and p["args"]["instruction_id"] == iid
        ]
        assert call["ts"] - 1e-6 <= s["ts"]
        assert s["ts"] + s["dur"] <= call["ts"] + call["dur"] + 1e-6
        assert s["args"]["op_types"] and s["args"]["backend"] == "DemoBackend"
