"""``check_backend``: lower models through a backend's plugins, run them traced, read back
ETDump + ETRecord, and check every registered rule (:func:`~delegate_lens.testing.registered_rules`:
the built-in ones and those plugins add on ``dl_testing_rules``).

Needs torch and hypothesis (the ``testing`` extra). A failed check is a
:class:`~delegate_lens.testing._report.Finding`, never an exception; only bad input (an
unknown backend, a broken profile) raises a :class:`~delegate_lens.DelegateLensError`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import MappingError, PluginError, UsageError
from delegate_lens.hookspecs import hookimpl
from delegate_lens.testing._coverage import _as_tuple
from delegate_lens.testing._explore import FindingLog, explore_models
from delegate_lens.testing._profile import BackendProfile, backend_profile
from delegate_lens.testing._report import ConformanceReport, Finding
from delegate_lens.testing._rules import (
    FindingSink,
    Rule,
    RuleInput,
    Stage,
    Traced,
    registered_rules,
    rules_of_stage,
)

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

    from delegate_lens.backend import CompileSpec


DEFAULT_MAX_EXAMPLES = 20


class Recorder:
    """A plugin seeing what the backend's hooks return (registered during a check)."""

    def __init__(self, backend_id: str) -> None:
        self.backend_id = backend_id
        # (partition program, PreprocessResult)
        self.preprocessed: list[tuple[ExportedProgram, object]] = []
        self.encoded: list[tuple[object, bytes]] = []  # (structured metadata, its bytes)

    @hookimpl(wrapper=True)
    def dl_preprocess(
        self, backend_id: str, edge_program: ExportedProgram
    ) -> Generator[None, object, object]:
        result = yield
        if backend_id == self.backend_id and result is not None:
            self.preprocessed.append((edge_program, result))
        return result

    @hookimpl(wrapper=True)
    def dl_encode_delegate_metadata(
        self, backend_id: str, metadata: object
    ) -> Generator[None, object, object]:
        result = yield
        if backend_id == self.backend_id and isinstance(result, bytes):
            self.encoded.append((metadata, result))
        return result


class ModelCheck:
    """One model's check: collects findings tagged with the model's description (what the
    rule checks, ``check_maps`` to ``check_links``, add to)."""

    def __init__(self, model: object, seed: int | None, example: int | None) -> None:
        self.model = model
        self.seed, self.example = seed, example
        self.findings: list[Finding] = []

    def add(self, rule: str, message: str, subject: object = "") -> None:
        source = self.model.to_source() if hasattr(self.model, "to_source") else ""
        self.findings.append(
            Finding(rule, message, repr(self.model), str(subject), self.seed, self.example, source)
        )


def check_rules(
    case: FindingSink,
    subject: RuleInput,
    stage: Stage,
    rules: Mapping[str, Rule] | None = None,
) -> None:
    """Run the checks of stage ``stage`` of ``rules`` (default: every registered rule) that
    apply to ``subject.profile`` on ``subject``, adding their findings to ``case``: what
    :func:`check_model` does after lowering (``"maps"``) and after the traced run
    (``"run"``), for a harness of your own that builds the :class:`RuleInput` itself."""
    for rule in rules_of_stage(registered_rules() if rules is None else rules, stage):
        if rule.applies_to(subject.profile) and rule.check is not None:
            rule.check(case, subject)


def check_model(
    backend_id: str,
    model: torch.nn.Module,
    inputs: Sequence[object],
    *,
    compile_specs: Sequence[CompileSpec] = (),
    profile: BackendProfile | None = None,
    runs: int = 2,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    seed: int | None = None,
    example: int | None = None,
    workdir: str | Path | None = None,
    rules: Mapping[str, Rule] | None = None,
    lowered: dict[Any, Any] | None = None,
) -> list[Finding]:
    """Check every rule (``rules``, default: :func:`registered_rules`) on one ``model`` (a
    ``torch.nn.Module``) with ``inputs``.

    ``lowered``: a dict where a successful lowering is kept by model and compile specs, and
    taken from on the next check of the same ones (the mutation score runs the runtime's
    mutants on one lowering)."""
    import torch

    import delegate_lens as dl
    from delegate_lens import hooks
    from delegate_lens.etdump import loads
    from delegate_lens.pluginmanager import get_plugin_manager
    from delegate_lens.runtime import ETDumpGen, Program

    profile = profile or backend_profile(backend_id)
    rules = registered_rules() if rules is None else rules
    case = ModelCheck(model, seed, example)
    partitioner = hooks.partitioner(backend_id, compile_specs)
    if partitioner is None:
        raise UsageError(f"no plugin gives a partitioner for backend {backend_id!r}")
    pm = get_plugin_manager()
    recorder = Recorder(backend_id)
    pm.register(recorder)

    def subject(traced: Traced | None = None) -> RuleInput:
        partitions = [
            (program, getattr(result, "debug_handle_map", None) or {})
            for program, result in recorder.preprocessed
        ]
        return RuleInput(backend_id, model, inputs, profile, partitions, recorder.encoded, traced)

    def check(stage: Stage, given: RuleInput) -> None:
        check_rules(case, given, stage, rules)

    key = (id(model), tuple(compile_specs))
    try:
        if lowered is not None and key in lowered:
            manager, preprocessed = lowered[key]
            recorder.preprocessed.extend(preprocessed)
        else:
            try:
                exported = torch.export.export(model, tuple(inputs))
                edge = dl.to_edge_transform_and_lower(
                    exported, partitioner=[partitioner], generate_etrecord=True
                )
                manager = edge.to_program()
            except Exception as exc:
                check("maps", subject())
                if not (isinstance(exc, MappingError) and case.findings):
                    message = f"lowering failed: {exc}".splitlines()[0]
                    case.add("lowers", message, type(exc).__name__)
                return case.findings
            if lowered is not None:
                lowered[key] = (manager, list(recorder.preprocessed))
        check("maps", subject())
        try:
            tracer = ETDumpGen(debug_buffer_size=1 << 20)
            method = Program.load(manager.buffer).load_method("forward", event_tracer=tracer)
            with torch.no_grad():
                expected = _as_tuple(model(*inputs))
                got: Sequence[object] = []
                for _ in range(runs):
                    got = method.execute(list(inputs))
        except Exception as exc:
            case.add("lowers", f"running failed: {exc}".splitlines()[0], type(exc).__name__)
            return case.findings
    finally:
        pm.unregister(recorder)
    dmap: Mapping[int, Mapping[str, object]] = manager.delegate_map.get("forward", {})
    etdump_bytes = tracer.get_etdump_data()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        record_path = Path(tmp) / "etrecord.bin"
        manager.get_etrecord().save(record_path)
        traced = Traced(
            manager,
            got,
            expected,
            loads(etdump_bytes),
            etdump_bytes,
            bytes(tracer.debug_buffer),
            record_path,
            dmap,
            rtol,
            atol,
        )
        check("run", subject(traced))
    return case.findings


