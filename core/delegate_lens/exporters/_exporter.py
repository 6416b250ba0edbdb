"""The :class:`Exporter` type and :func:`get_exporters`, the registry built on ``dl_exporters``.

A plugin adds formats to ``delegate-lens inspect --format`` by returning
:class:`Exporter` values::

    from delegate_lens import hookimpl
    from delegate_lens.exporters import Exporter

    def write_names(inspector, stream):
        for block in inspector.event_blocks:
            stream.write(f"{block.name}\\n")

    @hookimpl
    def dl_exporters():
        return [Exporter("names", "one event block name per line", write_names)]

:func:`get_exporters` combines the exporters of all plugins (built-ins first, then in
registration order); two with the same name are a :class:`~delegate_lens.errors.PluginError`
naming both plugins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs

from delegate_lens.errors import PluginError

if TYPE_CHECKING:
    import pluggy

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


def _check_name(instance: object, attribute: object, value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(
            f"exporter name {value!r}: use letters, digits and '_.+-' (e.g. 'chrome-trace')"
        )


@attrs.frozen
class Exporter:
    """A named way to write an Inspector's data to a file.

    :param name: what ``--format`` takes, e.g. ``"csv"``.
    :param description: one line shown in help texts.
    :param write: ``write(inspector, stream)``; ``stream`` is a text stream, or a binary
        one when ``binary`` is true.
    :param binary: whether ``write`` expects a binary stream.
    :param folder: whether the exporter writes several files: ``write(inspector, folder)``
        then gets a :class:`pathlib.Path` of an empty folder to write them into (the CLI
        publishes it as ``-o DIR`` only when ``write`` succeeds).
    """

    name: str = attrs.field(validator=_check_name)
    description: str = attrs.field(validator=attrs.validators.instance_of(str))
    write: Callable[[Any, Any], object] = attrs.field(
        validator=attrs.validators.is_callable(), repr=False
    )
    binary: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    folder: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def get_exporters(pm: pluggy.PluginManager | None = None) -> dict[str, Exporter]:
    """Every exporter the plugins of ``pm`` (default: the process's) offer, by name."""
    from delegate_lens import hooks
    from delegate_lens.pluginmanager import describe_plugin

    found: dict[str, Exporter] = {}
    owner: dict[str, str] = {}
    for plugin_name, result in hooks.exporters(pm):
        for exporter in _as_list(result, plugin_name, pm):
            if not isinstance(exporter, Exporter):
                raise PluginError(
                    f"plugin {describe_plugin(plugin_name, pm)} returned "
                    f"{type(exporter).__name__} from dl_exporters; expected "
                    "delegate_lens.exporters.Exporter values"
                )
            if exporter.name in found:
                raise PluginError(
                    f"exporter name {exporter.name!r} is given by two plugins: "
                    f"{describe_plugin(owner[exporter.name], pm)} and "
                    f"{describe_plugin(plugin_name, pm)}"
                )
            found[exporter.name] = exporter
            owner[exporter.name] = plugin_name
    return found


def _as_list(result: object, plugin_name: str, pm: pluggy.PluginManager | None) -> list[Any]:
    if isinstance(result, Exporter):
        return [result]
    if isinstance(result, Iterable) and not isinstance(result, (str, bytes)):
        return list(result)
    from delegate_lens.pluginmanager import describe_plugin

    raise PluginError(
        f"plugin {describe_plugin(plugin_name, pm)} returned {type(result).__name__} from "
        "dl_exporters; expected a sequence of Exporter values"
    )
