"""`delegate-lens inspect --by op-type`: the per-op-type summary as a table, JSON or CSV."""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING

import attrs

from delegate_lens.errors import UsageError
from delegate_lens.exporters import Exporter

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector

__all__ = ["op_type_exporter"]


def _table(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.optypes import write_op_type_table

    rows = inspector.get_op_type_summary()
    write_op_type_table(rows, inspector.target_time_scale.value, stream)


def _json(inspector: Inspector, stream: IO[str]) -> None:
    blocks = [
        {
            "block": a.block,
            "runs": a.n_runs,
            "denominator": a.denominator,
            "denominator_per_run": a.run_time,
        }
        for a in inspector.get_attribution()
        if a.charges
    ]
    rows = [attrs.asdict(r) for r in inspector.get_op_type_summary()]
    doc = {"time_scale": inspector.target_time_scale.value, "blocks": blocks, "op_types": rows}
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def _csv(inspector: Inspector, stream: IO[str]) -> None:
    from delegate_lens.inspector.optypes import write_op_type_csv

    write_op_type_csv(inspector.get_op_type_summary(), stream)


_FORMATS = {
    "table": Exporter("table", "per op type: count, time per run, total, share, p50", _table),
    "json": Exporter("json", "the per-op-type summary as JSON", _json),
    "csv": Exporter("csv", "the per-op-type summary as CSV", _csv),
}


def op_type_exporter(name: str) -> Exporter:
    """The writer of the summary in format ``name`` (UsageError for another format)."""
    exporter = _FORMATS.get(name)
    if exporter is None:
        raise UsageError(f"--by op-type writes the formats {', '.join(_FORMATS)}, not {name!r}")
    return exporter
