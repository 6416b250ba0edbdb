"""A ``STATS`` tap on a value that is not contiguous in eager torch (a transpose's output,
a view): the tapped program runs and its statistics are those of the values, in the
tensor's logical order, equal to what the runtime computes from its contiguous copy
(issue 32, item 4; the reference computes these too)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("builtin_plugins_only")]

torch = pytest.importorskip("torch")

from delegate_lens.intermediate_output_tap import (  # noqa: E402
    STATS,
    compare_aot_runtime_dataframe,
    select_by_op_type,
    strip_taps_,
    tap_intermediate_outputs_,
)


class _Heads(torch.nn.Module):
    """A projection split into heads and transposed, as attention does."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: Any) -> Any:
        heads = self.proj(x).view(1, 3, 2, 4).transpose(1, 2)  # [1, 2, 3, 4], strided
        return heads.sum(-1)


def _numpy_stats(x: np.ndarray) -> dict[str, float]:
    f = x.astype(np.float64).ravel()
    a = np.abs(f)
    k = max(1, -(-f.size // 100))
    return {
        "min": f.min(),
        "max": f.max(),
        "mean": f.mean(),
        "abs_max": a.max(),
        "l1_norm": a.sum(),
        "l2_norm": np.sqrt((f**2).sum()),
        "p99_abs": np.sort(a)[::-1][k - 1],
    }


def test_stats_of_a_transposed_tensor_is_computed() -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) - 7.5
    strided = base.transpose(0, 2)
    assert not strided.is_contiguous()
    got = dict(zip(STATS.fields, STATS.eager(strided).tolist()))
    want = _numpy_stats(strided.numpy())
    for field, value in want.items():
        assert got[field] == pytest.approx(value, rel=1e-6), field
    assert torch.equal(STATS.eager(strided), STATS.eager(strided.contiguous()))


def test_a_stats_tap_on_a_transpose_runs_eagerly_and_in_the_runtime() -> None:
    import delegate_lens as dl
    from delegate_lens.runtime import Program

    torch.manual_seed(0)
    model, x = _Heads().eval(), torch.randn(1, 3, 8)
    tapped, specs = tap_intermediate_outputs_(
        torch.export.export(model, (x,)), [(select_by_op_type("aten.transpose.int"), STATS)]
    )
    assert [s.reducer_name for s in specs] == ["STATS"]
    with torch.no_grad():
        aot = list(tapped.module()(x))
        heads = model.proj(x).view(1, 3, 2, 4).transpose(1, 2)
    stats = dict(zip(STATS.fields, aot[specs[0].output_index].tolist()))
    for field, value in _numpy_stats(heads.numpy()).items():
        assert stats[field] == pytest.approx(value, rel=1e-5, abs=1e-6), field

    edge = dl.to_edge(tapped)
    strip_taps_(edge)
    runtime = Program.load(edge.to_program().buffer).load_method().execute([x])
    table = compare_aot_runtime_dataframe(specs, aot, list(runtime))
    for field in ("min", "max", "abs_max", "l1_norm", "p99_abs"):
        assert table.loc[0, f"rt_{field}"] == pytest.approx(table.loc[0, f"aot_{field}"], rel=1e-6)
