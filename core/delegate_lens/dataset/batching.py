"""Cutting the files ``collect`` finds into batches (one part each), as they are found.

One worker takes ``batch_bytes`` (or ``MAX_BATCH_FILES`` files) at a time. With several
workers, batches are cut when a worker is about to need one, not when files are found:

1. each worker's first batch is small (``STREAM_FIRST_BYTES``) and found at once, so every
   worker starts within milliseconds;
2. then a thread finds the rest while the workers collect (finding is mostly system calls,
   which let other threads run), and each next batch takes a quarter per worker of all
   found so far;
3. once every file is found, each batch takes half per worker of what is left (never under
   ``MIN_BATCH_BYTES``): batches shrink towards the end, so no worker waits long for
   another to finish a big one.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator

from delegate_lens.dataset.sources import Source

__all__ = [
    "MAX_BATCH_FILES",
    "MIN_BATCH_BYTES",
    "STREAM_FIRST_BYTES",
    "iter_batches",
]

MAX_BATCH_FILES = 2000
STREAM_FIRST_BYTES = 4 << 20  # each worker's first batch
MIN_BATCH_BYTES = 2 << 20  # the smallest batch of several files, at the end
_HANDOFF = 256  # sources the finding thread hands over at a time


class _Ahead:
    """Sources found ahead of the batches: by the caller (:meth:`pull`) until
    :meth:`start`, then by a thread of their own."""

    def __init__(self, sources: Iterator[Source]) -> None:
        self._sources = sources
        self._ahead: deque[Source] = deque()
        self.pending = 0  # bytes in ``_ahead``
        self.found = 0  # bytes found in all
        self.done = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()

    def __len__(self) -> int:
        return len(self._ahead)

    def _add(self, sources: list[Source]) -> None:
        size = sum(s.size for s in sources)
        self._ahead.extend(sources)
        self.pending += size
        self.found += size

    def pull(self) -> bool:
        """Find one more source in this thread (False when there are no more)."""
        source = next(self._sources, None)
        if source is None:
            self.done = True
            return False
        self._add([source])
        return True

    def start(self) -> None:
        """Find the rest in a thread of their own."""
        if not self.done:
            threading.Thread(target=self._find, name="delegate-lens-find", daemon=True).start()

    def _find(self) -> None:
        chunk: list[Source] = []
        try:
            for source in self._sources:
                chunk.append(source)
                if len(chunk) >= _HANDOFF:
                    with self._changed:
                        self._add(chunk)
                        self._changed.notify_all()
                    chunk = []
        except BaseException as exc:  # handed to the batches' consumer
            self._error = exc
        finally:
            with self._changed:
                self._add(chunk)
                self.done = True
                self._changed.notify_all()

    def wait(self, enough: int) -> None:
        """Until ``enough`` bytes are ahead, or every file is found; re-raises what the
        finding thread raised."""
        with self._changed:
            while not self.done and self.pending < enough and len(self._ahead) < MAX_BATCH_FILES:
                self._changed.wait()
        if self._error is not None:
            raise self._error

    def cut(self, limit: int) -> list[Source]:
        """The next batch: sources ahead up to ``limit`` bytes and ``MAX_BATCH_FILES``
        files (at least one, when any)."""
        with self._changed:
            batch: list[Source] = []
            size = 0
            while self._ahead and len(batch) < MAX_BATCH_FILES:
                if batch and size + self._ahead[0].size > limit:
                    break
                source = self._ahead.popleft()
                batch.append(source)
                size += source.size
            self.pending -= size
            return batch


def iter_batches(
    sources: Iterable[Source], batch_bytes: int, workers: int = 1
) -> Iterator[list[Source]]:
    """Consecutive groups of ``sources`` (all of them, in order) of up to ``batch_bytes``
    and ``MAX_BATCH_FILES`` files, cut as they are asked for (see the module's text for
    several workers). A file bigger than a batch goes alone."""
    ahead = _Ahead(iter(sources))
    if workers <= 1:
        while True:
            while not ahead.done and ahead.pending <= batch_bytes and len(ahead) < MAX_BATCH_FILES:
                ahead.pull()
            batch = ahead.cut(batch_bytes)
            if not batch:
                return
            yield batch
    first = min(batch_bytes, STREAM_FIRST_BYTES)
    for _ in range(workers):  # found here: every worker starts at once
        while not ahead.done and ahead.pending <= first and len(ahead) < MAX_BATCH_FILES:
            ahead.pull()
        batch = ahead.cut(first)
        if not batch:
            return
        yield batch
    ahead.start()  # after the first batch was handed over: worker processes exist now
    while True:
        enough = min(batch_bytes, max(STREAM_FIRST_BYTES, ahead.found // (4 * workers)))
        ahead.wait(enough)
        if ahead.done:  # what is left is known: shrink towards the end
            enough = min(batch_bytes, max(MIN_BATCH_BYTES, ahead.pending // (2 * workers)))
        batch = ahead.cut(enough)
        if not batch:
            return
        yield batch
