"""`delegate-lens inspect --by op-type | module | module-type`: where the time went, per op
type or rolled up by module hierarchy, as a table, JSON or CSV (all from the Inspector's one
attribution of time)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

import attrs

from delegate_lens.errors import UsageError
from delegate_lens.exporters import Exporter

if TYPE_CHECKING:
    from delegate_lens.inspector import Inspector


SUMMARIES = ("op-type", "module", "module-type")
FORMATS = ("table", "json", "csv")


def _rows(inspector: Inspector, by: str, depth: int | None) -> Sequence[Any]:
    if by == "op-type":
        return inspector.get_op_type_summary()
    return inspector.get_module_summary(depth=depth, by="type" if by == "module-type" else "path")


def _write_table(inspector: Inspector, by: str, rows: Sequence[Any], stream: IO[str]) -> None:
    unit = inspector.target_time_scale.value
    if by == "op-type":
        from delegate_lens.inspector._internal import write_op_type_table

        write_op_type_table(rows, unit, stream)
    else:
        from delegate_lens.inspector._internal import write_module_table

        write_module_table(rows, unit, stream)


def _write_json(inspector: Inspector, by: str, rows: Sequence[Any], stream: IO[str]) -> None:
    blocks = [
        {
            "block": a.block,
            "index": a.index,
            "runs": a.n_runs,
            "denominator": a.denominator,
            "denominator_per_run": a.run_time,
        }
        for a in inspector.get_attribution()
        if a.charges
    ]
    key = "op_types" if by == "op-type" else "modules"
    doc = {
        "time_scale": inspector.target_time_scale.value,
        "blocks": blocks,
        key: [attrs.asdict(r) for r in rows],
    }
    json.dump(doc, stream, indent=2)
    stream.write("\n")


def _write_csv(inspector: Inspector, by: str, rows: Sequence[Any], stream: IO[str]) -> None:
    from delegate_lens.inspector._internal import MODULE_COLUMNS, OP_TYPE_COLUMNS

    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(OP_TYPE_COLUMNS if by == "op-type" else MODULE_COLUMNS)
    for r in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in attrs.astuple(r)])


_WRITERS: dict[str, Callable[[Inspector, str, Sequence[Any], IO[str]], None]] = {
    "table": _write_table,
    "json": _write_json,
    "csv": _write_csv,
}


def summary_exporter(by: str, name: str, depth: int | None = None) -> Exporter:
    """The writer of the ``by`` summary in format ``name`` (UsageError for another)."""
    if by not in SUMMARIES:
        raise UsageError(f"--by takes event, {', '.join(SUMMARIES)}, not {by!r}")
    write = _WRITERS.get(name)
    if write is None:
        raise UsageError(f"--by {by} writes the formats {', '.join(FORMATS)}, not {name!r}")
    if depth is not None and by == "op-type":
        raise UsageError("--depth goes with --by module or --by module-type")

    def run(inspector: Inspector, stream: IO[str]) -> None:
        write(inspector, by, _rows(inspector, by, depth), stream)

    return Exporter(name, f"the {by} summary as {name}", run)
