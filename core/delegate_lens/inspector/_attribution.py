"""One attribution of time: which operator every measured microsecond of a run is charged to.

Every view that says where the time went (``inspect --by op-type``, the report's top
operators and graph, the Model Explorer overlays, ``compare``'s block and backend
summaries, the dataset's ``charged_to`` column) takes its numbers from here.

The rules, per event block (a row of a :class:`~delegate_lens.inspector._tables.BlockTable`
is one event per run):

* **Kernels are charged to the operator they ran.** A portable kernel row
  ``native_call_<op>.out`` is charged to the op type named ``<op>`` among its instruction's
  nodes, not to every op of the instruction (a decomposed ``linear`` is a ``permute_copy``,
  an ``addmm`` and a ``view_copy``, each its own kernel and instruction, all with the
  ``linear``'s debug handle). Where the handle holds two nodes of the op (two
  ``view_copy``), the kernels' program order tells which node each ran
  (:mod:`~delegate_lens.inspector._kernel_nodes`).
* **Wrappers are never added to what they contain.** ``Method::execute``, ``Method::init``
  and ``Program::load_method`` (framework events), ``OPERATOR_CALL`` around a kernel row of
  the same instruction, ``DELEGATE_CALL`` around the events its delegate logged, and a
  delegate-logged event that contains another of the same call (a per-call summary: its
  handles strictly hold the other's, or in time, :mod:`~delegate_lens.inspector._nesting`,
  which needs no ETRecord) are wrappers. An ``OPERATOR_CALL`` with no kernel row inside is
  the only measure of its instruction and is charged like a kernel.
* **Inside a delegate, the events the backend logged are charged** to the op types of the
  handles its Debug Handle Map gives them. An event covering several op types (a fused
  ``linear_relu``) is charged to the group as a whole (``"aten.linear.default +
  aten.relu.default"``, kind ``group``), never split evenly as if each part were measured.
* **Time no event explains is shown as such**: a delegate call's time beyond its logged
  events is ``"<backend> (unattributed)"``; ``Method::execute``'s time beyond everything
  charged is ``"Method::execute (unattributed)"`` (dispatch, ``OPERATOR_CALL`` overhead).
  Per run, clipped at zero.
* **The denominator is ``Method::execute``** (the sum over the block's runs) when the
  block logged it; in a run where what was charged exceeds it (events on another clock),
  that run counts its charged time instead, and :attr:`BlockAttribution.denominator` says
  so; without ``Method::execute`` it is the attributed time. So the shares of a block sum
  to at most 100%.

Times are in the Inspector's target time scale. ``time_per_run`` is the mean over the
block's runs; ``total_time`` the sum over them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Protocol, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.inspector._kernel_nodes import handle_set as _handle_set
from delegate_lens.inspector._kernel_nodes import kernel_op_name as kernel_op_name
from delegate_lens.inspector._kernel_nodes import kernel_positions
from delegate_lens.inspector._kernel_nodes import op_name as op_name
from delegate_lens.inspector._linking import FRAMEWORK_EVENTS
from delegate_lens.inspector._nesting import time_containers

if TYPE_CHECKING:
    from delegate_lens.inspector._tables import BlockTable


FloatArray = npt.NDArray[np.float64]
EXECUTE = "Method::execute"
_OPERATOR_CALL = "OPERATOR_CALL"
_DELEGATE_CALL = "DELEGATE_CALL"
GROUP_SEPARATOR = " + "
UNKNOWN_BACKEND = "(unknown backend)"


class RowRole:
    """What a row is to the attribution (the values of :attr:`BlockAttribution.roles`)."""

    KERNEL = "kernel"  # charged: an operator's own kernel (or an OPERATOR_CALL alone)
    DELEGATE_EVENT = "delegate event"  # charged: an event a delegate logged
    WRAPPER = "wrapper"  # OPERATOR_CALL, DELEGATE_CALL, a delegate's summary event
    FRAMEWORK = "framework"  # Method::execute, Method::init, Program::load_method
    NO_TIME = "no time"  # a row without profiling samples


@attrs.frozen
class Charge:
    """The time charged to one operator (or group, event or unattributed part) of a block.

    :param key: what the time is charged to: an op type (``aten.addmm.default``), a group
        of op types joined by ``" + "``, an event's name when nothing links it to the graph,
        or ``"<backend> (unattributed)"`` / ``"Method::execute (unattributed)"``.
    :param kind: ``op``, ``group``, ``event`` or ``unattributed``.
    :param op_types: the op types behind it (for an unattributed delegate part, those of
        the delegate calls).
    :param count: events charged to it per run (for an unattributed part: the calls or
        runs it comes from, per run).
    :param samples: its time in each run of the block.
    :param share: ``total_time`` over the block's denominator, between 0 and 1.
    """

    key: str
    kind: str
    op_types: tuple[str, ...]
    count: int
    samples: FloatArray = attrs.field(eq=False, repr=False)
    share: float

    @property
    def total_time(self) -> float:
        """The sum over the block's runs."""
        return float(np.sum(self.samples))

    @property
    def time_per_run(self) -> float:
        """The mean over the block's runs."""
        return float(np.mean(self.samples)) if self.samples.size else 0.0

    @property
    def p50(self) -> float:
        """The median over the block's runs of the time per run."""
        return float(np.median(self.samples)) if self.samples.size else 0.0


