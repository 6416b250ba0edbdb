"""Built-in plugins: delegate-lens's own behaviour, registered on the same hooks as any plugin.

The plugin host (:mod:`delegate_lens.pluginmanager`) imports every module of its
:data:`~delegate_lens.pluginmanager.BUILTIN_PLUGINS` by name and registers it under its module name, before any plugin found
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
