"""The ``shared`` class of ``benchmarks/hostile.py`` (issue 35, item 2): ETDumps under 5 MB
whose offsets name one object again and again, each read by the commands that paid for
every offset before (peak memory in the class's line; outputs over 1 GB count as bad):

- 100,000 events naming one 4 kB metadata vector (``inspect``: past 4 GB before);
- 1,000,000 ``run_data`` entries naming one run (``etdump summary``: 2.1 GB);
- 1,200,000 events naming one event (``inspect``: 887 MB and 110 s);
- 1,000 events named by one 4 MB string (``inspect -f csv``: more than 2 GB written).

And three that share nothing (``[inspector]`` limits, compiled walk or not alike):

- 245,000 distinct events packed in 4.9 MB (``inspect -f json``: 597 MB; ``max_rows``);
- 1,000 tensors each naming the whole 4 MB debug buffer (``inspect --debug-buffer -f csv``:
  3.95 GB, each copied; ``max_debug_ratio``);
- a 248-byte file with a tensor of sizes ``[10**10]`` and no buffer (a traceback from
  ``np.zeros`` of 37 GiB): now read in full, the zeros a view allocating nothing (exit 0).

Each is read by the compiled walk and by numpy alone (``DELEGATE_LENS_NO_COMPILED=1``);
each must be refused in one line naming the limit (``[etdump] max_references``,
``max_string_ratio``). The files are built by ``tests/etdump_shared.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from hostile_common import Tally, run
from machine import REPO

sys.path.insert(0, str(REPO / "tests"))
from etdump_shared import (
    packed_events,
    shared_events,
    shared_metadata,
    shared_name,
    shared_runs,
    tensors_on_one_buffer,
)

CASES: dict[str, tuple[Callable[[], bytes], Callable[[str], list[str]], str]] = {
    "metadata": (
        lambda: shared_metadata(100_000, 4096),
        lambda path: ["inspect", path],
        "max_references",
    ),
    "runs": (
        lambda: shared_runs(1_000_000),
        lambda path: ["etdump", "summary", path],
        "max_references",
    ),
    "events": (lambda: shared_events(1_200_000), lambda path: ["inspect", path], "max_references"),
    "name": (
        lambda: shared_name(1000, 4 << 20),
        lambda path: ["inspect", path, "-f", "csv"],
        "max_string_ratio",
    ),
}
DEBUG_BUFFER = 4_000_000
UNSHARED: dict[str, tuple[Callable[[], bytes], Callable[[str, str], list[str]], str]] = {
    "rows": (
        lambda: packed_events(245_000),
        lambda path, _: ["inspect", path, "-f", "json"],
        "max_rows",
    ),
    "tensors": (
        lambda: tensors_on_one_buffer(1000, DEBUG_BUFFER // 4),
        lambda path, buffer: ["inspect", path, "--debug-buffer", buffer, "-f", "csv"],
        "max_debug_ratio",
    ),
    "huge tensor": (lambda: _huge_tensor(), lambda path, _: ["inspect", path, "-f", "json"], ""),
}
MAX_OUTPUT = 1_000_000_000


def _huge_tensor() -> bytes:
    from delegate_lens.etdump import (
        DebugEvent,
        ETDump,
        Event,
        RunData,
        ScalarType,
        Tensor,
        Value,
        ValueType,
        dumps,
    )

    tensor = Tensor(scalar_type=ScalarType.FLOAT, sizes=[10**10], strides=[1])
    entry = Value(val=ValueType.Tensor, tensor=tensor)
    event = Event(debug_event=DebugEvent(name="op", instruction_id=1, debug_entry=entry))
    return dumps(ETDump(run_data=[RunData(name="Execute", events=[event])]))


def _unshared(work: Path, args: argparse.Namespace, tally: Tally) -> None:
    buffer = work / "shared-debug.bin"
    buffer.write_bytes(bytes(DEBUG_BUFFER))
    for name, (make, command, limit) in UNSHARED.items():
        path = work / f"unshared-{name.replace(' ', '-')}.etdp"
        path.write_bytes(make())
        argv = command(str(path), str(buffer))
        for switch in ("0", "1"):
            env = {**os.environ, "DELEGATE_LENS_NO_COMPILED": switch}
            inputs = [path, buffer] if str(buffer) in argv else [path]
            code, out, err = run(tally, argv, timeout=args.timeout, inputs=inputs, env=env)
            if len(out) > MAX_OUTPUT:
                tally.bad_files += 1
                tally.notes.append(f"{name}: {len(out):,} bytes written")
            if (code, limit in err) != ((2, True) if limit else (0, True)):
                tally.notes.append(f"{name} (no compiled: {switch}): exit {code}, {err[-160:]}")
                tally.bad_files += 1
        path.unlink()
    buffer.unlink()


def shared(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("shared")
    _unshared(work, args, tally)
    for name, (make, command, limit) in CASES.items():
        path = work / f"shared-{name}.etdp"
        path.write_bytes(make())
        argv = command(str(path))
        for switch in ("0", "1"):
            env = {**os.environ, "DELEGATE_LENS_NO_COMPILED": switch}
            code, out, err = run(tally, argv, timeout=args.timeout, inputs=[path], env=env)
            if len(out) > MAX_OUTPUT:
                tally.bad_files += 1
                tally.notes.append(f"{name}: {len(out):,} bytes written")
            if code != 2 or limit not in err:
                tally.notes.append(f"{name} (no compiled: {switch}): exit {code}, {err[-160:]}")
                tally.bad_files += 1
        path.unlink()
    return tally