@attrs.define(eq=False)
class BlockAttribution:
    """The attribution of one event block.

    :param charges: by decreasing total time (then key).
    :param denominator: ``"Method::execute"``, ``"attributed time"`` (no
        ``Method::execute``) or ``"Method::execute (or the attributed time, where more)"``.
    :param run_samples: the denominator in each run.
    :param roles: each row's :class:`RowRole`.
    :param row_charge: each row's index in ``charges`` (-1: not charged).
    :param row_positions: for each charged row linked to the graph, the positions in its
        ``RowLink.op_types`` (its nodes) it ran; empty otherwise.
    :param backend_samples: per delegate backend (``"(unknown backend)"`` for a call not
        linked to the ETRecord), the time of its delegate calls in each run.
    :param backend_calls: per delegate backend, its delegate calls per run.
    """

    block: str
    index: int
    method: str | None
    n_runs: int
    charges: list[Charge]
    denominator: str
    run_samples: FloatArray
    roles: list[str]
    row_charge: npt.NDArray[np.int64]
    row_positions: list[tuple[int, ...]]
    backend_samples: dict[str, FloatArray]
    backend_calls: dict[str, int]

    @property
    def run_time(self) -> float:
        """The denominator's mean per run."""
        return float(np.mean(self.run_samples)) if self.run_samples.size else 0.0

    @property
    def denominator_label(self) -> str:
        """How a share is read: ``"% of Method::execute"`` or ``"% of attributed time"``."""
        return f"% of {self.denominator}"


@attrs.define
class _Acc:
    kind: str
    op_types: tuple[str, ...]
    count: int
    samples: FloatArray


def _key_of(op_types: Sequence[str], fallback: str) -> tuple[str, str, tuple[str, ...]]:
    distinct = tuple(dict.fromkeys(op_types))
    if not distinct:
        return fallback, "event", ()
    if len(distinct) == 1:
        return distinct[0], "op", distinct
    return GROUP_SEPARATOR.join(distinct), "group", distinct


def _summaries(table: BlockTable, delegated: list[int]) -> set[int]:
    """Delegate-logged rows whose handles strictly contain another linked row's of the same
    delegate call (a per-call or per-layer summary): wrappers, not charged. Rows linked by a
    map recovered from the program are operators' own events, never summaries."""
    by_call: dict[int, list[int]] = {}
    for j in delegated:
        if table.links[j].debug_handles is not None and not table.links[j].recovered:
            by_call.setdefault(table.keys[j].instruction_id, []).append(j)
    out: set[int] = set()
    for rows in by_call.values():
        sets = {j: _handle_set(table.links[j].debug_handles) for j in rows}
        for j, mine in sets.items():
            if any(other < mine for k, other in sets.items() if k != j):
                out.add(j)
    return out


