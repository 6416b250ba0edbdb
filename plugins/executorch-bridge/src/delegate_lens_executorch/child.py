"""The real runtime in a child process: every call into ExecuTorch's runtime runs there.

The runtime aborts or faults (SIGABRT, SIGSEGV) on some damaged programs: while loading
them, while running a method, while writing the ETDump. In the command's own process that
ends the command with no word (exit 134 or 139). So one child process loads the program
and does each step asked of it, through to the last: it measures the runs
(:func:`delegate_lens_executorch.budget.fit_runs`), runs the method, writes the ETDump (and
debug buffer) into a folder this process chose. Requests and answers go over a pipe; the
files stay where the child wrote them. A child that dies is one error naming the program,
the signal and the step (``model.pte: the ExecuTorch runtime crashed (SIGSEGV) while
running 'forward'``), and the caller writes nothing.

One child serves a whole profile (load, every run, the ETDump). How it starts:

- on Linux it is forked: it shares what this process has imported (torch, imported here
  first, since the inputs and outputs are torch tensors) and imports only the runtime's
  compiled pybindings (:func:`~delegate_lens_executorch.runtime.runtime_library`), never
  ``executorch.exir``;
- elsewhere (macOS, Windows: forking a process that loaded system frameworks is unsafe) it
  is spawned: a new interpreter that imports torch and the pybindings, nothing else of
  delegate-lens but this module and :mod:`delegate_lens_executorch.runtime`. Scripts that
  call :func:`delegate_lens.profile` there need the usual ``if __name__ == "__main__":``.

Whatever the runtime prints goes to a file, never to this process's terminal or standard
output; its last line is quoted in the error when the child dies.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, SpawnContext
from pathlib import Path
from types import TracebackType
from typing import IO

from delegate_lens.errors import (
    DelegateLensError,
    ProgramFormatError,
    RuntimeBackendError,
    UsageError,
)
from delegate_lens_executorch.runtime import (
    LoadedModule,
    execute,
    keep_log,
    last_log_line,
    load_module,
    touch_metadata,
    write_results,
)

__all__ = ["ISOLATE", "LOADING", "WRITING", "RuntimeChild", "open_runtime", "running"]

ISOLATE = True
"""Run the runtime in a child process. False runs it in this process, unprotected: only
to measure what the child costs (``benchmarks/bench_executorch.py --only child``)."""
LOADING = "loading"
WRITING = "writing the ETDump"
_STOP = b"stop"
_LOG_LINE_CHARS = 200
_JOIN_SECONDS = 10.0


def running(method: str) -> str:
    """The step of running ``method``, as a crash names it."""
    return f"running {method!r}"


class _Server:
    """The child's side: the loaded program and one method per request."""

    def __init__(self, module: LoadedModule, origin: str) -> None:
        self.module = module
        self.origin = origin

    def fit(self, inputs: Sequence[object], method: str, runs: int, debug: bool) -> None:
        from delegate_lens_executorch.budget import fit_runs

        self.module = fit_runs(
            self.module, inputs, origin=self.origin, method=method, runs=runs, debug=debug
        )

    def execute(
        self, inputs: Sequence[object], method: str, runs: int, origin: str, keep: bool
    ) -> list[object] | None:
        outputs = execute(self.module, method, inputs, origin=origin, runs=runs)
        return outputs if keep else None

    def write(self, folder: Path, debug: bool) -> None:
        write_results(self.module, folder, debug=debug)


def _load(program: bytes, origin: str, debug_buffer_size: int) -> _Server:
    module = load_module(program, origin, debug_buffer_size=debug_buffer_size)
    touch_metadata(module)
    return _Server(module, origin)


