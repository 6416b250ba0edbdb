"""Colour and progress for ``inspect --format table`` on a terminal, with ``rich``.

Only when standard output (and, for the progress bar, standard error) is a terminal,
``NO_COLOR`` is unset (https://no-color.org: any non-empty value), ``TERM`` is not
``dumb`` and the ``rich`` extra is installed (``pip install 'delegate-lens[rich]'``).
Otherwise output stays plain text, byte for byte what a pipe gets; a missing ``rich`` is
no error there. :func:`require_rich` is the strict form for callers that need it.

The progress bar (on standard error, erased when done) appears only once the work has
taken :data:`PROGRESS_DELAY` seconds, so quick runs never flash one.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from delegate_lens.errors import MissingExtraError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import IO

    from rich.progress import Progress


PROGRESS_DELAY = 1.0
"""Seconds of work before a progress bar shows."""


# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character that a terminal acts on (escape sequences,
    carriage return, backspace, bell, bidirectional overrides) shown as ``\\xNN`` or
    ``\\uNNNN``; tab and newline stay. Names read from files pass through this before
    they are printed, so a crafted file cannot set the terminal's title or hide text."""
    return _CONTROLS.sub(_escape, text)


class _Escaping:
    """A text stream that writes through :func:`escape_controls`."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(escape_controls(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def safe_text(stream: IO[str], *, for_people: bool) -> IO[str]:
    """``stream``, escaping control characters (:func:`escape_controls`) when the text is
    ``for_people`` (a table) or ``stream`` is a terminal; machine formats into a pipe or
    a file stay as they are."""
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty and isatty())
    except (OSError, ValueError):
        tty = False
    if for_people or tty:
        return _Escaping(stream)  # type: ignore[return-value]
    return stream


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


def refuse_binary_on_terminal(fmt: str, output: str | None, stream: object) -> None:
    """Refuse to write the binary format ``fmt`` onto a terminal: standard output
    (``stream``, for no ``-o`` or ``-o -``) that is a TTY gets a :class:`UsageError`
    suggesting ``-o``; a pipe or a file is written as asked."""
    from delegate_lens.fileio import STDOUT

    if output not in (None, STDOUT) or not _is_terminal(stream):
        return
    from delegate_lens.errors import UsageError

    raise UsageError(
        f"format {fmt!r} is binary and standard output is a terminal: give a file with "
        "-o FILE (or pipe the output)"
    )


def require_rich() -> Any:
    """The ``rich`` module, or :class:`MissingExtraError` naming the extra."""
    try:
        import rich
    except ImportError:
        raise MissingExtraError(
            "colour and progress on a terminal need rich: pip install 'delegate-lens[rich]'"
        ) from None
    return rich


def is_fancy_terminal(stream: object, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` may get colour and progress: a TTY, no ``NO_COLOR``, not dumb."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


def rich_console(stream: IO[str], environ: Mapping[str, str] | None = None) -> Any | None:
    """A ``rich.console.Console`` writing to ``stream`` when it may have colour, else None
    (not a terminal, ``NO_COLOR`` set, or rich not installed: plain output)."""
    if not is_fancy_terminal(stream, environ):
        return None
    try:
        require_rich()
    except MissingExtraError:
        return None
    from rich.console import Console

    return Console(file=stream, force_terminal=True, highlight=False, soft_wrap=True)


class Steps:
    """What :func:`delayed_progress` yields: name the current step, advance a counted one."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._task: Any = None

    def step(self, description: str, total: int | None = None) -> None:
        """Start a step (``total`` None: no known length, the bar pulses)."""
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.update(self._task, visible=False)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, amount: int = 1) -> None:
        """Count ``amount`` units of the current step done."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, amount)


@contextlib.contextmanager
def delayed_progress(
    console: object, delay: float = PROGRESS_DELAY, environ: Mapping[str, str] | None = None
) -> Iterator[Steps]:
    """A transient progress bar on standard error, shown only once ``delay`` seconds have
    passed; nothing at all without ``console`` (see :func:`rich_console`) or when standard
    error is no terminal."""
    import sys

    if console is None or not is_fancy_terminal(sys.stderr, environ):
        yield Steps(None)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr, force_terminal=True),
        transient=True,
    )
    lock = threading.Lock()
    state = {"started": False, "done": False}

    def start() -> None:
        with lock:
            if not state["done"]:
                progress.start()
                state["started"] = True

    timer = threading.Timer(delay, start)
    timer.daemon = True
    timer.start()
    try:
        yield Steps(progress)
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["started"]:
                progress.stop()


def write_rich_table(
    console: Any,
    headers: Sequence[str],
    body: Sequence[Sequence[str]],
    *,
    right: Sequence[int] = (),
    delegated: Sequence[bool] = (),
) -> None:
    """The aligned table of :func:`delegate_lens._texttable.align_columns` with colour:
    bold header, dim rule and block names, delegated rows' event and backend in green."""
    from rich.text import Text

    headers = [escape_controls(cell) for cell in headers]
    body = [[escape_controls(cell) for cell in row] for row in body]
    widths = [max(len(row[i]) for row in [headers, *body]) for i in range(len(headers))]
    header = "  ".join(
        cell.rjust(width) if i in right else cell.ljust(width)
        for i, (cell, width) in enumerate(zip(headers, widths))
    )
    console.print(Text(header.rstrip(), style="bold"))
    console.print(Text("  ".join("-" * w for w in widths), style="dim"))
    for index, row in enumerate(body):
        text = Text()
        for i, (cell, width) in enumerate(zip(row, widths)):
            padded = cell.rjust(width) if i in right else cell.ljust(width)
            style = ""
            if i == 0:
                style = "dim"
            elif index < len(delegated) and delegated[index] and i in (1, len(row) - 1):
                style = "green"
            elif i == 3:  # p50
                style = "bold"
            if i:
                text.append("  ")
            text.append(padded, style=style)
        text.rstrip()
        console.print(text)
