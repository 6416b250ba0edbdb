"""The conformance suite's result: :class:`Finding` and :class:`ConformanceReport`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import attrs

from delegate_lens._texttable import align_columns


@attrs.frozen
class Finding:
    """One broken rule on one model: what, where, and how to reproduce it."""

    rule: str
    message: str
    model: str  # the model's repr (rebuilds it)
    subject: str = ""  # the identifier, handle or event concerned
    seed: int | None = None  # hypothesis seed of the run that found it
    example: int | None = None  # the example's number in that run
    source: str = ""  # the model as standalone code

    def __str__(self) -> str:
        where = f" [{self.subject}]" if self.subject else ""
        return f"{self.rule}: {self.message}{where} (model {self.model}, seed {self.seed})"


def _findings(value: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(value)


def _reasons(value: Mapping[str, str]) -> dict[str, str]:
    return dict(value)


@attrs.frozen
class ConformanceReport:
    """What :func:`~delegate_lens.testing.check_backend` found; ``ok`` when nothing."""

    backend_id: str
    rules: tuple[str, ...]
    models_checked: int
    findings: tuple[Finding, ...] = attrs.field(converter=_findings)
    seconds: float = 0.0
    skipped: tuple[str, ...] = ()  # rules not applicable (e.g. opaque backends)
    recovered_by: tuple[str, ...] = ()
    """The plugins that supplied Debug Handle Maps recovered from the programs
    (``dl_recover_delegate_map``), for delegates whose preprocess gave none."""
    skip_reasons: Mapping[str, str] = attrs.field(factory=dict, converter=_reasons)
    """Why a skipped rule did not run, by rule (when the harness says; the ExecuTorch
    bridge does for a rule the real runtime gave nothing to check)."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def findings_for(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule == rule]

    @property
    def failed_rules(self) -> list[str]:
        return [r for r in self.rules if self.findings_for(r)]

    def to_dict(self) -> dict[str, object]:
        return {
            "backend": self.backend_id,
            "ok": self.ok,
            "models_checked": self.models_checked,
            "seconds": round(self.seconds, 3),
            "rules": {
                rule: (
                    "skipped"
                    if rule in self.skipped
                    else ("failed" if self.findings_for(rule) else "passed")
                )
                for rule in self.rules
            },
            "findings": [attrs.asdict(f) for f in self.findings],
            **({"recovered_by": list(self.recovered_by)} if self.recovered_by else {}),
            **({"skip_reasons": dict(self.skip_reasons)} if self.skip_reasons else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_table(self) -> str:
        rows = [["rule", "status", "findings", "first finding"]]
        for rule in self.rules:
            found = self.findings_for(rule)
            status = "skipped" if rule in self.skipped else ("FAILED" if found else "passed")
            first = f"{found[0].message} [{found[0].subject}]" if found else ""
            if rule in self.skipped:
                first = self.skip_reasons.get(rule, "")
            rows.append([rule, status, str(len(found)), first[:90]])
        lines = align_columns(rows, right=(2,), rule=True)
        verdict = "passed" if self.ok else f"FAILED ({len(self.findings)} finding(s))"
        lines.append(
            f"{self.backend_id}: {verdict}; {self.models_checked} model(s) in {self.seconds:.1f} s"
        )
        if self.recovered_by:
            names = ", ".join(self.recovered_by)
            lines.append(f"Debug Handle Maps recovered from the programs by plugin(s): {names}")
        for f in self.findings:
            lines.append("")
            lines.append(f"{f.rule}: {f.message} [{f.subject}]")
            lines.append(f"  model: {f.model} (hypothesis seed {f.seed}, example {f.example})")
            lines.extend("  | " + line for line in f.source.splitlines())
        return "\n".join(lines)
