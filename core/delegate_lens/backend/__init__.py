"""The backend-author API: what a delegate backend is written with, torch-free.

* :class:`CompileSpec`, :class:`PreprocessResult`, :class:`BackendDetails` — a backend's
  ahead-of-time side (``preprocess`` compiles a partition into a blob);
* :class:`Partitioner`, :class:`PartitionResult`, :class:`DelegationSpec` — choosing the
  nodes a backend takes;
* :class:`DelegateMappingBuilder` — the Debug Handle Map (delegate debug identifier ->
  debug handles) returned in ``PreprocessResult``; :func:`partition_handles`.

Every name is also on the root face (``delegate_lens.CompileSpec``, ...). See
``docs/backend-authors.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names

if TYPE_CHECKING:
    from delegate_lens.backend._details import (
        BackendDetails,
        BackendPlugin,
        CompileSpec,
        PreprocessResult,
        backend_plugin,
    )
    from delegate_lens.backend._mapping import (
        INT_IDENTIFIER_MAX,
        DelegateMap,
        DelegateMappingBuilder,
        Identifier,
        as_int,
        is_iterable,
        partition_handles,
    )
    from delegate_lens.backend._partitioner import (
        DELEGATION_TAG,
        DelegationSpec,
        Partitioner,
        PartitionResult,
    )

# Names load their module on first use (PEP 562): the built-in mapping validator, which
# every plugin manager loads, needs the mapping helpers, not the backend classes.
_HOME = {
    "BackendDetails": "_details",
    "BackendPlugin": "_details",
    "CompileSpec": "_details",
    "PreprocessResult": "_details",
    "backend_plugin": "_details",
    "INT_IDENTIFIER_MAX": "_mapping",
    "DelegateMap": "_mapping",
    "DelegateMappingBuilder": "_mapping",
    "Identifier": "_mapping",
    "as_int": "_mapping",
    "is_iterable": "_mapping",
    "partition_handles": "_mapping",
    "DELEGATION_TAG": "_partitioner",
    "DelegationSpec": "_partitioner",
    "Partitioner": "_partitioner",
    "PartitionResult": "_partitioner",
}

__all__ = [
    "DELEGATION_TAG",
    "INT_IDENTIFIER_MAX",
    "BackendDetails",
    "BackendPlugin",
    "CompileSpec",
    "DelegateMap",
    "DelegateMappingBuilder",
    "DelegationSpec",
    "Identifier",
    "PartitionResult",
    "Partitioner",
    "PreprocessResult",
    "as_int",
    "backend_plugin",
    "is_iterable",
    "partition_handles",
]


__getattr__, __dir__ = lazy_names(
    __name__, {name: f"{__name__}.{home}" for name, home in _HOME.items()}, __all__
)