def _answer(conn: Connection, ok: bool, value: object) -> None:
    """Send ``value`` (a result, or the exception raised) in one message."""
    if not ok and isinstance(value, BaseException) and not isinstance(value, DelegateLensError):
        with contextlib.suppress(Exception):  # where it came from, for a bug of ours
            text = "".join(traceback.format_exception(value)).rstrip()
            value.add_note(f"(in the ExecuTorch runtime's child process)\n{text}")
    try:
        data = pickle.dumps((ok, value), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        failure = RuntimeBackendError(f"{type(value).__name__}: {value}")
        data = pickle.dumps((False, failure), protocol=pickle.HIGHEST_PROTOCOL)
    conn.send_bytes(data)


def _serve(
    conn: Connection,
    program: bytes,
    origin: str,
    debug_buffer_size: int,
    log_fd: int | None,
    parent_end: Connection | None,
) -> None:
    """The child: load ``program``, then answer requests until told to stop.

    ``parent_end``: forked, the parent's end of the pipe, closed here (so that the
    parent's death is this end's EOF); ``log_fd``: where the runtime's output goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to act on
    forked = parent_end is not None
    if parent_end is not None:
        parent_end.close()
    sink = log_fd if log_fd is not None else os.open(os.devnull, os.O_WRONLY)
    os.dup2(sink, 1)  # nothing of the runtime's on the parent's terminal or output
    os.dup2(sink, 2)
    # the pybindings log through sys.stderr: the parent's may be anything (a test's buffer)
    sys.stdout = sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    if log_fd is not None:
        keep_log()  # (its last line names the cause of a crash)
    if forked:
        import torch

        torch.set_num_threads(1)  # the parent's OpenMP threads do not exist here
    try:
        server = _load(program, origin, debug_buffer_size)
        _answer(conn, True, tuple(server.module.method_names()))
    except BaseException as exc:
        _answer(conn, False, exc)
        return
    while True:
        try:
            message = conn.recv_bytes()
        except (EOFError, OSError):  # the parent is gone
            return
        if message == _STOP:
            return
        try:
            name, args = pickle.loads(message)
            result = getattr(server, name)(*args)
        except BaseException as exc:
            _answer(conn, False, exc)
        else:
            _answer(conn, True, result)


def _context() -> ForkContext | SpawnContext:
    """Fork on Linux; spawn elsewhere (see the module's docstring)."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class RuntimeChild:
    """One program loaded by the runtime in a child process (:func:`open_runtime`).

    Each method is one request; an error of the runtime is raised here as it was there,
    and a child that dies is a :class:`~delegate_lens.errors.ProgramFormatError` (while
    loading) or :class:`~delegate_lens.errors.RuntimeBackendError` naming the step."""

    def __init__(self, program: bytes, origin: str, *, debug_buffer_size: int = 0) -> None:
        self.origin = origin
        self.method_names: tuple[str, ...] = ()
        self._program = program
        self._debug_buffer_size = debug_buffer_size
        self._local: _Server | None = None
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> RuntimeChild:
        """Start the child and load the program in it; ``method_names`` are its methods."""
        if not ISOLATE:
            self._local = _load(self._program, self.origin, self._debug_buffer_size)
            self.method_names = tuple(self._local.module.method_names())
            return self
        context = _context()
        forked = isinstance(context, ForkContext)
        if forked:
            import torch  # noqa: F401  (once, here: the child shares it)

            self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by close())
        parent_end, child_end = context.Pipe()
        log_fd = self._log.fileno() if self._log is not None else None
        shared = parent_end if forked else None  # (spawned, the child never had it)
        args = (child_end, self._program, self.origin, self._debug_buffer_size, log_fd, shared)
        self._process = context.Process(target=_serve, args=args, daemon=True)
        self._conn = parent_end
        try:
            self._process.start()
        finally:
            child_end.close()  # the child's end is the child's: its death is our EOF
        names = self._reply(LOADING)
        assert isinstance(names, tuple)
        self.method_names = names
        return self

    def fit_runs(self, inputs: Sequence[object], *, method: str, runs: int, debug: bool) -> None:
        """Measure and bound the runs (:func:`~delegate_lens_executorch.budget.fit_runs`)."""
        self._request(running(method), "fit", inputs, method, runs, debug)

    def execute(
        self,
        inputs: Sequence[object],
        *,
        method: str,
        runs: int = 1,
        origin: str | None = None,
        outputs: bool = True,
        step: str | None = None,
    ) -> list[object]:
        """Run ``method`` ``runs`` times; the last outputs (``[]`` without ``outputs``)."""
        where = origin or self.origin
        args = (inputs, method, runs, where, outputs)
        result = self._request(step or running(method), "execute", *args)
        return result if isinstance(result, list) else []

    def write_results(self, folder: Path, *, debug: bool) -> None:
        """Write the ETDump (and with ``debug`` the debug buffer) into ``folder``."""
        self._request(WRITING, "write", folder, debug)

    def run(
        self,
        inputs: Sequence[object],
        *,
        method: str,
        runs: int,
        debug: bool,
        folder: Path,
        outputs: bool = True,
    ) -> list[object]:
        """Every step of a traced session: bound the runs, run ``runs`` times, write the
        ETDump (and debug buffer) into ``folder``; the last outputs."""
        self.fit_runs(inputs, method=method, runs=runs, debug=debug)
        result = self.execute(inputs, method=method, runs=runs, outputs=outputs)
        self.write_results(folder, debug=debug)
        return result

    def _request(self, step: str, name: str, *args: object) -> object:
        if self._local is not None:
            return getattr(self._local, name)(*args)
        if self._conn is None:
            raise RuntimeBackendError(f"{self.origin}: the ExecuTorch runtime is closed")
        try:
            self._conn.send_bytes(pickle.dumps((name, args), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:  # (BrokenPipeError) it died already: say how
            raise self._death(step) from None
        return self._reply(step)

    def _reply(self, step: str) -> object:
        assert self._conn is not None
        try:
            data = self._conn.recv_bytes()
        except (EOFError, OSError):
            raise self._death(step) from None
        ok, value = pickle.loads(data)
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value

    def _death(self, step: str) -> DelegateLensError:
        """The error for a child that ended while doing ``step``."""
        process = self._process
        assert process is not None
        process.join(_JOIN_SECONDS)
        code = process.exitcode
        self.close()
        if code is not None and code < 0:
            try:
                how = f"crashed ({signal.Signals(-code).name})"
            except ValueError:
                how = f"crashed (signal {-code})"
        else:
            how = f"ended (exit status {code})"
        text = f"{self.origin}: the ExecuTorch runtime {how} while {step}"
        last = self._last_log_line()
        if last:
            text += f" (its last log line: {last})"
        return (ProgramFormatError if step == LOADING else RuntimeBackendError)(text)

    def _last_log_line(self) -> str:
        if self._log is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0)
            text = self._log.read().decode("utf-8", "replace")
            return " ".join(last_log_line(text).split())[:_LOG_LINE_CHARS]
        return ""

    def close(self) -> None:
        """Stop the child (killed if it does not stop); idempotent."""
        self._local = None
        conn, process, self._conn = self._conn, self._process, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send_bytes(_STOP)
            conn.close()
        if process is not None and process.exitcode is None:
            process.join(_JOIN_SECONDS)
            if process.exitcode is None:
                process.kill()
                process.join()

    def __enter__(self) -> RuntimeChild:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is not None and self._process is not None and self._process.exitcode is None:
            self._process.kill()  # interrupted or failed: no need to wait for it
        self.close()
        if self._log is not None:
            self._log.close()
            self._log = None


def open_runtime(
    program: bytes, origin: str, *, method: str | None = None, debug_buffer_size: int = 0
) -> RuntimeChild:
    """A :class:`RuntimeChild` with ``program`` loaded (use it in a ``with`` block); with
    ``method``, a :class:`~delegate_lens.errors.UsageError` when the program has no such
    method."""
    child = RuntimeChild(program, origin, debug_buffer_size=debug_buffer_size)
    try:
        child.start()
        if method is not None and method not in child.method_names:
            names = ", ".join(child.method_names)
            raise UsageError(f"{origin}: no method {method!r} (methods: {names})")
    except BaseException:
        child.__exit__(*sys.exc_info())
        raise
    return child
