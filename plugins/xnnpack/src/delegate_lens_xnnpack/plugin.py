"""The ``xnnpack`` plugin: XNNPACK's Debug Handle Maps, recovered from its delegate blobs.

ExecuTorch's XNNPACK backend logs one profiling event per XNNPACK operator but returns an
empty Debug Handle Map, so its events reach the Inspector unlinked. Its delegate blob (an
XNNGraph FlatBuffer behind a small header) keeps each node's debug handle; given the
program (``--program MODEL.pte``), this plugin answers ``dl_recover_delegate_map`` for
``XnnpackBackend`` by placing each operator event on the node that made it
(:mod:`delegate_lens_xnnpack.align`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from delegate_lens import hookimpl
from delegate_lens.backend import RecoveredDelegateMap
from delegate_lens.errors import ProgramFormatError
from delegate_lens_xnnpack.align import align
from delegate_lens_xnnpack.graph import XNode, graph_buffer, read_xnodes

ORIGIN = "XNNPACK delegate blob"
BACKEND_ID = "XnnpackBackend"
"""The backend id ExecuTorch's XNNPACK delegate is stored under in a program."""

_CACHE: dict[bytes, list[XNode]] = {}
_CACHE_LIMIT = 64


def _nodes(processed: memoryview) -> list[XNode]:
    """The blob's nodes, kept by the bytes of its graph (each delegate is read once)."""
    key = bytes(graph_buffer(processed, ORIGIN).data)
    found = _CACHE.get(key)
    if found is None:
        found = read_xnodes(key, ORIGIN)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = found
    return found


@hookimpl
def dl_recover_delegate_map(
    backend_id: str,
    processed: memoryview,
    identifiers: Sequence[int | str],
    handles: Sequence[int] | None,
    graph: object,
) -> RecoveredDelegateMap | None:
    """The map of an XNNPACK delegate call (None for other backends). A blob that is not
    XNNPACK's leaves every identifier unlinked, saying why."""
    if backend_id != BACKEND_ID:
        return None
    try:
        nodes = _nodes(processed)
    except ProgramFormatError as exc:
        return RecoveredDelegateMap({}, {i: f"cannot read the blob: {exc}" for i in identifiers})
    found = align(identifiers, nodes, handles, graph)
    return RecoveredDelegateMap(found.handles, found.unlinked)


def recovered(
    processed: bytes | memoryview,
    identifiers: Sequence[int | str],
    handles: Sequence[int] | None = None,
    graph: object = None,
) -> Mapping[int | str, tuple[int, ...]]:
    """The linked part of :func:`dl_recover_delegate_map` for an XNNPACK blob."""
    result = dl_recover_delegate_map(BACKEND_ID, memoryview(processed), identifiers, handles, graph)
    return {} if result is None else dict(result.handles)
