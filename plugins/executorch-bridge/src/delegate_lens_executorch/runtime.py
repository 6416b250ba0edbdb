"""The real ExecuTorch runtime (the wheel's compiled pybindings) run with an ETDump.

Two halves. The functions that call the runtime (:func:`load_module`, :func:`execute`,
:func:`write_results`) run in the runtime's child process
(:mod:`delegate_lens_executorch.child`): the runtime aborts or faults on some damaged
programs, and a death there is one error here. :func:`run_program` is the call for this
process: it starts that child, and returns what the child made.

Every call into ``executorch`` goes through :func:`native_quiet`: the runtime's C++ log
lines (and the import-time chatter of its dependencies) are kept off the terminal, and a
failure becomes one error of ours naming the program, with the runtime's last log line.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import attrs

from delegate_lens.errors import ProgramFormatError, RuntimeBackendError, UsageError

__all__ = [
    "DEBUG_BUFFER",
    "DEFAULT_DEBUG_BUFFER_SIZE",
    "ETDUMP",
    "LoadedModule",
    "RealRun",
    "check_program_bytes",
    "execute",
    "import_executorch",
    "keep_log",
    "last_log_line",
    "load_module",
    "native_quiet",
    "run_program",
    "runtime_library",
    "write_results",
]

DEFAULT_DEBUG_BUFFER_SIZE = 16 << 20
ETDUMP, DEBUG_BUFFER = "etdump.etdp", "debug.bin"
"""The names the runtime's files get in the folder :func:`write_results` writes to."""
_LOGGERS = ("torchao", "torch.utils._pytree", "executorch", "root")
_PORTABLE_LIB = "executorch.extension.pybindings.portable_lib"
_COMPILED = "executorch.extension.pybindings._C"


class _TensorMeta(Protocol):
    def sizes(self) -> Sequence[int]: ...


class _MethodMeta(Protocol):
    def num_inputs(self) -> int: ...
    def num_outputs(self) -> int: ...
    def input_tensor_meta(self, index: int) -> _TensorMeta: ...
    def output_tensor_meta(self, index: int) -> _TensorMeta: ...


class RuntimeModule(Protocol):
    """What delegate-lens calls of the runtime's module (``ExecuTorchModule``)."""

    def method_names(self) -> Sequence[str]: ...
    def method_meta(self, method: str) -> _MethodMeta: ...
    def run_method(self, method: str, inputs: tuple[object, ...]) -> Sequence[object]: ...
    def write_etdump_result_to_file(self, path: str, debug_buffer_path: str | None) -> None: ...


@attrs.define
class _Captured:
    """What the runtime wrote on file descriptor 2 while it was quieted."""

    text: str = ""

    def last_line(self) -> str:
        return last_log_line(self.text)


def last_log_line(text: str) -> str:
    """The runtime's last error line in ``text`` (else its last line; ``""`` when none)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line[:1] == "E" or "rror" in line]
    return (errors or lines or [""])[-1]


_kept_log = False
"""True in the runtime's child: fd 2 is its log file already, and stays it (see
:func:`keep_log`)."""


def keep_log() -> None:
    """In the runtime's child, whose fd 2 is a log file the parent reads when the child
    dies: :func:`native_quiet` then leaves fd 2 (and ``sys.stderr``) where they are and
    captures what was written to the log while inside."""
    global _kept_log
    _kept_log = True


@contextlib.contextmanager
def native_quiet() -> Iterator[_Captured]:
    """Send fd 2 (C++ logs) and Python warnings/log records to a buffer while inside."""
    captured = _Captured()
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        try:
            with _kept(captured) if _kept_log else _redirected(captured):
                yield captured
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def _redirected(captured: _Captured) -> Iterator[None]:
    """fd 2 and ``sys.stderr`` into a buffer while inside."""
    with tempfile.TemporaryFile(mode="w+b") as sink:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        python_side = io.StringIO()  # the pybindings log through sys.stderr when they can
        try:
            with contextlib.redirect_stderr(python_side):
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", "replace") + python_side.getvalue()


@contextlib.contextmanager
def _kept(captured: _Captured) -> Iterator[None]:
    """What is written to fd 2 (a log file) while inside, left there too."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    start = os.lseek(2, 0, os.SEEK_END)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        end = os.lseek(2, 0, os.SEEK_END)
        captured.text = os.pread(2, end - start, start).decode("utf-8", "replace")


def import_executorch(module: str) -> Any:
    """``importlib.import_module(module)`` with the import's chatter kept quiet."""
    with native_quiet():
        return importlib.import_module(module)


def runtime_library() -> ModuleType:
    """The runtime's pybindings: their compiled module, imported alone.

    ``portable_lib``, the pybindings' Python face, re-exports the compiled module after
    importing ``executorch.exir`` (for one warning class): seconds of imports that running
    a program does not need. The face is imported where it does more than that (OpenVINO's
    library path, Windows' DLL folder), or when the compiled module is not found."""
    loaded = sys.modules.get(_PORTABLE_LIB)
    if loaded is not None:
        return loaded
    import torch  # noqa: F401  (the pybindings take and give torch tensors)

    if sys.platform != "win32" and importlib.util.find_spec("openvino") is None:
        with contextlib.suppress(ImportError):
            return import_executorch(_COMPILED)
    return import_executorch(_PORTABLE_LIB)


