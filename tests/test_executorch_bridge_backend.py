"""A delegate-lens backend inside real ExecuTorch, ahead of time (issue 23, item 4): the
demo backend offered to the real ``to_edge_transform_and_lower`` through
``real_partitioner``; its preprocess runs there, its Debug Handle Map lands in the real
ETRecord, and the reference's reader and Inspector read it back.

Skips (with the reason) only where executorch is not installed.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("executorch") is None,
        reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
    ),
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning"),
]


@pytest.fixture(scope="module")
def demo_in_executorch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import torch
    from delegate_lens_executorch import real_partitioner
    from executorch.exir import to_edge_transform_and_lower

    from delegate_lens.backends_demo._models import make_model

    model, inputs = make_model("mlp")
    folder = tmp_path_factory.mktemp("demo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edge = to_edge_transform_and_lower(
            torch.export.export(model, inputs),
            partitioner=[real_partitioner("DemoBackend")],
            generate_etrecord=True,
        )
        manager = edge.to_executorch()
        manager.get_etrecord().save(str(folder / "etrecord.bin"))
    (folder / "model.pte").write_bytes(manager.buffer)
    return {"model": model, "inputs": inputs, "manager": manager, "folder": folder}


def _our_delegate_map(model: Any, inputs: Any) -> dict[Any, Any]:
    import torch

    import delegate_lens as dl
    from delegate_lens.hookcalls import call_hook

    partitioner = call_hook("dl_partitioner", backend_id="DemoBackend", compile_specs=())
    lowered = dl.to_edge_transform_and_lower(
        torch.export.export(model, inputs), partitioner=[partitioner]
    )
    return dict(lowered.to_program().delegate_map["forward"])


@pytest.mark.slow
def test_demo_backend_lowers_in_real_executorch_with_our_map(
    demo_in_executorch: dict[str, Any],
) -> None:
    real = demo_in_executorch["manager"].delegate_map["forward"]
    assert [entry["name"] for entry in real.values()] == ["DemoBackend"]
    # the Debug Handle Map its preprocess built under real lowering is the one our own
    # lowering of the same model gets
    ours = _our_delegate_map(demo_in_executorch["model"], demo_in_executorch["inputs"])
    assert [e["delegate_map"] for e in real.values()] == [e["delegate_map"] for e in ours.values()]


@pytest.mark.slow
def test_reference_reads_the_map_back(demo_in_executorch: dict[str, Any]) -> None:
    from executorch.devtools import Inspector as ReferenceInspector
    from executorch.devtools import parse_etrecord

    from delegate_lens.runtime import ETDumpGen

    folder: Path = demo_in_executorch["folder"]
    real = demo_in_executorch["manager"].delegate_map["forward"]
    ((instruction, entry),) = real.items()
    record = parse_etrecord(str(folder / "etrecord.bin"))
    (read,) = record._delegate_map["forward"].values()
    assert read["name"] == "DemoBackend"
    assert {int(k): tuple(v) for k, v in read["delegate_map"].items()} == entry["delegate_map"]
    # events as the backend's runtime would log them: each identifier inside its call
    tracer = ETDumpGen()
    tracer.create_event_block("Execute")
    tracer.set_chain_debug_handle(0, instruction)
    for k, identifier in enumerate(entry["delegate_map"]):
        tracer.log_profiling_delegate(None, identifier, 100 + 10 * k, 105 + 10 * k, None)
    tracer.add_profile_event("DELEGATE_CALL", 0, instruction, 50, 500)
    (folder / "run.etdp").write_bytes(tracer.get_etdump_data())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = ReferenceInspector(
            etdump_path=str(folder / "run.etdp"), etrecord=str(folder / "etrecord.bin")
        )
    linked = {
        e.delegate_debug_identifier: tuple(e.debug_handles)
        if isinstance(e.debug_handles, (list, tuple))
        else (e.debug_handles,)
        for e in inspector.event_blocks[0].events
        if e.delegate_debug_identifier is not None
    }
    assert linked == {k: tuple(v) for k, v in entry["delegate_map"].items()}


@pytest.mark.slow
def test_its_program_cannot_run_on_the_real_runtime(
    demo_in_executorch: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from delegate_lens.cli import main

    folder: Path = demo_in_executorch["folder"]
    torch.save(list(demo_in_executorch["inputs"]), folder / "inputs.pt")
    argv = ["profile", str(folder / "model.pte"), "--inputs", str(folder / "inputs.pt")]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Backend DemoBackend is not registered" in err, err


def test_unknown_backend_is_a_usage_error() -> None:
    from delegate_lens_executorch import real_partitioner

    from delegate_lens.errors import UsageError

    with pytest.raises(UsageError, match="no plugin gives a partitioner for backend 'Nope'"):
        real_partitioner("Nope")
