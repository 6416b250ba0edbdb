"""What the Inspector asks about a delegate-logged row: its clock and its metadata.

For each, in this order (the first answer wins):

1. the user's callable given to the :class:`~delegate_lens.inspector.Inspector`
   (``delegate_time_scale_converter``, ``delegate_metadata_parser``), as a plugin asked
   first would be; if it raises, an :class:`InspectorWarning` names it and the row, and the
   row keeps the default (the source/target factor; the raw bytes);
2. the hook, for rows whose backend is known (from the ETRecord's delegate map):
   ``dl_delegate_time_scale_array`` (one call per row; the built-in ``tick_clock`` asks the
   per-tick ``dl_delegate_time_scale`` plugins there) and ``dl_parse_delegate_metadata``.
   Installed plugins answer first; the built-in fallbacks ``time_scale_fallback`` and
   ``metadata_fallback`` answer last. A plugin that raises is named in a
   :class:`~delegate_lens.errors.PluginWarning` with the row, and the next plugin answers
   (:func:`~delegate_lens.hooks.parse_delegate_metadata` and
   :func:`~delegate_lens.hooks.delegate_time_scale_array`: a failing plugin is skipped).

Rows whose backend is not known (no ETRecord) are not given to the hooks: their clock is
scaled by the source/target factor and their metadata kept raw, as the reference does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from delegate_lens.errors import InspectorError
from delegate_lens.inspector._linking import InspectorWarning, RowKey

MetadataParser = Callable[[list[bytes]], Any]
"""``f(raw metadata of one row, one bytes value per sample) -> list[str] | dict``."""
TimeScaleConverter = Callable[[Any, Any], Any]
"""``f(event name, ticks) -> time in the target scale``, called per tick."""
FloatArray = npt.NDArray[np.float64]


def callable_name(obj: object) -> str:
    """How a warning names a user's callable: its qualified name, else its type's."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return str(name) if name else type(obj).__name__


def _warn(message: str) -> None:
    warnings.warn(message, InspectorWarning, stacklevel=4)


@attrs.frozen
class FactorConverter:
    """The default ``delegate_time_scale_converter`` (what ``Event._delegate_time_scale_converter``
    holds when none was given, as the reference's): ticks divided by the source/target
    factor, whatever the event's name."""

    factor: float

    def __call__(self, name: Any, time: Any) -> float:
        return float(time / self.factor)


@attrs.frozen
class DelegateRows:
    """The user's callables and the source/target factor of one Inspector."""

    factor: float
    metadata_parser: MetadataParser | None = None
    time_converter: TimeScaleConverter | None = None

    @property
    def converter(self) -> TimeScaleConverter:
        """The user's ``delegate_time_scale_converter``, or the default one."""
        return self.time_converter or FactorConverter(self.factor)

    def times(
        self,
        backend: str | None,
        key: RowKey,
        start: npt.NDArray[np.uint64],
        end: npt.NDArray[np.uint64],
        where: str,
    ) -> tuple[FloatArray, FloatArray] | None:
        """Start and end of a delegate row's samples in the target scale, or None for the
        default (each divided by the factor; rows without a known backend)."""
        converter = self.time_converter
        if converter is not None:
            try:
                s = np.array([float(converter(key.name, int(t))) for t in start.tolist()])
                e = np.array([float(converter(key.name, int(t))) for t in end.tolist()])
            except Exception as exc:
                _warn(
                    f"delegate_time_scale_converter {callable_name(converter)} failed on row "
                    f"{key.name!r}: {type(exc).__name__}: {exc}; the source/target factor "
                    "is used for it"
                )
                return None
            return s, e
        if backend is None:
            return None
        from delegate_lens import hooks

        ticks = np.concatenate((start, end))
        row = f"row {key.name!r} of {where}"
        values = hooks.delegate_time_scale_array(backend, key.name, ticks, where=row)
        if values is None:
            raise InspectorError(
                f"{where}, row {key.name!r}: no plugin converts the clock of backend "
                f"{backend!r} (dl_delegate_time_scale_array, dl_delegate_time_scale) and "
                "the built-in time_scale_fallback is blocked or failed"
            )
        converted = np.asarray(values, dtype=np.float64)
        converted = converted / self.factor
        n = len(start)
        return converted[:n], converted[n:]

    def parse_metadata(
        self, backend: str | None, key: RowKey, raws: list[bytes], where: str
    ) -> Any:
        """The parsed form of a delegate row's raw metadata (``raws`` itself when nothing
        parses it; ``None`` when the built-in ``metadata_fallback`` is blocked)."""
        if key.identifier is None:
            return raws
        parser = self.metadata_parser
        if parser is not None:
            try:
                return parser(list(raws))
            except Exception as exc:
                _warn(
                    f"delegate_metadata_parser {callable_name(parser)} failed on row "
                    f"{key.name!r} of {where}: {type(exc).__name__}: {exc}; raw bytes kept"
                )
                return raws
        if backend is None:
            return raws
        from delegate_lens import hooks

        return hooks.parse_delegate_metadata(backend, raws, where=f"row {key.name!r} of {where}")