def check_program_bytes(data: bytes, origin: str) -> None:
    """A clear error when ``data`` is not an ExecuTorch program (file identifier ``ET..``)."""
    if len(data) < 8 or data[4:6] != b"ET":
        found = data[4:8] if len(data) >= 8 else b""
        raise ProgramFormatError(
            f"{origin}: not an ExecuTorch program (file identifier {found!r}, expected b'ET..')"
        )


@attrs.define
class LoadedModule:
    """The runtime's module with the program bytes it runs from.

    ``_load_for_executorch_from_buffer`` keeps a pointer into the bytes it is given, not a
    copy: bytes freed while the module lives are read after free (a crash, or a run of
    whatever took their memory). ``debug_buffer_size`` is the size of the debug buffer it
    was loaded with (0: none)."""

    module: RuntimeModule
    program: bytes
    debug_buffer_size: int = 0

    def method_names(self) -> list[str]:
        return list(self.module.method_names())

    def method_meta(self, method: str) -> _MethodMeta:
        return self.module.method_meta(method)

    def run_method(self, method: str, inputs: tuple[object, ...]) -> list[object]:
        return list(self.module.run_method(method, inputs))

    def write_etdump_result_to_file(self, path: str, debug_buffer_path: str | None) -> None:
        self.module.write_etdump_result_to_file(path, debug_buffer_path)


def load_module(data: bytes, origin: str, *, debug_buffer_size: int = 0) -> LoadedModule:
    """The runtime's module for program ``data``, with ETDump on (``data`` kept with it).

    In this process: call it in the runtime's child (a damaged program may crash it)."""
    check_program_bytes(data, origin)
    pl = runtime_library()
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


def touch_metadata(module: LoadedModule) -> None:
    """Read every method's tensor metadata: the runtime aborts on some damaged ones (a
    scalar type it does not know), and a crash here is one while loading."""
    with native_quiet():
        for method in module.method_names():
            meta = module.method_meta(method)
            for i in range(meta.num_inputs()):
                with contextlib.suppress(Exception):  # a scalar has no tensor meta
                    repr(meta.input_tensor_meta(i))
            for i in range(meta.num_outputs()):
                with contextlib.suppress(Exception):
                    repr(meta.output_tensor_meta(i))


@attrs.define
class RealRun:
    """One traced session of the real runtime: the last outputs, the ETDump, the buffer."""

    outputs: list[object]
    etdump: bytes
    debug_buffer: bytes | None = attrs.field(default=None)


def run_program(
    data: bytes,
    inputs: Sequence[object],
    *,
    origin: str = "<program>",
    method: str = "forward",
    runs: int = 1,
    debug: bool = False,
    debug_buffer_size: int = DEFAULT_DEBUG_BUFFER_SIZE,
    folder: Path | None = None,
) -> RealRun:
    """Run ``method`` of program ``data`` ``runs`` times on ``inputs`` with ETDump on
    (and a debug buffer of intermediate outputs with ``debug``), in the runtime's child
    process: a crash of the runtime is an error naming ``origin``, the signal and the step.

    ``folder``: the runtime writes ``etdump.etdp`` (and ``debug.bin``) there, and the
    run's ``debug_buffer`` is ``None`` (the buffer, as large as it was made, is not read
    back: read the file)."""
    from delegate_lens_executorch.child import open_runtime

    if runs < 1:
        raise UsageError(f"runs must be >= 1, got {runs}")
    check_program_bytes(data, origin)
    size = debug_buffer_size if debug else 0
    with tempfile.TemporaryDirectory(prefix="delegate-lens-run-") as tmp:
        where = Path(tmp) if folder is None else folder
        with open_runtime(data, origin, method=method, debug_buffer_size=size) as child:
            outputs = child.run(inputs, method=method, runs=runs, debug=debug, folder=where)
        etdump = (where / ETDUMP).read_bytes()
        keep = folder is None and debug and (where / DEBUG_BUFFER).exists()
        buffer = (where / DEBUG_BUFFER).read_bytes() if keep else None
    return RealRun(outputs, etdump, buffer)


def execute(
    module: LoadedModule, method: str, inputs: Sequence[object], *, origin: str, runs: int
) -> list[object]:
    """Run ``method`` ``runs`` times; a runtime failure is a :class:`RuntimeBackendError`.

    In this process: call it in the runtime's child (a damaged program may crash it)."""
    outputs: list[object] = []
    with native_quiet() as log:
        failure = None
        for _ in range(runs):
            try:
                outputs = module.run_method(method, tuple(inputs))
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


def _expected_inputs(module: LoadedModule, method: str, inputs: Sequence[object]) -> str:
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


def write_results(module: LoadedModule, folder: Path, *, debug: bool) -> None:
    """Write the module's ETDump (:data:`ETDUMP`) and, with ``debug``, its debug buffer
    (:data:`DEBUG_BUFFER`) into ``folder``.

    In this process: call it in the runtime's child (a damaged program may crash it)."""
    debug_path = str(folder / DEBUG_BUFFER) if debug else None
    with native_quiet():
        module.write_etdump_result_to_file(str(folder / ETDUMP), debug_path)
