"""`delegate-lens plugins`: placeholder until its issue lands (replace this module)."""

from __future__ import annotations

import argparse
from typing import Any

from delegate_lens.errors import UsageError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("plugins", help="(not built yet)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    raise UsageError("'plugins' is not built yet")
