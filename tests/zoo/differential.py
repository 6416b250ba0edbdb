"""The differential measure on any folder of reference-made models (the zoo's or your own):

    python tests/zoo/differential.py FOLDER [--reference-python PYTHON] [--keep DIR] [-v]

runs ``calls.py`` on ``FOLDER`` through ``executorch.devtools`` and through ``delegate_lens``
(without and with executorch imported), compares them as ``tests/test_differential.py``
does (``same``, ``score``, its ``KNOWN`` differences; a malformed model's calls left out)
and prints the score line of each,
``differential suite on FOLDER (without executorch imported): N/M identical``, then every
difference (``known`` with its reason, or ``unmatched``), the calls left out as they do not apply
and every malformed model, by name. The folder's layout is ``calls.models``'s (the zoo's:
``tests/zoo/README.md``; ``docs/migrating.md`` says how to make one). Exit status 0 when
both scores reach the target (97%) and no model is malformed, else 1.

``PYTHON`` has the reference installed (default: ``DELEGATE_LENS_REFERENCE_PYTHON``, else
this Python); ``delegate_lens`` must be importable in it too. ``--keep DIR`` keeps the
pickled results (``ref.pkl``, ``ours.pkl``, ``ours_et.pkl``) for
``python tests/test_differential.py DIR/ref.pkl DIR/ours.pkl``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CALLS = HERE / "calls.py"
VARIANTS = {"ours": "without", "ours+executorch": "with"}
"""The delegate-lens runs, by the words of their score line (executorch imported or not)."""


def run_calls(
    python: str, which: str, folder: Path, out: Path, *extra: str, timeout: float | None = None
) -> dict[str, Any]:
    """``calls.py`` on ``folder`` through ``which`` (``executorch``, ``delegate_lens``) in
    ``python``: its results (``calls.py``'s pickle)."""
    proc = subprocess.run(
        [python, str(CALLS), which, str(folder), str(out), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"calls.py {which} on {folder} failed:\n{proc.stderr[-3000:]}")
    return pickle.loads(out.read_bytes())


def measure(
    folder: Path, python: str, tmp: Path, timeout: float | None = None
) -> dict[str, dict[str, Any]]:
    """The results on ``folder``: ``{"reference": ..., "ours": ..., "ours+executorch": ...}``
    (the two first run side by side, as in ``tests/test_differential.py``)."""
    with ThreadPoolExecutor(2) as pool:
        ref = pool.submit(run_calls, python, "executorch", folder, tmp / "ref.pkl", timeout=timeout)
        ours = pool.submit(
            run_calls, python, "delegate_lens", folder, tmp / "ours.pkl", timeout=timeout
        )
        results = {"reference": ref.result(), "ours": ours.result()}
    results["ours+executorch"] = run_calls(
        python,
        "delegate_lens",
        folder,
        tmp / "ours_et.pkl",
        "--import-executorch",
        timeout=timeout,
    )
    return results


def _raises(result: Any) -> str | None:
    """The class name of the exception a canonical result is, else None."""
    return result[1] if isinstance(result, tuple) and result[:1] == ("raises",) else None


def problems(reference: dict[str, Any], ours: dict[str, Any]) -> dict[str, str]:
    """``{model: why}`` for each malformed model: ``calls.py`` said why, or neither library's
    Inspector reads its files. (Where only the reference's fails, as on a program of several
    methods, ours is not held to it: ``score`` leaves such calls out.)"""
    found = dict(reference.get("__malformed__", {}))
    for label in reference.get("__models__", []):
        theirs, mine = (_raises(r.get(f"{label}: Inspector")) for r in (reference, ours))
        if theirs and mine:
            found[label] = f"no Inspector reads it (the reference raises {theirs}, ours {mine})"
    return found


def measured(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``results`` without the calls on malformed models (``problems``): they are reported
    by name, not scored."""
    bad = problems(results["reference"], results["ours"])
    if not bad:
        return results
    pair = results["reference"].get("__pair__") or ()
    mismatched = "Inspector(etdump, etrecord of another model)" if set(pair) & set(bad) else None

    def kept(key: str) -> bool:
        return key != mismatched and key.split(": ", 1)[0] not in bad

    return {run: {k: v for k, v in r.items() if kept(k)} for run, r in results.items()}


def _differential() -> Any:
    """``tests/test_differential.py`` (``same``, ``score``, ``KNOWN``, ``TARGET``)."""
    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    import test_differential

    return test_differential


def score_line(folder: str, variant: str, identical: int, counted: int) -> str:
    target = _differential().TARGET
    rate = identical / counted if counted else 0.0
    return (
        f"differential suite on {folder} ({VARIANTS[variant]} executorch imported): "
        f"{identical}/{counted} identical ({rate:.1%}; target {target:.0%})"
    )


def report(folder: str, results: dict[str, dict[str, Any]], verbose: bool = False) -> bool:
    """Print the scores, differences, left-out calls and malformed models; whether the
    folder passes (the target reached, no malformed model). A difference KNOWN's patterns
    do not match is printed as ``unmatched``: the patterns name the zoo's models, and an
    outside model's deliberate difference (a channels-last tensor, a partition with several
    outputs) is to be looked at, not a failure of its own."""
    differential = _differential()
    reference = results["reference"]
    scored = measured(results)
    passed = True
    for variant in VARIANTS:
        identical, counted, differing = differential.score(scored["reference"], scored[variant])
        print(score_line(folder, variant, identical, counted))
        passed &= bool(counted) and identical / counted >= differential.TARGET
        for key in differing:
            why = differential._known(key)
            if why is None or verbose:
                label = "known" if why else "unmatched"
                print(f"  {label}: {key}" + (f" ({why})" if verbose else ""))
    models = reference.get("__models__", [])
    skipped = reference.get("__skipped__", [])
    bad = problems(reference, results["ours"])
    kept = len([m for m in models if m not in bad])
    print(f"{kept} models measured; {len(skipped)} calls left out (no file to read)")
    for key in skipped if verbose else []:
        print(f"  left out: {key}")
    for label in models:
        failure = _raises(reference.get(f"{label}: Inspector"))
        if failure and label not in bad:
            print(
                f"not counted: {label}: the reference's Inspector raises {failure}; ours reads it"
            )
    for label, why in bad.items():
        print(f"malformed: {label}: {why}")
        passed = False
    return passed


def _reference_python() -> str:
    return os.environ.get("DELEGATE_LENS_REFERENCE_PYTHON") or sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder of reference-made models")
    parser.add_argument("--reference-python", default=_reference_python())
    parser.add_argument("--keep", type=Path, default=None, help="keep the results here")
    parser.add_argument("-v", "--verbose", action="store_true", help="every difference, why")
    args = parser.parse_args(argv)
    folder: Path = args.folder
    if not folder.is_dir():
        parser.error(f"not a folder: {folder}")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        try:
            results = measure(folder.resolve(), args.reference_python, out)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 2
    return 0 if report(str(folder), results, args.verbose) else 1


if __name__ == "__main__":
    sys.exit(main())
