"""The ``delegate-lens`` command line.

Each sub-command lives in its own module ``delegate_lens.cli.<name>_cmd`` exposing
``register(subparsers)``; registering must stay cheap (no torch, no numpy-heavy work), the
handler imports what it needs when it runs. Handlers return the exit status.

Errors of our own type, bad files and bad arguments print one line ``error: …`` on
stderr and exit with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from delegate_lens.cli._terminal import escape_controls
from delegate_lens.errors import DelegateLensError

__all__ = ["escape_controls", "main"]

_COMMAND_MODULES = (
    "demo",
    "inspect",
    "report",
    "etdump",
    "etrecord",
    "plugins",
    "numerics",
    "collect",
    "query",
    "compare",
    "verify",
    "check_backend",
    "profile",
)

EXIT_USAGE = 2

_PLUGIN_HELP = "load a plugin module (-p MODULE) or block a plugin by name (-p no:NAME); repeatable"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {self.prog}: {message}\n")


def command_named(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` runs, when that is clear before parsing: its first word
    that is neither an option nor ``-p``'s value, if it names a command; None otherwise
    (no command, ``-h``, ``--version``, a typo: the full parser answers those)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "-p":
            i += 2
        elif word.startswith("-p"):  # -pMODULE
            i += 1
        elif word.startswith("-"):
            return None
        else:
            module = word.replace("-", "_")
            return word if module in _COMMAND_MODULES and "_" not in word else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser: every sub-command, or only ``command`` (what running it needs:
    the other commands' modules are not imported, nor their arguments built)."""
    parser = _Parser(
        prog="delegate-lens",
        description="Follow delegate backend events back to the model operators they came from.",
    )
    from delegate_lens import __version__

    parser.add_argument("--version", action="version", version=f"delegate-lens {__version__}")
    parser.add_argument(
        "-p",
        dest="plugin_options",
        action="append",
        default=[],
        metavar="PLUGIN",
        help=_PLUGIN_HELP,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    names = _COMMAND_MODULES if command is None else (command.replace("-", "_"),)
    for name in names:
        module = importlib.import_module(f"delegate_lens.cli._{name}_cmd")
        module.register(sub)
    _add_plugin_option_to_subcommands(parser)
    return parser


def _add_plugin_option_to_subcommands(parser: argparse.ArgumentParser, depth: int = 1) -> None:
    """Accept ``-p`` after any (sub-)command too, as pytest accepts it anywhere.

    Each level gets its own ``dest`` (a sub-parser's namespace replaces its parent's
    values of the same name); :func:`_plugin_options` joins them in command-line order.
    """
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for subparser in dict.fromkeys(action.choices.values()):
            if "-p" not in subparser._option_string_actions:
                subparser.add_argument(
                    "-p",
                    dest=f"plugin_options_{depth}",
                    action="append",
                    default=argparse.SUPPRESS,
                    metavar="PLUGIN",
                    help=_PLUGIN_HELP,
                )
            _add_plugin_option_to_subcommands(subparser, depth + 1)


def _plugin_options(args: argparse.Namespace) -> list[str]:
    options = list(args.plugin_options)
    depths = sorted(int(key[15:]) for key in vars(args) if key.startswith("plugin_options_"))
    for depth in depths:
        options.extend(getattr(args, f"plugin_options_{depth}"))
    return options


def _apply_plugin_options(options: Sequence[str]) -> None:
    if not options:
        return
    from delegate_lens.pluginmanager import apply_plugin_options

    pm = apply_plugin_options(options)
    for name in getattr(pm, "unknown_blocked", ()):  # a typo would block nothing, silently
        print(
            f"warning: -p no:{name}: no plugin is called {name!r}; nothing blocked "
            "(delegate-lens plugins lists their names)",
            file=sys.stderr,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (the console script exits with it).

    The command runs with ``sys.stdout`` sent to stderr, so that what plugins print never
    mixes with its output: it writes that to :func:`delegate_lens.fileio.standard_output`.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_named(words))
    args = parser.parse_args(words)
    from delegate_lens.fileio import guard_inputs, plugin_prints_to_stderr

    with plugin_prints_to_stderr() as stdout:
        try:
            args.plugin_options = _plugin_options(args)
            _apply_plugin_options(args.plugin_options)
            with guard_inputs():  # an output that is one of the inputs is refused
                status: int = args.func(args)
        except DelegateLensError as exc:
            _fail(str(exc))
        except BrokenPipeError:
            _silence(stdout)
            return 0
        except (OSError, UnicodeError) as exc:
            _fail(_describe_os_error(exc))
        except KeyboardInterrupt:
            return 130
        try:
            stdout.flush()
        except BrokenPipeError:
            _silence(stdout)
        return status


def _describe_os_error(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or exc.__class__.__name__
        return f"{exc.filename}: {reason}"
    return str(exc) or exc.__class__.__name__


def _silence(stdout: TextIO) -> None:
    """Output was piped into e.g. ``head``: stop quietly, as Unix tools do."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stdout.fileno())


def _fail(message: str) -> NoReturn:
    first_line = message.strip().splitlines()[0] if message.strip() else "failed"
    from delegate_lens.cli._terminal import escape_controls

    print(f"error: {escape_controls(first_line)}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def console_main() -> NoReturn:  # pragma: no cover - thin wrapper
    raise SystemExit(main())
