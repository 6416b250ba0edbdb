"""The numeric rules: the intermediate outputs a backend logs against the graph run on the
same inputs (:func:`delegate_lens.numerics.capture_intermediate_outputs` on the ETRecord),
at the handles the Debug Handle Map gives each identifier.

* ``numeric-gaps`` — the last output logged for a set of handles in a call (what numeric
  debugging compares: a decomposition's last kernel) equals the graph's output at one of
  them. When it equals another node's output instead, the finding says so:
  ``identifier 3 maps to (7,) [sub], but its output matches (8,) [affine]``;
* ``outputs-belong-to-ops`` — no logged output is, instead of its own op's, the output of
  a node before its op in the partition (a kernel logging its input, or the tensor of the
  op before it); a decomposition's inner kernels are checked too.

Needs torch (the graph run) and numpy; runs only on the first ``Execute`` run.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import DelegateLensError
from delegate_lens.testing._calls import DelegateCall, delegate_calls, tensor_value
from delegate_lens.testing._rules import FindingSink, RuleInput

if TYPE_CHECKING:
    from delegate_lens.numerics import AotOutputs


def _float(value: object) -> Any:
    import numpy as np

    if value is None or isinstance(value, list):
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


class _Graph:
    """The graph's outputs by handle, and the closeness test."""

    def __init__(self, aot: AotOutputs, rtol: float, atol: float) -> None:
        self.aot, self.rtol, self.atol = aot, rtol, atol

    def value(self, handle: int) -> Any:
        return _float(self.aot.outputs.get((handle,)))

    def names(self, handles: Sequence[int]) -> str:
        names = [n for h in handles for n in self.aot.op_names.get((h,), [])]
        return ", ".join(names) or "?"

    def order(self, handle: int) -> int:
        return self.aot.order.get(handle, -1)

    def matches(self, logged: Any, handle: int) -> bool:
        import numpy as np

        want = self.value(handle)
        if want is None or logged is None or want.shape != logged.shape:
            return False
        return bool(np.allclose(logged, want, rtol=self.rtol, atol=self.atol, equal_nan=True))

    def mse(self, logged: Any, handles: Sequence[int]) -> tuple[int, float] | None:
        """``(handle, MSE)`` at the handle of ``handles`` latest in the graph whose output
        has the logged shape."""
        import numpy as np

        for h in sorted(handles, key=self.order, reverse=True):
            want = self.value(h)
            if want is not None and logged is not None and want.shape == logged.shape:
                return h, float(np.mean((logged - want) ** 2))
        return None


def _outputs(
    subject: RuleInput, call: DelegateCall, buffer: bytes
) -> list[tuple[int | str, tuple[int, ...], Any, bool]]:
    """``(identifier, handles, value, last of its handles)`` of every output logged in the
    call under an identifier of its map, the value as the graph computes it."""
    from delegate_lens import hooks

    logged = [
        (e.identifier, call.mapping[e.identifier], e.value)
        for e in call.events
        if e.kind == "output" and e.identifier in call.mapping
    ]
    last: dict[frozenset[int], int] = {frozenset(hs): i for i, (_, hs, _) in enumerate(logged)}
    out = []
    for i, (ident, handles, value) in enumerate(logged):
        array = tensor_value(value, buffer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a failing converter is the numerics' warning
            converted = hooks.intermediate_output(call.backend, ident, array)
        array = _float(array if converted is None else converted)
        out.append((ident, handles, array, last[frozenset(handles)] == i))
    return out


def _where(handles: Sequence[int], graph: _Graph) -> str:
    return f"{tuple(handles)} [{graph.names(handles)}]"


def check_numerics(case: FindingSink, subject: RuleInput) -> None:
    """Rules ``numeric-gaps`` and ``outputs-belong-to-ops`` (see the module)."""
    from delegate_lens.numerics import capture_intermediate_outputs

    traced = subject.run()
    calls = list(delegate_calls(traced.etdump, traced.delegate_map, runs=1))
    if not any(e.kind == "output" for call in calls for e in call.events):
        return  # nothing logged to compare
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            aot = capture_intermediate_outputs(
                str(traced.etrecord_path), list(subject.inputs), method="forward"
            )
    except DelegateLensError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        case.add("numeric-gaps", f"the graph cannot be run: {reason}", "ETRecord")
        return
    graph = _Graph(aot, traced.rtol, traced.atol)
    for call in calls:
        _check_call(case, call, graph, _outputs(subject, call, traced.debug_buffer))


def _check_call(
    case: FindingSink,
    call: DelegateCall,
    graph: _Graph,
    outputs: Sequence[tuple[int | str, tuple[int, ...], Any, bool]],
) -> None:
    partition = sorted(call.partition, key=graph.order)
    for ident, handles, value, last in outputs:
        if value is None or any(graph.matches(value, h) for h in handles):
            continue
        first = min(graph.order(h) for h in handles)
        earlier = [h for h in partition if h not in handles and graph.order(h) < first]
        others = [h for h in partition if h not in handles] if last else earlier
        elsewhere = next((h for h in others if graph.matches(value, h)), None)
        subject = f"{call.where()}, identifier {ident!r}"
        if elsewhere is not None:
            sentence = (
                f"identifier {ident!r} maps to {_where(handles, graph)}, but its output "
                f"matches {_where((elsewhere,), graph)}"
            )
            if last:
                case.add("numeric-gaps", sentence, subject)
            if elsewhere in earlier:
                case.add("outputs-belong-to-ops", sentence, subject)
        elif last:
            gap = graph.mse(value, handles)
            if gap is not None:
                handle, mse = gap
                case.add(
                    "numeric-gaps",
                    f"identifier {ident!r} maps to {_where(handles, graph)}, but its output "
                    f"differs from the graph's at {_where((handle,), graph)} (MSE {mse:.3g})",
                    subject,
                )
