"""The ``programs`` class of ``benchmarks/hostile.py`` (issue 35, item 1): mutants of a
real ExecuTorch program (the reference's ``mlp_xnnpack``) through ``profile -o DIR``, and
the same mutants in a bundled program through ``verify --etdump``. Many make the real
runtime abort or fault (SIGABRT, SIGSEGV) while loading or running them; each must be one
``error:`` line, exit 2.

A signal death of the command is counted (``signals``), and the first note says how many
cases the runtime crashed in (each met by one line); a bad file is an output written by
a command that failed, or a hidden staging folder (``.<out>.<pid>-….tmp``, ``.profile-…``)
left beside the output. Needs ``executorch`` (skipped, with a note, without it).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from hostile_common import MLP, Tally, run

KINDS = ("invert", "flip", "zero", "cut")


def mutate_program(data: bytes, rng: random.Random) -> bytes:
    """One damage to a program: a byte inverted or bytes flipped (most in the flatbuffer
    tables before the weights, where the runtime trusts offsets and indices), a run of
    zeros, or the file cut short."""
    buf = bytearray(data)
    head = min(len(buf), 3072)
    kind = rng.choice(KINDS)
    if kind == "invert":
        buf[rng.randrange(head)] ^= 0xFF
    elif kind == "flip":
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(head)] = rng.randrange(256)
    elif kind == "zero":
        start = rng.randrange(head)
        end = min(len(buf), start + rng.randint(1, 16))
        buf[start:end] = bytes(end - start)
    else:
        del buf[rng.randrange(8, len(buf)) :]
    return bytes(buf)


def _bundled(program: bytes, inputs: list[object], expected: list[object]) -> bytes:
    import tempfile

    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

    case = MethodTestCase(inputs, expected)
    with tempfile.TemporaryDirectory() as tmp:
        path = BundledProgram(program, [MethodTestSuite("forward", [case])]).save(
            Path(tmp) / "p.bpte"
        )
        return Path(path).read_bytes()


def _left_behind(work: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in work.iterdir() if p.name not in keep)


def programs(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("programs")
    if importlib.util.find_spec("executorch") is None:
        tally.notes.append("skipped: executorch is not installed")
        return tally
    import numpy as np

    rng = random.Random(args.seed)
    x = np.random.default_rng(args.seed).standard_normal((2, 16), dtype=np.float32)
    np.save(work / "x.npy", x)
    original = (MLP / "model.pte").read_bytes()
    zeros = np.zeros((2, 16), np.float32)
    keep = {"x.npy"}
    crashes = 0  # the runtime's deaths, each met by one error line
    profile = ["--inputs", str(work / "x.npy"), "--runs", "2", "-o", str(work / "out")]
    commands: dict[str, Callable[[Path], list[str]]] = {
        "pte": lambda p: ["profile", str(p), *profile],
        "bpte": lambda p: ["verify", str(p), "--etdump", str(work / "out.etdp")],
    }
    for i in range(args.mutants):
        program = mutate_program(original, rng)
        for suffix, command in commands.items():
            path = work / f"mutant{i}.{suffix}"
            path.write_bytes(program if suffix == "pte" else _bundled(program, [x], [zeros]))
            code, _, err = run(tally, command(path), timeout=args.timeout, inputs=[path])
            crashes += "the ExecuTorch runtime crashed (" in err
            path.unlink()
            written = [work / "out", work / "out.etdp"]
            if code not in (0, 1) and any(p.exists() for p in written):
                tally.bad_files += 1
                tally.notes.append(f"mutant {i} ({suffix}): exit {code} with an output written")
            left = _left_behind(work, keep | {p.name for p in written})
            if left:
                tally.bad_files += 1
                tally.notes.append(f"mutant {i} ({suffix}): left behind {left}")
                for name in left:
                    shutil.rmtree(work / name, ignore_errors=True)
            shutil.rmtree(work / "out", ignore_errors=True)
            (work / "out.etdp").unlink(missing_ok=True)
    tally.notes.insert(
        0, f"the runtime crashed in {crashes} of {tally.cases} cases (one line each)"
    )
    return tally
