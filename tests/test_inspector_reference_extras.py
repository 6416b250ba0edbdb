"""The reference Inspector's odd ends, as code written for it uses them: the private Event
fields it hands the user's callables to, the user's metadata parser asked for every
delegate row, ``get_vgf_neural_statistics``, ``write_tensorboard_artifact``,
``_reference_outputs``, ``op_graph_dict`` (not provided, said so), an ``EventBlock`` made
by hand, and the classes of misuse errors (``KeyError``, ``TypeError`` as the reference
raises). ``tests/test_differential.py`` compares each with the reference on the zoo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_inspector_synthetic import DELEGATED, delegate_run, inspect, make_etrecord

from delegate_lens.errors import ArgumentTypeError, UnknownNameError, UsageError
from delegate_lens.inspector import EventBlock, InspectorWarning, TimeScale

pytestmark = pytest.mark.usefixtures("builtin_plugins_only")

VGF = {
    "schema": "executorch.vgf.neural_statistics",
    "schema_version": 1,
    "segments": [{"debug_database": {"available": True, "encoding": "base64", "data": "AAE="}}],
}


def _events(inspector: Any) -> dict[str, Any]:
    return {e.name: e for b in inspector.event_blocks for e in b.events}


def test_events_hold_the_users_callables_under_the_references_names() -> None:
    def parser(raws: list[bytes]) -> dict[str, int]:
        return {"count": len(raws)}

    plain = _events(inspect([delegate_run(0)]))["7"]
    assert plain._delegate_metadata_parser is None
    # the default converter: ticks divided by the source/target factor (ns -> ms)
    assert plain._delegate_time_scale_converter is not None
    assert plain._delegate_time_scale_converter("7", 2_000_000) == 2.0
    events = _events(inspect([delegate_run(0)], delegate_metadata_parser=parser))
    assert events["7"]._delegate_metadata_parser is parser
    assert events["7"].delegate_debug_metadatas == {"count": 1}
    # asked for a delegate row without metadata too (with []), as the reference asks it
    assert events["fused"].delegate_debug_metadatas == {"count": 0}
    assert events["fused"].raw_delegate_debug_metadatas == []
    # not for the runtime's own rows
    assert events["DELEGATE_CALL"].delegate_debug_metadatas == []
    # a sample without metadata is b"" (deliberate: the reference's is the str "")
    two = _events(inspect([delegate_run(0), delegate_run(5000, b"")]))["7"]
    assert two.raw_delegate_debug_metadatas == [b"m", b""]


def test_the_metadata_table_holds_the_references_missing_cells() -> None:
    """A metadata column of numbers with a missing cell is one of floats, NaN where
    missing (the reference's DataFrame), in the grid and the TSV."""
    import io

    inspector = inspect(
        [delegate_run(0)], delegate_metadata_parser=lambda raws: {"count": len(raws)}
    )
    out = io.StringIO()
    inspector.print_data_tabular(file=out, include_delegate_debug_data=True)
    rows = [line.split("│") for line in out.getvalue().splitlines() if line.startswith("│")]
    assert rows[0][-2].strip() == "count"
    assert [row[-2].strip() for row in rows[1:]] == ["1", "0", "nan", "nan"]
    tsv = io.StringIO()
    inspector.save_data_to_tsv(tsv, include_delegate_debug_data=True)
    assert [row.split("\t")[-1] for row in tsv.getvalue().splitlines()[1:]] == [
        "1.0",
        "0.0",
        "",
        "",
    ]


def test_vgf_statistics_and_the_tensorboard_stub(tmp_path: Path) -> None:
    record = json.dumps(VGF).encode()
    inspector = inspect([delegate_run(0, record)], etrecord=make_etrecord(DELEGATED))
    (found,) = inspector.get_vgf_neural_statistics()
    assert found["segments"][0]["debug_database"]["raw_data"] == b"\x00\x01"
    assert inspect([delegate_run(0)]).get_vgf_neural_statistics() == []
    with pytest.warns(InspectorWarning, match="wrote nothing"):
        assert inspector.write_tensorboard_artifact(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_reference_outputs_and_the_graph_dict() -> None:
    inspector = inspect([delegate_run(0)], etrecord=make_etrecord(DELEGATED))
    assert inspector._reference_outputs == {}  # the record stores none
    assert not hasattr(inspector, "op_graph_dict")
    with pytest.raises(AttributeError, match="graph_view"):
        inspector.op_graph_dict  # noqa: B018


def test_an_event_block_made_by_hand_has_the_references_defaults() -> None:
    block = EventBlock(name="Execute")
    assert block.run_output is None and block.reference_output is None
    assert (block.source_time_scale, block.target_time_scale) == (TimeScale.NS, TimeScale.MS)
    assert EventBlock(name="Execute", run_output=[]).run_output == []


def test_misuse_raises_the_references_classes() -> None:
    run = [delegate_run(0)]
    with pytest.raises(UnknownNameError, match="unknown time scale 'minutes'") as scale:
        inspect(run, target_time_scale="minutes")
    assert isinstance(scale.value, KeyError) and str(scale.value).startswith("unknown")
    with pytest.raises(ArgumentTypeError, match="etrecord must be") as record:
        inspect(run, etrecord=42)
    assert isinstance(record.value, TypeError) and isinstance(record.value, UsageError)
    with pytest.raises(UnknownNameError, match="reference_graph_name='other'"):
        inspect(run, etrecord=make_etrecord(DELEGATED), reference_graph_name="other")
    inspect(run, reference_graph_name="other")  # no ETRecord: the name is not used


@pytest.mark.torch
def test_convert_to_float_tensor() -> None:
    import torch

    from delegate_lens.inspector._inspector_utils import convert_to_float_tensor

    converted = convert_to_float_tensor(torch.tensor([1, 2], dtype=torch.int32))
    assert converted.dtype == torch.float64 and converted.tolist() == [1.0, 2.0]
    assert convert_to_float_tensor(torch.tensor([float("nan"), 3.0])).tolist() == [0.0, 3.0]
    assert convert_to_float_tensor(2).shape == ()
    with pytest.raises(UsageError, match="scalar or a tensor, not a list"):
        convert_to_float_tensor([1, 2])
