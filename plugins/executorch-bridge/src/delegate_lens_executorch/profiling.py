"""One call to profile a real program: the real runtime with ETDump (and a debug buffer),
then the Inspector, and with an output folder every file a backend author looks at.

Files written to the folder (all or none: they are made in a hidden folder beside it and
moved in at the end): ``etdump.etdp``, ``debug.bin`` (with ``debug``), ``inspector.txt``
(the Inspector's table), ``report.html`` and, when there are a debug buffer, an ETRecord
and inputs, ``numeric_gaps.txt``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from delegate_lens.errors import DelegateLensError, UsageError
from delegate_lens_executorch.runtime import check_program_bytes, run_program

__all__ = ["ETDUMP", "PROFILE_FILES", "load_inputs", "profile"]

ETDUMP, DEBUG_BUFFER, TABLE, REPORT, GAPS = (
    "etdump.etdp",
    "debug.bin",
    "inspector.txt",
    "report.html",
    "numeric_gaps.txt",
)
PROFILE_FILES = (ETDUMP, DEBUG_BUFFER, TABLE, REPORT, GAPS)
"""Every file :func:`profile` may write to its output folder."""


def _read(path: str | os.PathLike[str], what: str) -> bytes:
    from delegate_lens.fileio import read_input

    return bytes(read_input(path, what))


def as_runtime_value(value: Any) -> Any:
    """A runtime input from a numpy array (as bundled programs hold them) or a tensor."""
    import numpy as np
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, order="C", copy=True))  # writable
    return value


def load_inputs(path: str | os.PathLike[str]) -> list[Any]:
    """Inputs saved with ``torch.save`` (a tensor, or a list/tuple of inputs)."""
    import io

    import torch

    data = _read(path, "inputs")
    try:
        value = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0]}" if str(exc) else ""
        raise UsageError(
            f"{os.fspath(path)}: not inputs saved with torch.save ({reason or type(exc).__name__})"
        ) from None
    if isinstance(value, (list, tuple)):
        return [as_runtime_value(v) for v in value]
    if isinstance(value, torch.Tensor):
        return [value]
    raise UsageError(
        f"{os.fspath(path)}: holds a {type(value).__name__}; save a tensor or a list of inputs"
    )


def _choose_inputs(
    inputs: Sequence[Any] | str | os.PathLike[str] | None,
    bundled: str | os.PathLike[str] | None,
    record: Any,
    method: str,
) -> list[Any]:
    if inputs is not None and bundled is not None:
        raise UsageError("give inputs or a bundled program, not both")
    if isinstance(inputs, (str, os.PathLike)):
        return load_inputs(inputs)
    if inputs is not None:
        return [as_runtime_value(v) for v in inputs]
    if bundled is not None:
        from delegate_lens.bundled_program import BundledProgram

        case = BundledProgram.load(bundled).test_case(method, 0)
        return [as_runtime_value(v) for v in case.inputs]
    if record is not None and record.has_representative_inputs:
        return [as_runtime_value(v) for v in record.representative_inputs()]
    raise UsageError(
        "no inputs to run the program on: give inputs (--inputs FILE), a bundled program "
        "(--bundled P.bpte), or an ETRecord holding representative inputs"
    )


def _check_output_dir(output_dir: Path) -> None:
    if output_dir.exists() and not output_dir.is_dir():
        raise UsageError(f"cannot write to {output_dir}: it is a file, not a folder")
    if not output_dir.parent.is_dir():
        raise UsageError(f"cannot write {output_dir}: folder {output_dir.parent} does not exist")


def profile(
    program: str | os.PathLike[str],
    *,
    etrecord: str | os.PathLike[str] | None = None,
    inputs: Sequence[Any] | str | os.PathLike[str] | None = None,
    bundled: str | os.PathLike[str] | None = None,
    runs: int = 1,
    debug: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    method: str = "forward",
) -> Any:
    """Run ``method`` of the ``.pte`` at ``program`` ``runs`` times on the real runtime with
    ETDump (``debug``: and a debug buffer of intermediate outputs) and return the
    :class:`delegate_lens.Inspector` of the run (joined with ``etrecord`` when given).

    Inputs: ``inputs`` (values or a ``torch.save`` file), else the first test case of
    ``bundled`` for ``method``, else the ETRecord's representative inputs.
    ``output_dir``: write every file of :data:`PROFILE_FILES` that applies there.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UsageError(f"runs must be a whole number >= 1, got {runs!r}")
    out = None if output_dir is None else Path(output_dir)
    if out is not None:
        _check_output_dir(out)
    data = _read(program, "program")
    check_program_bytes(data, os.fspath(program))
    record = None
    if etrecord is not None:
        from delegate_lens.etrecord import parse_etrecord

        record = parse_etrecord(etrecord)
    chosen = _choose_inputs(inputs, bundled, record, method)
    stage = Path(tempfile.mkdtemp(prefix=".profile-", dir=out.parent if out else None))
    try:  # the runtime writes its files into the stage: no copy of the debug buffer
        run_program(
            data,
            chosen,
            origin=os.fspath(program),
            method=method,
            runs=runs,
            debug=debug,
            folder=stage,
        )
        title = f"profile of {Path(program).name}"
        inspector = _write(stage, record, chosen, debug, title, write_all=out is not None)
        if out is not None:
            _move_in(stage, out)
        inspector.etdump_path = None if out is None else out / ETDUMP
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return inspector


def _write(
    folder: Path,
    record: Any,
    chosen: list[Any],
    debug: bool,
    title: str,
    *,
    write_all: bool,
) -> Any:
    from delegate_lens.inspector import Inspector

    buffer_path = folder / DEBUG_BUFFER if debug else None  # both written by the runtime
    inspector = Inspector(
        etdump_path=folder / ETDUMP,
        etrecord=record,
        debug_buffer_path=buffer_path,
    )
    if not write_all:
        return inspector
    from delegate_lens.exporters import get_exporters
    from delegate_lens.report import write_report

    with open(folder / TABLE, "w", encoding="utf-8") as stream:
        get_exporters()["table"].write(inspector, stream)
    write_report(inspector, folder / REPORT, title=title)
    if buffer_path is not None and record is not None:
        try:
            gaps = inspector.calculate_numeric_gap(inputs=chosen, as_dataframe=False)
        except DelegateLensError as exc:
            raise type(exc)(f"numeric gaps: {exc}") from None
        with open(folder / GAPS, "w", encoding="utf-8") as stream:
            gaps.write_table(stream)
    return inspector


def _move_in(stage: Path, out: Path) -> None:
    """Every staged file into ``out`` (made when missing), each by an atomic rename; a file
    of an earlier profile that this one did not make goes (no stale gaps or buffer)."""
    out.mkdir(exist_ok=True)
    made = {item.name for item in stage.iterdir()}
    for name in sorted(made):
        os.replace(stage / name, out / name)
    for name in set(PROFILE_FILES) - made:
        (out / name).unlink(missing_ok=True)
