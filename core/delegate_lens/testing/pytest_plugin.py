"""The pytest plugin (entry point ``pytest11``: ``delegate_lens``).

Off unless asked: ``pytest --delegate-lens-backend=NAME`` adds one test per conformance
rule, ``test_conformance[NAME-RULE]``, all fed by one :func:`check_backend` run. The
fixtures ``dl_plugin_manager``, ``dl_lower`` and ``dl_run_traced`` are there for authors'
own tests. pytest loads this module in every run: importing it loads nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pluggy
    import torch
    from _pytest._code.code import TracebackStyle

    from delegate_lens.aot import ProgramManager
    from delegate_lens.backend import CompileSpec
    from delegate_lens.testing._harness import TracedRun
    from delegate_lens.testing._report import ConformanceReport, Finding

_OPTION = "--delegate-lens-backend"
_REAL_OPTION = "--delegate-lens-executorch-partitioner"
_REPORT_KEY = pytest.StashKey["dict[str, ConformanceReport]"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("delegate-lens", "delegate-lens backend conformance")
    group.addoption(
        _OPTION,
        action="append",
        default=[],
        metavar="NAME",
        help="run delegate-lens's conformance suite on backend NAME (one test per rule)",
    )
    group.addoption(
        "--delegate-lens-max-examples",
        type=int,
        default=None,
        metavar="N",
        help="models generated per backend (default: check_backend's)",
    )
    group.addoption(
        "--delegate-lens-plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="load a delegate-lens plugin module first (as delegate-lens -p MODULE)",
    )
    group.addoption(
        "--delegate-lens-seed", type=int, default=0, metavar="S", help="hypothesis seed"
    )
    group.addoption(
        _REAL_OPTION,
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="run the conformance suite on a real ExecuTorch partitioner (executorch extra)",
    )


def pytest_configure(config: pytest.Config) -> None:
    plugins: list[str] = config.getoption("--delegate-lens-plugin")
    if plugins:  # before any test, so fixtures see them too
        from delegate_lens.pluginmanager import apply_plugin_options

        apply_plugin_options(plugins)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    _add_real_items(session, config, items)
    backends: list[str] = config.getoption(_OPTION)
    if not backends:
        return
    from delegate_lens.testing import registered_rules

    rules = list(registered_rules())
    for backend in backends:
        collector = _Conformance.from_parent(session, name=f"delegate-lens[{backend}]")
        items.extend(
            _RuleItem.from_parent(
                collector, name=f"test_conformance[{backend}-{rule}]", backend=backend, rule=rule
            )
            for rule in rules
        )


class _Conformance(pytest.Collector):
    def collect(self) -> list[pytest.Item]:  # items are made by pytest_collection_modifyitems
        return []


class _RuleItem(pytest.Item):
    def __init__(self, *, backend: str, rule: str, name: str, parent: pytest.Collector) -> None:
        super().__init__(name=name, parent=parent)
        self.backend, self.rule = backend, rule

    def runtest(self) -> None:
        report = _report(self.config, self.backend)
        if self.rule in report.skipped:
            why = report.skip_reasons.get(self.rule) or f"not applicable to {self.backend}"
            pytest.skip(f"{self.rule}: {why}")
        found = report.findings_for(self.rule)
        if found:
            raise _RuleFailed(found)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str:
        if isinstance(excinfo.value, _RuleFailed):
            lines = [f"{self.backend} breaks {self.rule}:"]
            for f in excinfo.value.findings:
                lines += [f"  {f.message} [{f.subject}]", f"    model {f.model} (seed {f.seed})"]
                lines += ["    | " + line for line in f.source.splitlines()]
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "delegate-lens", None, self.name


class _RuleFailed(Exception):
    def __init__(self, findings: Sequence[Finding]) -> None:
        super().__init__(f"{len(findings)} finding(s)")
        self.findings = findings


def _report(config: pytest.Config, backend: str) -> ConformanceReport:
    reports = config.stash.setdefault(_REPORT_KEY, {})
    if backend not in reports:
        from delegate_lens.testing import check_backend

        kwargs: dict[str, Any] = {"seed": config.getoption("--delegate-lens-seed")}
        max_examples = config.getoption("--delegate-lens-max-examples")
        if max_examples is not None:
            kwargs["max_examples"] = max_examples
        if backend in config.getoption(_REAL_OPTION):  # a real partitioner's spec
            from delegate_lens._bridge import executorch_bridge

            reports[backend] = executorch_bridge(_REAL_OPTION).check_backend(backend, **kwargs)
        else:
            reports[backend] = check_backend(backend, **kwargs)
    return reports[backend]


def _add_real_items(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """``--delegate-lens-executorch-partitioner MODULE:NAME``: one test per rule of the
    bridge's suite, fed by one run on real ExecuTorch (the report is kept under the spec)."""
    specs: list[str] = config.getoption(_REAL_OPTION)
    if not specs:
        return
    from delegate_lens._bridge import executorch_bridge

    try:
        rules = executorch_bridge(_REAL_OPTION).rules
    except Exception as exc:
        raise pytest.UsageError(str(exc)) from None
    for spec in specs:
        collector = _Conformance.from_parent(session, name=f"delegate-lens[{spec}]")
        items.extend(
            _RuleItem.from_parent(
                collector, name=f"test_conformance[{spec}-{rule}]", backend=spec, rule=rule
            )
            for rule in rules
        )


def _backend_of(request: pytest.FixtureRequest) -> str | None:
    backends: list[str] = request.config.getoption(_OPTION)
    return backends[0] if backends else None


@pytest.fixture
def dl_plugin_manager() -> Iterator[pluggy.PluginManager]:
    """A fresh delegate-lens plugin manager (installed plugins loaded); register test
    plugins on it with ``.register(plugin)``. Reset again after the test."""
    from delegate_lens.pluginmanager import get_plugin_manager, reset_plugin_manager

    reset_plugin_manager()
    yield get_plugin_manager()
    reset_plugin_manager()


@pytest.fixture
def dl_lower(request: pytest.FixtureRequest) -> Callable[..., ProgramManager]:
    """``dl_lower(model, inputs=None, *, backend=None, compile_specs=())`` -> ProgramManager;
    ``backend`` defaults to the ``--delegate-lens-backend`` given."""
    from delegate_lens.testing._harness import lower

    def run(
        model: torch.nn.Module,
        inputs: Sequence[object] | None = None,
        *,
        backend: str | None = None,
        compile_specs: Sequence[CompileSpec] = (),
    ) -> ProgramManager:
        name = backend or _backend_of(request)
        if name is None:
            raise pytest.UsageError("dl_lower: pass backend= or run with --delegate-lens-backend")
        return lower(name, model, inputs, compile_specs=compile_specs)

    return run


@pytest.fixture
def dl_run_traced() -> Callable[..., TracedRun]:
    """``dl_run_traced(program, inputs, *, runs=1)`` -> TracedRun (outputs, etdump_data,
    etdump, debug_buffer)."""
    from delegate_lens.testing._harness import run_traced

    return run_traced
