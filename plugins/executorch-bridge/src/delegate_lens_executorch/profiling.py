"""One call to profile a real program: the real runtime with ETDump (and a debug buffer),
then the Inspector, and with an output folder every file a backend author looks at.

Everything that touches the runtime (loading the program, the runs, writing the ETDump and
debug buffer) happens in one child process (:mod:`delegate_lens_executorch.child`): a
crash of the runtime is one error naming the step, and nothing is written.

Files written to the folder (all or none: they are made in a hidden folder beside it and
moved in at the end): ``etdump.etdp``, ``debug.bin`` (with ``debug``), ``inspector.txt``
(the Inspector's table), ``report.html`` and, when there are a debug buffer, an ETRecord
and inputs, ``numeric_gaps.txt``. The hidden folder is named as every temporary of
delegate-lens (``.<out>.<pid>-<random>.tmp``, see :mod:`delegate_lens.fileio`): one left
by a process that no longer runs is removed by the next profile to the same place.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from delegate_lens.errors import DelegateLensError, UsageError
from delegate_lens.fileio import OLD_TEMPORARY_AGE, clean_stale_temporaries, temporary_prefix
from delegate_lens_executorch.child import open_runtime
from delegate_lens_executorch.runtime import DEFAULT_DEBUG_BUFFER_SIZE, check_program_bytes

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector import Inspector

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


def as_runtime_value(value: object, origin: str = "inputs") -> object:
    """A runtime input from a numpy array (as bundled programs and ``.npy`` files hold
    them: a writable tensor in native byte order) or a tensor; ``origin`` names where an
    array torch has no dtype for came from."""
    import numpy as np
    import torch

    if not isinstance(value, np.ndarray):
        return value
    try:
        native = np.array(value, dtype=value.dtype.newbyteorder("="), order="C", copy=True)
        return torch.from_numpy(native)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"{origin}: an input array of dtype {value.dtype} cannot be a runtime tensor ({exc})"
        ) from None


INPUT_KINDS = (
    ".npy (one array: the only input), .npz (arrays: the inputs in archive order) or a "
    "torch.save file such as .pt (a tensor, or a list/tuple of inputs)"
)
"""The kinds of inputs file :func:`load_inputs` reads, as its errors name them."""

_NPY_MAGIC = b"\x93NUMPY"


def _file_kind(name: str, data: bytes) -> str:
    """``npy``, ``npz`` or ``torch``: by content (numpy's magic; a zip of ``.npy`` members,
    where torch.save's zips hold ``data.pkl``), else by the name's suffix, else torch."""
    import io
    import zipfile

    if data.startswith(_NPY_MAGIC):
        return "npy"
    if zipfile.is_zipfile(io.BytesIO(data)):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError):
            members = ["?"]
        if all(member.endswith(".npy") for member in members):
            return "npz"
    suffix = Path(name).suffix.lower()
    return suffix[1:] if suffix in (".npy", ".npz") else "torch"


def load_inputs(path: str | os.PathLike[str]) -> list[object]:
    """The inputs in the file at ``path``, one list entry per input of the method:

    - ``.npy``: one array, the method's only input;
    - ``.npz``: the arrays in the order the archive stores them (``numpy.savez(f, x, y)``
      stores ``arr_0``, ``arr_1``, ...; ``numpy.savez(f, x=..., y=...)`` stores them in
      keyword order). The names are not used: the runtime takes its inputs by position;
    - a ``torch.save`` file (``.pt``): a tensor, or a list/tuple of inputs.

    The kind is told by the content (so a ``.npy`` under another name is read too). Arrays
    stay numpy arrays here (:func:`as_runtime_value` makes tensors of them); any other
    file, or a damaged one, is a :class:`UsageError` naming the file and the kinds read.
    """
    import io

    name = os.fspath(path)
    data = _read(path, "inputs")
    kind = _file_kind(name, data)
    try:
        if kind != "torch":
            import numpy as np

            if kind == "npy":
                return [np.load(io.BytesIO(data), allow_pickle=False)]
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                return [archive[key] for key in archive.files]
        import torch

        value = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:
        first = str(exc).strip().split("\n", 1)[0].split(". ", 1)[0]  # torch's run on
        reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        what = "a torch.save file" if kind == "torch" else f"a readable .{kind} file"
        raise UsageError(
            f"{name}: not inputs: not {what} ({reason}); inputs files are {INPUT_KINDS}"
        ) from None
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, torch.Tensor):
        return [value]
    raise UsageError(
        f"{name}: holds a {type(value).__name__}, not inputs; inputs files are {INPUT_KINDS}"
    )


def _choose_inputs(
    inputs: Sequence[object] | str | os.PathLike[str] | None,
    bundled: str | os.PathLike[str] | None,
    record: ETRecord | None,
    method: str,
) -> list[object]:
    if inputs is not None and bundled is not None:
        raise UsageError("give inputs or a bundled program, not both")
    if isinstance(inputs, (str, os.PathLike)):
        return [as_runtime_value(v, os.fspath(inputs)) for v in load_inputs(inputs)]
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
    inputs: Sequence[object] | str | os.PathLike[str] | None = None,
    bundled: str | os.PathLike[str] | None = None,
    runs: int = 1,
    debug: bool = False,
    output_dir: str | os.PathLike[str] | None = None,
    method: str = "forward",
) -> Inspector:
    """Run ``method`` of the ``.pte`` at ``program`` ``runs`` times on the real runtime with
    ETDump (``debug``: and a debug buffer of intermediate outputs) and return the
    :class:`delegate_lens.Inspector` of the run (joined with ``etrecord`` when given).

    Inputs: ``inputs`` (values, or a file :func:`load_inputs` reads: ``.npy``, ``.npz``
    or ``torch.save``), else the first test case of ``bundled`` for ``method``, else the
    ETRecord's representative inputs. The program is loaded and checked (and ``method``
    looked up) before any input. ``output_dir``: write every file of
    :data:`PROFILE_FILES` that applies there; every path the files and errors name is
    the file's in ``output_dir``, never the staging folder's.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise UsageError(f"runs must be a whole number >= 1, got {runs!r}")
    out = None if output_dir is None else Path(output_dir)
    if out is not None:
        _check_output_dir(out)
    origin = os.fspath(program)
    data = _read(program, "program")
    check_program_bytes(data, origin)
    size = DEFAULT_DEBUG_BUFFER_SIZE if debug else 0
    stage: Path | None = None
    try:
        with open_runtime(data, origin, method=method, debug_buffer_size=size) as child:
            record = None
            if etrecord is not None:
                from delegate_lens.etrecord import parse_etrecord

                record = parse_etrecord(etrecord)
            chosen = _choose_inputs(inputs, bundled, record, method)
            stage = _make_stage(out)
            # the runtime writes its files into the stage: no copy of the debug buffer
            child.run(chosen, method=method, runs=runs, debug=debug, folder=stage, outputs=False)
        title = f"profile of {Path(program).name}"
        inspector = _write(stage, record, chosen, debug, title, out, data)
        if out is not None:
            _move_in(stage, out)
        inspector.etdump_path = None if out is None else out / ETDUMP
    except OSError as exc:
        if stage is not None:
            _name_in_output(exc, stage, out)
        raise
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
    return inspector


