"""Which reference output each output of a multi-output runtime event is compared with.

A delegate call with several outputs logs them all under the partition's whole handle set,
in the order of the partition's outputs. The reference (ExecuTorch 1.5.1) compares them
with the outputs of the set's last handles, which are not the partition's outputs in
general (``y = linear(x); return y, (y + y) * y`` pairs ``y`` with ``y + y``); here:

1. the partition's outputs are the handles of the set whose value leaves it (read by a
   node outside the set, or an output of the graph), in graph order;
2. runtime output ``k`` is paired with partition output ``k`` when there are as many and
   each pair has the same shape;
3. else each runtime output is paired with the one partition output of its shape, when
   every one has exactly one and no two share it;
4. else by position when each pair has the same number of elements (compared reshaped);
5. else each output that has exactly one partition output of its shape is paired with it,
   and the others are ambiguous: the row says so in its note and has no gap.

numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from delegate_lens.numerics._aot_outputs import AotOutputs


@attrs.frozen
class Pair:
    """Runtime output ``index`` of ``count`` and the handle of its reference output (None:
    ambiguous), with a note on how it was paired."""

    index: int
    count: int
    handle: int | None
    note: str


def partition_outputs(handles: Sequence[int], aot: AotOutputs) -> list[int]:
    """The handles of ``handles`` whose value leaves the set, in graph order."""
    inside = set(handles)
    leaving: set[int] = set()
    for consumer, sources in aot.inputs_of.items():
        if consumer not in inside:
            leaving.update(h for h in sources if h in inside)
    leaving.update(h for h in aot.graph_outputs or () if h in inside)
    present = [h for h in dict.fromkeys(handles) if h in leaving and (h,) in aot.outputs]
    return sorted(present, key=lambda h: aot.order.get(h, 0))


def _shape(value: object) -> tuple[int, ...] | None:
    if isinstance(value, np.ndarray):
        return tuple(value.shape)
    return None


def _fits(aot_shape: tuple[int, ...] | None, runtime_shape: tuple[int, ...] | None) -> bool:
    if aot_shape is None or runtime_shape is None:
        return False
    return aot_shape == runtime_shape or int(np.prod(aot_shape)) == int(np.prod(runtime_shape))


def pair_outputs(
    handles: Sequence[int], runtime: Sequence[object], aot: AotOutputs, names: str
) -> list[Pair]:
    """Pair each of ``runtime`` (a partition's outputs, in order) with a handle of
    ``handles`` (see the module text); ``names`` names the row in notes."""
    count = len(runtime)
    outs = partition_outputs(handles, aot)
    runtime_shapes = [_shape(v) for v in runtime]
    aot_shapes = {
        h: _shape(aot.outputs[(h,)]) for h in dict.fromkeys(handles) if (h,) in aot.outputs
    }

    def label(h: int) -> str:
        return ", ".join(aot.op_names.get((h,), [])) or str(h)

    if len(outs) == count and all(aot_shapes.get(h) == s for h, s in zip(outs, runtime_shapes)):
        return [Pair(k, count, h, f"output {k} of {count}: {label(h)}") for k, h in enumerate(outs)]
    pool = outs if len(outs) >= count else list(aot_shapes)
    chosen: list[int | None] = []
    for shape in runtime_shapes:
        same = [h for h in pool if shape is not None and aot_shapes.get(h) == shape]
        chosen.append(same[0] if len(same) == 1 else None)
    if all(h is not None and chosen.count(h) == 1 for h in chosen):
        return [
            Pair(k, count, h, f"output {k} of {count}: {label(h)} (paired by shape)")
            for k, h in enumerate(chosen)
            if h is not None
        ]
    if len(outs) == count and all(
        _fits(aot_shapes.get(h), s) for h, s in zip(outs, runtime_shapes)
    ):
        return [  # the same number of elements: compared reshaped (the gap's note says so)
            Pair(k, count, h, f"output {k} of {count}: {label(h)}") for k, h in enumerate(outs)
        ]
    pairs: list[Pair] = []
    for k, (h, shape) in enumerate(zip(chosen, runtime_shapes)):
        if h is not None and chosen.count(h) == 1:
            pairs.append(Pair(k, count, h, f"output {k} of {count}: {label(h)} (paired by shape)"))
            continue
        fits = [label(c) for c in pool if aot_shapes.get(c) == shape]
        why = (
            f"it could be the output of {' or '.join(fits)}"
            if len(fits) > 1
            else "no output of the partition has its shape"
            if not fits
            else "another output has its shape too"
        )
        shown = list(shape) if shape is not None else "no tensor"
        pairs.append(
            Pair(
                k,
                count,
                None,
                f"output {k} of {count} ({shown}) of {names}: pairing is ambiguous ({why}); "
                "not compared",
            )
        )
    return pairs
