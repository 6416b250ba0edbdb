"""`delegate-lens inspect --by op-type`: the per-op-type summary as a table or JSON."""

from __future__ import annotations

import json
from typing import IO, Any

import attrs

from delegate_lens.errors import UsageError
from delegate_lens.exporters import Exporter

__all__ = ["op_type_exporter"]


def _table(inspector: Any, stream: IO[str]) -> None:
    from delegate_lens.inspector.optypes import write_op_type_table

    rows = inspector.get_op_type_summary()
    write_op_type_table(rows, inspector.target_time_scale.value, stream)


def _json(inspector: Any, stream: IO[str]) -> None:
    rows = [attrs.asdict(r) for r in inspector.get_op_type_summary()]
    json.dump({"time_scale": inspector.target_time_scale.value, "op_types": rows}, stream, indent=2)
    stream.write("\n")


_FORMATS = {
    "table": Exporter("table", "per op type: count, time per run, share, p50", _table),
    "json": Exporter("json", "the per-op-type summary as JSON", _json),
}


def op_type_exporter(name: str) -> Exporter:
    """The writer of the summary in format ``name`` (UsageError for another format)."""
    exporter = _FORMATS.get(name)
    if exporter is None:
        raise UsageError(f"--by op-type writes the formats {', '.join(_FORMATS)}, not {name!r}")
    return exporter
