"""ETDumps like a given one but with other bytes (so collect does not skip them as copies);
for the dataset tests and ``benchmarks/bench_collect.py``."""

from __future__ import annotations

import attrs
import numpy as np

from delegate_lens.etdump import ETDump, RunData, dumps, loads


def vary(data: bytes, shift: int) -> bytes:
    """Another ETDump like ``data``, every time moved by ``shift`` ticks (re-encoded by our
    writer, which shares equal strings: smaller than a reference-written original)."""
    etdump = loads(data)
    runs = []
    for run in etdump.run_data:
        c = run.columns
        moved = attrs.evolve(
            c,
            start_time=c.start_time + np.uint64(shift),
            end_time=c.end_time + np.uint64(shift),
            file_span=None,  # no longer a view of the file it was read from
        )
        runs.append(RunData.from_columns(run.name, run.bundled_input_index, run.allocators, moved))
    return dumps(ETDump(version=etdump.version, run_data=runs))
