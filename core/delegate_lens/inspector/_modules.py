"""Time rolled up by module hierarchy: per layer, per submodule, per module type.

Built on the one attribution of time (:mod:`delegate_lens.inspector._attribution`): every
charged event gives its time to the module holding the nodes it ran (the deepest module
common to all of them; a fused group that spans two layers goes to their parent), cut at a
depth: depth 1 is the model's direct children (``blocks.0``, ``tok``), depth 2 their
children (``blocks.0.attn``), and so on; ``None`` keeps the whole path. A module row holds
the time of its subtree at that depth. Events linked to no module (no ETRecord, a delegate
without a Debug Handle Map) are ``(not linked)``; nodes of the model's own ``forward`` are
``(top level)``; the unattributed parts of the attribution stay themselves. So the shares
of a block add up to what the attribution's do: at most 100%.

Grouping ``by="type"`` sums the modules of one class at that depth (``Block`` at depth 1;
``Linear``, ``CausalSelfAttention`` ... at depth 2): where a model spends its time per kind
of layer, attention against MLP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import IO, TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import UsageError
from delegate_lens.inspector._attribution import write_summary_table

if TYPE_CHECKING:
    from delegate_lens.inspector._attribution import BlockAttribution
    from delegate_lens.inspector._tables import BlockTable


BY = ("path", "type")
TOP_LEVEL = "(top level)"
NOT_LINKED = "(not linked)"
Frames = tuple[tuple[str, str], ...]
FloatArray = npt.NDArray[np.float64]


@attrs.frozen
class ModuleSummary:
    """The time of one module (or module type, or unattributed part) of one event block.

    :param block: the event block's name.
    :param module: the module's path (``blocks.0.attn``), or its type's name when grouped
        by type, or ``(top level)``, ``(not linked)`` or an unattributed part's key.
    :param module_type: the module's class (``Linear``); the modules' classes joined by
        ``", "`` when grouped by type; empty for the other rows.
    :param depth: the module's depth (1: the model's children); 0 for the other rows.
    :param kind: ``module``, ``top level``, ``not linked`` or ``unattributed``.
    :param count: events charged to it per run.
    :param time_per_run: the mean over the block's runs.
    :param total_time: the sum over the block's runs.
    :param share: ``total_time`` over the block's denominator.
    :param p50: the median over runs of its time per run.
    :param runs: the block's runs.
    :param denominator: what ``share`` divides by (see the attribution).
    :param block_index: the event block's position among the Inspector's blocks.
    """

    block: str
    module: str
    module_type: str
    depth: int
    kind: str
    count: int
    time_per_run: float
    total_time: float
    share: float
    p50: float
    runs: int
    denominator: str
    block_index: int


MODULE_COLUMNS = tuple(f.name for f in attrs.fields(ModuleSummary))


@attrs.define
class _Acc:
    types: set[str]
    depth: int
    count: int
    samples: FloatArray


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def _frames(hierarchy: object) -> Frames:
    if not isinstance(hierarchy, dict):
        return ()
    return tuple((str(path), str(kind)) for path, kind in hierarchy.values())


def _common(chains: Sequence[Frames]) -> Frames:
    if not chains:
        return ()
    first = chains[0]
    n = min(len(c) for c in chains)
    k = 0
    while k < n and all(c[k] == first[k] for c in chains):
        k += 1
    return first[:k]


def _row_chain(table: BlockTable, attribution: BlockAttribution, j: int) -> Frames | None:
    """The frames (root first) of the module holding the nodes row ``j`` ran; None when
    the row is linked to no node."""
    link = table.links[j]
    names = link.node_names
    positions = attribution.row_positions[j]
    if not names or not positions:
        return None
    chains = [
        _frames(link.module_hierarchy.get(names[k] + "_")) for k in positions if k < len(names)
    ]
    return _common(chains)


def module_rows(
    table: BlockTable,
    attribution: BlockAttribution,
    depth: int | None = None,
    by: str = "path",
) -> list[ModuleSummary]:
    """The rows of one block, by decreasing total time (then name).

    :param depth: cut module paths at this depth (1: the model's children); None: whole.
    :param by: ``"path"`` (one row per module) or ``"type"`` (one per module class).
    """
    if by not in BY:
        raise UsageError(f"by must be one of {', '.join(BY)}, not {by!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise UsageError(f"depth must be a whole number of at least 1, got {depth!r}")
    n_runs = attribution.n_runs
    acc: dict[tuple[str, str], _Acc] = {}  # (kind, key) -> what was added

    def add(kind: str, key: str, types: set[str], level: int, times: FloatArray) -> None:
        entry = acc.get((kind, key))
        if entry is None:
            acc[(kind, key)] = _Acc(set(types), level, 1, times.copy())
        else:
            entry.types.update(types)
            entry.count += 1
            entry.samples = entry.samples + times

    samples = table.zeroed_rows  # NaN as 0, a row at a time (no copy of the matrix)
    for j in np.flatnonzero(attribution.row_charge >= 0).tolist():
        chain = _row_chain(table, attribution, j)
        if chain is None:
            add("not linked", NOT_LINKED, set(), 0, samples[j])
            continue
        inner = chain[1:]  # the root (the model itself) is depth 0
        if depth is not None:
            inner = inner[:depth]
        if not inner:
            add("top level", TOP_LEVEL, set(), 0, samples[j])
            continue
        path, kind = inner[-1]
        if by == "type":
            add("module", _short(kind), {_short(kind)}, len(inner), samples[j])
        else:
            add("module", path, {_short(kind)}, len(inner), samples[j])
    whole = float(np.sum(attribution.run_samples))
    rows = [
        ModuleSummary(
            block=attribution.block,
            module=key,
            module_type=", ".join(sorted(entry.types)),
            depth=entry.depth,
            kind=kind,
            count=entry.count,
            time_per_run=float(np.mean(entry.samples)) if n_runs else 0.0,
            total_time=float(np.sum(entry.samples)),
            share=float(np.sum(entry.samples)) / whole if whole > 0 else 0.0,
            p50=float(np.median(entry.samples)) if n_runs else 0.0,
            runs=n_runs,
            denominator=attribution.denominator,
            block_index=attribution.index,
        )
        for (kind, key), entry in acc.items()
    ]
    for charge in attribution.charges:
        if charge.kind == "unattributed":
            rows.append(
                ModuleSummary(
                    block=attribution.block,
                    module=charge.key,
                    module_type="",
                    depth=0,
                    kind="unattributed",
                    count=charge.count,
                    time_per_run=charge.time_per_run,
                    total_time=charge.total_time,
                    share=charge.share,
                    p50=charge.p50,
                    runs=n_runs,
                    denominator=attribution.denominator,
                    block_index=attribution.index,
                )
            )
    rows.sort(key=lambda r: (-r.total_time, r.module))
    return rows


def write_module_table(rows: Sequence[ModuleSummary], unit: str, file: IO[str]) -> None:
    """The rows as an aligned text table, then a line per block naming its runs and what
    the shares divide by."""
    lead: list[tuple[str, Callable[[ModuleSummary], str], bool]] = [
        ("module", attrgetter("module"), False),
        ("type", attrgetter("module_type"), False),
        ("depth", lambda r: str(r.depth), True),
    ]
    write_summary_table(rows, lead, unit, file)
