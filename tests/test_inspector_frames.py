"""`Inspector.to_dataframe` built from columns is the frame the event objects give."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from conftest import VECTORS

from delegate_lens.inspector import Inspector
from delegate_lens.inspector.frames import blocks_to_dataframe

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
    pd.testing.assert_frame_equal(fast, slow)


def test_no_run_objects_until_asked() -> None:
    inspector = Inspector(etdump_path=VECTORS / "gpt_portable" / "etdump.etdp")
    assert inspector._etdump is None  # decoded straight to columns
    assert len(inspector.etdump.run_data) == 51  # made on first use
