"""Run mypy on delegate-lens as it is imported (``delegate_lens``), plus the plugins.

The source folders are mapped onto the import package (core/ -> delegate_lens, …), which
mypy cannot follow through an editable install. This stages a tree of symlinks named as
the import package under ``build/typecheck``, runs mypy there and prints errors with the
real source paths.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "typecheck"
MAPPING = {
    "core": Path("delegate_lens"),
    "runtime_stub": Path("delegate_lens/runtime"),
    "backends_demo": Path("delegate_lens/backends_demo"),
}


def stage() -> dict[str, str]:
    shutil.rmtree(STAGE, ignore_errors=True)
    back: dict[str, str] = {}
    for folder, target in MAPPING.items():
        for source in sorted((ROOT / folder).rglob("*")):
            if source.suffix not in {".py", ".pyi", ".typed"} or "__pycache__" in source.parts:
                continue
            staged = STAGE / target / source.relative_to(ROOT / folder)
            staged.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(source, staged)
            back[str(staged.relative_to(ROOT))] = str(source.relative_to(ROOT))
    return back


def main() -> int:
    back = stage()
    plugin_packages = sorted(
        p for p in ROOT.glob("plugins/*/src/*") if (p / "__init__.py").is_file()
    )
    search = [str(STAGE), *(str(p.parent) for p in plugin_packages)]
    env = dict(os.environ, MYPYPATH=os.pathsep.join(search))
    cmd = [sys.executable, "-m", "mypy", "-p", "delegate_lens"]
    for package in plugin_packages:
        cmd += ["-p", package.name]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    for line in (proc.stdout + proc.stderr).splitlines():
        for staged, source in back.items():
            if line.startswith(staged):
                line = source + line[len(staged) :]
                break
        print(line)
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
