"""Optional interop check: the reference ExecuTorch reads our .bpte files and the
``bundled_input_index`` of our ETDump runs.

Runs the reference ExecuTorch (installed by ``scripts/install.sh --dev``) in a subprocess;
skips, with the reason, only where it is not installed (``conftest.REFERENCE_PYTHON``).
The reference-made file the other direction needs is stored: ``tests/data/bundled_program``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import NO_REFERENCE, REFERENCE_PYTHON, needs_reference
from test_bundled_program import add_case, add_program

from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite

pytestmark = [pytest.mark.torch, pytest.mark.slow]


_READ_BPTE = """
import json, sys
from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program as read,
)
bp = read(open(sys.argv[1], "rb").read())
def value(v):
    v = v.val
    kind = type(v).__name__
    if kind == "Tensor":
        return [kind, int(v.scalar_type), list(v.sizes), bytes(v.data).hex(), list(v.dim_order)]
    return [kind, getattr(v, kind.lower() + "_val")]
print(json.dumps({
    "version": bp.version,
    "program": bytes(bp.program).hex(),
    "suites": [
        [s.method_name, [[[value(v) for v in c.inputs], [value(v) for v in c.expected_outputs]]
                         for c in s.test_cases]]
        for s in bp.method_test_suites
    ],
}))
"""

_READ_ETDUMP = """
import json, sys
from executorch.devtools import Inspector
inspector = Inspector(etdump_path=sys.argv[1])
print(json.dumps([[b.name, b.bundled_input_index] for b in inspector.event_blocks]))
"""


def _reference(script: str, *args: Path) -> Any:
    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    proc = subprocess.run(
        [REFERENCE_PYTHON, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ours(value: Any) -> list[Any]:
    from delegate_lens.bundled_program.schema import SCALAR_TYPES

    if isinstance(value, np.ndarray):
        dims = list(range(value.ndim))
        return [
            "Tensor",
            SCALAR_TYPES[value.dtype.name],
            list(value.shape),
            value.tobytes().hex(),
            dims,
        ]
    kind = {bool: "Bool", int: "Int", float: "Double"}[type(value)]
    return [kind, value]


@needs_reference
def test_reference_reads_our_bpte(tmp_path: Path) -> None:
    odd = MethodTestCase(
        [
            np.arange(6, dtype=np.uint8).reshape(2, 3).T,
            -(2**40),
            True,
            0.25,
            np.zeros((0, 2), np.float16),
        ]
    )
    bundled = BundledProgram(
        b"any program bytes",
        [MethodTestSuite("forward", [add_case(1), add_case(2)]), MethodTestSuite("odd", [odd])],
    )
    path = bundled.save(tmp_path / "ours.bpte")
    seen = _reference(_READ_BPTE, path)
    assert seen["version"] == 2
    assert bytes.fromhex(seen["program"]) == b"any program bytes"
    expected = [
        [
            s.method_name,
            [
                [[_ours(v) for v in c.inputs], [_ours(v) for v in c.expected_outputs]]
                for c in s.test_cases
            ],
        ]
        for s in bundled.method_test_suites
    ]
    assert seen["suites"] == expected


@needs_reference
def test_reference_inspector_sees_bundled_input_index(tmp_path: Path) -> None:
    from delegate_lens.runtime import ETDumpGen, Program, load_bundled_input

    bundled = BundledProgram(
        add_program(), [MethodTestSuite("forward", [add_case(1), add_case(2)])]
    )
    tracer = ETDumpGen()
    method = Program(bundled.program).load_method("forward", event_tracer=tracer)
    for index in (1, 0):
        load_bundled_input(method, bundled, index)
        method.execute()
    tracer.write(tmp_path / "run.etdp")
    assert _reference(_READ_ETDUMP, tmp_path / "run.etdp") == [
        ["Default", -1],
        ["Execute", 1],
        ["Execute", 0],
    ]
