"""The reference demo backend (``DemoBackend``), registered by entry point like any plugin.

Built only on public API, so it doubles as the worked example of
``docs/backend-authors.md``:

* :mod:`~delegate_lens.backends_demo._partitioner` — :class:`DemoPartitioner`;
* :mod:`~delegate_lens.backends_demo._preprocess` — compile a partition, build the Debug
  Handle Map (fusion and decomposition);
* :mod:`~delegate_lens.backends_demo._blob` — the compiled blob format;
* :mod:`~delegate_lens.backends_demo._runtime` — run it with numpy, log events;
* :mod:`~delegate_lens.backends_demo._metadata` — the events' metadata codec;
* :mod:`~delegate_lens.backends_demo._plugin` — the hooks tying them to delegate-lens.
"""

from __future__ import annotations

from typing import Any

from delegate_lens.backends_demo._backend import BACKEND_ID

__all__ = [
    "BACKEND_ID",
    "DemoPartitioner",
    "decode_metadata",
    "encode_metadata",
    "make_model",
]


def __getattr__(name: str) -> Any:
    if name == "DemoPartitioner":  # imports torch
        from delegate_lens.backends_demo._partitioner import DemoPartitioner

        return DemoPartitioner
    if name == "make_model":  # imports torch
        from delegate_lens.backends_demo._models import make_model

        return make_model
    if name in ("encode_metadata", "decode_metadata"):
        from delegate_lens.backends_demo import _metadata as metadata

        return metadata.encode if name == "encode_metadata" else metadata.parse
    raise AttributeError(f"module 'delegate_lens.backends_demo' has no attribute {name!r}")
