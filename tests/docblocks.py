"""Running the code blocks of docs/*.md: the docs' examples are tests."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent / "docs"
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)


def blocks(doc: Path, language: str = "python") -> list[tuple[int, str]]:
    """``(first line number, source)`` of each ```language block of ``doc``, in order."""
    text = doc.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match.group(2))
        for match in _FENCE.finditer(text)
        if match.group(1) == language
    ]


def exec_blocks(doc: Path, name: str) -> dict[str, Any]:
    """Run every python block of ``doc`` in this process, in order, in one namespace."""
    namespace: dict[str, Any] = {"__name__": name}
    for line, source in blocks(doc):
        exec(compile(source, f"{doc}:{line}", "exec"), namespace)
    return namespace


def run_blocks_torch_free(
    doc: Path, name: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run every python block of ``doc`` in a fresh interpreter (in order, one namespace)
    in ``cwd``, then check the examples did not import torch. ``env`` entries are set in
    ``os.environ`` first."""
    script = "\n".join(
        f"exec(compile({source!r}, {f'{doc}:{line}'!r}, 'exec'), ns)"
        for line, source in blocks(doc)
    )
    code = (
        "import os, sys\n"
        f"os.environ.update({dict(env or {})!r})\n"
        f"ns = {{'__name__': {name!r}}}\n"
        f"{script}\n"
        "assert 'torch' not in sys.modules, 'the examples imported torch'\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _last_digit(shown: str) -> float:
    """One unit in the last digit ``shown`` prints (``3.13e-09`` -> ``1e-11``)."""
    mantissa, _, exponent = shown.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return float(10 ** (int(exponent or 0) - decimals))


def same_output(actual: str, expected: str) -> bool:
    """``actual`` is the output ``expected`` shows, except that a decimal number may differ
    by one unit in its last shown digit: rounding on another CPU or maths library (a SIMD
    ``exp``, another BLAS) can tip it. Words, integers and layout must be the same."""
    if _NUMBER.split(actual) != _NUMBER.split(expected):
        return False
    pairs = zip(_NUMBER.findall(actual), _NUMBER.findall(expected), strict=True)
    for got, shown in pairs:
        if got == shown:
            continue
        if not re.search(r"[.eE]", shown) or not re.search(r"[.eE]", got):
            return False  # an integer (a count, an index) is exact
        if _last_digit(got) != _last_digit(shown) and "e" not in shown.lower():
            return False  # printed to other decimals: another format, not rounding
        if abs(float(got) - float(shown)) > _last_digit(shown) * 1.000001:
            return False
    return True