_LEGACY_STAGE = re.compile(r"\.profile-[a-z0-9_]{8}")
"""The staging folders of earlier versions (no process id: stale once an hour old)."""
_STAGE_NAME = "delegate-lens-profile"
"""What the staging folder is named for without an output folder (in the temporary folder)."""


def _make_stage(out: Path | None) -> Path:
    """A new hidden folder beside ``out`` (None: in the temporary folder) to write into,
    named for ``out`` and this process; the stale ones of processes gone are removed."""
    folder = out.parent if out is not None else Path(tempfile.gettempdir())
    name = out.name if out is not None else _STAGE_NAME
    clean_stale_temporaries(folder, name)
    _clean_legacy_stages(folder)
    try:
        return Path(tempfile.mkdtemp(prefix=temporary_prefix(name), suffix=".tmp", dir=folder))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(out or folder)) from None


def _clean_legacy_stages(folder: Path) -> None:
    """Remove the ``.profile-xxxxxxxx`` folders of earlier versions older than
    :data:`~delegate_lens.fileio.OLD_TEMPORARY_AGE` (their names carry no process id)
    that hold nothing but files a profile writes."""
    try:
        entries = [e for e in os.scandir(folder) if _LEGACY_STAGE.fullmatch(e.name)]
    except OSError:
        return
    now = time.time()
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < OLD_TEMPORARY_AGE:
                continue
            if not set(os.listdir(entry.path)) <= set(PROFILE_FILES):
                continue  # (holds what a profile never writes: not ours)
            shutil.rmtree(entry.path)
        except OSError:
            continue


def _name_in_output(exc: OSError, stage: Path, out: Path | None) -> None:
    """Make ``exc`` name the file of ``out`` where it names a file of the ``stage`` (which
    goes away): the name a user can look at."""
    if out is None or exc.filename is None:
        return
    try:
        inside = Path(os.fsdecode(exc.filename)).relative_to(stage)
    except ValueError:
        return
    exc.filename = os.fspath(out / inside)


def _write(
    folder: Path,
    record: ETRecord | None,
    chosen: list[object],
    debug: bool,
    title: str,
    out: Path | None,
    program: bytes | None = None,
) -> Inspector:
    """The Inspector of the run in ``folder`` (given the ``program`` that ran, for the
    delegates whose map a ``dl_recover_delegate_map`` plugin recovers from it); with
    ``out``, the table, the report (and the numeric gaps) written into ``folder`` too,
    naming the ETDump by its path in ``out``."""
    from delegate_lens.inspector import Inspector

    buffer_path = folder / DEBUG_BUFFER if debug else None  # both written by the runtime
    inspector = Inspector(
        etdump_path=folder / ETDUMP,
        etrecord=record,
        debug_buffer_path=buffer_path,
        program=program if program is not None and program[4:8] == b"ET12" else None,
    )
    if out is None:
        return inspector
    inspector.etdump_path = out / ETDUMP  # read already: what the report shows and offers
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
