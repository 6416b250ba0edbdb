"""Arrow arrays made from their buffers, not with ``pyarrow.array``.

``pyarrow.array`` asks whether its input is a pandas object, and that question imports
pandas when it is installed (about 0.2 s and 40 MB, in every ``collect``). These make the
same arrays from numpy buffers (no copy where numpy's layout is Arrow's) and never ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from types import ModuleType

    import pyarrow


def _validity(
    pa: ModuleType, mask: npt.NDArray[np.bool_] | None
) -> tuple[pyarrow.Buffer | None, int]:
    """(Arrow validity bitmap or None, null count) of ``mask`` (True: null)."""
    if mask is None:
        return None, 0
    nulls = int(np.count_nonzero(mask))
    if not nulls:
        return None, 0
    return pa.py_buffer(np.packbits(~mask, bitorder="little")), nulls


def from_numpy(
    pa: ModuleType,
    values: npt.NDArray[np.generic],
    type: pyarrow.DataType | None = None,
    mask: npt.NDArray[np.bool_] | None = None,
) -> pyarrow.Array:
    """The Arrow array of a 1-D numpy array of numbers or booleans (null where ``mask``),
    of ``type`` (default: numpy's own; it must have the same width)."""
    values = np.ascontiguousarray(values)
    if type is None:
        type = pa.from_numpy_dtype(values.dtype)
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values.astype(np.bool_, copy=False), bitorder="little"))
    else:
        data = pa.py_buffer(values)
    validity, nulls = _validity(pa, mask)
    return pa.Array.from_buffers(type, len(values), [validity, data], null_count=nulls)


def _offsets(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise OverflowError("more than 2 GB of strings in one column")
    return offsets.astype(np.int32)


def _utf8(value: str) -> bytes:
    try:
        return value.encode()
    except UnicodeEncodeError:  # lone surrogates: a file name that is not UTF-8, say
        return value.encode("utf-8", "backslashreplace")


def strings(pa: ModuleType, values: Sequence[str | None]) -> pyarrow.Array:
    """A ``string`` array of ``values`` (None: null). Text that is not valid Unicode
    (lone surrogates, as Python decodes a file name that is not UTF-8) is stored with
    those characters escaped (``\\udcff``), not refused."""
    encoded = [b"" if value is None else _utf8(value) for value in values]
    lengths = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
    mask = np.fromiter((value is None for value in values), bool, count=len(values))
    validity, nulls = _validity(pa, mask)
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [validity, pa.py_buffer(_offsets(lengths)), pa.py_buffer(b"".join(encoded))],
        null_count=nulls,
    )


def _lists(
    pa: ModuleType,
    type: pyarrow.DataType,
    lists: Sequence[Sequence[object] | None],
    child: pyarrow.Array,
) -> pyarrow.Array:
    lengths = np.fromiter((0 if x is None else len(x) for x in lists), np.int64, len(lists))
    mask = np.fromiter((x is None for x in lists), bool, count=len(lists))
    validity, nulls = _validity(pa, mask)
    return pa.Array.from_buffers(
        type,
        len(lists),
        [validity, pa.py_buffer(_offsets(lengths))],
        null_count=nulls,
        children=[child],
    )


def string_lists(pa: ModuleType, lists: Sequence[Sequence[str] | None]) -> pyarrow.Array:
    """A ``list<string>`` array (None: a null list)."""
    child = strings(pa, [s for x in lists if x is not None for s in x])
    return _lists(pa, pa.list_(pa.string()), lists, child)


def int_lists(
    pa: ModuleType, lists: Sequence[Sequence[int] | None], dtype: npt.DTypeLike = np.int32
) -> pyarrow.Array:
    """A list array of ints of numpy ``dtype`` (None: a null list)."""
    flat = np.array([v for x in lists if x is not None for v in x], dtype=dtype)
    child = from_numpy(pa, flat)
    return _lists(pa, pa.list_(child.type), lists, child)


def to_numpy(array: pyarrow.Array, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """A view of a null-free Arrow array of fixed-width numbers as numpy ``dtype`` (its
    width must be the array's), without ``Array.to_numpy`` (which asks about pandas)."""
    if array.null_count:
        raise ValueError("to_numpy: the array has nulls")
    dtype = np.dtype(dtype)
    data = array.buffers()[1]
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)
