"""Where the ``chrome-trace`` text goes (:mod:`delegate_lens.exporters._chrome_trace`):
a :class:`Sink` runs the jobs that make batches of text in threads of its own and writes
the batches in order; :class:`Buffers` lends the C lines their text buffers, reused once
a batch is written."""

from __future__ import annotations

import codecs
import concurrent.futures
import contextlib
import functools
import io
import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import IO, cast


class Buffers:
    """Text buffers of the compiled lines, reused: :meth:`take` one that is free (or None:
    the lines make a new one), :meth:`views` of the lines made in it. The buffers a batch
    took or made are held by it and free again when the writer, done with the batch,
    hands them back with :meth:`give`; one taken but too small (the lines made a new
    one instead) is let go."""

    def __init__(self, pool: queue.SimpleQueue[bytearray]) -> None:
        self._pool = pool
        self.held: list[bytearray] = []  # the buffers of this batch
        self._taken: bytearray | None = None  # the last one taken, not yet used

    def take(self) -> bytearray | None:
        try:
            lines = self._pool.get_nowait()
        except queue.Empty:
            return None
        self.held.append(lines)
        self._taken = lines
        return lines

    def views(self, lines: bytearray, ends: list[int]) -> list[memoryview]:
        """Each run's lines in ``lines`` (``ends``: where each ends), held until written."""
        if lines is not self._taken:  # made new: the one taken, if any, was too small
            if self._taken is not None:
                self.held.remove(self._taken)
            self.held.append(lines)
        self._taken = None
        view = memoryview(lines)
        return [view[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    def give(self) -> None:
        """The batch is written: its buffers may be written over."""
        for lines in self.held:
            self._pool.put(lines)
        self.held = []


_IOV_MAX = 1024  # pieces per writev (the least POSIX lets a system take)


def _write_all(fd: int, pieces: Sequence[bytes | memoryview]) -> None:
    """Every byte of ``pieces`` to ``fd``, a few hundred pieces per system call."""
    views = [memoryview(p) for p in pieces if len(p)]
    at = 0
    while at < len(views):
        done = os.writev(fd, views[at : at + _IOV_MAX])
        while at < len(views) and done >= len(views[at]):
            done -= len(views[at])
            at += 1
        if done:  # a piece written in part: the rest of it next
            views[at] = views[at][done:]


Job = Callable[[Buffers], Sequence[bytes | memoryview]]
"""Makes a batch of pieces of text (its C lines in buffers of the :class:`Buffers`)."""

_MAKERS = 2  # threads making batches (they give up the GIL in the C lines)
_AHEAD = 4  # batches handed in and not yet written, at most


class Sink:
    """Where the trace's pieces of ASCII text go: straight into the binary file of a UTF-8
    text stream (no newline translation on this OS), else decoded into the text stream.

    Work is handed in as jobs, each making a batch of pieces. For a binary file,
    :data:`_MAKERS` threads run the jobs (numpy, and C lines that run without the GIL: on
    every core), and one more thread writes the batches in the order the jobs came (with
    ``writev`` when the file has a descriptor), then frees their buffers. At most
    :data:`_AHEAD` batches wait to be written: the caller waits when it is that far ahead.
    Otherwise (a string stream, another encoding) each job runs and is written as it is
    handed in. :meth:`close` waits for the last and raises the first error of any job or
    write."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._write: Callable[[Sequence[bytes | memoryview]], object] | None = None
        self._pool: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._makers: concurrent.futures.ThreadPoolExecutor | None = None
        self._made: queue.Queue[_Made | None] | None = None
        self._writer: threading.Thread | None = None
        self._error: BaseException | None = None
        buffer = getattr(stream, "buffer", None)
        if (
            isinstance(stream, io.TextIOWrapper)
            and buffer is not None
            and codecs.lookup(stream.encoding).name in ("utf-8", "ascii")
            and os.linesep == "\n"
        ):
            stream.flush()
            self._write = cast(
                "Callable[[Sequence[bytes | memoryview]], object]", buffer.writelines
            )
            with contextlib.suppress(OSError, ValueError, AttributeError):
                fd = buffer.fileno()
                buffer.flush()  # nothing waits in the buffer: the bytes go to the file itself
                self._write = functools.partial(_write_all, fd)

    def submit(self, job: Job) -> None:
        """Make a batch with ``job`` and write it, after the batches handed in before."""
        if self._write is None:
            buffers = Buffers(self._pool)
            self._stream.write(b"".join(job(buffers)).decode("ascii"))
            buffers.give()
            return
        if self._error is not None:  # a job or write failed: stop early, close() raises it
            self.close()
        if self._made is None:
            self._makers = concurrent.futures.ThreadPoolExecutor(_MAKERS, "chrome-trace")
            self._made = queue.Queue(maxsize=_AHEAD)
            self._writer = threading.Thread(target=self._run, args=(self._made,), daemon=True)
            self._writer.start()
        assert self._makers is not None
        buffers = Buffers(self._pool)
        self._made.put((self._makers.submit(job, buffers), buffers))

    def _run(self, made: queue.Queue[_Made | None]) -> None:
        assert self._write is not None
        while (batch := made.get()) is not None:
            future, buffers = batch
            if self._error is not None:  # drain: the caller learns of it at its next call
                future.cancel()
                continue
            try:
                self._write(future.result())
                buffers.give()
            except BaseException as exc:  # raised in the caller's thread by close()
                self._error = exc

    def abandon(self) -> None:
        """Wait for the jobs handed in, dropping their error (another is on its way)."""
        with contextlib.suppress(BaseException):
            self.close()

    def close(self) -> None:
        """Wait for the jobs handed in; raise the first error of any."""
        if self._writer is not None and self._made is not None:
            self._made.put(None)
            self._writer.join()
            self._writer = None
            self._made = None
        if self._makers is not None:
            self._makers.shutdown()
            self._makers = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


_Made = tuple["concurrent.futures.Future[Sequence[bytes | memoryview]]", Buffers]
