"""delegate-lens: follow delegate backend events back to the operators they came from.

Importing this package is cheap and never imports torch: public names are resolved on
first use through module ``__getattr__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate_lens._lazy import lazy_names
from delegate_lens.errors import (
    DelegateLensError,
    ETDumpFormatError,
    ETRecordFormatError,
    MappingError,
    PluginError,
)

if TYPE_CHECKING:
    from delegate_lens.hookspecs import hookimpl, hookspec

__version__ = "0.1.0"

# the plugin markers: pluggy is imported by a plugin that uses them, not by every start
_MARKERS = {"hookimpl": "delegate_lens.hookspecs", "hookspec": "delegate_lens.hookspecs"}

# public name -> module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    # plugin host
    "get_plugin_manager": "delegate_lens.pluginmanager",
    # ahead of time: the backend-author API, lowering, the ETRecord
    "DelegateMappingBuilder": "delegate_lens.backend",
    "CompileSpec": "delegate_lens.backend",
    "PreprocessResult": "delegate_lens.backend",
    "BackendDetails": "delegate_lens.backend",
    "Partitioner": "delegate_lens.backend",
    "PartitionResult": "delegate_lens.backend",
    "DelegationSpec": "delegate_lens.backend",
    "to_edge": "delegate_lens.aot._edge",
    "to_edge_transform_and_lower": "delegate_lens.aot._edge",
    "EdgeProgramManager": "delegate_lens.aot._edge",
    "ProgramManager": "delegate_lens.aot._program",
    "ETRecord": "delegate_lens.etrecord",
    "parse_etrecord": "delegate_lens.etrecord",
    "generate_etrecord": "delegate_lens.etrecord",
    "get_delegation_info": "delegate_lens.aot._delegation_info",
    "print_delegated_graph": "delegate_lens.aot._delegation_info",
    # after the run
    "Inspector": "delegate_lens.inspector",
    "TimeScale": "delegate_lens.inspector",
    "EventBlock": "delegate_lens.inspector",
    # the rest of executorch.devtools' names (see docs/migrating.md)
    "BundledProgram": "delegate_lens.bundled_program",
    # real ExecuTorch through the bridge plugin (the executorch extra)
    "profile": "delegate_lens._bridge",
}

__all__ = [
    "DelegateLensError",
    "ETDumpFormatError",
    "ETRecordFormatError",
    "MappingError",
    "PluginError",
    "__version__",
    "hookimpl",
    "hookspec",
    *_LAZY,
]


__getattr__, __dir__ = lazy_names(__name__, {**_MARKERS, **_LAZY}, __all__)
