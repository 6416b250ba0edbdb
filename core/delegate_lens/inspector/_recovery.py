"""Debug Handle Maps recovered from the program, for delegates the ETRecord leaves unmapped.

Given a program (``Inspector(..., program=...)``), the :class:`Linker
<delegate_lens.inspector._linking.Linker>` asks :class:`Recovery` for every delegate call
whose ETRecord entry has no identifiers (or that the ETRecord lacks) and that logged
delegate events: the ``dl_recover_delegate_map`` plugins read the call's processed bytes
and give a map, which then links the call's rows exactly as an ETRecord map would (a
non-empty ETRecord map always wins). Every identifier the run logged that the map does not
link gets a reason, said once per delegate call in an :class:`InspectorWarning`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delegate_lens.backend import RecoveredDelegateMap, RecoveredMap
from delegate_lens.errors import DelegateLensError, InspectorWarning, PluginWarning, UsageError
from delegate_lens.etrecord import DelegateEntry

if TYPE_CHECKING:
    from delegate_lens.program import ProgramDelegates

ProgramSource = str | os.PathLike[str] | bytes | bytearray | memoryview
"""What ``program=`` takes: the path or bytes of a ``.pte`` (or ``.dlp``), or the
:class:`~delegate_lens.program.ProgramDelegates` already read."""

NOT_PLACED = "the recovery plugin did not place it"
_MAX_LISTED = 6


def read_program(program: object) -> ProgramDelegates:
    """The delegates of ``program`` (a path, bytes, or already read)."""
    from delegate_lens.program import ProgramDelegates, read_delegates

    if isinstance(program, ProgramDelegates):
        return program
    if isinstance(program, (str, os.PathLike, bytes, bytearray, memoryview)):
        return read_delegates(program)
    raise UsageError(
        f"program must be the path or bytes of a .pte (or a .dlp), not {type(program).__name__}"
    )


def _as_result(answer: object, plugin: str) -> RecoveredDelegateMap | None:
    if isinstance(answer, RecoveredDelegateMap):
        return answer
    try:
        if isinstance(answer, Mapping):
            return RecoveredDelegateMap(answer)
        raise TypeError(f"returned {type(answer).__name__}, not a map")
    except (DelegateLensError, TypeError) as exc:
        warnings.warn(
            f"plugin {plugin!r} (dl_recover_delegate_map): {exc}; its map is not used",
            PluginWarning,
            stacklevel=4,
        )
        return None


class Recovery:
    """Recovered maps of one program, asked for once per delegate call and identifiers."""

    def __init__(self, program: ProgramDelegates) -> None:
        self.program = program
        self.maps: dict[tuple[str, int], RecoveredMap] = {}
        self._asked: dict[tuple[str, int], tuple[object, ...]] = {}
        self._said: set[tuple[str, int]] = set()

    def entry(
        self,
        method: str,
        instruction_id: int,
        identifiers: Sequence[int | str],
        handles: Sequence[int] | None,
        graph: Any,
    ) -> DelegateEntry | None:
        """The recovered entry of a delegate call (None: no delegate there, or no plugin
        recovered a map), asked again only when ``identifiers`` grew."""
        key = (method, instruction_id)
        wanted = tuple(identifiers)
        if self._asked.get(key) == wanted:
            found = self.maps.get(key)
            return None if found is None else _entry(found)
        delegate = self.program.at(method, instruction_id)
        if delegate is None:
            return None
        self._asked[key] = wanted
        from delegate_lens import hooks

        where = f"{self.program.origin}: delegate of instruction {instruction_id} of {method!r}"
        answer = hooks.recover_delegate_map(
            delegate.backend_id,
            delegate.processed,
            list(wanted),
            None if handles is None else list(handles),
            graph,
            delegate.compile_specs,
            self.program.named_data,
            where=where,
        )
        if answer is None:
            self.maps.pop(key, None)
            return None
        plugin, raw = answer
        result = _as_result(raw, plugin)
        if result is None:
            self.maps.pop(key, None)
            return None
        linked = {i: h for i, h in result.handles.items() if i in wanted or str(i) in wanted}
        unlinked = {
            i: result.unlinked.get(i, NOT_PLACED) for i in wanted if i not in result.handles
        }
        found = RecoveredMap(
            method=method,
            instruction_id=instruction_id,
            backend_id=delegate.backend_id,
            plugin=plugin,
            handles=linked,
            unlinked=unlinked,
        )
        self.maps[key] = found
        self._said.discard(key)
        return _entry(found)

    def say_unlinked(self, method: str, instruction_ids: Sequence[int]) -> None:
        """Warn, once per delegate call, about the identifiers its map leaves unlinked."""
        for iid in instruction_ids:
            key = (method, iid)
            found = self.maps.get(key)
            if found is None or not found.unlinked or key in self._said:
                continue
            self._said.add(key)
            items = list(found.unlinked.items())
            text = "; ".join(f"{ident!r}: {why}" for ident, why in items[:_MAX_LISTED])
            if len(items) > _MAX_LISTED:
                text += f"; and {len(items) - _MAX_LISTED} more"
            warnings.warn(
                f"{found.backend_id} map of instruction {iid} of {method!r}, recovered by "
                f"plugin {found.plugin!r}: {len(items)} of "
                f"{len(items) + len(found.handles)} event(s) left unlinked ({text})",
                InspectorWarning,
                stacklevel=5,
            )


def _entry(found: RecoveredMap) -> DelegateEntry:
    return DelegateEntry(
        name=found.backend_id, identifiers={str(k): tuple(v) for k, v in found.handles.items()}
    )
