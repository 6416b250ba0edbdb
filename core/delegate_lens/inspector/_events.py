"""The Inspector's user-facing value classes: :class:`PerfData`, :class:`Event`, :class:`EventBlock`.

Same names and meanings as the reference devtools. An :class:`EventBlock`'s ``events`` is a
lazy sequence: each :class:`Event` is made from the Inspector's columnar tables the first
time it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import attrs
import numpy as np

from delegate_lens.inspector._tensors import as_tensors
from delegate_lens.inspector._timescale import TimeScale

DebugValue = Any
"""An inflated debug value: a numpy array (tensor), a list of arrays (tensor list), an int,
float or bool, or ``None`` when the value is unavailable (no or too short debug buffer)."""


def _pct(raw: list[float], q: int) -> float:
    return float(np.percentile(raw, q))


@attrs.frozen
class PerfData:
    """The samples of one row (one per merged run) in the target time scale, with statistics.

    ``p10``/``p50``/``p90`` are linearly interpolated percentiles (numpy's default), as in
    the reference. ``PerfData(raw)`` computes the statistics; the Inspector passes them,
    computed for all rows at once.
    """

    raw: list[float]
    p10: float = attrs.field(
        default=attrs.Factory(lambda self: _pct(self.raw, 10), takes_self=True)
    )
    p50: float = attrs.field(
        default=attrs.Factory(lambda self: _pct(self.raw, 50), takes_self=True)
    )
    p90: float = attrs.field(
        default=attrs.Factory(lambda self: _pct(self.raw, 90), takes_self=True)
    )
    avg: float = attrs.field(
        default=attrs.Factory(lambda self: float(np.mean(self.raw)), takes_self=True)
    )
    min: float = attrs.field(
        default=attrs.Factory(lambda self: float(min(self.raw)), takes_self=True)
    )
    max: float = attrs.field(
        default=attrs.Factory(lambda self: float(max(self.raw)), takes_self=True)
    )


def _as_str_or_int(value: object) -> int | str | None:
    if value is None or isinstance(value, (int, str)):
        return value
    raise TypeError(f"delegate_debug_identifier must be int, str or None, not {value!r}")


@attrs.define(eq=False)
class Event:
    """One row: a profile event (or a debug-only instruction) with its samples and links.

    Attributes mirror the reference ``Event``; ``instruction_id`` and ``method`` (the
    ETRecord method this row was linked to, ``None`` when unlinked) are additions.
    """

    name: str
    perf_data: PerfData | None = None
    op_types: list[str] = attrs.field(factory=list)
    delegate_debug_identifier: int | str | None = attrs.field(
        default=None, converter=_as_str_or_int
    )
    debug_handles: int | list[int] | None = None
    stack_traces: dict[str, str | None] = attrs.field(factory=dict)
    module_hierarchy: dict[str, dict[str, tuple[str, str]] | None] = attrs.field(factory=dict)
    is_delegated_op: bool = False
    delegate_backend_name: str | None = None
    _debug_values: list[DebugValue] = attrs.field(factory=list, alias="debug_data")
    start_time: list[int] | None = None
    delegate_debug_metadatas: list[str] | list[bytes] | dict[str, Any] = attrs.field(factory=list)
    raw_delegate_debug_metadatas: list[bytes] = attrs.field(factory=list)
    instruction_id: int | None = None
    method: str | None = None

    num_outputs: int = 1
    """Outputs of the instruction (the ETRecord's ``instruction_id_to_num_outs_map``), as
    the reference's ``Event.num_outputs``."""

    _delegate_metadata_parser: Callable[[list[bytes]], Any] | None = attrs.field(
        default=None, repr=False, alias="_delegate_metadata_parser"
    )
    """The Inspector's ``delegate_metadata_parser`` (None when none was given), under the
    reference's private name."""
    _delegate_time_scale_converter: Callable[[Any, Any], Any] | None = attrs.field(
        default=None, repr=False, alias="_delegate_time_scale_converter"
    )
    """The Inspector's ``delegate_time_scale_converter``, or its default (ticks divided by
    the source/target factor), under the reference's private name."""

    _debug_tensors: list[DebugValue] | None = attrs.field(default=None, init=False, repr=False)

    @property
    def debug_data(self) -> list[DebugValue]:
        """The row's logged values, as the reference's: torch tensors (torch is imported on
        first read of a row that has any), ints, floats, bools; ``[]`` without values."""
        if self._debug_tensors is None:
            self._debug_tensors = as_tensors(self._debug_values)
        return self._debug_tensors

    @property
    def _delegate_debug_metadatas(self) -> list[bytes]:
        """The reference's private name of :attr:`raw_delegate_debug_metadatas`."""
        return self.raw_delegate_debug_metadatas

    @property
    def _instruction_id(self) -> int | None:
        """The reference's private name of :attr:`instruction_id`."""
        return self.instruction_id

    @property
    def _start_time(self) -> list[int] | None:
        """The reference's private name of :attr:`start_time`."""
        return self.start_time

    def asdict(self, _units: str = "") -> dict[str, Any]:
        """The row as the reference's ``Event.asdict``: one-row columns (list-valued cells
        wrapped in a list), statistics headers ending with ``_units`` (e.g. ``" (ms)"``),
        op types shortened from 5 on."""
        perf = self.perf_data
        op_types: Any = self.op_types
        if len(op_types) >= 5:
            op_types = (
                f"['{op_types[0]}', '{op_types[1]}' ... '{op_types[-1]}'] ({len(op_types)} total)"
            )
        return {
            "event_name": self.name,
            "raw": [perf.raw if perf else None],
            "p10" + _units: perf.p10 if perf else None,
            "p50" + _units: perf.p50 if perf else None,
            "p90" + _units: perf.p90 if perf else None,
            "avg" + _units: perf.avg if perf else None,
            "min" + _units: perf.min if perf else None,
            "max" + _units: perf.max if perf else None,
            "op_types": [op_types],
            "delegate_debug_identifier": self.delegate_debug_identifier,
            "stack_traces": [self.stack_traces],
            "module_hierarchy": [self.module_hierarchy],
            "is_delegated_op": self.is_delegated_op,
            "delegate_backend_name": self.delegate_backend_name,
            "debug_data": [self.debug_data],
            "start_time": [self.start_time],
        }

    def to_dataframe(self, _units: str = "") -> Any:
        """This event as a one-row pandas DataFrame (needs the ``pandas`` extra)."""
        from delegate_lens.inspector._frames import require_pandas

        return require_pandas().DataFrame(self.asdict(_units=_units))


class LazyEvents(Sequence[Event]):
    """A read-only sequence of :class:`Event` built on first access by ``make(index)``."""

    __slots__ = ("_cache", "_make", "_size")

    def __init__(self, size: int, make: Callable[[int], Event]) -> None:
        self._size = size
        self._make = make
        self._cache: list[Event | None] = [None] * size

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError("event index out of range")
        event = self._cache[index]
        if event is None:
            event = self._make(index)
            self._cache[index] = event
        return event

    def __iter__(self) -> Iterator[Event]:
        for i in range(self._size):
            yield self[i]

    def __repr__(self) -> str:
        return f"<{self._size} events>"


@attrs.define(eq=False)
class EventBlock:
    """Events of one run signature: every run with the same name, bundled input index and
    sequence of rows is merged here, each row holding one sample per run.

    ``run_indices`` and ``method`` (additions) list the merged runs by their position in
    the ETDump and name the ETRecord method they were linked to.
    """

    name: str
    events: Sequence[Event] = attrs.field(factory=list)
    bundled_input_index: int | None = None
    source_time_scale: TimeScale = TimeScale.NS
    target_time_scale: TimeScale = TimeScale.MS
    run_indices: list[int] = attrs.field(factory=list)
    method: str | None = None
    _run_values: list[DebugValue] | None = attrs.field(default=None, alias="run_output")
    _reference_loader: Callable[[], Any] | None = attrs.field(default=None, repr=False)
    _run_tensors: list[DebugValue] | None = attrs.field(default=None, init=False, repr=False)

    @property
    def run_output(self) -> list[DebugValue] | None:
        """The final outputs logged in the block's first run (debug events flagged as
        output), torch tensors as the reference's (torch imported on first read); None for
        a block made without them, as the reference's default."""
        if self._run_values is None:
            return None
        if self._run_tensors is None:
            self._run_tensors = as_tensors(self._run_values)
        return self._run_tensors

    @property
    def reference_output(self) -> Any:
        """The expected outputs of the bundled test case this block ran (the ETRecord's
        reference outputs of ``forward`` at :attr:`bundled_input_index`), or None. Loading
        them imports torch (the reference stores them with ``torch.save``)."""
        return None if self._reference_loader is None else self._reference_loader()

    def to_dataframe(
        self, include_units: bool = False, include_delegate_debug_data: bool = False
    ) -> Any:
        """This block's events as a pandas DataFrame (needs the ``pandas`` extra)."""
        from delegate_lens.inspector._frames import blocks_to_dataframe

        return blocks_to_dataframe(
            [self],
            include_units=include_units,
            include_delegate_debug_data=include_delegate_debug_data,
        )

    def __repr__(self) -> str:
        return (
            f"EventBlock(name={self.name!r}, events=<{len(self.events)}>, "
            f"bundled_input_index={self.bundled_input_index!r}, runs={len(self.run_indices)})"
        )
