"""Optional interop check: the reference ExecuTorch Inspector reads our ETDumps (with their
debug buffers) and our ETRecords, and reports the same blocks, rows and samples as ours.

Runs the reference ExecuTorch (installed by ``scripts/install.sh --dev``) in a subprocess;
skips, with the reason, only where it is not installed (``conftest.REFERENCE_PYTHON``).
Known, deliberate difference: the reference links the framework rows (``Method::init``,
``Program::load_method``, ``Method::execute``) to instruction 0's handles, ours to none
(``docs/inspector.md``), so handles are compared for the other rows only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import NO_REFERENCE, REFERENCE_PYTHON, needs_reference

pytestmark = [pytest.mark.torch, pytest.mark.slow]


_ROWS = """
import json, sys
from {module} import Inspector
inspector = Inspector(etdump_path=sys.argv[1], etrecord=sys.argv[2], debug_buffer_path=sys.argv[3])
rows = []
for block in inspector.event_blocks:
    for e in block.events:
        handles = e.debug_handles
        rows.append({{
            "block": block.name,
            "name": str(e.name),
            "op_types": [str(o) for o in e.op_types],
            "is_delegated_op": bool(e.is_delegated_op),
            "backend": None if e.delegate_backend_name is None else str(e.delegate_backend_name),
            "samples": [round(float(x), 6) for x in e.perf_data.raw],
            "handles": list(handles) if isinstance(handles, (list, tuple)) else handles,
            "n_debug_data": len(e.debug_data or []),
        }})
print(json.dumps(rows))
"""

_FRAMEWORK = {"Method::init", "Program::load_method", "Method::execute"}


def _rows(python: str, module: str, paths: dict[str, Path]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [
            python,
            "-c",
            _ROWS.format(module=module),
            str(paths["etdump"]),
            str(paths["etrecord"]),
            str(paths["debug_buffer"]),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return rows


@needs_reference
@pytest.mark.parametrize(("model", "identifiers"), [("mlp", "int"), ("convnet", "str")])
def test_reference_inspector_reports_what_ours_does(
    tmp_path: Path, model: str, identifiers: str
) -> None:
    import sys

    from delegate_lens.backends_demo._demo import run_demo

    assert REFERENCE_PYTHON is not None, NO_REFERENCE
    result = run_demo(
        model,
        runs=3,
        out_dir=tmp_path,
        identifiers=identifiers,
        echo=lambda _: None,
        show_table=False,
    )
    theirs = _rows(REFERENCE_PYTHON, "executorch.devtools", result.paths)
    ours = _rows(sys.executable, "delegate_lens", result.paths)
    assert [(r["block"], r["name"]) for r in theirs] == [(r["block"], r["name"]) for r in ours]
    assert any(r["is_delegated_op"] for r in ours)
    assert any(r["n_debug_data"] for r in ours)
    for mine, ref in zip(ours, theirs, strict=True):
        if mine["name"] in _FRAMEWORK:
            mine, ref = dict(mine, handles=None), dict(ref, handles=None)
        assert mine == ref
