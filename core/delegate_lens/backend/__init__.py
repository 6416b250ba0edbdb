"""The backend-author API: what a delegate backend is written with, torch-free.

* :class:`CompileSpec`, :class:`PreprocessResult`, :class:`BackendDetails` — a backend's
  ahead-of-time side (``preprocess`` compiles a partition into a blob);
* :class:`Partitioner`, :class:`PartitionResult`, :class:`DelegationSpec` — choosing the
  nodes a backend takes;
* :class:`DelegateMappingBuilder` — the Debug Handle Map (delegate debug identifier ->
  debug handles) returned in ``PreprocessResult``; :func:`partition_handles`;
* :class:`RecoveredDelegateMap` — a Debug Handle Map a ``dl_recover_delegate_map`` plugin
  recovers from a delegate's processed bytes, with reasons for what it could not place
  (:class:`RecoveredMap`: as the Inspector keeps it, with the plugin's name).

Every name is also on the root face (``delegate_lens.CompileSpec``, ...). See
``docs/backend-authors.md``.
"""

from __future__ import annotations

from delegate_lens._lazy import attach_stub

# every name is declared once, in __init__.pyi (the module each loads from on first use)
__getattr__, __dir__ = attach_stub(__name__, __file__)
