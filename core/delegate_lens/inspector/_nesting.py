"""Delegate-logged events that contain others in time: a backend's per-call (or per-layer)
summary around the per-op events it also logged.

The one attribution (:mod:`delegate_lens.inspector._attribution`) makes such a container a
wrapper, never added on top of what it contains. With an ETRecord the Debug Handle Map
tells them apart too (a summary's handles hold its ops'); without one, time is all there
is, and this is what says it.

A row ``j`` contains a row ``k`` of the same delegate call (the same instruction) when in
every run ``k`` starts no earlier and ends no later than ``j``, in some run ``k`` starts
strictly later and in some run it ends strictly earlier, and ``k`` lasted some time. So
two events of one span are no container of each other, a zero-length event on ``j``'s edge
makes none of ``j``, and neither do events a backend logs all from one start (durations
with ``start_time`` 0: the longer would seem to hold the shorter). Times are the raw ticks
of the events: exact integers, on the delegate's clock, before any conversion (which keeps
order); a row whose clock wrapped in some run takes no part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from delegate_lens.inspector._tables import BlockTable


def time_containers(table: BlockTable, delegated: Sequence[int]) -> set[int]:
    """The rows of ``delegated`` (delegate-logged rows with samples) that contain another
    of the same call in time (see the module's text)."""
    if table.event_times is None or table.n_runs == 0:
        return set()
    by_call: dict[int, list[int]] = {}
    for j in delegated:
        by_call.setdefault(table.keys[j].instruction_id, []).append(j)
    out: set[int] = set()
    for rows in by_call.values():
        if len(rows) > 1:
            out |= _containers(table, rows)
    return out


def _containers(table: BlockTable, rows: list[int]) -> set[int]:
    assert table.event_times is not None
    events = table.block.events[:, rows]  # (runs, rows)
    start_raw, end_raw = table.event_times(events)
    start = np.asarray(start_raw, dtype=np.uint64).astype(np.int64)
    end = np.asarray(end_raw, dtype=np.uint64).astype(np.int64)
    usable = np.flatnonzero(np.all(end >= start, axis=0))  # no 32-bit wrap
    if len(usable) < 2:
        return set()
    start, end = start[:, usable], end[:, usable]
    lasted = np.any(end > start, axis=0)
    if not lasted.any():
        return set()
    # candidates from the first run: sorted by start, what ``a`` may contain starts between
    # its start and its end, so the work stays near the number of such pairs
    first_start, first_end = start[0], end[0]
    order = np.argsort(first_start, kind="stable")
    lo = np.searchsorted(first_start[order], first_start, side="left")
    hi = np.searchsorted(first_start[order], first_end, side="right")
    wide = np.flatnonzero(hi - lo > 1)
    groups: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] | None = None
    if int(np.sum(hi[wide] - lo[wide])) > 4 * len(usable):
        # many rows start together (durations logged from one start, say): rows of the
        # very same starts (or ends) in every run are never strictly inside one another,
        # found at once here rather than pair by pair over every run
        groups = (_same_columns(start), _same_columns(end))
    out: set[int] = set()
    for a in wide.tolist():
        inner = order[lo[a] : hi[a]]
        keep = (first_end[inner] <= first_end[a]) & lasted[inner] & (inner != a)
        if groups is not None:
            keep &= (groups[0][inner] != groups[0][a]) & (groups[1][inner] != groups[1][a])
        inner = inner[keep]
        if not inner.size:
            continue
        # inside ``a`` in every run, strictly inside at its start and at its end in some
        inside = np.all((start[:, [a]] <= start[:, inner]) & (end[:, inner] <= end[:, [a]]), 0)
        later = np.any(start[:, [a]] < start[:, inner], 0)
        earlier = np.any(end[:, inner] < end[:, [a]], 0)
        if np.any(inside & later & earlier):
            out.add(rows[int(usable[a])])
    return out


def _same_columns(ticks: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """Per column of ``ticks`` (runs, rows), a number shared by the columns equal to it."""
    columns = np.ascontiguousarray(ticks.T)  # each column's ticks as one run of bytes
    as_bytes = columns.view(np.dtype((np.void, columns.itemsize * columns.shape[1])))
    return np.unique(as_bytes.reshape(-1), return_inverse=True)[1].reshape(-1)
