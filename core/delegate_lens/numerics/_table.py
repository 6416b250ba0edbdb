"""The table ``Inspector.calculate_numeric_gap`` returns when pandas is not wanted.

One row per matched pair of outputs, in graph order, with the reference's columns
(``aot_debug_handle``, ``aot_ops``, ``aot_intermediate_output``, ``runtime_ops``,
``runtime_debug_handle``, ``runtime_intermediate_output``, ``gap``, ``stacktraces``) and
delegate-lens's own (``delegate_backend``, ``delegate_identifiers``, ``diverged``,
``first_divergence``, ``note``, ``method``). Outputs that could not be matched are listed in
:attr:`NumericGapTable.unmatched`. numpy only.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import IO, Any

import attrs

from delegate_lens._texttable import align_columns
from delegate_lens.errors import MissingExtraError

_LIBRARY = re.compile(r"[/\\\\]torch[/\\\\](nn|fx|_|export|utils)")

COLUMNS = (
    "aot_debug_handle",
    "aot_ops",
    "aot_intermediate_output",
    "runtime_ops",
    "runtime_debug_handle",
    "runtime_intermediate_output",
    "gap",
    "stacktraces",
    "delegate_backend",
    "delegate_identifiers",
    "diverged",
    "first_divergence",
    "note",
    "method",
)
"""Column names, in order (the reference's eight first)."""

REFERENCE_COLUMNS = COLUMNS[:8]
"""The reference's columns, those of ``calculate_numeric_gap``'s default frame."""


@attrs.frozen
class Unmatched:
    """An output with no counterpart: ``side`` is ``"runtime"`` or ``"aot"``."""

    side: str
    debug_handles: tuple[int, ...]
    ops: list[str]
    reason: str
    delegate_identifiers: list[Any] = attrs.field(factory=list)


@attrs.define(eq=False)
class NumericGapTable:
    """Rows of numeric gaps (dicts keyed by :data:`COLUMNS`) and what could not be matched.

    :ivar distance: the comparator's name; :ivar threshold: the threshold used for
        ``diverged``; :ivar higher_is_better: the comparator's direction;
        :ivar reference_graph: which AOT graph ran.
    """

    rows: list[dict[str, Any]]
    unmatched: list[Unmatched]
    distance: str
    threshold: float
    higher_is_better: bool
    reference_graph: str

    columns: tuple[str, ...] = COLUMNS

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, column: str) -> list[Any]:
        """The values of one column, row by row (as ``df[column]`` gives them)."""
        if column not in self.columns:
            raise KeyError(column)
        return [row[column] for row in self.rows]

    @property
    def first_divergence(self) -> dict[str, Any] | None:
        """The earliest row (graph order) that diverged while its inputs were fine."""
        return next((row for row in self.rows if row["first_divergence"]), None)

    def _repr_html_(self) -> str | None:
        """Jupyter's display, from the ``dl_html_display`` hook (the built-in ``notebook``
        plugin: :func:`delegate_lens.report._notebook.gap_html`); None: the repr."""
        from delegate_lens import hooks

        html = hooks.html_display(self)
        return html if isinstance(html, str) else None

    def to_dataframe(self, detailed: bool = True) -> Any:
        """A pandas DataFrame of the rows (needs the ``pandas`` extra).

        ``detailed=True``: every column of :data:`COLUMNS`, intermediate outputs as numpy
        arrays, ``runtime_ops`` naming every event of the row. ``detailed=False``: the
        reference's frame exactly (:data:`REFERENCE_COLUMNS`, object columns, outputs as
        torch tensors, ``runtime_ops`` as the reference names them: the last event of each
        handle set), with torch imported to build it."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingExtraError(
                "a DataFrame needs pandas: pip install 'delegate-lens[pandas]'"
            ) from None
        if not detailed:
            kept = [row for row in self.rows if _reference_keeps(row)]
            # the reference's order: by each row's smallest handle (ours: graph order)
            kept.sort(key=lambda row: min(row["aot_debug_handle"], default=0))
            rows = [_reference_row(row) for row in kept]
            return pd.DataFrame(rows, columns=list(REFERENCE_COLUMNS))
        frame = pd.DataFrame(self.rows, columns=list(self.columns))
        # a row outside any delegate has None (pandas would make it NaN beside strings)
        backend = frame["delegate_backend"].astype(object)
        frame["delegate_backend"] = backend.where(backend.notna(), None)
        frame.attrs["unmatched"] = [attrs.asdict(u) for u in self.unmatched]
        return frame

    # ------------------------------------------------------------------ text

    def summary_rows(self) -> list[dict[str, Any]]:
        """Rows without the tensors, JSON-ready (NaN and infinities as text)."""
        out = []
        for row in self.rows:
            out.append(
                {
                    "aot_debug_handle": list(row["aot_debug_handle"]),
                    "aot_ops": row["aot_ops"],
                    "runtime_ops": row["runtime_ops"],
                    "runtime_debug_handle": list(row["runtime_debug_handle"]),
                    "gap": [_json_float(g) for g in row["gap"]],
                    "stacktraces": row["stacktraces"],
                    "delegate_backend": row["delegate_backend"],
                    "delegate_identifiers": row["delegate_identifiers"],
                    "diverged": row["diverged"],
                    "first_divergence": row["first_divergence"],
                    "note": row["note"],
                    "method": row.get("method"),
                    "shape": _shape(row["aot_intermediate_output"]),
                }
            )
        return out

    def write_json(self, stream: IO[str]) -> None:
        document = {
            "distance": self.distance,
            "threshold": self.threshold,
            "higher_is_better": self.higher_is_better,
            "reference_graph": self.reference_graph,
            "rows": self.summary_rows(),
            "unmatched": [attrs.asdict(u) for u in self.unmatched],
        }
        json.dump(document, stream, indent=1, default=str)
        stream.write("\n")

    def write_csv(self, stream: IO[str]) -> None:
        writer = csv.writer(stream, lineterminator="\n")
        header = [
            "aot_debug_handle",
            "aot_ops",
            "runtime_ops",
            "runtime_debug_handle",
            "delegate_backend",
            "delegate_identifiers",
            "gap",
            "diverged",
            "first_divergence",
            "note",
        ]
        writer.writerow(header)
        for row in self.rows:
            writer.writerow(
                [
                    " ".join(map(str, row["aot_debug_handle"])),
                    " ".join(row["aot_ops"]),
                    " ".join(row["runtime_ops"]),
                    " ".join(map(str, row["runtime_debug_handle"])),
                    row["delegate_backend"] or "",
                    " ".join(map(str, row["delegate_identifiers"])),
                    " ".join(format_gap(g) for g in row["gap"]),
                    int(row["diverged"]),
                    int(row["first_divergence"]),
                    row["note"],
                ]
            )

    def format_lines(self) -> list[str]:
        """The aligned text table, a first-divergence line with its source, the unmatched."""
        header = ["handles", "aot_ops", "runtime (identifiers)", self.distance, ""]
        lines_in: list[Sequence[str]] = [header]
        for row in self.rows:
            ids = row["delegate_identifiers"]
            runtime = ", ".join(map(str, ids)) if ids else ", ".join(row["runtime_ops"])
            if len(runtime) > 48:
                runtime = runtime[:47] + "…"
            mark = (
                "<- first divergence"
                if row["first_divergence"]
                else ("diverged" if row["diverged"] else "")
            )
            lines_in.append(
                [
                    ",".join(map(str, row["aot_debug_handle"])),
                    ", ".join(row["aot_ops"]),
                    runtime,
                    " ".join(format_gap(g) for g in row["gap"]),
                    mark,
                ]
            )
        lines = [line.rstrip() for line in align_columns(lines_in, right={3}, rule=True)]
        direction = "below" if self.higher_is_better else "above"
        lines.append("")
        lines.append(
            f"reference graph: {self.reference_graph}; diverged: {self.distance} {direction} "
            f"{self.threshold:g}"
        )
        first = self.first_divergence
        if first is None:
            lines.append("first divergence: none")
        else:
            where = ", ".join(map(str, first["delegate_identifiers"])) or ", ".join(
                first["runtime_ops"]
            )
            backend = f" in {first['delegate_backend']}" if first["delegate_backend"] else ""
            lines.append(
                f"first divergence: {', '.join(first['aot_ops'])} (runtime {where}{backend}), "
                f"{self.distance} = {' '.join(format_gap(g) for g in first['gap'])}"
            )
            source = _source_line(first["stacktraces"])
            if source:
                lines.append(f"  at {source}")
        for item in self.unmatched:
            lines.append(
                f"unmatched {item.side} output: handles {list(item.debug_handles)} "
                f"({', '.join(map(str, item.ops)) or '-'}): {item.reason}"
            )
        return lines

    def write_table(self, stream: IO[str]) -> None:
        stream.write("\n".join(self.format_lines()) + "\n")


def _reference_keeps(row: dict[str, Any]) -> bool:
    """Whether the reference's frame has the row: not without a value on either side, nor
    of a reference output with several values (its comparator skips both)."""
    aot, runtime = row["aot_intermediate_output"], row["runtime_intermediate_output"]
    several = isinstance(aot, (list, tuple)) and len(aot) > 1
    return aot is not None and runtime is not None and not several


def _reference_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row as the reference's frame has it (outputs as torch tensors)."""
    out = {column: row[column] for column in REFERENCE_COLUMNS}
    out["runtime_ops"] = list(row.get("_reference_runtime_ops", row["runtime_ops"]))
    out["gap"] = list(row.get("_reference_gap", row["gap"]))
    out["aot_ops"] = list(row.get("_reference_aot_ops", row["aot_ops"]))
    traces = row["stacktraces"]  # keyed in the order of aot_ops
    out["stacktraces"] = {n: traces[n] for n in out["aot_ops"] if n in traces} or traces
    for column in ("aot_intermediate_output", "runtime_intermediate_output"):
        out[column] = _tensors(row[column])
    return out


