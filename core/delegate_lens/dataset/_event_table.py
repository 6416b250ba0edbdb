"""ETDumps' profile events as an Arrow table, straight from the codec's numpy columns.

No Python object is made per event: string columns are dictionary arrays over the file's
string table, links (op types, debug handles, backend, module path) are gathered with one
``take`` from one entry per Inspector row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.dataset._arrow import from_numpy, int_lists, string_lists, strings
from delegate_lens.dataset._extras import require
from delegate_lens.dataset._schema import schema
from delegate_lens.etdump import EventKind, decode_many
from delegate_lens.inspector import FileColumns, decoded_file_columns

if TYPE_CHECKING:
    from types import ModuleType

    import pyarrow

    from delegate_lens.inspector import Inspector, RowLink


_S = TypeVar("_S", bound=np.generic)


class _Per(Protocol):
    """Per profile event, from a column of all events (``pick``) or of runs
    (``per_event``): the same dtype."""

    def __call__(self, column: npt.NDArray[_S], /) -> npt.NDArray[_S]: ...


def _text(
    pa: ModuleType,
    codes: npt.NDArray[np.integer],
    dictionary: Sequence[str | None],
    *,
    ours: bool = False,
) -> pyarrow.DictionaryArray:
    """A dictionary array (null where ``codes`` < 0). ``ours``: codes this module made,
    known to be in range (Arrow's check of every index is skipped)."""
    codes = codes.astype(np.int32, copy=False)
    values = strings(pa, list(dictionary) or [""])
    if ours or not len(codes) or int(codes.min()) >= 0:
        indices = from_numpy(pa, codes)
        return pa.DictionaryArray.from_arrays(indices, values, safe=not ours)
    mask = codes < 0
    indices = from_numpy(pa, np.where(mask, 0, codes), mask=mask)
    return pa.DictionaryArray.from_arrays(indices, values)


def _null_text(pa: ModuleType, n: int) -> pyarrow.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), strings(pa, [""]))


def _labels_column(
    pa: ModuleType,
    labels: Sequence[Mapping[str, str]],
    names: Sequence[str],
    file_of_run: npt.NDArray[np.integer],
    per_event: _Per,
) -> pyarrow.StructArray:
    """The struct column ``labels`` (fields ``names``, sorted; a name missing from a file's
    labels is NULL), each field a dictionary array over the values the files use. Files
    sharing one labels mapping (the same object) are looked at once."""
    slot: dict[int, int] = {}
    distinct: list[Mapping[str, str]] = []
    for mine in labels:
        if slot.setdefault(id(mine), len(distinct)) == len(distinct):
            distinct.append(mine)
    which = np.fromiter(map(slot.__getitem__, map(id, labels)), np.int64, count=len(labels))
    which_of_run = which[file_of_run]
    fields = []
    for name in names:
        values: dict[str, int] = {}
        codes = np.array(
            [
                values.setdefault(mine[name], len(values)) if name in mine else -1
                for mine in distinct
            ],
            dtype=np.int32,
        )
        fields.append(_text(pa, per_event(codes[which_of_run]), list(values)))
    return pa.StructArray.from_arrays(fields, names=list(names))


@attrs.frozen(eq=False)
class _Links:
    """Each event's Inspector row (``link_of``, -1: none) and, per row, what the columns
    op_types, debug_handles, delegate_backend, module_path and charged_to (the Inspector's
    one attribution of time) hold: taken per event with one ``take`` each."""

    link_of: npt.NDArray[np.int32]
    columns: dict[str, pyarrow.Array]


def _link_rows(pa: ModuleType, inspector: Inspector | None, fc: FileColumns) -> _Links | None:
    """The links of ``fc``'s events, from ``inspector`` (None: none linked)."""
    if inspector is None:
        return None
    links: list[RowLink] = []
    charged_to: list[str | None] = []
    link_of = np.full(len(fc), -1, dtype=np.int32)
    for table, attribution in zip(inspector.tables, inspector.get_attribution(), strict=True):
        rows = np.flatnonzero(table.block.has_perf)
        events = table.block.events[:, rows]  # (runs, rows)
        link_of[events] = len(links) + rows[None, :]
        links.extend(table.links)
        charged_to.extend(
            attribution.charges[c].key if c >= 0 else None for c in attribution.row_charge.tolist()
        )
    if not links:
        return None

    def handles(link: RowLink) -> list[int] | None:
        h = link.debug_handles
        return None if h is None else [h] if isinstance(h, int) else list(h)

    def first_path(link: RowLink) -> str | None:
        paths = link.module_paths
        return paths[0] if paths else None

    return _Links(
        link_of,
        {
            "op_types": string_lists(pa, [list(link.op_types) for link in links]),
            "debug_handles": int_lists(pa, [handles(link) for link in links]),
            "delegate_backend": strings(
                pa, [link.delegate_backend_name for link in links]
            ).dictionary_encode(),
            "module_path": strings(pa, [first_path(link) for link in links]).dictionary_encode(),
            "charged_to": strings(pa, charged_to).dictionary_encode(),
        },
    )


