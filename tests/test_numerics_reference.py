"""calculate_numeric_gap on the reference vector mlp_xnnpack, against the reference's answers.

``tests/data/numerics_mlp_xnnpack`` holds an ETRecord with representative inputs written by
the reference toolchain (its encoding) and what the reference's ``calculate_numeric_gap``
returned for it (see the README there).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from delegate_lens import Inspector
from delegate_lens.errors import InspectorError

pytestmark = pytest.mark.torch

DATA = Path(__file__).parent / "data" / "numerics_mlp_xnnpack"


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return json.loads((DATA / "reference_gaps.json").read_text())


def _inspector(vectors_dir: Path, etrecord: Path) -> Inspector:
    v = vectors_dir / "mlp_xnnpack"
    return Inspector(
        etdump_path=v / "etdump.etdp", etrecord=etrecord, debug_buffer_path=v / "debug.bin"
    )


def _same_gap(ours: float, theirs: float | str) -> bool:
    theirs = float(theirs)
    if math.isinf(theirs):
        return math.isinf(ours) and (ours > 0) == (theirs > 0)
    return ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("distance", ["MSE", "L1", "SNR"])
def test_reference_written_inputs_give_the_reference_rows(
    vectors_dir: Path, reference: dict[str, Any], distance: str
) -> None:
    inspector = _inspector(vectors_dir, DATA / "etrecord_with_inputs.bin")
    table = inspector.calculate_numeric_gap(distance, as_dataframe=False)
    expected = reference["distances"][distance]
    assert table.reference_graph == "exported_program"  # handles carried back, as the reference
    assert len(table) == len(expected)
    for row, ref in zip(table, expected):
        assert list(row["aot_debug_handle"]) == ref["aot_debug_handle"]
        assert row["aot_ops"] == ref["aot_ops"]
        assert row["runtime_ops"] == ref["runtime_ops"]
        assert list(row["runtime_debug_handle"]) == ref["runtime_debug_handle"]
        assert list(row["aot_intermediate_output"].shape) == ref["aot_shape"]
        assert all(_same_gap(a, b) for a, b in zip(row["gap"], ref["gap"]))


@pytest.mark.parametrize("distance", ["MSE", "L1", "SNR"])
def test_nonzero_gaps_agree_with_the_reference(
    vectors_dir: Path, reference: dict[str, Any], distance: str
) -> None:
    shifted = reference["shifted_inputs"]
    inspector = _inspector(vectors_dir, vectors_dir / "mlp_xnnpack" / "etrecord.bin")
    inputs = [np.asarray(x, dtype=np.float32) for x in shifted["inputs"]]
    table = inspector.calculate_numeric_gap(distance, inputs=inputs, as_dataframe=False)
    (expected,) = shifted["distances"][distance]
    (row,) = table.rows
    assert list(row["aot_debug_handle"]) == expected["aot_debug_handle"]
    np.testing.assert_allclose(row["aot_intermediate_output"], expected["aot_output"], rtol=1e-6)
    assert row["gap"][0] == pytest.approx(expected["gap"][0], rel=1e-6)
    assert row["gap"][0] > 0 and row["first_divergence"]


def test_vector_without_representative_inputs_says_how_to_give_them(vectors_dir: Path) -> None:
    inspector = _inspector(vectors_dir, vectors_dir / "mlp_xnnpack" / "etrecord.bin")
    with pytest.raises(InspectorError, match=r"no representative inputs.*representative_inputs"):
        inspector.calculate_numeric_gap("MSE")


def test_reference_encoding_is_read(reference: dict[str, Any]) -> None:
    from delegate_lens.etrecord import parse_etrecord

    record = parse_etrecord(DATA / "etrecord_with_inputs.bin")
    (x,) = record.representative_inputs()
    np.testing.assert_array_equal(x.numpy(), np.asarray(reference["inputs"][0], np.float32))
