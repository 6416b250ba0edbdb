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
    "delegate_lens.backends_demo.plugin",
)
"""Modules registered as built-in plugins, in registration order."""

BUILTIN_NAMES: dict[str, str] = {"delegate_lens.backends_demo.plugin": "demo_backend"}
"""Built-ins registered under a name other than their module name (the demo backend ships
in the package: it stays available with ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD`` set and
is blocked with ``-p no:demo_backend``)."""
