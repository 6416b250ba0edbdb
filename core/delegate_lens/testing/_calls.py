"""The delegate calls of an ETDump, each with the events its backend logged: what the
logging rules (``every-identifier-logged``, ``no-identifier-twice``, ``sequential-events``)
and the numeric ones (``numeric-gaps``, ``outputs-belong-to-ops``) read.

A backend's events of one call come before the call's own ``DELEGATE_CALL`` event (the
runtime records it when the call returns); an event belongs to the next ``DELEGATE_CALL``
of its instruction.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

if TYPE_CHECKING:
    from delegate_lens.etdump import ETDump, Value


@attrs.frozen
class Logged:
    """One event a backend logged: a profile event (``start``, ``end``) or an intermediate
    output (``value``, the ETDump's value record)."""

    kind: Literal["profile", "output"]
    identifier: int | str
    position: int  # the event's index in its run
    start: int = 0
    end: int = 0
    value: Value | None = None


@attrs.frozen
class DelegateCall:
    """One delegate call: its run, instruction, Debug Handle Map and logged events (in order)."""

    run: int
    instruction: int
    backend: str
    mapping: Mapping[int | str, tuple[int, ...]]
    events: tuple[Logged, ...]

    @property
    def partition(self) -> frozenset[int]:
        """The handles the map names (the partition's, when every node is covered)."""
        return frozenset(h for hs in self.mapping.values() for h in hs)

    def where(self) -> str:
        return f"run {self.run}, instruction {self.instruction}"

    def describe(self, identifier: int | str) -> str:
        handles = self.mapping.get(identifier)
        return f"identifier {identifier!r}" + ("" if handles is None else f" {handles}")


def _handles(value: object) -> tuple[int, ...]:
    if isinstance(value, list | tuple):
        return tuple(int(h) for h in value)
    return (int(value),)  # type: ignore[call-overload]


def _identifier(id_int: int, id_str: str | None) -> int | str | None:
    if id_int != -1:
        return id_int
    return id_str or None


def delegate_calls(
    etdump: ETDump, dmap: Mapping[int, Mapping[str, Any]], runs: int | None = None
) -> Iterator[DelegateCall]:
    """Every delegate call of the ``Execute`` runs of ``etdump`` (the first ``runs`` of
    them, or all), with the events logged under an identifier. ``dmap``: the method's
    delegate map, by instruction. Calls of instructions not in ``dmap`` are left out."""
    seen = 0
    for r, run in enumerate(etdump.run_data):
        if run.name != "Execute":
            continue
        if runs is not None and seen >= runs:
            return
        seen += 1
        pending: dict[int, list[Logged]] = {}
        for k, event in enumerate(run.events or ()):
            pe, de = event.profile_event, event.debug_event
            if pe is not None:
                ident = _identifier(pe.delegate_debug_id_int, pe.delegate_debug_id_str)
                if ident is not None:
                    pending.setdefault(pe.instruction_id, []).append(
                        Logged("profile", ident, k, pe.start_time, pe.end_time)
                    )
                elif pe.name == "DELEGATE_CALL":
                    entry = dmap.get(pe.instruction_id)
                    logged = pending.pop(pe.instruction_id, [])
                    if entry is None:
                        continue
                    mapping = entry.get("delegate_map") or {}
                    yield DelegateCall(
                        r,
                        pe.instruction_id,
                        str(entry.get("name", "")),
                        {i: _handles(hs) for i, hs in mapping.items()},
                        tuple(logged),
                    )
            elif de is not None:
                ident = _identifier(de.delegate_debug_id_int, de.delegate_debug_id_str)
                if ident is not None:
                    pending.setdefault(de.instruction_id, []).append(
                        Logged("output", ident, k, value=de.debug_entry)
                    )


def tensor_value(value: Value | None, buffer: bytes) -> Any:
    """A logged value as numpy (a tensor read from the debug ``buffer``, a list of them, a
    number), or ``None`` when it cannot be read."""
    import numpy as np

    from delegate_lens.etdump import NUMPY_SCALAR_TYPES

    if value is None:
        return None
    dtypes = {int(code): name for name, code in NUMPY_SCALAR_TYPES.items()}

    def tensor(t: Any) -> Any:
        dtype = dtypes.get(int(t.scalar_type))
        if dtype is None:
            return None
        count = int(np.prod(t.sizes)) if t.sizes else 1
        size = count * np.dtype(dtype).itemsize
        if t.offset < 0 or t.offset + size > len(buffer):
            return None
        return np.frombuffer(buffer, dtype=dtype, count=count, offset=t.offset).reshape(t.sizes)

    if value.tensor is not None:
        return tensor(value.tensor)
    if value.tensor_list is not None:
        return [tensor(t) for t in value.tensor_list.tensors]
    for number in (value.float_value, value.double_value, value.int_value):
        if number is not None:
            return np.asarray(next(iter(attrs.asdict(number).values())))
    return None
