"""Print the version of a CPU torch wheel offered locally through pip's find-links.

Prints nothing when there is none. Used by ``scripts/install.sh`` so that a machine that
ships a local CPU wheel installs that one instead of the registry's CUDA build.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_WHEEL = re.compile(r"^torch-(?P<version>[^-]+)-(?P<py>cp\d+)-[^-]+-[^-]+\.whl$")


def _find_links() -> list[str]:
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith("find-links"):
            links.extend(value.strip().strip("'\"").split())
    return links


def main() -> int:
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for link in _find_links():
        folder = Path(link.removeprefix("file://"))
        if not folder.is_dir():
            continue
        for wheel in sorted(folder.glob("torch-*.whl")):
            match = _WHEEL.match(wheel.name)
            if match and match["py"] == tag:
                print(match["version"].split("+")[0])
                return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