def attribute_table(table: BlockTable) -> BlockAttribution:
    """The attribution of one block (see the module's text for the rules)."""
    n_rows, n_runs = table.n_rows, table.n_runs
    samples = table.zeroed_rows  # NaN as 0, a row at a time (no copy of the matrix)
    perf = np.asarray(table.block.has_perf, dtype=bool)
    keys, links = table.keys, table.links
    roles = [RowRole.NO_TIME] * n_rows
    kernels_at: set[int] = set()
    delegated: list[int] = []
    for j, key in enumerate(keys):
        if not perf[j]:
            continue
        if key.identifier is not None:
            delegated.append(j)
        elif (
            key.name not in FRAMEWORK_EVENTS
            and key.name not in (_OPERATOR_CALL, _DELEGATE_CALL)
            and key.instruction_id >= 0
        ):
            kernels_at.add(key.instruction_id)
    summaries = _summaries(table, delegated) | time_containers(table, delegated)
    positions = kernel_positions(table)

    acc: dict[str, _Acc] = {}
    row_key: dict[int, str] = {}
    row_positions: list[tuple[int, ...]] = [()] * n_rows

    def charge(key: str, kind: str, ops: tuple[str, ...], times: FloatArray, n: int) -> None:
        entry = acc.get(key)
        if entry is None:
            acc[key] = _Acc(kind, ops, n, times.copy())
        else:
            entry.count += n
            entry.samples = entry.samples + times

    execute = np.zeros(n_runs)
    has_execute = False
    inner: dict[int, FloatArray] = {}  # delegate call instruction -> logged time per run
    calls: list[int] = []
    backend_samples: dict[str, FloatArray] = {}
    backend_calls: dict[str, int] = {}
    for j, key in enumerate(keys):
        if not perf[j]:
            continue
        link = links[j]
        if key.name in FRAMEWORK_EVENTS and key.identifier is None:
            roles[j] = RowRole.FRAMEWORK
            if key.name == EXECUTE:
                execute = execute + samples[j]
                has_execute = True
            continue
        if key.identifier is None and key.name == _DELEGATE_CALL:
            roles[j] = RowRole.WRAPPER
            calls.append(j)
            backend = link.delegate_backend_name or UNKNOWN_BACKEND
            backend_samples[backend] = backend_samples.get(backend, np.zeros(n_runs)) + samples[j]
            backend_calls[backend] = backend_calls.get(backend, 0) + 1
            continue
        if (
            key.identifier is None
            and key.name == _OPERATOR_CALL
            and key.instruction_id in kernels_at
        ):
            roles[j] = RowRole.WRAPPER
            continue
        if j in summaries:
            roles[j] = RowRole.WRAPPER
            continue
        if key.identifier is not None:
            roles[j] = RowRole.DELEGATE_EVENT
            inner[key.instruction_id] = inner.get(key.instruction_id, np.zeros(n_runs)) + samples[j]
            ran = tuple(range(len(link.op_types)))
        else:
            roles[j] = RowRole.KERNEL
            ran = positions.get(j, tuple(range(len(link.op_types))))
        ops = [link.op_types[k] for k in ran]
        name, kind, distinct = _key_of(ops, key.name)
        row_key[j] = name
        row_positions[j] = ran
        charge(name, kind, distinct, samples[j], 1)

    # what delegate calls spent beyond the events their delegates logged
    for j in calls:
        link = links[j]
        backend = link.delegate_backend_name or _DELEGATE_CALL
        logged = inner.get(keys[j].instruction_id)
        rest = samples[j] if logged is None else np.clip(samples[j] - logged, 0.0, None)
        call_ops = tuple(dict.fromkeys(link.op_types))
        charge(f"{backend} (unattributed)", "unattributed", call_ops, rest, 1)
    charged = np.zeros(n_runs)
    for entry in acc.values():
        charged = charged + entry.samples
    denominator = "attributed time"
    run_samples = charged
    if has_execute:
        # per run, Method::execute holds what was charged; a run whose events do not fit
        # in it (a delegate's own clock, say) is measured by what was charged instead
        fits = bool(np.all(charged <= execute * (1 + 1e-9)))
        denominator = EXECUTE if fits else f"{EXECUTE} (or the attributed time, where more)"
        run_samples = np.maximum(execute, charged)
        rest = run_samples - charged
        if float(np.sum(rest)) > 0:
            charge(f"{EXECUTE} (unattributed)", "unattributed", (), rest, 1)
    whole = float(np.sum(run_samples))
    charges = [
        Charge(
            key=name,
            kind=entry.kind,
            op_types=entry.op_types,
            count=entry.count,
            samples=entry.samples,
            share=float(np.sum(entry.samples)) / whole if whole > 0 else 0.0,
        )
        for name, entry in acc.items()
        if entry.kind != "unattributed" or float(np.sum(entry.samples)) > 0
    ]
    charges.sort(key=lambda c: (-c.total_time, c.key))
    index = {c.key: i for i, c in enumerate(charges)}
    row_charge = np.full(n_rows, -1, dtype=np.int64)
    for j, name in row_key.items():
        row_charge[j] = index.get(name, -1)
    return BlockAttribution(
        block=table.name,
        index=table.index,
        method=table.method,
        n_runs=n_runs,
        charges=charges,
        denominator=denominator,
        run_samples=np.asarray(run_samples, dtype=np.float64),
        roles=roles,
        row_charge=row_charge,
        row_positions=row_positions,
        backend_samples=backend_samples,
        backend_calls=backend_calls,
    )


