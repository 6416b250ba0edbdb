"""Pairing a partition's several runtime outputs with the reference graph's outputs
(issue 32, item 2), on hand-made reference outputs: by position when the shapes agree, by
shape when the positions do not, and never a gap when it is ambiguous; and a debug tensor
logged in another layout (channels-last) read in that layout. numpy only."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from delegate_lens.numerics import AotOutputs
from delegate_lens.numerics._pairing import pair_outputs, partition_outputs


def _aot(graph_outputs: tuple[int | None, ...] | None = (1, 3)) -> AotOutputs:
    """``y = linear(x)`` (1), ``a = y + y`` (2), ``m = a * y`` (3), ``t = m.T`` (4) with
    ``y`` and ``m`` the graph's outputs; handles 1-3 one partition."""
    y = np.arange(8, dtype=np.float32).reshape(2, 4)
    m = (y + y) * y
    return AotOutputs(
        graph="exported_program",
        outputs={(1,): y, (2,): y + y, (3,): m, (4,): m.T.copy()},
        op_names={(1,): ["linear"], (2,): ["add"], (3,): ["mul"], (4,): ["t"]},
        stack_traces={},
        order={1: 3, 2: 4, 3: 5, 4: 6},
        inputs_of={2: (1,), 3: (1, 2), 4: (3,)},
        graph_outputs=graph_outputs,
    )


def test_partition_outputs_are_the_values_leaving_the_set() -> None:
    aot = _aot()
    assert partition_outputs((1, 2, 3), aot) == [1, 3]  # y: a graph output; m: read by t
    assert partition_outputs((1, 2), aot) == [1, 2]  # y and a are read by mul, outside
    assert partition_outputs((1, 2, 3), _aot(graph_outputs=None)) == [3]  # an old cache


def test_outputs_paired_by_position() -> None:
    aot = _aot()
    runtime = [aot.outputs[(1,)], aot.outputs[(3,)]]
    pairs = pair_outputs((1, 2, 3), runtime, aot, "DELEGATE_CALL")
    assert [(p.index, p.handle, p.note) for p in pairs] == [
        (0, 1, "output 0 of 2: linear"),
        (1, 3, "output 1 of 2: mul"),
    ]


def test_outputs_paired_by_shape_when_positions_disagree() -> None:
    aot = _aot()
    y = aot.outputs[(1,)]
    runtime = [np.zeros((4, 2), np.float32), y]  # m.T's shape first, then y's
    aot4 = AotOutputs(
        aot.graph,
        {(1,): y, (3,): np.zeros((4, 2), np.float32)},
        aot.op_names,
        {},
        aot.order,
        {4: (3,)},
        graph_outputs=(1, 3),
    )
    pairs = pair_outputs((1, 3), runtime, aot4, "DELEGATE_CALL")
    assert [(p.handle, p.note) for p in pairs] == [
        (3, "output 0 of 2: mul (paired by shape)"),
        (1, "output 1 of 2: linear (paired by shape)"),
    ]


def test_an_ambiguous_pairing_is_said_and_not_compared() -> None:
    aot = _aot(graph_outputs=None)  # only m is known to leave the set: one for two outputs
    runtime = [aot.outputs[(1,)], aot.outputs[(3,)]]  # all [2, 4]
    pairs = pair_outputs((1, 2, 3), runtime, aot, "DELEGATE_CALL")
    assert [p.handle for p in pairs] == [None, None]
    assert pairs[0].note == (
        "output 0 of 2 ([2, 4]) of DELEGATE_CALL: pairing is ambiguous (it could be the "
        "output of linear or add or mul); not compared"
    )


def test_graph_outputs_survive_the_cache(tmp_path: Path) -> None:
    path = _aot().save(tmp_path / "x.numerics.npz")
    assert AotOutputs.load(path).graph_outputs == (1, 3)
    old = _aot(graph_outputs=None).save(tmp_path / "old.numerics.npz")
    assert AotOutputs.load(old).graph_outputs is None


def test_ambiguous_rows_have_no_gap_and_do_not_diverge(monkeypatch: Any) -> None:
    from delegate_lens.numerics import _gap
    from delegate_lens.numerics._runtime_entries import Entry

    aot = _aot(graph_outputs=None)
    runtime = [aot.outputs[(1,)] + 1, aot.outputs[(3,)]]
    entry = Entry((1, 2, 3), runtime, 2, (0, 1), "DELEGATE_CALL", "XnnpackBackend", None)
    monkeypatch.setattr(_gap, "runtime_intermediate_outputs", lambda *_: ([entry], []))
    monkeypatch.setattr(_gap, "_method_of", lambda *_: "forward")
    table = _gap.calculate_numeric_gap(object(), "MSE", aot_outputs=aot, method="forward")  # type: ignore[arg-type]
    assert len(table) == 2
    for row in table:
        assert row["aot_intermediate_output"] is None and math.isnan(row["gap"][0])
        assert not row["diverged"] and "pairing is ambiguous" in row["note"]
    assert table.first_divergence is None
    out = io.StringIO()
    table.write_table(out)
    assert "nan" in out.getvalue() and "first divergence: none" in out.getvalue()


def test_a_channels_last_debug_tensor_is_read_in_its_layout() -> None:
    """The runtime logs a channels-last tensor in its memory order, with its strides."""
    from delegate_lens.etdump import ScalarType, Tensor
    from delegate_lens.inspector._debugdata import DebugBuffer

    logical = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    memory = np.ascontiguousarray(logical.transpose(0, 2, 3, 1))  # N, H, W, C
    buffer = DebugBuffer(memory.tobytes())
    cl = Tensor(ScalarType.FLOAT, [1, 2, 3, 4], [24, 1, 8, 2], 0)
    assert np.array_equal(buffer.tensor(cl), logical)
    contiguous = DebugBuffer(logical.tobytes())
    for strides in ([12, 12, 4, 1], [], [5, 5, 5, 5]):  # dense, none, not a layout: as written
        t = Tensor(ScalarType.FLOAT, [1, 2, 3, 4], strides, 0)
        assert np.array_equal(contiguous.tensor(t), logical)
