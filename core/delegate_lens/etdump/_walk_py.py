"""The Python twin of the ETDump decoder's compiled walk (``_walk.pyx``): the same function,
name and parameters. The selection module (:mod:`delegate_lens.etdump._fastwalk`) takes it
where the extension is not built (no C compiler at install) or ``DELEGATE_LENS_NO_COMPILED``
is on.

In Python the walk is the numpy decoder (:meth:`delegate_lens.etdump._reader._Decoder.numpy_columns`,
the reference the compiled walk is tested against), which makes :class:`DecodedColumns`
directly rather than the walk's arrays: so this :func:`walk` declines every buffer with the
walk's own answer for "not here", None, on which the reader decodes with numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt


def walk(
    data: npt.NDArray[np.uint8] | bytes | bytearray | memoryview,
    roots: npt.NDArray[np.int64],
    lo: npt.NDArray[np.int64],
    hi: npt.NDArray[np.int64],
    release: Callable[[], object] | None = None,
    batch: int = 1 << 18,
) -> dict[str, Any] | None:
    """None: the caller decodes the ETDumps at ``roots`` (file ``k`` spans ``lo[k] ..
    hi[k]`` of ``data``) with numpy, as the compiled walk's None tells it to."""
    return None
