"""Built-in plugins: delegate-lens's own behaviour, registered on the same hooks as any plugin.

The plugin host (:mod:`delegate_lens.pluginmanager`) imports every module of
:data:`BUILTIN_PLUGINS` and registers it under its module name, before any plugin found
through entry points (so installed plugins are asked first by *firstresult* hooks). A
built-in can be blocked like any plugin, by its module name or its last component, e.g.
``delegate-lens -p no:exporters ...`` (same as ``-p no:delegate_lens.builtins.exporters``).
"""

from __future__ import annotations

BUILTIN_PLUGINS: tuple[str, ...] = (
    "delegate_lens.builtins.mapping_validator",
    "delegate_lens.builtins.exporters",
    "delegate_lens.builtins.comparators",
)
"""Modules registered as built-in plugins, in registration order."""
