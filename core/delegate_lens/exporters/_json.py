"""The ``json`` export (a contract): ``{"blocks": [{"name", "bundled_input_index", "events":
[...]}]}`` with one object per row.

Samples of ordinary rows are whole ticks divided by a power of ten (ns -> ms: 1e6): they
are written as the exact decimal ``ticks / 10**k``, which parses to the very float the
Inspector holds, with numpy (digits made column-wise in a fixed-width byte matrix, the
padding then removed) instead of one Python ``repr`` per sample. Other numbers use
``repr``.
"""

from __future__ import annotations

import json
import math
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from delegate_lens.exporters._rows import JsonBlock, JsonInput

_EXACT_LIMIT = 1 << 53  # ticks beyond this are not exact as float64
_CHUNK = 4096  # rows written at once


def format_decimals(ticks: npt.NDArray[np.uint64], places: int) -> list[str]:
    """Each row of ``ticks`` as ``"a,b,..."`` with ``a = tick / 10**places`` written
    exactly (``123012`` with 6 places: ``0.123012``; trailing zeros dropped, one digit kept
    after the point)."""
    rows, cols = ticks.shape
    if rows == 0 or cols == 0:
        return [""] * rows
    scale = np.uint64(10**places)
    whole = ticks // scale
    frac = ticks % scale
    width = max(1, len(str(int(whole.max()))))
    frac_width = places if places > 0 else 1
    cell = width + 1 + frac_width + 1  # digits '.' fraction ','
    chars = np.full((rows, cols, cell), ord(" "), dtype=np.uint8)
    rest = whole.copy()
    for pos in range(width - 1, -1, -1):
        digit = (rest % np.uint64(10)).astype(np.uint8) + ord("0")
        if pos == width - 1:
            chars[:, :, pos] = digit
        else:
            chars[:, :, pos] = np.where(rest > 0, digit, ord(" "))
        rest //= np.uint64(10)
    chars[:, :, width] = ord(".")
    if places > 0:
        rest = frac.copy()
        trailing = np.ones((rows, cols), dtype=bool)  # still in the trailing zeros
        for pos in range(width + places, width, -1):
            digit = (rest % np.uint64(10)).astype(np.uint8)
            rest //= np.uint64(10)
            if pos > width + 1:  # keep one digit after the point
                trailing &= digit == 0
                chars[:, :, pos] = np.where(trailing, ord(" "), digit + ord("0"))
            else:
                chars[:, :, pos] = digit + ord("0")
    else:
        chars[:, :, width + 1] = ord("0")
    chars[:, :, cell - 1] = ord(",")
    flat = chars.reshape(rows, cols * cell)
    # padding and blanked zeros go: bytes.replace runs at memory speed
    return [
        flat[r, : cols * cell - 1].tobytes().replace(b" ", b"").decode("ascii") for r in range(rows)
    ]


def value_to_json(value: object) -> Any:
    """A debug value as JSON: tensors as ``{"dtype", "shape", "values"}``."""
    if isinstance(value, np.ndarray):
        values = value
        if value.dtype.kind in "fc" and not np.isfinite(value).all():
            # JSON has no NaN/inf: those elements become null
            values = value.astype(object)
            values[~np.isfinite(value)] = None
        return {"dtype": str(value.dtype), "shape": list(value.shape), "values": values.tolist()}
    if isinstance(value, list):
        return [value_to_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _num(value: float) -> str:
    return "null" if math.isnan(value) or math.isinf(value) else repr(float(value))


def _default(value: object) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value_to_json(value)
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def _finite(value: object) -> Any:
    """``value`` with every NaN/inf float replaced by None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, default=_default, allow_nan=False)
    except ValueError:  # a NaN or infinity somewhere (e.g. in parsed metadata)
        return json.dumps(_finite(json.loads(json.dumps(value, default=_default))))


def _raw_texts(block: JsonBlock) -> dict[int, str]:
    """Row -> the text inside ``"raw": [...]`` for the rows whose samples are exact
    decimals (the others': :func:`_raw_text`)."""
    out: dict[int, str] = {}
    places = block.places
    exact_rows = np.flatnonzero(block.exact)
    if places is not None and block.ticks is not None and len(exact_rows):
        ticks = block.ticks[exact_rows]
        if int(ticks.max(initial=0)) < _EXACT_LIMIT:
            for row, text in zip(exact_rows, format_decimals(ticks, places)):
                out[int(row)] = text
    return out


def _raw_text(block: JsonBlock, raws: dict[int, str], row: int) -> str:
    """The text inside ``"raw": [...]`` of ``row`` (a row with samples)."""
    text = raws.get(row)
    if text is None:
        text = ", ".join(_num(v) for v in block.samples[row].tolist())
    return text


def write_json(data: JsonInput, stream: IO[str]) -> None:
    """Write the contract JSON of ``data`` (see the module docstring)."""
    source = _dumps(data.source_time_scale)
    target = _dumps(data.target_time_scale)
    stream.write(f'{{"source_time_scale": {source}, "target_time_scale": {target}, "blocks": [')
    for b, block in enumerate(data.blocks):
        if b:
            stream.write(", ")
        head = {
            "name": block.name,
            "bundled_input_index": block.bundled_input_index,
            "method": block.method,
            "runs": list(block.runs),
        }
        stream.write(_dumps(head)[:-1] + ', "events": [')
        raws = _raw_texts(block)
        parts: list[str] = []
        first = True
        for row in block.rows:
            if len(parts) == _CHUNK:  # written as it goes: no text of the whole block
                stream.write(("" if first else ", ") + ", ".join(parts))
                parts.clear()
                first = False
            if row.stats is not None:
                p10, p50, p90, avg, low, high = (_num(v) for v in row.stats.as_tuple())
                perf = (
                    f'{{"raw": [{_raw_text(block, raws, row.row)}], "p10": {p10}, "p50": {p50}, "p90": {p90}, '
                    f'"avg": {avg}, "min": {low}, "max": {high}}}'
                )
            else:
                perf = "null"
            fields = {
                "instruction_id": None if row.instruction_id < 0 else row.instruction_id,
                "op_types": row.op_types,
                "debug_handles": row.debug_handles,
                "delegate_debug_identifier": row.identifier,
                "is_delegated_op": row.identifier is not None,
                "delegate_backend_name": row.delegate_backend_name,
                "module_hierarchy": row.module_hierarchy,
                "stack_traces": row.stack_traces,
                "debug_data": list(row.debug_data),
                "delegate_debug_metadatas": row.metadata,
            }
            rest = _dumps(fields)[1:]  # drop the opening brace
            parts.append(f'{{"name": {_dumps(row.event_name)}, "perf_data": {perf}, {rest}')
        if parts:
            stream.write(("" if first else ", ") + ", ".join(parts))
        stream.write("]}")
    stream.write("]}\n")
