"""The dataset's columns: one row per profile event of every collected ETDump.

Times are the runtime's raw clock ticks (nanoseconds for ExecuTorch's default clock), as
in the ETDump. Strings are dictionary-encoded (a fleet repeats few distinct names).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from delegate_lens.dataset._extras import require

COLUMNS: dict[str, str] = {
    "source": "path or URI of the ETDump the event came from",
    "file_hash": "SHA-256 of the ETDump's bytes, its first 128 bits (hex): what incremental collection skips by",
    "labels": "struct of the labels (--label k=v, or a JSON sidecar): labels['device'] or labels.device",
    "run": "index of the run (RunData) in the file, from 0",
    "block": "name of the run's event block (e.g. 'Execute')",
    "event_index": "index of the event within its run",
    "event_name": "the Inspector's row name: the delegate identifier for delegate events, else the event name",
    "instruction_id": "the runtime's instruction id (null when absent)",
    "chain_index": "the runtime's chain index",
    "start_time": "start, in raw clock ticks",
    "duration": "end - start, in raw clock ticks (end = start_time + duration)",
    "is_delegated": "true for events a delegate backend logged",
    "delegate_identifier": "the delegate debug identifier as text (int identifiers in decimal)",
    "delegate_backend": "the backend that ran a delegated event (needs an ETRecord)",
    "op_types": "the operators behind the event (needs an ETRecord)",
    "debug_handles": "the debug handles behind the event (needs an ETRecord)",
    "module_path": "the module path of the event's (first) node (needs an ETRecord)",
    "charged_to": "what the event's time is charged to in the one attribution of time (an op type, a fused group 'a + b', or the event's name); null for wrappers (OPERATOR_CALL around a kernel, DELEGATE_CALL, Method::execute, a delegate's summary event): sum(duration) GROUP BY charged_to counts nothing twice (needs an ETRecord)",
}


@functools.lru_cache(maxsize=64)
def _schema(label_names: tuple[str, ...]) -> Any:
    return _make_schema(label_names)


def schema(label_names: Sequence[str] = ()) -> Any:
    """The ``pyarrow.Schema`` of a part whose files carry labels named ``label_names``
    (see :func:`_make_schema`)."""
    return _schema(tuple(sorted(label_names)))


def _make_schema(label_names: Sequence[str]) -> Any:
    """The ``pyarrow.Schema`` of a part whose files carry labels named ``label_names``.

    ``labels`` is a struct with one text field per label name (a part without labels has
    no ``labels`` column; queries see NULL there: DuckDB unifies parts by column name).
    Columns that always have a value are not nullable: Parquet then stores no definition
    levels for them (a tenth less time to write a part).
    """
    pa = require("pyarrow", "the dataset")
    text = pa.dictionary(pa.int32(), pa.string())
    labels = (
        [("labels", pa.struct([(name, text) for name in sorted(label_names)]))]
        if label_names
        else []
    )
    return pa.schema(
        [
            pa.field("source", text, nullable=False),
            pa.field("file_hash", text, nullable=False),
            *labels,
            pa.field("run", pa.int32(), nullable=False),
            pa.field("block", text, nullable=False),
            pa.field("event_index", pa.int32(), nullable=False),
            ("event_name", text),
            ("instruction_id", pa.int32()),
            pa.field("chain_index", pa.int64(), nullable=False),
            pa.field("start_time", pa.int64(), nullable=False),
            pa.field("duration", pa.int64(), nullable=False),
            pa.field("is_delegated", pa.bool_(), nullable=False),
            ("delegate_identifier", text),
            ("delegate_backend", text),
            ("op_types", pa.list_(pa.string())),
            ("debug_handles", pa.list_(pa.int32())),
            ("module_path", text),
            ("charged_to", text),
        ]
    )
