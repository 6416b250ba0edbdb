"""Writing files safely: through a temporary file in the same folder, then a rename.

Every file delegate-lens writes (ETDump, debug buffer, ETRecord, program, exports) goes
through :func:`write_atomic`, so a failure never leaves a partial file behind and never
destroys the file that was there before.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NoReturn

from delegate_lens.errors import InputFileError, MissingFileError

__all__ = [
    "read_input",
    "reraise_as_input_error",
    "write_atomic",
    "write_bytes_atomic",
    "write_folder_atomic",
]


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
            return stream.read()
    except OSError as exc:
        reraise_as_input_error(exc, path, what)


def _mode_for(target: Path) -> int:
    """An existing file keeps its permissions; a new one gets 0666 less the umask."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_atomic(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool = False
) -> Path:
    """Call ``write(stream)`` on a temporary file beside ``path``, then rename it to ``path``.

    A file replaced keeps its permissions; a new one gets 0666 less the umask. On any failure the temporary
    file is removed and ``path`` is left as it was; an error creating the temporary file
    names ``path``, not the temporary name.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path(".")
        )
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        os.fchmod(fd, _mode_for(target))
        if binary:
            with os.fdopen(fd, "wb") as stream:
                write(stream)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as text:
                write(text)
        try:
            os.replace(tmp, target)
        except OSError as exc:  # e.g. path is a folder: name it, not the temporary file
            raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`write_atomic`)."""
    return write_atomic(path, lambda stream: stream.write(data), binary=True)


def write_folder_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(folder)`` on a new temporary folder beside ``path``, then publish it.

    A ``path`` that does not exist becomes the folder (one rename); into an existing folder
    each file is moved (``os.replace``, so each one appears whole). On any failure the
    temporary folder is removed and ``path`` is left as it was.
    """
    import shutil

    target = Path(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        write(tmp)
        if not target.exists():
            os.chmod(tmp, 0o777 & ~_umask())
            os.rename(tmp, target)
            return target
        for item in sorted(tmp.iterdir()):
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
