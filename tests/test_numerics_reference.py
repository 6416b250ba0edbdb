"""calculate_numeric_gap on the reference vector mlp_xnnpack, against the reference's answers.

``tests/data/numerics_mlp_xnnpack`` holds an ETRecord with representative inputs written by
the reference toolchain (its encoding) and what the reference's ``calculate_numeric_gap``
returned for it (see the README there).
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REFERENCE_PYTHON, needs_reference

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


# A gap the reference computed as exactly nothing (the run's output equals the AOT output
# bit for bit on its machine) is float32 rounding noise on a machine whose BLAS sums in
# another order: it must stay far below the distance's threshold, not be 0 to the last bit.
_NOISE = {"MSE": 1e-12, "L1": 1e-5, "SNR": 120.0}


def _same_gap(distance: str, ours: float, theirs: float | str) -> bool:
    theirs = float(theirs)
    if distance == "SNR" and math.isinf(theirs):
        return (math.isinf(ours) and ours > 0) or ours > _NOISE["SNR"]
    if theirs == 0.0:
        return 0.0 <= ours < _NOISE[distance]
    return ours == pytest.approx(theirs, rel=1e-4)


def test_same_gap_allows_rounding_noise_only() -> None:
    assert _same_gap("L1", 3e-8, 0.0) and _same_gap("SNR", 150.0, "inf")
    assert not _same_gap("L1", 1e-3, 0.0) and not _same_gap("SNR", 40.0, "inf")
    assert not _same_gap("MSE", 0.0057 * 1.01, 0.0057)


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
        assert all(_same_gap(distance, a, b) for a, b in zip(row["gap"], ref["gap"]))


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
    # torch's float32 linear on this machine against the reference's: rounding may differ
    aot = row["aot_intermediate_output"]
    np.testing.assert_allclose(aot, expected["aot_output"], rtol=1e-5, atol=1e-6)
    assert _same_gap(distance, row["gap"][0], expected["gap"][0])
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


_REFERENCE_GAPS = """
import json, sys
from executorch.devtools import Inspector
inspector = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2], debug_buffer_path=sys.argv[3])
out = {}
for distance in ("MSE", "L1", "SNR"):
    frame = inspector.calculate_numeric_gap(distance)
    out[distance] = [[list(r["aot_debug_handle"]), [float(g) for g in r["gap"]]]
                     for _, r in frame.iterrows()]
print(json.dumps(out))
"""


@pytest.mark.slow
@needs_reference
def test_reference_computes_the_same_gaps_on_our_files(tmp_path: Path) -> None:
    """The reference's calculate_numeric_gap on our demo files (fp16 div): each row it can
    compute has our gap for the same last handle. (It computes fewer rows: the demo's
    summary event, which has no values, merges the delegate's per-op rows into one.)"""
    from numerics_helpers import demo_run

    paths = demo_run(tmp_path, "mlp", {"precision": b"fp16", "precision_kernels": b"div"})
    proc = subprocess.run(
        [
            REFERENCE_PYTHON,
            "-c",
            _REFERENCE_GAPS,
            str(paths["etdump"]),
            str(paths["etrecord"]),
            str(paths["debug_buffer"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    inspector = Inspector(
        etdump_path=paths["etdump"],
        etrecord=paths["etrecord"],
        debug_buffer_path=paths["debug_buffer"],
    )
    for distance, rows in theirs.items():
        ours = {
            row["aot_debug_handle"][-1]: row["gap"]
            for row in inspector.calculate_numeric_gap(distance, as_dataframe=False)
        }
        assert rows
        for handles, gap in rows:
            assert ours[handles[-1]] == pytest.approx(gap, rel=1e-9)
