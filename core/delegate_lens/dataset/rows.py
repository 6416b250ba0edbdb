"""One ETDump's profile events as an Arrow table, straight from the codec's numpy columns.

No Python object is made per event: string columns are dictionary arrays over the file's
string table, links (op types, debug handles, backend, module path) are gathered with one
``take`` from one entry per Inspector row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from delegate_lens.dataset._extras import require
from delegate_lens.dataset.schema import schema
from delegate_lens.etdump.columns import EventKind
from delegate_lens.inspector.build import FileColumns, concat_runs

__all__ = ["events_table"]


def _text(pa: Any, codes: npt.NDArray[Any], dictionary: Sequence[str | None]) -> Any:
    """A dictionary array (null where ``codes`` < 0)."""
    codes = codes.astype(np.int32, copy=False)
    mask = codes < 0
    indices = pa.array(np.where(mask, 0, codes), type=pa.int32(), mask=mask if mask.any() else None)
    values = pa.array(list(dictionary) or [""], type=pa.string())
    return pa.DictionaryArray.from_arrays(indices, values)


def _constant_text(pa: Any, value: str, n: int) -> Any:
    return pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(n, np.int32)), pa.array([value], type=pa.string())
    )


def with_labels(table: Any, labels: Mapping[str, str], names: Sequence[str]) -> Any:
    """``table`` with the struct column ``labels`` (fields ``names``; a name missing from
    ``labels`` is NULL), as the third column; ``table`` itself when ``names`` is empty."""
    if not names:
        return table
    pa = require("pyarrow", "collect")
    n = table.num_rows
    names = sorted(names)
    fields = [
        _constant_text(pa, labels[name], n) if name in labels else _text(pa, np.full(n, -1), [])
        for name in names
    ]
    column = pa.StructArray.from_arrays(fields, names=names)
    return table.add_column(2, pa.field("labels", column.type), column)


def _links(
    pa: Any, inspector: Any, fc: FileColumns, profile: npt.NDArray[np.int64]
) -> dict[str, Any]:
    """op_types, debug_handles, delegate_backend, module_path of each profile event."""
    n = len(profile)
    link_of = np.full(len(fc), -1, dtype=np.int64)
    links: list[Any] = []
    if inspector is not None:
        for table in inspector.tables:
            rows = np.flatnonzero(table.block.has_perf)
            events = table.block.events[:, rows]  # (runs, rows)
            link_of[events] = len(links) + rows[None, :]
            links.extend(table.links)
    picked = link_of[profile]
    mask = picked < 0
    take = pa.array(np.where(mask, 0, picked), mask=mask if mask.any() else None)
    if not links:
        return {
            "op_types": pa.nulls(n, pa.list_(pa.string())),
            "debug_handles": pa.nulls(n, pa.list_(pa.int32())),
            "delegate_backend": _text(pa, np.full(n, -1), []),
            "module_path": _text(pa, np.full(n, -1), []),
        }

    def handles(link: Any) -> list[int] | None:
        h = link.debug_handles
        return None if h is None else [h] if isinstance(h, int) else list(h)

    def first_path(link: Any) -> str | None:
        paths = link.module_paths
        return paths[0] if paths else None

    return {
        "op_types": pa.array([list(link.op_types) for link in links], pa.list_(pa.string())).take(
            take
        ),
        "debug_handles": pa.array([handles(link) for link in links], pa.list_(pa.int32())).take(
            take
        ),
        "delegate_backend": pa.array([link.delegate_backend_name for link in links], pa.string())
        .dictionary_encode()
        .take(take),
        "module_path": pa.array([first_path(link) for link in links], pa.string())
        .dictionary_encode()
        .take(take),
    }


def events_table(
    fc: FileColumns,
    *,
    source: str,
    file_hash: str,
    labels: Mapping[str, str],
    inspector: Any = None,
) -> Any:
    """The ``pyarrow.Table`` of the profile events of one file (``fc`` from
    :func:`~delegate_lens.inspector.build.concat_runs`, or the Inspector's
    ``file_columns`` when ``inspector`` links them to an ETRecord)."""
    pa = require("pyarrow", "collect")
    profile = np.flatnonzero(fc.kind == EventKind.PROFILE)
    n = len(profile)
    strings = fc.strings
    run = fc.run[profile]
    did_int = fc.did_int[profile]
    did_str = fc.did_str[profile].astype(np.int64)
    name = fc.name[profile].astype(np.int64)
    has_int = did_int != -1
    if has_int.any():
        int_ids, int_codes = np.unique(did_int[has_int], return_inverse=True)
    else:
        int_ids = int_codes = np.zeros(0, dtype=np.int64)
    # int identifiers as text, reusing the string table's code when the text is there
    dictionary: list[str | None] = list(strings)
    index = {text: code for code, text in enumerate(strings)}
    id_codes = np.empty(len(int_ids), dtype=np.int64)
    for k, value in enumerate(int_ids.tolist()):
        text = str(value)
        code = index.get(text)
        if code is None:
            code = index[text] = len(dictionary)
            dictionary.append(text)
        id_codes[k] = code
    identifier = did_str.copy()
    identifier[has_int] = id_codes[int_codes.reshape(-1)]
    event_name = np.where(identifier >= 0, identifier, name)
    start = fc.start_time[profile].view(np.int64)
    end = fc.end_time[profile].view(np.int64)
    iid = fc.instruction_id[profile]
    no_iid = iid == -1
    block_names: dict[str, int] = {}
    block_of_run = np.array(
        [block_names.setdefault(name or "", len(block_names)) for name in fc.run_names],
        dtype=np.int64,
    )
    columns = {
        "source": _constant_text(pa, source, n),
        "file_hash": _constant_text(pa, file_hash, n),
        "run": pa.array(run.astype(np.int32)),
        "block": _text(pa, block_of_run[run], list(block_names)),
        "event_index": pa.array((profile - fc.run_start[run]).astype(np.int32)),
        "event_name": _text(pa, event_name, dictionary),
        "instruction_id": pa.array(iid, mask=no_iid if no_iid.any() else None),
        "chain_index": pa.array(fc.chain_index[profile].astype(np.int64, copy=False)),
        "start_time": pa.array(start),
        "duration": pa.array(end - start),
        "is_delegated": pa.array(identifier >= 0),
        "delegate_identifier": _text(pa, identifier, dictionary),
        **_links(pa, inspector, fc, profile),
    }
    plain = schema()
    arrays = [columns[f.name] for f in plain]
    arrays = [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, plain)]
    table = pa.Table.from_arrays(arrays, schema=plain)
    return with_labels(table, labels, list(labels))


def file_columns(data: bytes, etrecord: Any = None) -> tuple[FileColumns, Any]:
    """Decode ``data``; with an ETRecord, through the Inspector (for its links)."""
    if etrecord is None:
        from delegate_lens.etdump import loads

        return concat_runs(loads(data)), None
    from delegate_lens.inspector import Inspector

    inspector = Inspector(etdump_data=data, etrecord=etrecord)
    return inspector.file_columns, inspector
