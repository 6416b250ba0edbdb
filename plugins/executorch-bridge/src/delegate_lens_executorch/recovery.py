"""The conformance suite with maps recovered from the program: for a backend whose
preprocess gives no Debug Handle Map (XNNPACK), a ``dl_recover_delegate_map`` plugin (such
as ``delegate-lens-xnnpack``) recovers each delegate call's map from the lowered program, and
the map rules (``no-orphan-events``, ``delegated-nodes-covered``, ``handles-in-partition``)
are checked on it. Without such a plugin nothing changes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delegate_lens.backend import RecoveredMap

__all__ = ["recovered_maps", "with_recovered"]


def recovered_maps(
    program: bytes, etdump: bytes, record: Path, backend_id: str
) -> list[RecoveredMap]:
    """The maps recovered for ``backend_id``'s delegate calls of ``forward``, by
    instruction; ``[]`` when no plugin recovers them."""
    from delegate_lens.errors import DelegateLensError
    from delegate_lens.inspector import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            inspector = Inspector(etdump_data=etdump, etrecord=str(record), program=program)
        except DelegateLensError:  # reported by the rules on those files themselves
            return []
        found = inspector.recovered_maps
    return [m for m in found if m.method == "forward" and m.backend_id == backend_id]


def with_recovered(
    dmap: Mapping[int, Mapping[str, object]],
    recorder: SimpleNamespace,
    maps: list[RecoveredMap],
) -> dict[int, Mapping[str, object]]:
    """``dmap`` with the recovered maps standing in for the calls that have none, and the
    recorder's partitions (in program order) given them too."""
    merged = dict(dmap)
    for found in maps:
        entry = merged.get(found.instruction_id)
        known = entry.get("delegate_map") if entry is not None else None
        if not known:
            merged[found.instruction_id] = {
                "name": found.backend_id,
                "delegate_map": {k: list(v) for k, v in found.handles.items()},
            }
    partitions = recorder.preprocessed
    if len(partitions) == len(maps):
        for k, (found, (program, result)) in enumerate(zip(maps, partitions)):
            if not getattr(result, "debug_handle_map", None):
                partitions[k] = (program, SimpleNamespace(debug_handle_map=dict(found.handles)))
    return merged
