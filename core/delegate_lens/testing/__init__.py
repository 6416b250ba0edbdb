"""A test kit for backend authors: strategies, a conformance suite and a pytest plugin.

* :mod:`delegate_lens.testing.strategies` — hypothesis strategies (debug handles, Debug
  Handle Maps, random models and partitions, ETDump runs, metadata);
* :func:`check_backend` — lower models through a backend's plugins, run them traced, read
  back ETDump + ETRecord and check every registered rule; returns a
  :class:`ConformanceReport`;
* :class:`Rule` — a rule as a registered object (name, what it catches, the mutant kinds
  that prove it, its check); :data:`BUILTIN_RULES` are registered through the
  ``dl_testing_rules`` hook, where a plugin adds its own; :func:`registered_rules` lists
  them all, :data:`RULES` the built-in ones' names and what they catch;
* :mod:`delegate_lens.testing.mutants` — mutant backends made from any backend, and the
  score of the rules on them (``delegate-lens check-backend NAME --mutants``);
* :class:`BackendProfile` — what a backend declares through ``dl_testing_profile``
  (:func:`backend_profile` asks it);
* :class:`ModelCheck`, :class:`Recorder` and the rule checks (:func:`check_maps`,
  :func:`check_outputs`, :func:`check_events`, :func:`check_metadata`,
  :func:`check_etrecord`, :func:`check_links`; or every registered rule at once on a
  :class:`RuleInput`, :func:`check_rules`) — the rules one at a time, for a harness of
  your own (the ExecuTorch bridge runs them on real ExecuTorch's artefacts), with
  :class:`FindingLog` (the findings kept per rule) and :func:`explore_models` (generated
  models, reproducible from a seed);
* :mod:`delegate_lens.testing.pytest_plugin` — ``pytest --delegate-lens-backend=NAME``.

Importing this package is cheap: torch and hypothesis load on first use of what needs them
(install the ``testing`` extra for hypothesis). Guide: ``docs/testing-backends.md``.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "RULES": "delegate_lens.testing._builtin_rules",
    "BUILTIN_RULES": "delegate_lens.testing._builtin_rules",
    "Rule": "delegate_lens.testing._rules",
    "RuleInput": "delegate_lens.testing._rules",
    "Traced": "delegate_lens.testing._rules",
    "registered_rules": "delegate_lens.testing._rules",
    "ConformanceReport": "delegate_lens.testing._report",
    "Finding": "delegate_lens.testing._report",
    "BackendProfile": "delegate_lens.testing._profile",
    "check_backend": "delegate_lens.testing._conformance",
    "check_model": "delegate_lens.testing._conformance",
    "lower": "delegate_lens.testing._harness",
    "run_traced": "delegate_lens.testing._harness",
    "GeneratedModel": "delegate_lens.testing.strategies",
    # the rules one at a time, for a harness of your own (the ExecuTorch bridge's): a
    # ModelCheck collects the findings, a Recorder sees what the backend's hooks return
    "DEFAULT_MAX_EXAMPLES": "delegate_lens.testing._conformance",
    "ModelCheck": "delegate_lens.testing._conformance",
    "Recorder": "delegate_lens.testing._conformance",
    "backend_profile": "delegate_lens.testing._profile",
    "check_maps": "delegate_lens.testing._coverage",
    "check_outputs": "delegate_lens.testing._checks",
    "check_events": "delegate_lens.testing._checks",
    "check_metadata": "delegate_lens.testing._checks",
    "check_etrecord": "delegate_lens.testing._checks",
    "check_links": "delegate_lens.testing._checks",
    "check_rules": "delegate_lens.testing._conformance",
    # what a conformance run shares: the findings kept per rule, the generated models
    "FindingLog": "delegate_lens.testing._explore",
    "explore_models": "delegate_lens.testing._explore",
    "MAX_FINDINGS_PER_RULE": "delegate_lens.testing._explore",
}

__all__ = sorted([*_LAZY, "strategies", "mutants"])  # each name declared once: in _LAZY
_NEED_HYPOTHESIS = ("check_backend", "check_model")  # they generate models


def __getattr__(name: str) -> Any:
    if name in ("strategies", "mutants"):
        _need_hypothesis()
        return importlib.import_module(f"delegate_lens.testing.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'delegate_lens.testing' has no attribute {name!r}")
    if name in _NEED_HYPOTHESIS:
        _need_hypothesis()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _need_hypothesis() -> None:
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        from delegate_lens.errors import MissingExtraError

        raise MissingExtraError(
            "delegate_lens.testing needs hypothesis: pip install 'delegate-lens[testing]'"
        ) from None