def node_samples(table: BlockTable, attribution: BlockAttribution) -> dict[str, FloatArray]:
    """Per graph node (by name): the time charged to it in each run of the block. A kernel
    gives its time to the node of the op it ran (to each node of its op only where program
    order cannot tell which one ran); a fused event gives its whole time to each node of its
    group (unsplit: a node view of a group repeats the group's time, so sum charges, not
    nodes)."""
    out: dict[str, FloatArray] = {}
    for j in np.flatnonzero(attribution.row_charge >= 0).tolist():
        names = table.links[j].node_names
        ran = dict.fromkeys(names[k] for k in attribution.row_positions[j] if k < len(names))
        times = np.nan_to_num(table.samples[j])
        for name in ran:
            previous = out.get(name)
            out[name] = times.copy() if previous is None else previous + times
    return out


class _Shared(Protocol):
    @property
    def block(self) -> str: ...
    @property
    def block_index(self) -> int: ...
    @property
    def runs(self) -> int: ...
    @property
    def denominator(self) -> str: ...


class _Summary(_Shared, Protocol):
    """A row of a summary by op type or by module."""

    @property
    def count(self) -> int: ...
    @property
    def time_per_run(self) -> float: ...
    @property
    def total_time(self) -> float: ...
    @property
    def share(self) -> float: ...
    @property
    def p50(self) -> float: ...


_S = TypeVar("_S", bound=_Summary)


def write_summary_table(
    rows: Sequence[_S],
    lead: Sequence[tuple[str, Callable[[_S], str], bool]],
    unit: str,
    file: IO[str],
) -> None:
    """A summary's rows as an aligned text table: the block, the ``lead`` columns
    (header, cell of a row, whether it is a number), then count, time per run, total,
    share and p50 per run (numbers right-aligned); then a line per block naming its runs
    and what the shares divide by (:func:`denominator_lines`). Blocks are named as
    :func:`block_labels` says."""
    from delegate_lens._texttable import align_columns

    labels = block_labels(rows)

    header = [
        "event_block_name",
        *(name for name, _cell, _number in lead),
        "count/run",
        f"time/run ({unit})",
        f"total ({unit})",
        "share",
        f"p50/run ({unit})",
    ]
    body = [
        [
            labels[r.block_index],
            *(cell(r) for _name, cell, _number in lead),
            str(r.count),
            f"{r.time_per_run:.6g}",
            f"{r.total_time:.6g}",
            f"{r.share:.1%}",
            f"{r.p50:.6g}",
        ]
        for r in rows
    ]
    numbers = [1 + i for i, (_name, _cell, number) in enumerate(lead) if number]
    numbers += range(len(header) - 5, len(header))
    for text in align_columns([header, *body], right=numbers, rule=True):
        file.write(text + "\n")
    for line in denominator_lines(rows):
        file.write(line + "\n")


def block_labels(rows: Iterable[_Shared]) -> dict[int, str]:
    """Per block index of ``rows``, how a table names the block: its name, or, when two
    blocks share a name (two methods' ``Execute``), ``"<index>: <name>"`` for every block,
    as the HTML report labels them."""
    names = {row.block_index: row.block for row in rows}
    if len(set(names.values())) == len(names):
        return names
    return {index: f"{index}: {name}" for index, name in names.items()}


def denominator_lines(rows: Iterable[_Shared]) -> list[str]:
    """One line per block of a summary's rows: its runs and what its shares divide by."""
    first: dict[int, _Shared] = {}
    for row in rows:
        first.setdefault(row.block_index, row)
    labels = block_labels(first.values())
    return [
        f"{labels[index]}: {r.runs} run(s); share = % of {r.denominator} (over all runs)"
        for index, r in first.items()
    ]


def attribute(tables: Sequence[BlockTable]) -> list[BlockAttribution]:
    """The attribution of every block, in block order."""
    return [attribute_table(table) for table in tables]
