"""The real ExecuTorch runtime (the wheel's ``portable_lib``) run with an ETDump.

Every call into ``executorch`` goes through :func:`native_quiet`: the runtime's C++ log
lines (and the import-time chatter of its dependencies) are kept off the terminal, and a
failure becomes one error of ours naming the program, with the runtime's last log line.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from delegate_lens.errors import ProgramFormatError, RuntimeBackendError, UsageError

__all__ = [
    "DEFAULT_DEBUG_BUFFER_SIZE",
    "LoadedModule",
    "RealRun",
    "check_program_bytes",
    "import_executorch",
    "load_module",
    "native_quiet",
    "open_program",
    "run_module",
    "run_program",
]

DEFAULT_DEBUG_BUFFER_SIZE = 16 << 20
_LOGGERS = ("torchao", "torch.utils._pytree", "executorch", "root")


@attrs.define
class _Captured:
    """What the runtime wrote on file descriptor 2 while it was quieted."""

    text: str = ""

    def last_line(self) -> str:
        lines = [line.strip() for line in self.text.splitlines() if line.strip()]
        errors = [line for line in lines if line[:1] == "E" or "rror" in line]
        return (errors or lines or [""])[-1]


@contextlib.contextmanager
def native_quiet() -> Iterator[_Captured]:
    """Send fd 2 (C++ logs) and Python warnings/log records to a buffer while inside."""
    captured = _Captured()
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    with tempfile.TemporaryFile(mode="w+b") as sink, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        python_side = io.StringIO()  # the pybindings log through sys.stderr when they can
        try:
            with contextlib.redirect_stderr(python_side):
                yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", "replace") + python_side.getvalue()


def import_executorch(module: str) -> Any:
    """``importlib.import_module(module)`` with the import's chatter kept quiet."""
    import importlib

    with native_quiet():
        return importlib.import_module(module)


def check_program_bytes(data: bytes, origin: str) -> None:
    """A clear error when ``data`` is not an ExecuTorch program (file identifier ``ET..``)."""
    if len(data) < 8 or data[4:6] != b"ET":
        found = data[4:8] if len(data) >= 8 else b""
        raise ProgramFormatError(
            f"{origin}: not an ExecuTorch program (file identifier {found!r}, expected b'ET..')"
        )


class LoadedModule:
    """The runtime's module, holding the program bytes it runs from.

    ``_load_for_executorch_from_buffer`` keeps a pointer into the bytes it is given, not a
    copy: bytes freed while the module lives are read after free (a crash, or a run of
    whatever took their memory). Attributes are the module's; ``debug_buffer_size`` is
    the size of the debug buffer it was loaded with (0: none)."""

    def __init__(self, module: Any, program: bytes, debug_buffer_size: int = 0) -> None:
        self._module = module
        self.program = program
        self.debug_buffer_size = debug_buffer_size

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def load_module(data: bytes, origin: str, *, debug_buffer_size: int = 0) -> LoadedModule:
    """The runtime's module for program ``data``, with ETDump on (``data`` kept with it)."""
    check_program_bytes(data, origin)
    _probe(data, origin)
    pl = import_executorch("executorch.extension.pybindings.portable_lib")
    with native_quiet() as log:
        try:
            module = pl._load_for_executorch_from_buffer(
                data, enable_etdump=True, debug_buffer_size=debug_buffer_size
            )
            module.method_names()  # a truncated program fails only here
            failure = None
        except Exception as exc:  # the runtime reports bad programs as RuntimeError
            failure = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if failure is None:
        return LoadedModule(module, data, debug_buffer_size)
    reason = log.last_line() or failure  # the log line says why; the exception only where
    raise ProgramFormatError(f"{origin}: the ExecuTorch runtime cannot load it: {reason}")


def _probe(data: bytes, origin: str) -> None:
    """Load ``data`` and read every method's tensor metadata in a forked child first: the
    runtime aborts the whole process (an assertion, not an error) on some damaged programs,
    e.g. a tensor of a scalar type it does not know. A child killed that way is a
    ProgramFormatError here, and this process never loads the program."""
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:  # the child: load, touch every tensor meta, report by exit status
        code = 0
        try:
            with open(os.devnull, "w") as sink:
                os.dup2(sink.fileno(), 2)
            pl = import_executorch("executorch.extension.pybindings.portable_lib")
            module = pl._load_for_executorch_from_buffer(data)
            for method in module.method_names():
                meta = module.method_meta(method)
                for i in range(meta.num_inputs()):
                    with contextlib.suppress(Exception):  # a scalar has no tensor meta
                        repr(meta.input_tensor_meta(i))
                for i in range(meta.num_outputs()):
                    with contextlib.suppress(Exception):
                        repr(meta.output_tensor_meta(i))
        except BaseException:
            code = 1  # an error the parent's own load reports in words
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise ProgramFormatError(
            f"{origin}: the ExecuTorch runtime crashes on it ({name} while loading its "
            "methods): a damaged program"
        )


