"""The decoder's compiled fast path: one C walk over every table instead of numpy passes.

:mod:`delegate_lens.etdump._walk` (Cython, built at install when a C compiler is there)
visits every table, vector and offset of a buffer and makes the numpy decoder's checks; this
module turns what it returns into the same :class:`DecodedColumns` (debug values are
decoded by the numpy code they always used; strings are interned in C, so their codes may
come in another order than numpy's, for the same strings). A malformed buffer is never decoded
here: :func:`columns` returns None and the numpy decoder runs, so errors name the problem
as they always did. Both paths give equal columns (tests compare them on the reference vectors
and on mutated buffers).

The walk is chosen once, at import: the extension when it is built, unless
``DELEGATE_LENS_NO_COMPILED`` is on (:func:`delegate_lens.config.compiled_code_off`), else
its Python twin (:mod:`delegate_lens.etdump._walk_py`), which declines every buffer (None)
so that the numpy decoder runs. A None is the walk's only "not here"; any exception it
raises is a real error, and reaches the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.config import compiled_code_off
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._columns import COLUMN_SPECS
from delegate_lens.etdump._decoded import DecodedColumns, bounds_of
from delegate_lens.etdump._limits import ReadLimits
from delegate_lens.etdump._values import decode_values

I64 = npt.NDArray[np.int64]
_ALWAYS = frozenset(("kind", "name", "chain_index", "instruction_id", "start_time", "end_time"))
"""The columns the walk always makes (the others only when an event sets them)."""

EXTENSION = "delegate_lens.etdump._walk"
TWIN = "delegate_lens.etdump._walk_py"
NAMES = ("walk",)
"""What the extension and its twin both define, and this module chooses."""

COMPILED: bool
"""Whether the compiled walk was chosen."""
if compiled_code_off():
    from delegate_lens.etdump._walk_py import walk

    COMPILED = False
else:
    try:
        from delegate_lens.etdump._walk import walk

        COMPILED = True
    except ImportError:  # not built (no C compiler at install): numpy alone
        from delegate_lens.etdump._walk_py import walk

        COMPILED = False


def columns(
    buf: Buffer,
    roots: I64,
    release: Callable[[], object] | None = None,
    limits: ReadLimits | None = None,
) -> DecodedColumns | None:
    """The ETDumps at ``roots`` of ``buf`` (root ``k`` in file ``k``) as the numpy decoder
    makes them, or None when the walk declines (any file malformed, a table or non-empty
    vector named twice, strings past ``limits``, or the Python twin: the numpy decoder then
    decodes, or says why). A malformed debug ``Value`` raises here what the numpy decoder
    raises, as the same code decodes them. ``release`` is called every so many events
    during the walk (a mapped file's reader drops the pages read so far)."""
    limits = ReadLimits() if limits is None else limits
    lo, hi = buf.files()  # root k lies in file k
    if len(lo) != len(roots):
        return None
    found = walk(
        buf.u8,
        np.ascontiguousarray(roots, dtype=np.int64),
        np.ascontiguousarray(lo, dtype=np.int64),
        np.ascontiguousarray(hi, dtype=np.int64),
        release,
    )
    if found is None or (found["string_bytes"] > limits.string_budget(hi - lo)).any():
        return None
    return _decoded(buf, found, limits)


def _decoded(buf: Buffer, found: dict[str, Any], limits: ReadLimits) -> DecodedColumns:
    cols: dict[str, npt.NDArray[Any]] = {}
    n = len(found["kind"])
    held = found["set_columns"]  # the columns always made that some event set
    for column, (dtype, default) in COLUMN_SPECS.items():
        arr = found.get(column)  # the walk leaves out the rare columns no event sets
        if arr is None or not n or (column in _ALWAYS and column not in held):
            arr = np.broadcast_to(np.array(default, dtype=dtype), (n,))
        else:
            arr = arr.astype(dtype, copy=False)
            arr.flags.writeable = False
        cols[column] = arr

    entry = found.get("debug_entry")
    with_entry = np.zeros(0, np.int64) if entry is None else np.flatnonzero(entry >= 0)
    entry_events = values = None
    if entry is not None and len(with_entry):
        entry_events = with_entry
        values = decode_values(buf, entry[with_entry], limits)
    return DecodedColumns(
        columns=MappingProxyType(cols),
        bounds=bounds_of(found["event_count"]),
        run_file=found["run_file"],
        run_name=found["run_name"],
        run_bundled=found["run_bundled"],
        allocator_bounds=bounds_of(found["allocator_count"]),
        allocator_names=found["allocator_names"],
        versions=found["versions"],
        strings=found["strings"],
        blob=buf.data,
        entry_events=entry_events,
        values=values,
    )