def _links(pa: ModuleType, links: _Links | None, pick: _Per, n: int) -> dict[str, pyarrow.Array]:
    """The link columns of ``n`` profile events (``pick`` takes them from a column of all
    events)."""
    if links is None:
        return {
            "op_types": pa.nulls(n, pa.list_(pa.string())),
            "debug_handles": pa.nulls(n, pa.list_(pa.int32())),
            "delegate_backend": _null_text(pa, n),
            "module_path": _null_text(pa, n),
            "charged_to": _null_text(pa, n),
        }
    picked = pick(links.link_of)
    mask = picked < 0
    take = from_numpy(pa, np.where(mask, 0, picked), mask=mask)
    return {name: column.take(take) for name, column in links.columns.items()}


@attrs.frozen
class FileLabels:
    """What ``collect`` records of one file besides its events."""

    source: str
    file_hash: str
    labels: Mapping[str, str] = attrs.field(factory=dict)


def events_table(
    fc: FileColumns,
    *,
    source: str,
    file_hash: str,
    labels: Mapping[str, str],
    inspector: Inspector | None = None,
    label_names: Sequence[str] | None = None,
) -> pyarrow.Table:
    """The ``pyarrow.Table`` of the profile events of one file (``fc`` from
    :func:`files_columns`, or the Inspector's ``file_columns`` when ``inspector`` links them
    to an ETRecord). ``label_names`` (default: ``labels``'s) are the label fields."""
    return files_table(
        fc,
        np.zeros(len(fc.run_names), dtype=np.int64),
        [FileLabels(source, file_hash, labels)],
        inspector=inspector,
        label_names=label_names,
    )


def _identifiers(fc: FileColumns, pick: _Per) -> tuple[npt.NDArray[np.int64], list[str | None]]:
    """Per profile event (``pick`` takes them from a column of all events), the code of its
    delegate identifier as text (-1: none), and the dictionary of those codes: the string
    table, then int identifiers not already in it."""
    did_int = pick(fc.did_int)
    identifier = pick(fc.did_str).astype(np.int64)  # a copy: changed below
    dictionary: list[str | None] = list(fc.strings)
    has_int = did_int != -1
    if not has_int.any():
        return identifier, dictionary
    int_ids, int_codes = np.unique(did_int[has_int], return_inverse=True)
    index = {text: code for code, text in enumerate(fc.strings)}
    id_codes = np.empty(len(int_ids), dtype=np.int64)
    for k, value in enumerate(int_ids.tolist()):
        text = str(value)
        code = index.get(text)
        if code is None:
            code = index[text] = len(dictionary)
            dictionary.append(text)
        id_codes[k] = code
    identifier[has_int] = id_codes[int_codes.reshape(-1)]
    return identifier, dictionary


def files_table(
    fc: FileColumns,
    run_file: npt.NDArray[np.int64],
    files: Sequence[FileLabels],
    *,
    inspector: Inspector | None = None,
    label_names: Sequence[str] | None = None,
) -> pyarrow.Table:
    """The ``pyarrow.Table`` of the profile events of several files decoded together
    (:func:`files_columns`): run ``r`` of ``fc`` is a run of ``files[run_file[r]]``
    (``run_file`` sorted). ``label_names`` (default: every name in ``files``' labels) are
    the label fields; without any, the table has no ``labels`` column."""
    return labelled_table(
        fc,
        run_file,
        [f.source for f in files],
        [f.file_hash for f in files],
        [f.labels for f in files],
        inspector=inspector,
        label_names=label_names,
    )


def labelled_table(
    fc: FileColumns,
    run_file: npt.NDArray[np.int64],
    sources: Sequence[str],
    hashes: Sequence[str],
    labels: Sequence[Mapping[str, str]],
    *,
    inspector: Inspector | None = None,
    label_names: Sequence[str] | None = None,
) -> pyarrow.Table:
    """As :func:`files_table`, with the files given column by column (no object per
    file): file ``k`` is ``sources[k]``, of hash ``hashes[k]``, labelled ``labels[k]``
    (files may share one mapping)."""
    (table,) = labelled_pieces(
        fc, run_file, sources, hashes, labels, inspector=inspector, label_names=label_names
    )
    return table