def _example_inputs(model: torch.nn.Module) -> Sequence[object]:
    inputs = getattr(model, "example_inputs", None)
    if not isinstance(inputs, Sequence):
        raise UsageError(
            f"model {type(model).__name__} has no example_inputs (a tuple): give it as a "
            "(module, inputs) pair"
        )
    return inputs


def check_backend(
    backend_id: str,
    *,
    models: Iterable[torch.nn.Module | tuple[torch.nn.Module, Sequence[object]]] | None = None,
    max_examples: int = DEFAULT_MAX_EXAMPLES,
    runs: int = 2,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    seed: int = 0,
    ops: Sequence[str] | None = None,
    fail_fast: bool = False,
) -> ConformanceReport:
    """Check ``backend_id``'s debug story on the given models and ``max_examples`` generated ones.

    ``backend_id`` may also be a real ExecuTorch partitioner object: the bridge (the
    ``executorch`` extra) then lowers, runs and checks on real ExecuTorch.

    :param models: extra models, each a module with ``example_inputs`` (as
        :func:`~delegate_lens.testing.strategies.models` makes) or a ``(module, inputs)`` pair.
    :param max_examples: how many models hypothesis generates (0: only ``models``; with no
        ``models`` either, a :class:`~delegate_lens.errors.UsageError`: checking nothing is
        not a pass).
    :param runs: traced executions per model.
    :param rtol, atol: tolerance of ``outputs-match-eager``.
    :param seed: the hypothesis seed (the same seed generates the same models).
    :param ops: the ops to generate from (default: the backend's profile).
    :param fail_fast: stop generating after the first model with a finding (every rule is
        still checked on that model).
    :returns: a :class:`ConformanceReport`; a failed check is a finding, not an exception.
    """
    if not isinstance(backend_id, str):  # a real ExecuTorch partitioner: the bridge checks it
        from delegate_lens._bridge import executorch_bridge

        bridge = executorch_bridge("check_backend with a partitioner object")
        report: ConformanceReport = bridge.check_backend(
            backend_id,
            models=models,
            max_examples=max_examples,
            runs=runs,
            rtol=rtol,
            atol=atol,
            seed=seed,
            ops=ops,
            fail_fast=fail_fast,
        )
        return report
    from delegate_lens.testing import strategies

    if max_examples < 0:
        raise UsageError(f"max_examples must be >= 0, got {max_examples}")
    given_models = list(models or ())
    if max_examples == 0 and not given_models:
        raise UsageError(
            f"check_backend({backend_id!r}): nothing to check (max_examples=0 and no models "
            "given); checking no model is not a pass"
        )
    t0 = time.perf_counter()
    profile = backend_profile(backend_id)
    op_set = tuple(ops) if ops is not None else profile.ops
    if max_examples and not op_set:
        if ops is not None:
            raise UsageError(f"check_backend({backend_id!r}): ops=() leaves no model to generate")
        raise PluginError(
            f"dl_testing_profile({backend_id!r}) declares no ops: no model can be generated "
            "(checking nothing is not a pass)"
        )
    strategy = strategies.models(op_set)  # checks the op names
    from delegate_lens import hooks

    if hooks.partitioner(backend_id, ()) is None:
        raise UsageError(f"no plugin gives a partitioner for backend {backend_id!r}")
    rules = registered_rules()
    log = FindingLog()
    kwargs: dict[str, Any] = {
        "profile": profile,
        "runs": runs,
        "rtol": rtol,
        "atol": atol,
        "rules": rules,
    }
    for given_model in given_models:
        if isinstance(given_model, tuple):
            module, inputs = given_model
        else:
            module, inputs = given_model, _example_inputs(given_model)
        for specs in profile.compile_specs:
            log.keep(check_model(backend_id, module, inputs, compile_specs=specs, **kwargs))

    def check(model: torch.nn.Module, specs: tuple[CompileSpec, ...] | None, example: int) -> None:
        log.keep(
            check_model(
                backend_id,
                model,
                _example_inputs(model),
                compile_specs=specs or (),
                seed=seed,
                example=example,
                **kwargs,
            )
        )

    explore_models(
        strategy,
        check,
        max_examples=max_examples,
        seed=seed,
        choices=profile.compile_specs,
        stop=lambda: fail_fast and bool(log.findings),
    )
    skipped = tuple(name for name, rule in rules.items() if not rule.applies_to(profile))
    return ConformanceReport(
        backend_id, tuple(rules), log.checked, log.findings, time.perf_counter() - t0, skipped
    )
