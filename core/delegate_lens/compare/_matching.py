"""Match the rows of two Inspectors by identity, not by position.

Blocks are matched by name and occurrence (the second ``"Execute"`` block with the second).
Inside a block pair, rows are matched in rounds, strictest first; a row matched in one
round is not offered to the next:

1. ``delegate`` — delegate-logged rows: delegate backend, the instruction of the delegate
   call and the delegate debug identifier;
2. ``instruction`` — operator rows: instruction id, name and debug handles;
3. ``name`` — any row left: name and occurrence (the n-th row of a name with the n-th).

Rows left after the last round exist on one side only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence

import attrs

from delegate_lens.etdump import FRAMEWORK_EVENTS
from delegate_lens.inspector import BlockTable


@attrs.frozen
class RowRef:
    """A row of one side: table and row index."""

    table: BlockTable
    row: int


@attrs.frozen
class BlockPair:
    """Two tables with the same block name and occurrence (one may be missing)."""

    name: str
    base: BlockTable | None
    new: BlockTable | None


def match_blocks(base: Sequence[BlockTable], new: Sequence[BlockTable]) -> list[BlockPair]:
    """Pair tables by block name and occurrence; new-side order, base-only blocks last."""

    def keyed(tables: Sequence[BlockTable]) -> dict[tuple[str, int], BlockTable]:
        seen: dict[str, int] = defaultdict(int)
        out = {}
        for table in tables:
            out[(table.name, seen[table.name])] = table
            seen[table.name] += 1
        return out

    base_keyed = keyed(base)
    new_keyed = keyed(new)
    pairs = [BlockPair(key[0], base_keyed.get(key), table) for key, table in new_keyed.items()]
    pairs += [
        BlockPair(key[0], table, None) for key, table in base_keyed.items() if key not in new_keyed
    ]
    return pairs


def _handles(table: BlockTable, row: int) -> Hashable:
    handles = table.links[row].debug_handles
    return tuple(handles) if isinstance(handles, list) else handles


def _delegate_key(table: BlockTable, row: int) -> Hashable | None:
    key = table.keys[row]
    if key.identifier is None:
        return None
    return (table.links[row].delegate_backend_name, key.instruction_id, key.identifier)


def _instruction_key(table: BlockTable, row: int) -> Hashable | None:
    key = table.keys[row]
    if key.identifier is not None or key.instruction_id < 0 or key.name in FRAMEWORK_EVENTS:
        return None
    return (key.name, key.instruction_id, _handles(table, row))


def _name_key(table: BlockTable, row: int) -> Hashable | None:
    return table.keys[row].name


ROUNDS: list[tuple[str, Callable[[BlockTable, int], Hashable | None]]] = [
    ("delegate", _delegate_key),
    ("instruction", _instruction_key),
    ("name", _name_key),
]


def _perf_rows(table: BlockTable | None) -> list[int]:
    if table is None:
        return []
    return [int(i) for i in table.block.has_perf.nonzero()[0]]


def match_rows(pair: BlockPair) -> tuple[list[tuple[int, int, str]], list[int], list[int]]:
    """``([(base row, new row, match kind)], base-only rows, new-only rows)`` of a block
    pair; only rows with timings take part. Matches come in new-side row order."""
    base_left = _perf_rows(pair.base)
    new_left = _perf_rows(pair.new)
    matches: list[tuple[int, int, str]] = []
    if pair.base is not None and pair.new is not None:
        for kind, key_of in ROUNDS:
            if not base_left or not new_left:
                break
            by_key: dict[Hashable, list[int]] = defaultdict(list)
            for row in base_left:
                key = key_of(pair.base, row)
                if key is not None:
                    by_key[key].append(row)
            taken_base: set[int] = set()
            taken_new: set[int] = set()
            used: dict[Hashable, int] = defaultdict(int)
            for row in new_left:
                key = key_of(pair.new, row)
                if key is None:
                    continue
                candidates = by_key.get(key)
                nth = used[key]
                if candidates is None or nth >= len(candidates):
                    continue
                used[key] += 1
                matches.append((candidates[nth], row, kind))
                taken_base.add(candidates[nth])
                taken_new.add(row)
            base_left = [row for row in base_left if row not in taken_base]
            new_left = [row for row in new_left if row not in taken_new]
    matches.sort(key=lambda match: match[1])
    return matches, base_left, new_left
