"""Memory per allocator per run, from an ETDump's allocation events.

An allocation event records ``allocation_size`` bytes taken from allocator
``allocator_id`` (an index into its run's ``allocators``). ETDump has no free events, so
what a run allocated is the sum of its allocation events, per allocator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.etdump import EventKind

if TYPE_CHECKING:
    from delegate_lens.etdump import Allocator, DecodedColumns, ETDump


@attrs.frozen
class AllocatorUsage:
    """What one run allocated from one allocator.

    :param run: the run's position in the ETDump.
    :param run_name: the run's name (e.g. ``Execute``).
    :param allocator_id: the allocator's index in the run's ``allocators``.
    :param allocator: its name, or None when unnamed or not listed in the run.
    :param allocations: how many allocation events.
    :param total_bytes: their sizes added up.
    :param largest_bytes: the largest one.
    """

    run: int
    run_name: str | None
    allocator_id: int
    allocator: str | None
    allocations: int
    total_bytes: int
    largest_bytes: int


def memory_usage(etdump: ETDump | DecodedColumns) -> list[AllocatorUsage]:
    """Every (run, allocator) pair with allocation events, by run then allocator id.

    ``etdump`` may also be one file's decoded columns (what the Inspector keeps): then no
    run object is made, and only the runs with allocation events are visited."""
    from delegate_lens.etdump import DecodedColumns

    if isinstance(etdump, DecodedColumns):
        if etdump.n_files == 1:
            return _decoded_usage(etdump)
        etdump = etdump.etdump(0)
    out: list[AllocatorUsage] = []
    for r, run in enumerate(etdump.run_data):
        cols = run.columns
        chosen = cols.kind == EventKind.ALLOCATION
        if chosen.any():
            ids, sizes = cols.allocator_id[chosen], cols.allocation_size[chosen]
            out.extend(_run_usage(r, run.name, run.allocators, ids, sizes))
    return out


def _decoded_usage(decoded: DecodedColumns) -> list[AllocatorUsage]:
    cols = decoded.columns
    events = np.flatnonzero(cols["kind"] == EventKind.ALLOCATION)
    if not len(events):
        return []
    run_of = np.searchsorted(decoded.bounds, events, side="right") - 1
    cuts = np.flatnonzero(np.diff(run_of)) + 1  # events are in run order
    names = decoded.run_names()
    out: list[AllocatorUsage] = []
    for part in np.split(np.arange(len(events)), cuts):
        r = int(run_of[part[0]])
        chosen = events[part]
        ids, sizes = cols["allocator_id"][chosen], cols["allocation_size"][chosen]
        out.extend(_run_usage(r, names[r], decoded.run_allocators(r), ids, sizes))
    return out


def _run_usage(
    r: int,
    name: str | None,
    allocators: Sequence[Allocator],
    ids: npt.NDArray[np.int32],
    sizes: npt.NDArray[np.uint64],
) -> list[AllocatorUsage]:
    """The usage of run ``r`` from its allocation events' allocator ids and sizes."""
    out = []
    for allocator_id in np.unique(ids).tolist():
        mine = sizes[ids == allocator_id]
        named = allocators[allocator_id] if 0 <= allocator_id < len(allocators) else None
        out.append(
            AllocatorUsage(
                run=r,
                run_name=name,
                allocator_id=int(allocator_id),
                allocator=None if named is None else named.name,
                allocations=len(mine),
                total_bytes=sum(int(v) for v in mine.tolist()),  # exact past 2**64
                largest_bytes=int(mine.max()),
            )
        )
    return out


def allocator_label(usage: AllocatorUsage) -> str:
    """The allocator's name, or ``allocator <id>``."""
    return usage.allocator or f"allocator {usage.allocator_id}"


def write_memory_table(rows: list[AllocatorUsage], file: IO[str]) -> None:
    """The usage as an aligned text table (one line per run and allocator)."""
    from delegate_lens._texttable import align_columns

    header = ["run", "run_name", "allocator", "allocations", "total_bytes", "largest_bytes"]
    body = [
        [
            str(u.run),
            u.run_name or "",
            allocator_label(u),
            f"{u.allocations:,}",
            f"{u.total_bytes:,}",
            f"{u.largest_bytes:,}",
        ]
        for u in rows
    ]
    for text in align_columns([header, *body], right={0, 3, 4, 5}, rule=True):
        file.write(text + "\n")
