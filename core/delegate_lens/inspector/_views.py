"""The Inspector's views of where the time went: per op type, per module, the attribution
itself, memory, and the reference's ``get_op_list`` / ``find_total_for_module``.

:class:`TimeViews` is a base of :class:`~delegate_lens.inspector.Inspector`; its methods
read the Inspector's tables (``_tables``), event blocks and ETDump.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from delegate_lens.errors import UsageError
from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.inspector._events import Event, EventBlock

if TYPE_CHECKING:
    from delegate_lens.etdump import ETDump
    from delegate_lens.inspector._attribution import BlockAttribution
    from delegate_lens.inspector._memory import AllocatorUsage
    from delegate_lens.inspector._modules import ModuleSummary
    from delegate_lens.inspector._optypes import OpTypeSummary
    from delegate_lens.inspector._tables import BlockTable


class TimeViews:
    """Summaries over an Inspector's tables (see :mod:`delegate_lens.inspector._views`)."""

    _tables: list[BlockTable]
    _attribution: list[BlockAttribution] | None

    @property
    def event_blocks(self) -> list[EventBlock]:
        raise NotImplementedError

    @property
    def etdump(self) -> ETDump:
        raise NotImplementedError

    def find_total_for_module(self, module_name: str) -> float:
        """Sum of the average times of the rows whose module hierarchy names a module
        containing ``module_name`` (in its key or path); ``OPERATOR_CALL`` rows are skipped
        so nothing counts twice."""
        total = 0.0
        for table in self._tables:
            for j, link in enumerate(table.links):
                if table.keys[j].name == "OPERATOR_CALL" or not table.block.has_perf[j]:
                    continue
                if _names_module(link.module_hierarchy, module_name):
                    total += float(table.stats[3, j])
        return total

    def get_op_list(
        self, event_block: str | EventBlock, show_delegated_ops: bool | None = True
    ) -> dict[str, list[Event]]:
        """Op type -> the rows of ``event_block`` (a block or a block name) running it.

        ``OPERATOR_CALL`` and framework rows are left out (they repeat their kernel's
        row); with ``show_delegated_ops=False`` delegate rows (``DELEGATE_CALL`` and the
        events a delegate logged) are left out too.
        """
        if isinstance(event_block, EventBlock):
            blocks = [event_block]
        else:
            blocks = [b for b in self.event_blocks if b.name == event_block]
            if not blocks:
                names = sorted({b.name for b in self.event_blocks})
                raise UsageError(f"no event block named {event_block!r} (blocks: {names})")
        out: dict[str, list[Event]] = {}
        for block in blocks:
            for event in block.events:
                if event.name == "OPERATOR_CALL" or event.name in FRAMEWORK_EVENTS:
                    continue
                delegated = event.is_delegated_op or event.name == "DELEGATE_CALL"
                if delegated and not show_delegated_ops:
                    continue
                for op_type in dict.fromkeys(event.op_types):
                    out.setdefault(op_type, []).append(event)
        return out

    def get_attribution(self) -> list[BlockAttribution]:
        """Where the time of every block went: one
        :class:`~delegate_lens.inspector._attribution.BlockAttribution` per block, in block
        order. Every view of time (op types, the report, overlays, ``compare``) is built
        from it; see :mod:`delegate_lens.inspector._attribution` for the rules."""
        if self._attribution is None:
            from delegate_lens.inspector._attribution import attribute

            self._attribution = attribute(self._tables)
        return self._attribution

    def _tables_of(self, event_block: str | EventBlock | None) -> list[int]:
        if event_block is None:
            return list(range(len(self._tables)))
        if isinstance(event_block, EventBlock):
            found = [i for i, b in enumerate(self.event_blocks) if b is event_block]
            if not found:
                raise UsageError(f"event block {event_block.name!r} is not one of this Inspector's")
            return found
        found = [i for i, t in enumerate(self._tables) if t.name == event_block]
        if not found:
            names = sorted({t.name for t in self._tables})
            raise UsageError(f"no event block named {event_block!r} (blocks: {names})")
        return found

    def get_op_type_summary(
        self, event_block: str | EventBlock | None = None
    ) -> list[OpTypeSummary]:
        """Per op type: events per run, time per run, total time, share and p50 (target
        time scale), for one block (a block or a block name) or every block, from
        :meth:`get_attribution`; see :mod:`delegate_lens.inspector._optypes`."""
        from delegate_lens.inspector._optypes import op_type_rows

        attribution = self.get_attribution()
        out: list[OpTypeSummary] = []
        for i in self._tables_of(event_block):
            out.extend(op_type_rows(attribution[i]))
        return out

    def get_module_summary(
        self,
        event_block: str | EventBlock | None = None,
        depth: int | None = None,
        by: str = "path",
    ) -> list[ModuleSummary]:
        """Time rolled up by module hierarchy (per layer at ``depth=1``, per submodule at
        2, ...; ``by="type"`` per module class: attention against MLP), for one block or
        every block, from :meth:`get_attribution`; see
        :mod:`delegate_lens.inspector._modules`. The reference offers only
        :meth:`find_total_for_module`, one name at a time."""
        from delegate_lens.inspector._modules import module_rows

        attribution = self.get_attribution()
        out: list[ModuleSummary] = []
        for i in self._tables_of(event_block):
            if attribution[i].charges:
                out.extend(module_rows(self._tables[i], attribution[i], depth=depth, by=by))
        return out

    def get_memory_usage(self) -> list[AllocatorUsage]:
        """Bytes allocated per allocator per run, from the ETDump's allocation events
        (empty when it has none); see :mod:`delegate_lens.inspector._memory`."""
        from delegate_lens.inspector._memory import memory_usage

        decoded = getattr(self, "_decoded", None)  # no run objects for a decoded file
        return memory_usage(self.etdump if decoded is None else decoded)


def _names_module(hierarchy: Mapping[str, Mapping[str, object] | None], module_name: str) -> bool:
    for frames in hierarchy.values():
        if not frames:
            continue
        for key, value in frames.items():
            path = value[0] if isinstance(value, (tuple, list)) and value else ""
            if module_name in key or (path and module_name in path):
                return True
    return False
