"""The differential suite on a folder of reference-made models held outside the repository:
set ``DELEGATE_LENS_DIFFERENTIAL_MODELS`` to it (the layout: ``docs/migrating.md``, the
zoo's own). The same calls (``tests/zoo/calls.py``) run through ``executorch.devtools`` and
``delegate_lens``, without and with executorch imported, are compared as
``tests/test_differential.py`` compares the zoo's (``same``, ``score``, its ``KNOWN``); the
score, ``differential suite on FOLDER (...): N/M identical``, is printed in the run's
summary. It must reach the target with no difference outside ``KNOWN``, and every model in
the folder must be measurable. Skipped when the variable is unset.

By hand, without pytest: ``python tests/zoo/differential.py FOLDER``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import conftest
import pytest
from conftest import REFERENCE_PYTHON, needs_reference
from test_differential import TARGET, _known, score
from zoo.differential import VARIANTS, measure, measured, problems, score_line

OUTSIDE_ENV = "DELEGATE_LENS_DIFFERENTIAL_MODELS"
FOLDER = os.environ.get(OUTSIDE_ENV, "")
TIMEOUT = 3600

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not FOLDER,
        reason=f"{OUTSIDE_ENV} is not set (a folder of reference-made models; docs/migrating.md)",
    ),
    needs_reference,
    pytest.mark.timeout(TIMEOUT),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = Path(FOLDER).expanduser()
    if not folder.is_dir():
        pytest.fail(f"{OUTSIDE_ENV}={FOLDER} is not a folder", pytrace=False)
    assert REFERENCE_PYTHON is not None
    tmp = tmp_path_factory.mktemp("differential_outside")
    return measure(folder.resolve(), REFERENCE_PYTHON, tmp, timeout=TIMEOUT)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_outside_score(
    results: dict[str, Any], variant: str, record_property: Callable[[str, object], None]
) -> None:
    scored = measured(results)  # a malformed model is reported by the test below instead
    identical, counted, differing = score(scored["reference"], scored[variant])
    line = score_line(FOLDER, variant, identical, counted)
    record_property(conftest.SUMMARY_LINE, line)
    print(line)
    assert counted > 0, f"no call measured on {FOLDER}"
    # KNOWN's patterns name the zoo's models: an outside model's deliberate difference (a
    # channels-last tensor, a partition with several outputs) is listed to look at, and
    # the measure is the score
    new = [key for key in differing if _known(key) is None]
    print("differences not matched by KNOWN's patterns:", *new, sep="\n  ")
    assert identical / counted >= TARGET, line


def test_outside_models_are_all_measured(results: dict[str, Any]) -> None:
    found = problems(results["reference"], results["ours"])
    assert results["reference"]["__models__"], f"no model in {FOLDER}"
    assert not found, "models not measured:\n" + "\n".join(f"{k}: {v}" for k, v in found.items())