def labelled_pieces(
    fc: FileColumns,
    run_file: npt.NDArray[np.int64],
    sources: Sequence[str],
    hashes: Sequence[str],
    labels: Sequence[Mapping[str, str]],
    *,
    inspector: Inspector | None = None,
    label_names: Sequence[str] | None = None,
    piece_rows: int | None = None,
) -> Iterator[pyarrow.Table]:
    """:func:`labelled_table` in pieces of ``piece_rows`` events (None: one piece), each
    made when it is asked for: a writer holding one piece at a time holds a few bytes per
    event of a big file, not the whole table (about 150 bytes per event with links)."""
    pa = require("pyarrow", "collect")
    is_profile = fc.kind == EventKind.PROFILE
    n_runs = len(fc.run_names)
    profile = None if is_profile.all() else np.flatnonzero(is_profile)
    n = len(fc) if profile is None else len(profile)
    if len(sources) == 1:
        file_of_run = np.zeros(n_runs, dtype=np.int32)
        run_in_file = np.arange(n_runs, dtype=np.int32)
    else:
        file_of_run = run_file.astype(np.int32)
        first_run = np.searchsorted(run_file, np.arange(len(sources), dtype=np.int64))
        run_in_file = (np.arange(n_runs, dtype=np.int64) - first_run[run_file]).astype(np.int32)
    block_names: dict[str, int] = {}
    code_of: dict[str | None, int] = {}
    for run_name in dict.fromkeys(fc.run_names):  # the distinct names, in first-run order
        code_of[run_name] = block_names.setdefault(run_name or "", len(block_names))
    block_of_run = np.fromiter(map(code_of.__getitem__, fc.run_names), np.int32, count=n_runs)
    if label_names is None:
        label_names = sorted(
            {name for mine in {id(m): m for m in labels}.values() for name in mine}
        )
    names = sorted(label_names)
    links = _link_rows(pa, inspector, fc)
    plain = schema()

    def piece(start_at: int, end_at: int) -> pyarrow.Table:
        pick: _Per
        per_event: _Per
        if profile is None and (start_at, end_at) == (0, n):
            # the whole file, every event a profile event (the usual case): views of the
            # columns; per-run values repeated
            counts = np.diff(fc.run_start, append=len(fc))  # a run's events are contiguous

            def pick(column: npt.NDArray[_S], /) -> npt.NDArray[_S]:
                return column

            def per_event(column: npt.NDArray[_S], /) -> npt.NDArray[_S]:
                return np.repeat(column, counts)

            event_index = np.arange(n, dtype=np.int64) - per_event(fc.run_start)
        else:
            if profile is None:  # a piece: views of the columns
                events = np.arange(start_at, end_at, dtype=np.int64)
                run = np.searchsorted(fc.run_start, events, side="right") - 1

                def pick(column: npt.NDArray[_S], /) -> npt.NDArray[_S]:
                    return column[start_at:end_at]

            else:
                events = profile[start_at:end_at]
                run = fc.run[events]

                def pick(column: npt.NDArray[_S], /) -> npt.NDArray[_S]:
                    return column[events]

            def per_event(column: npt.NDArray[_S], /) -> npt.NDArray[_S]:
                return column[run]

            event_index = events - fc.run_start[run]
        file_of_event = per_event(file_of_run)
        identifier, dictionary = _identifiers(fc, pick)
        delegated = identifier >= 0
        name = pick(fc.name)
        event_name = np.where(delegated, identifier, name) if delegated.any() else name
        start = pick(fc.start_time).view(np.int64)
        end = pick(fc.end_time).view(np.int64)
        iid = pick(fc.instruction_id)
        no_iid = iid == -1
        columns = {
            "source": _text(pa, file_of_event, sources, ours=True),
            "file_hash": _text(pa, file_of_event, hashes, ours=True),
            "run": from_numpy(pa, per_event(run_in_file)),
            "block": _text(pa, per_event(block_of_run), list(block_names), ours=True),
            "event_index": from_numpy(pa, event_index.astype(np.int32)),
            "event_name": _text(pa, event_name, dictionary),
            "instruction_id": from_numpy(pa, iid, mask=no_iid),
            "chain_index": from_numpy(pa, pick(fc.chain_index).astype(np.int64, copy=False)),
            "start_time": from_numpy(pa, start),
            "duration": from_numpy(pa, end - start),
            "is_delegated": from_numpy(pa, delegated),
            "delegate_identifier": _text(pa, identifier, dictionary),
            **_links(pa, links, pick, end_at - start_at),
        }
        arrays = [columns[f.name] for f in plain]
        arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, plain)]
        table = pa.Table.from_arrays(arrays, schema=plain)
        if not names:
            return table
        column = _labels_column(pa, labels, names, file_of_run, per_event)
        return table.add_column(2, pa.field("labels", column.type), column)

    step = n if piece_rows is None else max(1, piece_rows)
    for start_at in range(0, n, step) if n else (0,):
        yield piece(start_at, min(n, start_at + step))


def files_columns(datas: Sequence[bytes | memoryview]) -> tuple[FileColumns, npt.NDArray[np.int64]]:
    """Decode several ETDumps together (one vectorized pass for all): their columns, and
    the file of each run. A bad file raises for all (decode them one by one to find it)."""
    decoded = decode_many(datas)
    return decoded_file_columns(decoded), decoded.run_file
