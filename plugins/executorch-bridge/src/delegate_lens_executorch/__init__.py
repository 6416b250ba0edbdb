"""delegate-lens on real ExecuTorch (the ``executorch`` extra).

The only code of delegate-lens that imports ``executorch``. Public API:

* :func:`check_partitioner` — the conformance suite on a real partitioner (also reached
  through ``delegate_lens.testing.check_backend(partitioner_object)``);
* :func:`profile` — run a real ``.pte`` with ETDump (and debug buffer), get the Inspector;
* :func:`verify_bundled` — run a real bundled program's test cases on the real runtime;
* :func:`generate_etrecord` — our ETRecord writer given real ExecuTorch managers;
* :func:`real_partitioner` — a delegate-lens backend offered to real lowering.

Importing this package imports neither torch nor executorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time each loads on first use
    from delegate_lens_executorch.backend import real_partitioner as real_partitioner
    from delegate_lens_executorch.conformance import check_partitioner as check_partitioner
    from delegate_lens_executorch.etrecord import generate_etrecord as generate_etrecord
    from delegate_lens_executorch.profiling import profile as profile
    from delegate_lens_executorch.verify import verify_bundled as verify_bundled

__all__ = [
    "check_partitioner",
    "generate_etrecord",
    "profile",
    "real_partitioner",
    "verify_bundled",
]

_LAZY = {
    "check_partitioner": "delegate_lens_executorch.conformance",
    "profile": "delegate_lens_executorch.profiling",
    "verify_bundled": "delegate_lens_executorch.verify",
    "generate_etrecord": "delegate_lens_executorch.etrecord",
    "real_partitioner": "delegate_lens_executorch.backend",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'delegate_lens_executorch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
