"""The inputs of ``bench_collect.py`` (and ``trace_collect.py``), made on first use and
cached under ``$TMPDIR/delegate-lens-bench-collect``:

* :func:`big_copies`: copies of the big vector (gpt_portable_big, as the reference wrote
  it), each copy's times shifted in place (:func:`vary_in_place`) so that none is skipped
  as a duplicate;
* :func:`small_dumps`: small demo dumps (one ``delegate-lens demo`` ETDump, written once
  with torch, then varied with the codec: no torch per file), a thousand per folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from machine import REPO, VECTORS

sys.path.insert(0, str(REPO / "tests"))
from etdump_variants import vary

BIG = VECTORS / "gpt_portable_big" / "etdump.etdp"
CACHE = Path(tempfile.gettempdir()) / "delegate-lens-bench-collect"


def vary_in_place(data: bytes, shift: int) -> bytes:
    """``data`` with every profile event's times moved by ``shift`` ticks in place: the
    reference writer's own layout and size, other bytes (so not skipped as a duplicate)."""
    from delegate_lens.etdump._buffer import Buffer

    buf = Buffer(data)
    root = 4 + int(np.frombuffer(data, "<u4", 1, 4)[0])
    top = buf.tables(np.array([root]), "ETDump")
    start, count = buf.vectors(top.offset(1, "run_data"), 4, "run_data")
    runs = buf.tables(buf.uoffset_targets(buf.expand(start, count, 4), "run"), "RunData")
    start, count = buf.vectors(runs.offset(3, "events"), 4, "events")
    events = buf.tables(buf.uoffset_targets(buf.expand(start, count, 4), "event"), "Event")
    prof = events.offset(0, "profile_event")
    profile = buf.tables(prof[prof >= 0], "ProfileEvent")
    out = np.frombuffer(bytearray(data), np.uint8)
    for slot in (6, 7):  # start_time, end_time (u64)
        at = profile.field(slot, 8, "time")
        at = at[at >= 0][:, None] + np.arange(8)
        times = out[at].copy().view("<u8").reshape(-1) + np.uint64(shift)
        out[at] = times.view(np.uint8).reshape(-1, 8)
    return out.tobytes()


def big_copies(count: int) -> Path:
    folder = CACHE / f"ref-big{count}"
    if len(list(folder.glob("*.etdp"))) != count:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        data = BIG.read_bytes()
        for i in range(count):
            (folder / f"big{i}.etdp").write_bytes(vary_in_place(data, i) if i else data)
    return folder


def small_dumps(count: int) -> Path:
    folder = CACHE / f"small{count}"
    if len(list(folder.rglob("*.etdp"))) != count:
        shutil.rmtree(folder, ignore_errors=True)
        demo = CACHE / "demo"
        if not (demo / "etdump.etdp").exists():  # torch runs once, here
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "delegate_lens",
                    "demo",
                    "--model",
                    "mlp",
                    "--runs",
                    "10",
                    "--out",
                    str(demo),
                    "--no-table",
                    "--debug-buffer-size",
                    "0",
                ],
                check=True,
            )
        data = (demo / "etdump.etdp").read_bytes()
        for i in range(count):
            sub = folder / f"d{i // 1000}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"run{i}.etdp").write_bytes(vary(data, i) if i else data)
    return folder
