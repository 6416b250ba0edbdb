"""The reference Inspector package's helper functions: ``compare_results`` and the VGF
neural-statistics metadata parsers (no torch; numpy for the metrics).

* :func:`compare_results` — per output pair, SNR (dB), MSE and cosine similarity in float32,
  rounded to 2 decimals as the reference rounds them (None for a pair that is not two
  tensors), printed (or plotted with matplotlib) and returned by metric name;
* :func:`parse_vgf_neural_statistics_metadata` / ``..._delegate_metadata`` — the JSON
  records (schema ``executorch.vgf.neural_statistics``, version 1) a VGF backend logs as
  delegate metadata, with each base64 blob decoded into ``raw_data``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import MissingExtraError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def _array(value: object) -> npt.NDArray[np.float32] | None:
    import numpy as np

    if isinstance(value, np.ndarray) or type(value).__module__.startswith("torch"):
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        return np.asarray(value, dtype=np.float32)
    return None


def _pairs(
    reference: Sequence[object],
    run: Sequence[object],
    metric: Callable[[npt.NDArray[np.float32], npt.NDArray[np.float32]], float],
) -> list[float | None]:
    out: list[float | None] = []
    for ref_value, value in zip(reference, run):
        a, b = _array(ref_value), _array(value)
        out.append(None if a is None or b is None else round(float(metric(a, b)), 2))
    return out


def _mse(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    import numpy as np

    return float(np.mean(np.square(a - b)))


def _snr(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return float(10 * np.log10(np.mean(np.square(a)) / np.mean(np.square(a - b))))


def _cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    import numpy as np

    if a.shape != b.shape:
        raise ValueError("Input tensors must have the same shape")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sum(a * b) / (np.sqrt(np.sum(a * a)) * np.sqrt(np.sum(b * b))))


_METRICS: dict[str, Callable[[Any, Any], float]] = {
    "snr": _snr,
    "mse": _mse,
    "cosine_similarity": _cosine,
}


def compare_results(
    reference_output: Sequence[object],
    run_output: Sequence[object],
    metrics: list[str] | None = None,
    plot: bool = False,
) -> dict[str, list[float | None]]:
    """``{metric: [value per output pair]}`` for ``snr``, ``mse`` and
    ``cosine_similarity`` (all by default), each printed as the reference prints it, or
    plotted (``plot=True``, needs matplotlib)."""
    results: dict[str, list[float | None]] = {}
    for name, metric in _METRICS.items():
        if metrics is not None and name not in metrics:
            continue
        values = _pairs(reference_output, run_output, metric)
        results[name] = values
        if plot:
            try:
                import matplotlib.pyplot as plt
            except ImportError:
                raise MissingExtraError("compare_results(plot=True) needs matplotlib") from None
            plt.figure()
            plt.plot([v for v in values if v is not None])
            plt.title(name)
            plt.show()
            continue
        print(name)
        print("-" * 20)
        for index, value in enumerate(values):
            print(f"{index:<5}{value:>8.5f}" if value is not None else f"{index:<5}{'None':>8}")
        print("\n")
    return results


# --------------------------------------------------------------------------- VGF metadata

_VGF_SCHEMA = "executorch.vgf.neural_statistics"
_VGF_VERSION = 1
_BLOBS = ("debug_database", "statistics_info", "statistics_memory")


def _as_bytes(metadata: object) -> bytes:
    if isinstance(metadata, (bytes, bytearray)):
        return bytes(metadata)
    if isinstance(metadata, str):
        return metadata.encode("utf-8")
    raise TypeError(f"delegate metadata must be bytes or str, not {type(metadata).__name__}")


def _blob(blob: Mapping[str, object]) -> dict[str, object]:
    out = dict(blob)
    if not out.get("available", False):
        out.setdefault("raw_data", b"")
        return out
    if out.get("encoding") != "base64":
        raise ValueError(
            f"VGF neural statistics blob: unsupported encoding {out.get('encoding')!r}"
        )
    data = out.get("data", "")
    try:
        if not isinstance(data, str | bytes):
            raise TypeError(type(data).__name__)
        out["raw_data"] = base64.b64decode(data, validate=True)
    except (binascii.Error, TypeError) as exc:
        raise ValueError("VGF neural statistics blob: malformed base64 data") from exc
    return out


def parse_vgf_neural_statistics_metadata(metadata: bytes | bytearray | str) -> dict[str, Any]:
    """One VGF neural-statistics record (ValueError when it is not one or is malformed)."""
    payload = json.loads(_as_bytes(metadata).decode("utf-8"))
    if not isinstance(payload, dict) or payload.get("schema") != _VGF_SCHEMA:
        schema = payload.get("schema") if isinstance(payload, dict) else None
        raise ValueError(f"not VGF neural statistics metadata (schema {schema!r})")
    if payload.get("schema_version") != _VGF_VERSION:
        raise ValueError(
            f"VGF neural statistics metadata: unsupported schema version "
            f"{payload.get('schema_version')!r}"
        )
    out = dict(payload)
    segments = []
    for segment in payload.get("segments", []):
        decoded = dict(segment)
        for key in _BLOBS:
            if isinstance(decoded.get(key), dict):
                decoded[key] = _blob(decoded[key])
        segments.append(decoded)
    out["segments"] = segments
    return out


def parse_vgf_neural_statistics_delegate_metadata(
    delegate_metadata_list: Sequence[object],
) -> list[dict[str, Any]]:
    """The VGF records among an event's delegate metadata; other backends' metadata is
    skipped, a VGF record that does not parse is a ValueError."""
    parsed: list[dict[str, Any]] = []
    for metadata in delegate_metadata_list:
        if metadata in (None, b"", ""):
            continue
        try:
            raw = _as_bytes(metadata)
        except TypeError:
            continue
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if _VGF_SCHEMA.encode("utf-8") in raw:
                raise ValueError("malformed VGF neural statistics delegate metadata") from exc
            continue
        if not isinstance(payload, dict) or payload.get("schema") != _VGF_SCHEMA:
            continue
        parsed.append(parse_vgf_neural_statistics_metadata(raw))
    return parsed
