"""`Inspector.to_dataframe` built from columns is the frame the event objects give."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.inspector import Inspector
from delegate_lens.inspector import _frames as frames
from delegate_lens.inspector._frames import blocks_to_dataframe

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("name", ["mlp_xnnpack", "conv_xnnpack", "gpt_portable"])
@pytest.mark.parametrize("units", [True, False])
@pytest.mark.parametrize("metadata", [True, False])
def test_columnar_frame_is_the_event_frame(name: str, units: bool, metadata: bool) -> None:
    folder: Path = VECTORS / name
    debug = folder / "debug.bin"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = Inspector(
            etdump_path=folder / "etdump.etdp",
            etrecord=str(folder / "etrecord.bin"),
            debug_buffer_path=debug if debug.exists() else None,
        )
        fast = inspector.to_dataframe(include_units=units, include_delegate_debug_data=metadata)
        slow = blocks_to_dataframe(
            inspector.event_blocks, include_units=units, include_delegate_debug_data=metadata
        )
    # debug values are torch tensors, as the reference's: compared apart, by dtype, shape, values
    assert [_tensors(cell) for cell in fast.pop("debug_data")] == [
        _tensors(cell) for cell in slow.pop("debug_data")
    ]
    pd.testing.assert_frame_equal(fast, slow)


def _tensors(cell: list[object]) -> list[object]:
    return [(str(v.dtype), tuple(v.shape), v.tolist()) if hasattr(v, "dtype") else v for v in cell]


def test_no_run_objects_until_asked() -> None:
    inspector = Inspector(etdump_path=VECTORS / "gpt_portable" / "etdump.etdp")
    assert inspector._etdump is None  # decoded straight to columns
    assert len(inspector.etdump.run_data) == 51  # made on first use


@pytest.mark.parametrize("collecting", [True, False])
def test_the_frame_is_built_without_cycle_collections(
    collecting: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-row lists of samples and start times are not walked by a collection while
    the frame is built (with a threshold of 1, every allocation would start one); the
    collector is left as it was found."""
    inspector = Inspector(
        etdump_path=VECTORS / "gpt_portable" / "etdump.etdp",
        etrecord=str(VECTORS / "gpt_portable" / "etrecord.bin"),
    )
    pd.DataFrame({"a": [1]})  # pandas' own first-use work, outside the count
    passes: list[int] = []
    during: list[int] = []
    build = frames._inspector_dataframe

    def counted_build(*args: object) -> object:
        before = len(passes)
        frame = build(*args)  # type: ignore[arg-type]
        during.append(len(passes) - before)  # before the collector is back
        return frame

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    monkeypatch.setattr(frames, "_inspector_dataframe", counted_build)
    thresholds = gc.get_threshold()
    was_on = gc.isenabled()
    gc.set_threshold(1)
    (gc.enable if collecting else gc.disable)()
    gc.callbacks.append(count)
    try:
        frame = inspector.to_dataframe()
        assert gc.isenabled() is collecting
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        (gc.enable if was_on else gc.disable)()
    assert len(frame) > 0
    assert during == [0]


def test_the_frame_makes_no_event_and_no_run_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """The frame comes from the tables' columns: no Event per row, no run objects."""
    inspector = Inspector(
        etdump_path=VECTORS / "gpt_portable" / "etdump.etdp",
        etrecord=str(VECTORS / "gpt_portable" / "etrecord.bin"),
    )

    def refuse(*args: object) -> None:
        raise AssertionError("an Event was made")

    monkeypatch.setattr(Inspector, "make_event", refuse)
    frame = inspector.to_dataframe()
    assert len(frame) == sum(table.n_rows for table in inspector.tables)
    assert inspector._etdump is None and inspector._blocks is None
