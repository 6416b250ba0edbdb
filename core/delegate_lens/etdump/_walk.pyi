"""Types of the compiled walk (``_walk.pyx``)."""

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
    batch: int = 262144,
) -> dict[str, Any] | None: ...
