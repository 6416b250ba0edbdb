"""``delegate-lens plugins``: every plugin with its distribution, version and hooks."""

from __future__ import annotations

import argparse
import json
import shutil
import textwrap


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plugins",
        help="list the loaded plugins and the hooks they implement",
        description=(
            "List every plugin (built-in, found through entry points of group "
            "'delegate_lens', or given with -p) with its distribution, version and hooks."
        ),
    )
    parser.add_argument(
        "--format",
        "-f",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from delegate_lens.fileio import standard_output
    from delegate_lens.pluginmanager import BUILTIN_PLUGINS, get_plugin_manager, list_plugins

    out = standard_output()
    pm = get_plugin_manager()
    rows = list_plugins(pm)
    if args.format == "json":
        print(
            json.dumps(
                [
                    {
                        "name": row.name,
                        "kind": row.source.kind,
                        "distribution": row.source.distribution,
                        "version": row.source.version,
                        "hooks": list(row.hooks),
                    }
                    for row in rows
                ],
                indent=2,
            ),
            file=out,
        )
        return 0
    # built-ins show their short name (what -p no:NAME takes), as pytest lists its own
    short = {module: module.rsplit(".", 1)[-1] for module in BUILTIN_PLUGINS}
    table = [("PLUGIN", "DISTRIBUTION", "VERSION", "HOOKS")]
    for row in rows:
        builtin = row.source.kind == "built-in"
        name = short.get(row.name, row.name) if builtin else row.name
        version = "-" if builtin else (row.source.version or "?")
        table.append((name, row.distribution_label, version, ", ".join(row.hooks) or "-"))
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    indent = sum(widths) + 2 * len(widths)
    # the hooks column wraps at the terminal's width (100 when not a terminal)
    room = max(shutil.get_terminal_size((100, 24)).columns - indent, 30)
    for line in table:
        cells = [cell.ljust(width) for cell, width in zip(line, widths)]
        hooks = textwrap.wrap(line[3], room, break_long_words=False, break_on_hyphens=False)
        print("  ".join([*cells, hooks[0]]).rstrip(), file=out)
        for more in hooks[1:]:
            print(" " * indent + more, file=out)
    unknown = set(getattr(pm, "unknown_blocked", ()))
    blocked = sorted(name for name, plugin in pm.list_name_plugin() if plugin is None)
    if blocked:
        labels = sorted(
            f"{name} (no plugin of that name)" if name in unknown else short.get(name, name)
            for name in blocked
        )
        print(f"blocked: {', '.join(labels)}", file=out)
    return 0
