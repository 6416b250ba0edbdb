"""Which graph node a kernel event ran, for the one attribution of time
(:mod:`delegate_lens.inspector._attribution`).

A portable kernel row ``native_call_<op>.out`` is linked, through its instruction's debug
handle, to every node of that handle (a decomposed ``linear`` is a ``permute_copy``, an
``addmm`` and ``view_copy`` nodes, all with the ``linear``'s handle); it ran the node of
its op. Where the handle holds several nodes of that op, program order tells which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from delegate_lens.inspector._tables import BlockTable


def op_name(op_type: str) -> str:
    """The operator's name in an op type: ``aten.addmm.default`` -> ``addmm``."""
    parts = op_type.split(".")
    return parts[-2] if len(parts) >= 2 else op_type


def kernel_op_name(event_name: str) -> str | None:
    """The operator a portable kernel event ran: ``native_call_addmm.out`` -> ``addmm``;
    None for any other event name."""
    if not event_name.startswith("native_call_"):
        return None
    return event_name[len("native_call_") :].split(".")[0] or None


def handle_set(handles: int | list[int] | None) -> frozenset[int]:
    """The debug handles of a link as a set (none: empty)."""
    if handles is None:
        return frozenset()
    return frozenset([handles] if isinstance(handles, int) else handles)


def kernel_positions(table: BlockTable) -> dict[int, tuple[int, ...]]:
    """For every kernel row named after its op, the positions (nodes) in its link it ran.

    The kernel rows of one debug handle ran its nodes in program order (the emitter emits an
    instruction per node, in graph order): they are matched to the nodes of their ops in
    instruction order (:func:`_in_program_order`), which pins a kernel down even when its
    handle holds two nodes of its op and only one of them ran a kernel (a ``view_copy`` of a
    decomposed ``linear`` after its ``addmm``). Otherwise rows of the same handles and op are
    paired with the matching nodes by rank when there are as many rows as nodes; a row still
    left with several nodes gets each of them (which one ran is not known).
    """
    out: dict[int, tuple[int, ...]] = {}
    ranks: dict[tuple[frozenset[int], str], list[int]] = {}
    ordered: dict[tuple[str, ...], list[int]] = {}  # one handle's nodes -> its kernel rows
    for j, key in enumerate(table.keys):
        link = table.links[j]
        op = kernel_op_name(key.name) if key.identifier is None else None
        if op is None or not link.op_types:
            continue
        matching = tuple(k for k, t in enumerate(link.op_types) if op_name(t) == op)
        if not matching:
            continue
        out[j] = matching
        if len(handle_set(link.debug_handles)) == 1 and link.node_names:
            ordered.setdefault(link.node_names, []).append(j)
        if len(matching) > 1:
            ranks.setdefault((handle_set(link.debug_handles), op), []).append(j)
    for rows in ordered.values():
        if any(len(out[j]) > 1 for j in rows):
            _in_program_order(rows, out, table)
    for rows in ranks.values():
        rows = [j for j in rows if len(out[j]) > 1]
        if not rows:
            continue
        rows.sort(key=lambda j: (table.keys[j].instruction_id, j))
        if len(rows) == len(out[rows[0]]) and all(out[j] == out[rows[0]] for j in rows):
            for rank, j in enumerate(rows):
                out[j] = (out[j][rank],)
    return out


def _in_program_order(rows: list[int], out: dict[int, tuple[int, ...]], table: BlockTable) -> None:
    """Narrow the positions of the kernel rows of one handle (``rows``, positions in
    ``out``, nodes in graph order) to those an order-keeping match allows: instruction
    ``i`` < ``i'`` ran nodes ``p`` < ``p'``. A row keeps the positions between the earliest
    and the latest it can take in such a match; no match (one instruction of two ops,
    more instructions than nodes, another order) changes nothing."""
    steps: list[tuple[int, ...]] = []  # candidates per distinct instruction, in order
    step_of: dict[int, int] = {}
    for j in sorted(rows, key=lambda j: (table.keys[j].instruction_id, j)):
        iid = table.keys[j].instruction_id
        if iid in step_of:
            if steps[step_of[iid]] != out[j]:
                return
            continue
        step_of[iid] = len(steps)
        steps.append(out[j])
    earliest: list[int] = []
    last = -1
    for candidates in steps:
        found = next((p for p in candidates if p > last), None)
        if found is None:
            return
        earliest.append(found)
        last = found
    latest = list(earliest)
    bound = len(table.links[rows[0]].node_names)
    for i in range(len(steps) - 1, -1, -1):
        latest[i] = max(p for p in steps[i] if p < bound)  # exists: earliest[i] is one
        bound = latest[i]
    for j in rows:
        i = step_of[table.keys[j].instruction_id]
        out[j] = tuple(p for p in steps[i] if earliest[i] <= p <= latest[i])
