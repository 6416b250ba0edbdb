"""``load_etrecord``: what the Inspector and the dataset collector accept as an ETRecord."""

from __future__ import annotations

import os
from typing import Any

from delegate_lens.errors import UsageError

__all__ = ["load_etrecord"]


def load_etrecord(etrecord: Any) -> Any:
    """An :class:`~delegate_lens.etrecord.ETRecord` from ``etrecord``: ``None`` stays
    ``None``, a path is parsed (:func:`~delegate_lens.etrecord.parse_etrecord`), an
    ETRecord (or any object with ``debug_handle_map`` and ``graph``) is kept; anything else
    is a :class:`~delegate_lens.errors.UsageError` naming its type."""
    if etrecord is None:
        return None
    if isinstance(etrecord, (str, os.PathLike)):
        from delegate_lens.etrecord.record import parse_etrecord

        return parse_etrecord(etrecord)
    if hasattr(etrecord, "debug_handle_map") and hasattr(etrecord, "graph"):
        return etrecord
    raise UsageError(
        f"etrecord must be an ETRecord or the path of one, not {type(etrecord).__name__}"
    )
