"""Built-in plugins: delegate-lens's own behaviour, registered on the same hooks as any plugin.

The plugin host (:mod:`delegate_lens.pluginmanager`) imports every module of
:data:`BUILTIN_PLUGINS` and registers it under its module name, before any plugin found
through entry points (so installed plugins are asked first by *firstresult* hooks). A
built-in can be blocked like any plugin, by its module name or its last component, e.g.
``delegate-lens -p no:exporters ...`` (same as ``-p no:delegate_lens.builtins.exporters``).
A module defining ``make_plugin(pm)`` is registered as the object that function returns
for the manager being built (for a built-in that calls other hooks, e.g. ``tick_clock``).

The Inspector's fallbacks are built-ins asked last (``trylast``), so any installed plugin
wins over them: ``metadata_fallback`` keeps a delegate row's raw metadata bytes when no
``dl_parse_delegate_metadata`` plugin parses them, ``tick_clock`` answers
``dl_delegate_time_scale_array`` with the per-tick ``dl_delegate_time_scale`` plugins, and
``time_scale_fallback`` applies the source/target time-scale factor to a delegate clock no
plugin converts.
"""

from __future__ import annotations

BUILTIN_PLUGINS: tuple[str, ...] = (
    "delegate_lens.builtins.mapping_validator",
    "delegate_lens.builtins.exporters",
    "delegate_lens.builtins.comparators",
    "delegate_lens.builtins.metadata_fallback",
    "delegate_lens.builtins.tick_clock",  # before time_scale_fallback: asked before it
    "delegate_lens.builtins.time_scale_fallback",
    "delegate_lens.builtins.notebook",
    "delegate_lens.backends_demo.plugin",
)
"""Modules registered as built-in plugins, in registration order."""

BUILTIN_NAMES: dict[str, str] = {"delegate_lens.backends_demo.plugin": "demo_backend"}
"""Built-ins registered under a name other than their module name (the demo backend ships
in the package: it stays available with ``DELEGATE_LENS_DISABLE_PLUGIN_AUTOLOAD`` set and
is blocked with ``-p no:demo_backend``)."""
