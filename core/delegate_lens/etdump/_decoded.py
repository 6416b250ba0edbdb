"""What the decoder produces before any per-run object: one set of columns for a whole
buffer (one ETDump, or many decoded together), with run bounds and the file of each run.

:class:`~delegate_lens.etdump._objects.ETDump` objects are built from it on demand
(:meth:`DecodedColumns.run_data`); bulk readers (``collect``, the Inspector's grouping)
use the columns directly and never pay for thousands of run objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.etdump._columns import EventColumns, FileSpan
from delegate_lens.etdump._objects import Allocator, ETDump, RunData, Value
from delegate_lens.etdump._values import DebugEntries, ValueColumns

I64 = npt.NDArray[np.int64]
_NO_ENTRIES: Mapping[int, Value] = MappingProxyType({})  # shared, so read-only


def bounds_of(counts: npt.NDArray[np.integer[Any]]) -> I64:
    """``[0, c0, c0 + c1, ...]``: where each of consecutive groups of ``counts`` items
    starts (and, last, their total), as :class:`DecodedColumns` keeps run bounds."""
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return bounds


@attrs.frozen(eq=False)
class DecodedColumns:
    """Every event of one buffer's runs as file-wide columns.

    :param columns: every column of ``COLUMN_SPECS``, one read-only array each.
    :param bounds: run ``r`` holds events ``bounds[r]:bounds[r + 1]``.
    :param run_file: per run, the index of the file it belongs to (all 0 for one file).
    :param run_name: per run, a code into ``strings`` (-1: no name).
    :param run_bundled: per run, ``bundled_input_index``.
    :param allocator_bounds: run ``r``'s allocators are
        ``allocator_names[allocator_bounds[r]:allocator_bounds[r + 1]]``.
    :param allocator_names: every allocator's name, a code into ``strings`` (-1: none).
    :param versions: per file, the ETDump ``version``.
    :param strings: the distinct strings of the buffer (codes index into it).
    :param blob: the buffer (metadata spans are offsets into it).
    :param entry_events: sorted event indices that have a ``debug_entry`` (None: none).
    :param values: their decoded ``Value`` rows, aligned with ``entry_events``.
    """

    columns: Mapping[str, npt.NDArray[Any]]
    bounds: I64
    run_file: I64
    run_name: npt.NDArray[np.int32]
    run_bundled: npt.NDArray[np.int32]
    allocator_bounds: I64
    allocator_names: npt.NDArray[np.int32]
    versions: npt.NDArray[np.uint32]
    strings: list[str]
    blob: bytes | bytearray | memoryview
    entry_events: I64 | None = None
    values: ValueColumns | None = None

    @property
    def n_runs(self) -> int:
        return len(self.bounds) - 1

    @property
    def n_files(self) -> int:
        return len(self.versions)

    @property
    def n_events(self) -> int:
        return int(self.bounds[-1])

    def run_names(self) -> list[str | None]:
        strings = self.strings
        return [None if code < 0 else strings[code] for code in self.run_name.tolist()]

    def run_allocators(self, run: int) -> list[Allocator]:
        lo, hi = int(self.allocator_bounds[run]), int(self.allocator_bounds[run + 1])
        strings = self.strings
        return [
            Allocator(None if code < 0 else strings[code])
            for code in self.allocator_names[lo:hi].tolist()
        ]

    def run_columns(self, run: int) -> EventColumns:
        """The columns of run ``run``: views of the file-wide ones (no copy)."""
        lo, hi = int(self.bounds[run]), int(self.bounds[run + 1])
        entries: Mapping[int, Value] = _NO_ENTRIES
        if self.entry_events is not None and self.values is not None:
            a, b = np.searchsorted(self.entry_events, [lo, hi]).tolist()
            if a != b:
                entries = DebugEntries(
                    self.entry_events[a:b] - lo, np.arange(a, b, dtype=np.int64), self.values
                )
        return EventColumns.trusted(
            {k: v[lo:hi] for k, v in self.columns.items()},
            self.strings,
            self.blob,
            entries,
            FileSpan(self.columns, self.bounds, run),
        )

    def output_events(self) -> I64:
        """Event indices whose debug entry has ``output`` set and true."""
        if self.entry_events is None or self.values is None:
            return np.zeros(0, dtype=np.int64)
        values = self.values
        flags = values.has["output"] & (values.scalars["output"] != 0)
        return self.entry_events[flags]

    def etdump(self, file: int = 0) -> ETDump:
        """File ``file`` as an :class:`ETDump` (run objects made here)."""
        runs = np.flatnonzero(self.run_file == file).tolist()
        names = self.run_names()
        return ETDump(
            version=int(self.versions[file]),
            run_data=[
                RunData._trusted(
                    names[r],
                    int(self.run_bundled[r]),
                    self.run_allocators(r),
                    self.run_columns(r),
                )
                for r in runs
            ],
        )


class RunColumns(Sequence[EventColumns]):
    """The runs of a :class:`DecodedColumns` as a sequence, each made on first access."""

    def __init__(self, decoded: DecodedColumns) -> None:
        self._decoded = decoded
        self._made: dict[int, EventColumns] = {}

    def __len__(self) -> int:
        return self._decoded.n_runs

    @overload
    def __getitem__(self, index: int) -> EventColumns: ...

    @overload
    def __getitem__(self, index: slice) -> list[EventColumns]: ...

    def __getitem__(self, index: int | slice) -> EventColumns | list[EventColumns]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError(index)
        index %= n
        made = self._made.get(index)
        if made is None:
            made = self._made[index] = self._decoded.run_columns(index)
        return made

    def __iter__(self) -> Iterator[EventColumns]:
        return (self[i] for i in range(len(self)))
