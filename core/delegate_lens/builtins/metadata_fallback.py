"""Built-in fallback on ``dl_parse_delegate_metadata``: keep the raw bytes.

Registered as ``metadata_fallback`` and asked last (``trylast``): any plugin that parses a
backend's metadata answers first. It returns the very sequence it was given, so a caller
can tell "nobody parsed it" with ``result is metadatas``. Blocked (``-p
no:metadata_fallback``), a delegate row whose metadata no plugin parses shows ``None`` as
its ``delegate_debug_metadatas`` (its ``raw_delegate_debug_metadatas`` keep the bytes).
"""

from __future__ import annotations

from collections.abc import Sequence

from delegate_lens.hookspecs import hookimpl

__all__ = ["dl_parse_delegate_metadata"]


@hookimpl(trylast=True)
def dl_parse_delegate_metadata(metadatas: Sequence[bytes]) -> Sequence[bytes]:
    """The raw bytes, unparsed: the sequence given, itself."""
    return metadatas
