"""Mutant backends and the mutation score of the test kit's rules.

A mutant is a backend with one planted bug of a known kind (:data:`MUTANT_KINDS`), made
from any backend by wrapping its hooks (no code of the backend changes): its Debug Handle
Map, what its runtime logs, its metadata bytes. :func:`mutation_score` checks each mutant
with every registered rule and reports which rules killed it (found a bug). A mutant no
rule kills is a bug the kit would let through; a rule that kills none of a backend's
mutants is a sign its testing profile is too loose. ``delegate-lens check-backend NAME
--mutants`` prints the same score.

>>> from delegate_lens.testing import mutants
>>> score = mutants.mutation_score("DemoBackend")  # doctest: +SKIP
>>> print(score.to_table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from attrs.validators import in_, instance_of

from delegate_lens.errors import UsageError
from delegate_lens.testing._mutant_plugin import MAP_KINDS, MutantPlugin
from delegate_lens.testing._report import Finding

if TYPE_CHECKING:
    import torch

    from delegate_lens.backend import CompileSpec

__all__ = [
    "MAP_KINDS",
    "MUTANT_KINDS",
    "MutantResult",
    "MutationScore",
    "default_models",
    "mutation_score",
]

MUTANT_KINDS: dict[str, str] = {
    # the Debug Handle Map
    "swap-identifiers": "two per-op identifiers swap their handles",
    "shift-handle": "a per-op identifier's handle moves to the node before it in the partition",
    "drop-handle": "a fused op loses a handle (or, with none fused, an op its entry)",
    "add-outside-handle": "an identifier names a handle outside its partition",
    "preprocess-fails": "preprocess raises",
    # what the runtime logs
    "orphan-identifier": "an op logs under an identifier not in the map",
    "log-under-neighbour": "an op logs under the next op's identifier",
    "log-twice": "an op is logged twice in one call",
    "skip-op": "an op is not logged",
    "wrong-output-tensor": "the last op logs the first op's tensor as its output",
    "log-previous-output": "each op logs the output of the one before it (the first: the input)",
    "events-overlap": "an op's event starts while the op before it still runs",
    "events-outside-call": "an op's event lies outside its delegate call",
    "wrong-time-scale": "the backend's own timestamps are in microseconds, not clock ticks",
    "reversed-times": "an op's event ends before it starts",
    "wrong-final-output": "the delegate returns wrong outputs",
    # metadata
    "metadata-byte-order": "metadata bytes in the wrong byte order (every 4-byte word swapped)",
    "metadata-truncated": "metadata bytes cut in half",
}
"""Every kind of mutant, with the bug it plants (those of :data:`MAP_KINDS` change the
Debug Handle Map, so each lowers the models again; the others share one lowering)."""

_STATUS = ("killed", "survived", "not applicable")


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _results(value: Iterable[MutantResult]) -> tuple[MutantResult, ...]:
    return tuple(value)


def _findings(value: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(value)


@attrs.frozen
class MutantResult:
    """One mutant: whether a rule found it, and which rules did."""

    kind: str = attrs.field(validator=in_(MUTANT_KINDS))
    status: str = attrs.field(validator=in_(_STATUS))
    rules: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    first: str = ""  # the first finding, for the reader
    seconds: float = attrs.field(default=0.0, validator=instance_of(float))


@attrs.frozen
class MutationScore:
    """The mutation score of the registered rules on one backend's mutants.

    :ivar baseline: findings on the backend itself: a backend that is not clean has no
        meaningful score (no mutant is run then).
    """

    backend_id: str
    rules: tuple[str, ...] = attrs.field(converter=_strings)
    results: tuple[MutantResult, ...] = attrs.field(converter=_results)
    baseline: tuple[Finding, ...] = attrs.field(default=(), converter=_findings)
    models: int = 0
    seconds: float = 0.0

    @property
    def applicable(self) -> list[MutantResult]:
        return [r for r in self.results if r.status != "not applicable"]

    @property
    def killed(self) -> list[MutantResult]:
        return [r for r in self.results if r.status == "killed"]

    @property
    def survivors(self) -> list[str]:
        return [r.kind for r in self.results if r.status == "survived"]

    @property
    def score(self) -> float:
        """Killed / applicable mutants (0.0 when none applies)."""
        applicable = self.applicable
        return len(self.killed) / len(applicable) if applicable else 0.0

    @property
    def ok(self) -> bool:
        """A clean baseline and every applicable mutant killed."""
        return not self.baseline and bool(self.applicable) and not self.survivors

    def kills(self) -> dict[str, list[str]]:
        """``{rule: [mutant kinds it killed]}``, every registered rule (empty: none)."""
        out: dict[str, list[str]] = {rule: [] for rule in self.rules}
        for result in self.killed:
            for rule in result.rules:
                out.setdefault(rule, []).append(result.kind)
        return out

    @property
    def idle_rules(self) -> list[str]:
        """The rules that killed no mutant."""
        return [rule for rule, kinds in self.kills().items() if not kinds]

    def to_dict(self) -> dict[str, object]:
        return {
            "backend": self.backend_id,
            "ok": self.ok,
            "score": round(self.score, 4),
            "models": self.models,
            "seconds": round(self.seconds, 3),
            "baseline": [attrs.asdict(f) for f in self.baseline],
            "mutants": {
                r.kind: {"status": r.status, "rules": list(r.rules), "first": r.first}
                for r in self.results
            },
            "rules": self.kills(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_table(self) -> str:
        from delegate_lens._texttable import align_columns

        if self.baseline:
            lines = [f"{self.backend_id}: the backend itself breaks rules; fix these first:"]
            lines += [f"  {f.rule}: {f.message} [{f.subject}]" for f in self.baseline]
            return "\n".join(lines)
        rows = [["mutant", "status", "killed by"]]
        rows += [[r.kind, r.status, ", ".join(r.rules)] for r in self.results]
        lines = align_columns(rows, rule=True)
        lines.append("")
        rows = [["rule", "kills", "mutants"]]
        rows += [[rule, str(len(kinds)), ", ".join(kinds)] for rule, kinds in self.kills().items()]
        lines += align_columns(rows, right=(1,), rule=True)
        applicable = self.applicable
        lines.append(
            f"{self.backend_id}: {len(self.killed)}/{len(applicable)} mutants killed "
            f"({self.score:.0%}); {self.models} model(s) in {self.seconds:.1f} s"
        )
        if self.survivors:
            lines.append("survived (no rule found them): " + ", ".join(self.survivors))
        if self.idle_rules:
            lines.append("rules that killed no mutant: " + ", ".join(self.idle_rules))
        return "\n".join(lines)


def default_models(ops: Sequence[str]) -> list[torch.nn.Module]:
    """One generated model chaining every op of ``ops`` once (binary ops read the value
    before too): a partition with each op, its fusions and decompositions."""
    from delegate_lens.testing.strategies import BINARY_OPS, GeneratedModel

    chain = [
        (name, (i, max(i - 1, 0)) if name in BINARY_OPS else (i,)) for i, name in enumerate(ops)
    ]
    return [GeneratedModel(chain).eval()] if chain else []


def mutation_score(
    backend_id: str,
    *,
    models: Iterable[torch.nn.Module | tuple[torch.nn.Module, Sequence[object]]] | None = None,
    kinds: Iterable[str] | None = None,
    compile_specs: Sequence[CompileSpec] | None = None,
    runs: int = 1,
) -> MutationScore:
    """Make each mutant of ``backend_id`` (``kinds``, default all of :data:`MUTANT_KINDS`)
    and check it with every registered rule on ``models`` (default: :func:`default_models`
    of the backend's profile ops), with ``compile_specs`` (default: the profile's first
    set). A mutant is killed when some model has a finding; models are tried in order
    until one does."""
    from delegate_lens.pluginmanager import get_plugin_manager
    from delegate_lens.testing._conformance import _example_inputs, check_model
    from delegate_lens.testing._profile import backend_profile
    from delegate_lens.testing._rules import registered_rules

    t0 = time.perf_counter()
    chosen = list(MUTANT_KINDS) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in MUTANT_KINDS]
    if unknown:
        raise UsageError(f"unknown mutant kind(s) {unknown}; known: {sorted(MUTANT_KINDS)}")
    profile = backend_profile(backend_id)
    given = list(models) if models is not None else default_models(profile.ops)
    if not given:
        raise UsageError(f"mutation_score({backend_id!r}): no model to check (no ops declared)")
    cases = [m if isinstance(m, tuple) else (m, _example_inputs(m)) for m in given]
    specs = tuple(compile_specs) if compile_specs is not None else profile.compile_specs[0]
    rules = registered_rules()
    kwargs: dict[str, Any] = {
        "compile_specs": specs,
        "profile": profile,
        "runs": runs,
        "rules": rules,
    }
    lowered: dict[Any, Any] = {}
    baseline = [
        f
        for module, inputs in cases
        for f in check_model(backend_id, module, inputs, lowered=lowered, **kwargs)
    ]
    results: list[MutantResult] = []
    if not baseline:
        pm = get_plugin_manager()
        for kind in chosen:
            t1 = time.perf_counter()
            plugin = MutantPlugin(backend_id, kind, profile)
            for _key, (_manager, preprocessed) in lowered.items():
                for program, result in preprocessed:
                    plugin.know(
                        result.processed_bytes,
                        getattr(result, "debug_handle_map", None) or {},
                        _partition(program),
                    )
            pm.register(plugin, name=f"delegate-lens-mutant-{kind}")
            found: list[Finding] = []
            try:
                for module, inputs in cases:
                    found = check_model(
                        backend_id,
                        module,
                        inputs,
                        lowered=None if kind in MAP_KINDS else lowered,
                        **kwargs,
                    )
                    if found:
                        break
            finally:
                pm.unregister(plugin)
            status = "killed" if found else "survived"
            if plugin.applied == 0:
                status = "not applicable"
            killers = tuple(dict.fromkeys(f.rule for f in found))
            first = f"{found[0].rule}: {found[0].message}" if found else ""
            results.append(MutantResult(kind, status, killers, first, time.perf_counter() - t1))
    return MutationScore(
        backend_id, list(rules), results, baseline, len(cases), time.perf_counter() - t0
    )


def _partition(program: Any) -> set[int]:
    from delegate_lens.testing._coverage import partition_handles

    return partition_handles(program)
