"""What one tap records: where its value lands in the program's outputs and where it came
from (node, operator, module)."""

from __future__ import annotations

import attrs


@attrs.frozen
class TapSpec:
    """One tap made by :func:`~delegate_lens.intermediate_output_tap.tap_intermediate_outputs_`.

    :ivar node_name: the tapped node's name when the pass ran.
    :ivar op_target: its operator, ``str(node.target)`` (``"aten.linear.default"``).
    :ivar output_index: where the tap's value is in the program's flat outputs (taps are
        appended after the existing outputs, so the index holds through lowering, stripping
        and the runtime).
    :ivar reducer_name: the reducer's name (``"STATS"``, ``"FULL_TENSOR"``, ...).
    :ivar fields: what each element of a reduced value is (``()`` for ``FULL_TENSOR``).
    :ivar stack_trace: the node's ``stack_trace``, if recorded.
    :ivar module_path: the innermost module the node ran in (``"layers.0.attention.wo"``).
    :ivar module_class: that module's bare class name (``"Linear"``).
    """

    node_name: str
    op_target: str
    output_index: int
    reducer_name: str
    fields: tuple[str, ...]
    stack_trace: str | None = None
    module_path: str | None = None
    module_class: str | None = None
