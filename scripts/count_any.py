"""How much of delegate_lens's annotations say ``Any`` (issue 21: under 5% of parameters).

Counts, over every function (and lambda-free method) in ``core/delegate_lens``, the
parameters other than ``self``/``cls`` (positional-only, ordinary, ``*args``, keyword-only,
``**kwargs``) and the return annotations; a parameter or return counts as ``Any`` when its
annotation mentions the name ``Any`` (``Any``, ``Any | None``, ``dict[str, Any]``, ...).
Unannotated parameters count in the total, not as ``Any``.

Usage: ``python scripts/count_any.py [--top N] [PATH]``
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "core" / "delegate_lens"


def _mentions_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return "Any" in annotation.value
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
    return False


def count(path: Path) -> tuple[int, int, int, int]:
    """``(parameters, Any parameters, returns, Any returns)`` of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    params = any_params = returns = any_returns = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        every = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        every += [x for x in (a.vararg, a.kwarg) if x is not None]
        for arg in every:
            if arg.arg in ("self", "cls"):
                continue
            params += 1
            any_params += _mentions_any(arg.annotation)
        returns += 1
        any_returns += _mentions_any(node.returns)
    return params, any_params, returns, any_returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=ROOT)
    parser.add_argument("--top", type=int, default=10, help="modules with the most Any")
    args = parser.parse_args()
    totals = [0, 0, 0, 0]
    per_module: Counter[str] = Counter()
    for file in sorted(args.path.rglob("*.py")):
        figures = count(file)
        totals = [t + f for t, f in zip(totals, figures, strict=True)]
        if figures[1]:
            per_module[str(file.relative_to(args.path))] = figures[1]
    params, any_params, returns, any_returns = totals
    print(f"parameters: {any_params}/{params} Any ({100 * any_params / max(params, 1):.1f}%)")
    print(f"returns:    {any_returns}/{returns} Any ({100 * any_returns / max(returns, 1):.1f}%)")
    if args.top:
        print(f"modules with the most Any parameters (top {args.top}):")
        for name, n in per_module.most_common(args.top):
            print(f"  {n:4d}  {name}")


if __name__ == "__main__":
    main()
