"""Intermediate-output taps: numeric debugging through delegates that log nothing.

Each selected intermediate value becomes one more output of the program, through a tap
operator no partitioner takes: the delegate computing the value hands it out as a
partition output, without the backend doing anything. After lowering, :func:`strip_taps_`
replaces each tap by its reducer (``STATS``: thirteen scalars; ``FULL_TENSOR``: the tensor),
run by the portable kernels. The same public names as ExecuTorch's
``executorch.devtools.intermediate_output_tap``; see ``docs/numerics.md``.

Typical use::

    ep = torch.export.export(model, inputs)
    ep, specs = tap_intermediate_outputs_(ep, (select_by_op_type("aten.linear.default"), STATS))
    aot_flat = pytree.tree_leaves(ep.module()(*inputs))
    edge = to_edge_transform_and_lower(ep, partitioner=[DemoPartitioner()])
    strip_taps_(edge)
    rt_flat = Program.load(edge.to_executorch().buffer).load_method().execute(list(inputs))
    df = compare_aot_runtime_dataframe(specs, aot_flat, rt_flat)

Ahead-of-time code: importing this package imports torch (``import delegate_lens`` does
not import it).
"""

from __future__ import annotations

from delegate_lens.intermediate_output_tap._convenience import (
    compare_aot_runtime_dataframe,
    tap_compare,
)
from delegate_lens.intermediate_output_tap._op import is_tap_node
from delegate_lens.intermediate_output_tap._reducers import (
    FULL_TENSOR,
    STATS,
    StatReducer,
    get_reducer,
)
from delegate_lens.intermediate_output_tap._selectors import (
    NodeSelector,
    select_all,
    select_all_call_function,
    select_any,
    select_by_module_class,
    select_by_module_path,
    select_by_op_type,
    select_not,
)
from delegate_lens.intermediate_output_tap._spec import TapSpec
from delegate_lens.intermediate_output_tap._strip_pass import strip_taps_
from delegate_lens.intermediate_output_tap._tap_pass import (
    TapRule,
    find_tap_nodes,
    tap_intermediate_outputs_,
)

__all__ = [
    "FULL_TENSOR",
    "STATS",
    "NodeSelector",
    "StatReducer",
    "TapRule",
    "TapSpec",
    "compare_aot_runtime_dataframe",
    "find_tap_nodes",
    "get_reducer",
    "is_tap_node",
    "select_all",
    "select_all_call_function",
    "select_any",
    "select_by_module_class",
    "select_by_module_path",
    "select_by_op_type",
    "select_not",
    "strip_taps_",
    "tap_compare",
    "tap_intermediate_outputs_",
]
