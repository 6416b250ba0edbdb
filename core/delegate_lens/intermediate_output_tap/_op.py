"""The tap operator, ``delegate_lens_devtools::tap.Tensor(Tensor x, str reducer_name)``.

An operator no partitioner knows, so partitioning leaves it outside every delegate: the
value it reads becomes an output of the delegate that computes it. Run eagerly (and while
tracing, on fake tensors) it applies the named reducer; :func:`strip_taps_` replaces it by
the reducer's nodes after lowering.
"""

from __future__ import annotations

import torch
import torch.fx as fx
from torch.library import Library

NAMESPACE = "delegate_lens_devtools"
TAP_OP_NAME = f"{NAMESPACE}.tap.Tensor"


def _define() -> None:
    if hasattr(torch.ops, NAMESPACE) and hasattr(getattr(torch.ops, NAMESPACE), "tap"):
        return  # defined already (this module imported twice under different names)
    library = Library(NAMESPACE, "DEF")
    library.define("tap.Tensor(Tensor x, str reducer_name) -> Tensor")

    def tap(x: torch.Tensor, reducer_name: str) -> torch.Tensor:
        from delegate_lens.intermediate_output_tap._reducers import get_reducer

        return get_reducer(reducer_name).eager(x)

    library.impl("tap.Tensor", tap, "CompositeExplicitAutograd")
    _LIBRARIES.append(library)  # a Library unregisters its ops when collected


_LIBRARIES: list[Library] = []
_define()

TAP_OP = torch.ops.delegate_lens_devtools.tap.Tensor


def is_tap_node(node: fx.Node) -> bool:
    """Whether ``node`` calls the tap operator."""
    return node.op == "call_function" and (
        node.target is TAP_OP or str(node.target).endswith(TAP_OP_NAME)
    )
