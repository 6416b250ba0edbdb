"""Writing files safely: through a temporary file in the same folder, then a rename.

Every file delegate-lens writes (ETDump, debug buffer, ETRecord, program, exports) goes
through :func:`write_atomic`, so a failure never leaves a partial file behind and never
destroys the file that was there before. What the output path names decides how:

- a regular file, or a path that does not exist yet: a temporary file beside it, renamed
  over it (a symbolic link is followed: the file it points to is replaced, the link stays);
- a FIFO or a character device (a terminal, ``/dev/stdout``, ``/dev/null``): written
  straight into, never replaced;
- ``-``: standard output (:func:`standard_output`);
- anything else (a socket, a block device): refused with a :class:`UsageError`.

An ``OSError`` of the writing that names no file (``ENOSPC``: a full disk, or
``/dev/full``) is raised again naming the output, so that every command's one-line error
says which file could not be written.

Within :func:`guard_inputs` (the command line runs every command in it), the files read
as inputs are remembered and an output that is one of them is refused.

Within :func:`plugin_prints_to_stderr` (the command line runs in it, set once at its
start), ``sys.stdout`` is ``sys.stderr``: what a plugin prints, in a hook or at import, in
any thread, never mixes with the command's output, which goes to :func:`standard_output`
(the stdout the command line started with).

Temporary names carry the writer's process id (``.<name>.<pid>-<random>.tmp``): a later
write to the same place removes those left by a process that no longer runs (a
``kill -9`` in the middle of a write).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn, TextIO

from delegate_lens.errors import InputFileError, MissingFileError, UsageError

__all__ = [
    "STDOUT",
    "STDOUT_NAME",
    "clean_stale_temporaries",
    "guard_inputs",
    "note_input",
    "plugin_prints_to_stderr",
    "read_input",
    "reraise_as_input_error",
    "standard_output",
    "temporary_prefix",
    "write_atomic",
    "write_bytes_atomic",
    "write_folder_atomic",
]

STDOUT = "-"
"""The output path that means standard output."""

OLD_TEMPORARY_AGE = 3600.0
"""Seconds after which a temporary of the older naming (no process id) counts as stale."""

_inputs: dict[tuple[int, int], str] | None = None


@contextlib.contextmanager
def guard_inputs() -> Iterator[None]:
    """Remember the files read as inputs (:func:`note_input`) and refuse to write over any
    of them until the block ends."""
    global _inputs
    saved = _inputs
    _inputs = {}
    try:
        yield
    finally:
        _inputs = saved


def note_input(path: str | os.PathLike[str]) -> None:
    """Remember ``path`` as an input (inside :func:`guard_inputs`; a no-op outside)."""
    if _inputs is None:
        return
    try:
        info = os.stat(path)
    except OSError:
        return
    _inputs.setdefault((info.st_dev, info.st_ino), os.fspath(path))


def _refuse_if_input(target: Path, shown: str | os.PathLike[str]) -> None:
    if not _inputs:
        return
    try:
        info = os.stat(target)
    except OSError:
        return
    source = _inputs.get((info.st_dev, info.st_ino))
    if source is not None:
        same = "" if os.fspath(source) == os.fspath(shown) else f" ({source})"
        raise UsageError(
            f"cannot write {os.fspath(shown)}: it is an input of this command{same}; "
            "give another output file"
        )


def reraise_as_input_error(exc: OSError, path: str | os.PathLike[str], what: str) -> NoReturn:
    """Raise ``exc`` (reading ``path``) as our :class:`InputFileError` naming the file."""
    cls = MissingFileError if isinstance(exc, FileNotFoundError) else InputFileError
    reason = f"cannot read the {what}: {exc.strerror or exc}"
    raise cls(exc.errno, reason, os.fspath(path)) from exc


def read_input(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of the input file ``path`` (``what`` it is, e.g. ``"ETDump"``, names it in
    errors): a missing or unreadable file is an :class:`InputFileError` (an ``OSError``)."""
    try:
        with open(path, "rb") as stream:
            note_input(path)
            return stream.read()
    except OSError as exc:
        reraise_as_input_error(exc, path, what)


def _mode_for(target: Path) -> int:
    """An existing file keeps its permissions; a new one gets 0666 less the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def temporary_prefix(name: str) -> str:
    """The prefix of this process's temporary names for a file ``name``."""
    return f".{name}.{os.getpid()}-"


_TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?:(?P<pid>\d+)-)?[A-Za-z0-9_]{8}\.tmp")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def clean_stale_temporaries(folder: str | os.PathLike[str], name: str) -> list[str]:
    """Remove the temporaries for ``name`` in ``folder`` that no running writer owns: those
    whose process is gone, and those of the older naming (no process id) older than
    :data:`OLD_TEMPORARY_AGE`. Returns the names removed; errors are ignored."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        match = _TEMPORARY.fullmatch(entry.name)
        if match is None or match["name"] != name:
            continue
        try:
            if match["pid"] is not None:
                if _running(int(match["pid"])):
                    continue
            elif now - entry.stat(follow_symlinks=False).st_mtime < OLD_TEMPORARY_AGE:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
        removed.append(entry.name)
    return removed


STDOUT_NAME = "<stdout>"
"""How an error writing to standard output (``-``) names it."""

_command_stdout: list[TextIO] = []  # the stdout of each command running (in-process: nested)


def standard_output() -> TextIO:
    """Where a command's output goes (and an output path ``-``): ``sys.stdout``, or within
    :func:`plugin_prints_to_stderr` the stdout it started with."""
    return _command_stdout[-1] if _command_stdout else sys.stdout


@contextlib.contextmanager
def plugin_prints_to_stderr() -> Iterator[TextIO]:
    """For the command line, once: inside, ``sys.stdout`` is ``sys.stderr`` (what plugins
    print goes there) and :func:`standard_output` is the stdout it was, which it yields;
    given back at the end. Library users, who call the API, are not touched."""
    stdout = sys.stdout
    _command_stdout.append(stdout)
    sys.stdout = sys.stderr
    try:
        yield stdout
    finally:
        sys.stdout = stdout
        _command_stdout.pop()


@contextlib.contextmanager
def _naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """An ``OSError`` raised inside that names no file (``ENOSPC`` from a write, ``EIO``
    from a flush) is raised again naming ``path``, the output being written (same errno,
    so the same class: a ``BrokenPipeError`` stays one)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), os.fspath(path)) from None


def _write_stream(target: Path, write: Callable[[IO[Any]], object], binary: bool) -> None:
    """Write straight into ``target`` (a FIFO or a character device)."""
    if binary:
        with open(target, "wb") as stream:
            write(stream)
    else:
        with open(target, "w", encoding="utf-8", newline="") as text:
            write(text)


def _write_stdout(write: Callable[[IO[Any]], object], binary: bool) -> None:
    stdout = standard_output()
    if binary:
        stdout.flush()
        write(stdout.buffer)
        stdout.buffer.flush()
    else:
        write(stdout)
        stdout.flush()


def _resolve(path: str | os.PathLike[str]) -> tuple[Path, int | None]:
    """Where to write ``path`` (a link followed to its file) and that file's mode (None:
    it does not exist yet)."""
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    try:
        return target, os.stat(target).st_mode
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None


def write_atomic(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool = False
) -> Path:
    """Call ``write(stream)`` on a temporary file beside ``path``, then rename it to ``path``.

    A file replaced keeps its permissions; a new one gets 0666 less the umask. On any failure the temporary
    file is removed and ``path`` is left as it was; an error creating the temporary file
    names ``path``, not the temporary name; so does an error of the writing that names no
    file (``ENOSPC``: a full disk, ``/dev/full``). ``path`` ``-`` is standard output
    (:data:`STDOUT_NAME` in errors); a FIFO or a character device is written straight
    into; a socket or a block device is refused (:class:`UsageError`); so is an input of
    the command (see :func:`guard_inputs`).
    """
    if os.fspath(path) == STDOUT:
        with _naming(STDOUT_NAME):
            _write_stdout(write, binary)
        return Path(STDOUT)
    target, mode = _resolve(path)
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        _refuse_if_input(target, path)
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            with _naming(path):
                _write_stream(target, write, binary)
            return Path(path)
        if not stat.S_ISREG(mode):
            raise UsageError(
                f"cannot write {os.fspath(path)}: not a regular file, a FIFO or a terminal"
            )
    folder = target.parent or Path(".")
    clean_stale_temporaries(folder, target.name)
    try:
        fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(target.name), suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
    try:
        os.fchmod(fd, _mode_for(target))
        with _naming(path):  # a full disk names the output, not the temporary file
            if binary:
                with os.fdopen(fd, "wb") as stream:
                    write(stream)
            else:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as text:
                    write(text)
        try:
            os.replace(tmp, target)
        except OSError as exc:  # e.g. path is a folder: name it, not the temporary file
            raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`write_atomic`)."""
    return write_atomic(path, lambda stream: stream.write(data), binary=True)


def write_folder_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(folder)`` on a new temporary folder beside ``path``, then publish it.

    A ``path`` that does not exist becomes the folder (one rename); into an existing folder
    each file is moved (``os.replace``, so each one appears whole). On any failure the
    temporary folder is removed and ``path`` is left as it was (an error of ``write`` that
    names no file names ``path``). A file of the folder that is an input of the command is
    refused before anything is moved.
    """
    if os.fspath(path) == STDOUT:
        raise UsageError("this output is a folder of files: give a folder, not '-'")
    target = Path(path)
    clean_stale_temporaries(target.parent, target.name)
    try:
        tmp = Path(
            tempfile.mkdtemp(prefix=temporary_prefix(target.name), suffix=".tmp", dir=target.parent)
        )
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with _naming(target):
            write(tmp)
        if not target.exists():
            os.chmod(tmp, 0o777 & ~_umask())
            os.rename(tmp, target)
            return target
        items = sorted(tmp.iterdir())
        for item in items:
            _refuse_if_input(target / item.name, target / item.name)
        for item in items:
            os.replace(item, target / item.name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
