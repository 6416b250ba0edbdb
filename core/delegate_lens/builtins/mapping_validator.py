"""Built-in ``dl_delegate_mapping`` validator: a map may only name handles of its partition.

Registered by the plugin host as a built-in. Imports no torch: the partition's
``ExportedProgram`` is read through ``.graph_module.graph.nodes`` and ``node.meta``.
"""

from __future__ import annotations

from collections.abc import Mapping

from delegate_lens.backend import INT_IDENTIFIER_MAX, partition_handles
from delegate_lens.errors import MappingError
from delegate_lens.hookspecs import hookimpl

__all__ = ["dl_delegate_mapping"]


@hookimpl
def dl_delegate_mapping(backend_id: str, edge_program: object, debug_handle_map: object) -> None:
    """Reject a map naming a handle that no node of the partition carries, or two
    identifiers with the same text (``0`` and ``"0"``), which the ETRecord cannot tell apart."""
    if debug_handle_map is None:
        return
    if not isinstance(debug_handle_map, Mapping):
        raise MappingError(
            f"backend {backend_id!r}: debug_handle_map must be a mapping "
            f"{{identifier: handles}}, not {type(debug_handle_map).__name__}"
        )
    known = partition_handles(edge_program)
    texts: dict[str, object] = {}
    for identifier, handles in debug_handle_map.items():
        if isinstance(identifier, bool) or not isinstance(identifier, (int, str)):
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifier {identifier!r} is not "
                "an int or a str"
            )
        if identifier == "":
            raise MappingError(f"backend {backend_id!r}: delegate debug identifier '' is empty")
        if isinstance(identifier, int) and identifier < 0:
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifier {identifier} is negative"
            )
        if isinstance(identifier, int) and identifier > INT_IDENTIFIER_MAX:
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifier {identifier} does not fit "
                "the ETDump's int32 delegate_debug_id_int"
            )
        text = identifier if isinstance(identifier, str) else str(identifier)
        if text in texts:
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifiers {texts[text]!r} and "
                f"{identifier!r} are the same identifier once written as text (in the "
                "ETRecord and when runtime events are matched); use one of them"
            )
        texts[text] = identifier
        values = [handles] if isinstance(handles, int) else handles
        if not isinstance(values, (list, tuple, set, frozenset)) or not values:
            raise MappingError(
                f"backend {backend_id!r}: delegate debug identifier {identifier!r} maps to "
                f"{handles!r}, expected a non-empty sequence of debug handles"
            )
        for handle in values:
            if isinstance(handle, bool) or not isinstance(handle, int):
                raise MappingError(
                    f"backend {backend_id!r}: delegate debug identifier {identifier!r}: "
                    f"debug handle {handle!r} is not an int"
                )
            if handle not in known:
                raise MappingError(
                    f"backend {backend_id!r}: delegate debug identifier {identifier!r} names "
                    f"debug handle {handle!r}, which is not a handle of a node in the "
                    f"partition (its handles: {sorted(known)})"
                )
