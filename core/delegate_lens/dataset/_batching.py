"""Cutting the files ``collect`` finds into batches (one part each), as they are found.

One worker takes ``batch_bytes`` (or ``MAX_BATCH_FILES`` files) at a time. With several
workers, batches are cut when a worker is about to need one, not when files are found:

1. the first batches are small (``STREAM_FIRST_BYTES``) and cut from the first files
   found, so the workers start within milliseconds: two per worker;
2. then :class:`Batcher` finds ``MAX_BATCH_FILES`` more (up to ``LOOKAHEAD_FILES``
   ahead) before each cut, and each batch takes a quarter per worker of what is ahead
   (never under ``MIN_BATCH_BYTES``), so batches shrink towards the end and no worker
   waits long for another to finish a big one.

Fewer, bigger batches matter too: each is one part, and a part has a cost of its own (a
few milliseconds: a Parquet file, its table, its manifest entry).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from delegate_lens.dataset._sources import Source

MAX_BATCH_FILES = 2000
STREAM_FIRST_BYTES = 4 << 20  # each worker's first batch
MIN_BATCH_BYTES = 4 << 20  # the smallest batch of several files, at the end
LOOKAHEAD_FILES = 100_000  # files found ahead of the batches, to size them


class _Ahead:
    """Sources found ahead of the batches."""

    def __init__(self, sources: Iterator[Source]) -> None:
        self._sources = sources
        self._ahead: deque[Source] = deque()
        self.pending = 0  # bytes in ``_ahead``
        self.done = False

    def __len__(self) -> int:
        return len(self._ahead)

    def fill(self, files: int, enough: int | None = None) -> None:
        """Find sources until ``files`` are ahead (or ``enough`` bytes), or all are found."""
        while not self.done and len(self._ahead) < files:
            if enough is not None and self.pending > enough:
                return
            source = next(self._sources, None)
            if source is None:
                self.done = True
            else:
                self._ahead.append(source)
                self.pending += source.size

    def cut(self, limit: int) -> list[Source]:
        """The next batch: sources ahead up to ``limit`` bytes and ``MAX_BATCH_FILES``
        files (at least one, when any)."""
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


class Batcher:
    """The batches of ``sources``, cut as they are asked for (an iterator; see the
    module's text for several workers)."""

    def __init__(self, sources: Iterable[Source], batch_bytes: int, workers: int = 1) -> None:
        self._ahead = _Ahead(iter(sources))
        self._batch_bytes = batch_bytes
        self._workers = workers
        self._quick = 2 * workers if workers > 1 else 0  # quick batches still to cut

    def __iter__(self) -> Batcher:
        return self

    def __next__(self) -> list[Source]:
        ahead = self._ahead
        if self._workers <= 1:
            ahead.fill(MAX_BATCH_FILES, self._batch_bytes)
            limit = self._batch_bytes
        elif self._quick:  # from the first files found: every worker starts at once
            self._quick -= 1
            limit = min(self._batch_bytes, STREAM_FIRST_BYTES)
            ahead.fill(MAX_BATCH_FILES, limit)
        else:  # a step further at a time: the workers collect meanwhile
            ahead.fill(min(LOOKAHEAD_FILES, len(ahead) + MAX_BATCH_FILES))
            share = ahead.pending // (4 * self._workers)  # batches shrink towards the end
            limit = min(self._batch_bytes, max(MIN_BATCH_BYTES, share))
        batch = ahead.cut(limit)
        if not batch:
            raise StopIteration
        return batch


def iter_batches(sources: Iterable[Source], batch_bytes: int, workers: int = 1) -> Batcher:
    """Consecutive groups of ``sources`` (all of them, in order) of up to ``batch_bytes``
    and ``MAX_BATCH_FILES`` files, cut as they are asked for (see the module's text for
    several workers). A file bigger than a batch goes alone."""
    return Batcher(sources, batch_bytes, workers)
