"""The ``limits`` class of ``benchmarks/hostile.py`` (issue 35, items 3, 4, 6, 7): inputs
that ask for more than a command may take, each met by one line before any harm.

- ``query -o`` onto a part, the manifest or anything else inside the dataset it reads
  (bad file: the dataset changed);
- an endless query (a recursive CTE) with ``--timeout 1``, a memory-hungry one and one with
  a huge result with ``--memory-limit 100MB`` (a hang, or peak memory, shows the failure);
- an ETDump whose debug event holds a tensor of 65 dimensions (or a negative size), read
  without and with a debug buffer;
- ``profile --runs 5000000`` (past what one ETDump holds), and ``--debug`` with more runs
  than the largest debug buffer allowed (only where executorch is installed).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
from pathlib import Path

from hostile_common import MLP, Tally, run

ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
HUNGRY = "SELECT string_agg(repeat('x', 1000), ',') FROM range(1000000)"
HUGE_RESULT = "SELECT * FROM range(300000000)"


def _files(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _queries(work: Path, tally: Tally, timeout: float) -> None:
    dataset = work / "ds"
    run(tally, ["collect", str(MLP / "etdump.etdp"), "-o", str(dataset), "-q"], timeout=timeout)
    before = _files(dataset)
    part = next(dataset.glob("part-*.parquet"))
    entry = next((dataset / "_manifest").glob("*.json"))
    link = work / "link.parquet"
    link.symlink_to(part)
    for target in (part, entry, dataset / "new.csv", link):
        run(tally, ["query", str(dataset), "SELECT 1 AS n", "-o", str(target)], timeout=timeout)
    if _files(dataset) != before:
        tally.bad_files += 1
        tally.notes.append(f"query -o changed the dataset it read: {dataset}")
    for argv in (
        [ENDLESS, "--timeout", "1"],
        [HUNGRY, "--memory-limit", "100MB"],
        [HUGE_RESULT, "--memory-limit", "100MB", "-o", str(work / "huge.parquet")],
        ["SELECT 1", "--timeout", "-1"],
        ["SELECT 1", "--memory-limit", "lots"],
    ):
        code, _, _ = run(tally, ["query", str(dataset), *argv], timeout=timeout)
        if code == 0 and argv[0] != "SELECT 1":
            tally.notes.append("a query past its limit ended well: " + argv[0])
            tally.bad_files += 1


def _deep_tensors(work: Path, tally: Tally, timeout: float) -> None:
    from delegate_lens.etdump import (
        DebugEvent,
        ETDump,
        Event,
        RunData,
        ScalarType,
        Tensor,
        TensorList,
        Value,
        ValueType,
        dumps,
    )

    def damaged(sizes: list[int], listed: bool) -> bytes:
        tensor = Tensor(scalar_type=ScalarType.FLOAT, sizes=sizes, strides=[1] * len(sizes))
        value = (
            Value(val=ValueType.TensorList, tensor_list=TensorList([tensor]))
            if listed
            else Value(val=ValueType.Tensor, tensor=tensor)
        )
        event = Event(debug_event=DebugEvent(name="op", instruction_id=1, debug_entry=value))
        return dumps(ETDump(run_data=[RunData(name="Execute", events=[event])]))

    buffer = work / "debug.bin"
    buffer.write_bytes(bytes(256))
    cases = {
        "deep-empty": ([0] + [1] * 64, False),
        "deep-one": ([1] * 65, False),
        "deep-listed": ([1] * 70, True),
        "negative": ([3, -4], False),
    }
    for name, (sizes, listed) in cases.items():
        path = work / f"{name}.etdp"
        path.write_bytes(damaged(sizes, listed))
        for extra in ([], ["--debug-buffer", str(buffer)]):
            run(tally, ["inspect", str(path), *extra], timeout=timeout, inputs=[path])


def _profiles(work: Path, tally: Tally, timeout: float) -> None:
    if importlib.util.find_spec("executorch") is None:
        tally.notes.append("profile cases skipped: executorch is not installed")
        return
    import numpy as np

    inputs = work / "x.npy"
    np.save(inputs, np.ones((2, 16), dtype=np.float32))
    base = ["profile", str(MLP / "model.pte"), "--inputs", str(inputs)]
    out = work / "profile-out"
    run(tally, [*base, "--runs", "5000000", "-o", str(out)], timeout=timeout)
    capped = {**os.environ, "DELEGATE_LENS_OPTIONS": "executorch.max_debug_buffer_size = 20000000"}
    run(tally, [*base, "--debug", "--runs", "60000"], timeout=timeout, env=capped)
    if out.exists():
        tally.bad_files += 1
        tally.notes.append(f"a refused profile left {out}")
        shutil.rmtree(out)


def limits(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("limits")
    _queries(work, tally, args.timeout)
    _deep_tensors(work, tally, args.timeout)
    _profiles(work, tally, args.timeout)
    return tally
