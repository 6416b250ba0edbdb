"""``load_etrecord``: what the Inspector and the dataset collector accept as an ETRecord.

A path is read once per process: the ETRecords last read are kept (a few, keyed by the
file's identity, size and modification time, and the reading limits), so that ``compare``
reading one ETRecord for each side, or ``collect`` reading one for every batch, parse it
once.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import overload

from delegate_lens.errors import ArgumentTypeError
from delegate_lens.etrecord._record import ETRecord

_KEPT = 4
_kept: OrderedDict[tuple[object, ...], ETRecord] = OrderedDict()
_lock = threading.Lock()  # compare reads its two sides in two threads: parse once


def forget_etrecords() -> None:
    """Forget the ETRecords kept by :func:`load_etrecord`."""
    _kept.clear()


@overload
def load_etrecord(etrecord: None) -> None: ...


@overload
def load_etrecord(etrecord: ETRecord | str | os.PathLike[str]) -> ETRecord: ...


@overload
def load_etrecord(etrecord: object) -> ETRecord | None: ...


def load_etrecord(etrecord: object) -> ETRecord | None:
    """An :class:`~delegate_lens.etrecord.ETRecord` from ``etrecord``: ``None`` stays
    ``None``, a path is parsed (:func:`~delegate_lens.etrecord.parse_etrecord`) and every
    graph read now, so that a damaged entry is an error here, never missing op types later
    (the same unchanged file again gives the same object), an ETRecord is kept; anything
    else is an :class:`~delegate_lens.errors.ArgumentTypeError` naming its type (a
    ``UsageError`` and a ``TypeError``, as the reference raises)."""
    if etrecord is None:
        return None
    if isinstance(etrecord, (str, os.PathLike)):
        from delegate_lens.etrecord._entries import read_limits
        from delegate_lens.etrecord._record import parse_etrecord  # at call time: tests count

        try:
            info = os.stat(etrecord)
        except OSError:
            return parse_etrecord(etrecord)  # raises the error naming the file
        key = (
            os.fspath(etrecord),
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            read_limits(),
        )
        with _lock:
            record = _kept.get(key)
            if record is None:
                record = parse_etrecord(etrecord)
                record.validate()  # a named file is read whole or refused: no silent gaps
                _kept[key] = record
                while len(_kept) > _KEPT:
                    _kept.popitem(last=False)
                return record
            _kept.move_to_end(key)
        from delegate_lens.fileio import note_input

        note_input(etrecord)
        return record
    if isinstance(etrecord, ETRecord):
        return etrecord
    raise ArgumentTypeError(
        f"etrecord must be an ETRecord or the path of one, not {type(etrecord).__name__}"
    )
