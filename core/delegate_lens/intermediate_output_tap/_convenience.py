"""The comparison table and the one-shot :func:`tap_compare`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import torch
import torch.utils._pytree as pytree

from delegate_lens.errors import MissingExtraError, UsageError
from delegate_lens.intermediate_output_tap._spec import TapSpec
from delegate_lens.intermediate_output_tap._strip_pass import strip_taps_
from delegate_lens.intermediate_output_tap._tap_pass import TapRule, tap_intermediate_outputs_

if TYPE_CHECKING:
    from delegate_lens.aot import PartitionerArg, ProgramManager


def _floats(value: object) -> np.ndarray[Any, np.dtype[np.float64]]:
    """A tap value (tensor, array, list, number) as a flat float64 array."""
    if isinstance(value, torch.Tensor):
        value = value.detach().to(torch.float32).cpu().reshape(-1).numpy()
    try:
        return np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return np.zeros(0, dtype=np.float64)


def sqnr_db(aot: npt.NDArray[np.generic], runtime: npt.NDArray[np.generic]) -> float:
    """``20 log10(|runtime| / |runtime - aot|)`` over the common length, in dB (inf when
    equal, nan when empty), computed in float32 as torch's ``compute_sqnr`` does."""
    n = min(aot.size, runtime.size)
    if n == 0:
        return math.nan
    signal = runtime[:n].astype(np.float32)
    noise = signal - aot[:n].astype(np.float32)
    noise_norm = float(np.linalg.norm(noise))
    signal_norm = float(np.linalg.norm(signal))
    if noise_norm == 0.0:
        return math.inf
    if signal_norm == 0.0:
        return -math.inf
    return 20.0 * math.log10(signal_norm / noise_norm)


def compare_rows(
    specs: Sequence[TapSpec], aot_flat: Sequence[object], rt_flat: Sequence[object]
) -> list[dict[str, Any]]:
    """The rows of :func:`compare_aot_runtime_dataframe`, as dicts (no pandas)."""
    rows: list[dict[str, Any]] = []
    for spec in specs:
        for side, flat in (("aot", aot_flat), ("runtime", rt_flat)):
            if not 0 <= spec.output_index < len(flat):
                raise UsageError(
                    f"tap {spec.node_name}: output index {spec.output_index} is outside the "
                    f"{side} outputs ({len(flat)}); were these outputs made by the tapped "
                    "program?"
                )
        aot = _floats(aot_flat[spec.output_index])
        rt = _floats(rt_flat[spec.output_index])
        row: dict[str, Any] = {
            "node_name": spec.node_name,
            "module_path": spec.module_path,
            "module_class": spec.module_class,
            "op_target": spec.op_target,
            "reducer_name": spec.reducer_name,
            "output_index": spec.output_index,
        }
        if spec.reducer_name == "FULL_TENSOR":
            row["sqnr_db"] = sqnr_db(aot, rt)
            row["aot_numel"] = int(aot.size)
            row["rt_numel"] = int(rt.size)
        else:
            fields = spec.fields or tuple(f"v{i}" for i in range(max(aot.size, rt.size)))
            for i, field in enumerate(fields):
                row[f"aot_{field}"] = float(aot[i]) if i < aot.size else math.nan
                row[f"rt_{field}"] = float(rt[i]) if i < rt.size else math.nan
        rows.append(row)
    return rows


def compare_aot_runtime_dataframe(
    specs: Sequence[TapSpec], aot_flat: Sequence[object], rt_flat: Sequence[object]
) -> Any:
    """A pandas DataFrame, one row per tap, comparing ``aot_flat`` (the tapped program's
    eager outputs, flattened) with ``rt_flat`` (the runtime's outputs of the stripped
    program).

    Columns: ``node_name``, ``module_path``, ``module_class``, ``op_target``,
    ``reducer_name``, ``output_index``; then for ``FULL_TENSOR`` taps ``sqnr_db`` (runtime
    vs AOT, dB: inf when equal), ``aot_numel``, ``rt_numel``; for other reducers
    ``aot_<field>`` and ``rt_<field>`` for each field.

    :raises MissingExtraError: pandas is not installed.
    """
    try:
        import pandas as pd
    except ImportError:
        raise MissingExtraError(
            "compare_aot_runtime_dataframe needs pandas: pip install 'delegate-lens[pandas]'"
        ) from None
    return pd.DataFrame(compare_rows(specs, aot_flat, rt_flat))


def run_program(
    program_manager: ProgramManager, inputs: Sequence[object], method: str = "forward"
) -> list[Any]:
    """Run a :class:`~delegate_lens.ProgramManager`'s method in the simulated runtime."""
    from delegate_lens.runtime import Program

    return list(Program.load(program_manager.buffer).load_method(method).execute(list(inputs)))


def tap_compare(
    model: torch.nn.Module,
    example_inputs: tuple[object, ...],
    partitioner: PartitionerArg | None = None,
    *,
    rules: Sequence[TapRule] | TapRule | None = None,
    error_on_empty: bool = True,
    max_taps: int | None = None,
) -> tuple[Any, list[TapSpec]]:
    """Export ``model``, tap it, run it eagerly for the reference values, lower it with
    ``partitioner`` (a partitioner, a backend id, or a list of them; None: nothing
    delegated), strip the taps, run the program in the simulated runtime and compare.

    :returns: ``(DataFrame, specs)`` as :func:`compare_aot_runtime_dataframe` and
        :func:`tap_intermediate_outputs_` give them.
    """
    from delegate_lens.aot import to_edge_transform_and_lower

    ep = torch.export.export(model, tuple(example_inputs))
    tapped, specs = tap_intermediate_outputs_(
        ep, rules, max_taps=max_taps, error_on_empty=error_on_empty
    )
    with torch.no_grad():
        aot_flat = pytree.tree_leaves(tapped.module()(*example_inputs))
    edge = to_edge_transform_and_lower(tapped, partitioner=partitioner or [])
    strip_taps_(edge)
    runtime_flat = run_program(edge.to_executorch(), pytree.tree_leaves(example_inputs))
    return compare_aot_runtime_dataframe(specs, aot_flat, runtime_flat), specs