@attrs.define
class RealRun:
    """One traced session of the real runtime: the last outputs, the ETDump, the buffer."""

    outputs: list[Any]
    etdump: bytes
    debug_buffer: bytes | None = attrs.field(default=None)


def run_program(
    data: bytes,
    inputs: Sequence[Any],
    *,
    origin: str = "<program>",
    method: str = "forward",
    runs: int = 1,
    debug: bool = False,
    debug_buffer_size: int = DEFAULT_DEBUG_BUFFER_SIZE,
    folder: Path | None = None,
) -> RealRun:
    """Run ``method`` of program ``data`` ``runs`` times on ``inputs`` with ETDump on
    (and a debug buffer of intermediate outputs with ``debug``).

    ``folder``: the runtime writes ``etdump.etdp`` (and ``debug.bin``) there, and the
    run's ``debug_buffer`` is ``None`` (the buffer, as large as it was made, is not read
    back: read the file)."""
    if runs < 1:
        raise UsageError(f"runs must be >= 1, got {runs}")
    size = debug_buffer_size if debug else 0
    module = open_program(data, origin, method=method, debug_buffer_size=size)
    return run_module(
        module, inputs, origin=origin, method=method, runs=runs, debug=debug, folder=folder
    )


def open_program(
    data: bytes, origin: str, *, method: str = "forward", debug_buffer_size: int = 0
) -> LoadedModule:
    """The loaded program ``data`` (:func:`load_module`), checked to have ``method``: a
    damaged program or a missing method is an error naming ``origin``, before any input is
    looked at. ``debug_buffer_size`` > 0 logs intermediate outputs."""
    module = load_module(data, origin, debug_buffer_size=debug_buffer_size)
    names = list(module.method_names())
    if method not in names:
        raise UsageError(f"{origin}: no method {method!r} (methods: {', '.join(names)})")
    return module


def run_module(
    module: LoadedModule,
    inputs: Sequence[Any],
    *,
    origin: str,
    method: str = "forward",
    runs: int = 1,
    debug: bool = False,
    folder: Path | None = None,
) -> RealRun:
    """Run ``method`` of a program from :func:`open_program` ``runs`` times on ``inputs``;
    the results as :func:`run_program`'s (``debug``: it was opened with a debug buffer).
    Runs that would overflow the runtime's ETDump (or its debug buffer) are refused before
    any, naming the most that fit (:func:`delegate_lens_executorch.budget.fit_runs`)."""
    from delegate_lens_executorch.budget import fit_runs

    module = fit_runs(module, inputs, origin=origin, method=method, runs=runs, debug=debug)
    outputs = execute(module, method, inputs, origin=origin, runs=runs)
    etdump, buffer = write_results(module, debug=debug, folder=folder)
    return RealRun(outputs, etdump, buffer)


def execute(
    module: Any, method: str, inputs: Sequence[Any], *, origin: str, runs: int
) -> list[Any]:
    """Run ``method`` ``runs`` times; a runtime failure is a :class:`RuntimeBackendError`."""
    outputs: list[Any] = []
    with native_quiet() as log:
        failure = None
        for _ in range(runs):
            try:
                outputs = list(module.run_method(method, tuple(inputs)))
            except Exception as exc:
                failure = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                break
    if failure is not None:
        detail = log.last_line()
        detail = f" ({detail})" if detail and detail not in failure else ""
        raise RuntimeBackendError(
            f"{origin}: method {method!r} failed in the ExecuTorch runtime: {failure}{detail}"
            f"{_expected_inputs(module, method, inputs)}"
        )
    return outputs


def _expected_inputs(module: Any, method: str, inputs: Sequence[Any]) -> str:
    """``; it takes [1, 16], given [3, 5]`` when the tensor shapes differ, else ``""``."""
    try:
        meta = module.method_meta(method)
        wanted = [list(meta.input_tensor_meta(i).sizes()) for i in range(meta.num_inputs())]
    except Exception:  # scalars and other non-tensor inputs have no tensor meta
        return ""
    given = [list(getattr(v, "shape", ())) for v in inputs]
    if wanted == given:
        return ""
    show = lambda shapes: ", ".join(map(str, shapes))  # noqa: E731
    return f"; it takes {show(wanted)}, given {show(given)}"


def write_results(
    module: Any, *, debug: bool, folder: Path | None = None
) -> tuple[bytes, bytes | None]:
    """The module's ETDump (and debug buffer) as bytes; with ``folder``, the files are
    written there and only the ETDump is read back."""
    with tempfile.TemporaryDirectory() as tmp, native_quiet():
        where = Path(tmp) if folder is None else folder
        etdump_path, debug_path = where / "etdump.etdp", where / "debug.bin"
        module.write_etdump_result_to_file(str(etdump_path), str(debug_path) if debug else None)
        etdump = etdump_path.read_bytes()
        keep = folder is None and debug and debug_path.exists()
        buffer = debug_path.read_bytes() if keep else None
    return etdump, buffer