def _tensors(value: Any) -> Any:
    """numpy arrays (also inside lists and tuples) as torch tensors; torch imported here."""
    if isinstance(value, (list, tuple)):
        return type(value)(_tensors(v) for v in value)
    if type(value).__module__ == "numpy" and hasattr(value, "shape"):
        import numpy as np
        import torch

        return torch.from_numpy(np.array(value, copy=True))
    return value


def _source_line(stack_traces: dict[str, str | None]) -> str | None:
    """The innermost ``File "...", line N, in f`` frame (and its code) of the first trace."""
    for trace in stack_traces.values():
        if not trace:
            continue
        lines = [line.strip() for line in trace.strip().splitlines()]
        frames = [i for i, line in enumerate(lines) if line.startswith("File ")]
        if not frames:
            return lines[-1] if lines else None
        # the innermost frame of the user's code: skip torch's own modules
        own = [i for i in frames if not _LIBRARY.search(lines[i])]
        i = (own or frames)[-1]
        code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
        return f"{lines[i]}: {code}" if code else lines[i]
    return None


def format_gap(value: float) -> str:
    """A gap as the tables print it."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else format_gap(value)


def _shape(value: object) -> Any:
    if isinstance(value, list):
        return [_shape(v) for v in value]
    shape = getattr(value, "shape", None)
    return None if shape is None else list(shape)
