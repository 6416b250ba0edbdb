"""``check_backend``: lower models through a backend's plugins, run them traced, read back
ETDump + ETRecord, and check every rule of :data:`~delegate_lens.testing._report.RULES`.

Needs torch and hypothesis (the ``testing`` extra). A failed check is a
:class:`~delegate_lens.testing._report.Finding`, never an exception; only bad input (an
unknown backend, a broken profile) raises a :class:`~delegate_lens.DelegateLensError`.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import DelegateLensError, MappingError, PluginError, UsageError
from delegate_lens.hookspecs import hookimpl
from delegate_lens.testing._coverage import _as_tuple, check_maps
from delegate_lens.testing._profile import BackendProfile, backend_profile
from delegate_lens.testing._report import RULES, ConformanceReport, Finding

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

    from delegate_lens.aot import ProgramManager
    from delegate_lens.backend import CompileSpec
    from delegate_lens.etdump import ETDump, ProfileEvent


DEFAULT_MAX_EXAMPLES = 20
_MAX_PER_RULE = 3  # findings kept per rule (the first ones; the count is what matters)
_WRAP = (2**32, 2**64)  # counter widths whose wrap-around is not "backwards"


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
) -> list[Finding]:
    """Check every rule on one ``model`` (a ``torch.nn.Module``) with ``inputs``."""
    import torch

    import delegate_lens as dl
    from delegate_lens import hooks
    from delegate_lens.etdump import loads
    from delegate_lens.pluginmanager import get_plugin_manager
    from delegate_lens.runtime import ETDumpGen, Program

    profile = profile or backend_profile(backend_id)
    case = ModelCheck(model, seed, example)
    partitioner = hooks.partitioner(backend_id, compile_specs)
    if partitioner is None:
        raise UsageError(f"no plugin gives a partitioner for backend {backend_id!r}")
    pm = get_plugin_manager()
    recorder = Recorder(backend_id)
    pm.register(recorder)
    try:
        try:
            exported = torch.export.export(model, tuple(inputs))
            edge = dl.to_edge_transform_and_lower(
                exported, partitioner=[partitioner], generate_etrecord=True
            )
        except Exception as exc:
            check_maps(case, recorder, profile)
            if not (isinstance(exc, MappingError) and case.findings):
                case.add("lowers", f"lowering failed: {exc}".splitlines()[0], type(exc).__name__)
            return case.findings
        check_maps(case, recorder, profile)
        try:
            manager = edge.to_program()
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
    check_outputs(case, got, expected, rtol, atol)
    dmap: Mapping[int, Mapping[str, object]] = manager.delegate_map.get("forward", {})
    etdump_bytes = tracer.get_etdump_data()
    etdump = loads(etdump_bytes)
    orphans = check_events(case, etdump, dmap, backend_id)
    check_metadata(case, recorder, etdump, backend_id)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        record_path = Path(tmp) / "etrecord.bin"
        manager.get_etrecord().save(record_path)
        check_etrecord(case, record_path, manager)
        check_links(case, etdump_bytes, record_path, orphans)
    return case.findings


def check_outputs(
    case: ModelCheck, got: Sequence[object], expected: Sequence[object], rtol: float, atol: float
) -> None:
    """Rule ``outputs-match-eager``: the run's outputs ``got`` against eager's ``expected``."""
    import torch

    if len(got) != len(expected):
        case.add(
            "outputs-match-eager", f"{len(got)} output(s), eager gives {len(expected)}", "outputs"
        )
        return
    for i, (a, b) in enumerate(zip(got, expected)):
        try:
            # NaN where eager also gives NaN (an overflowing generated model) is a match
            torch.testing.assert_close(torch.as_tensor(a), b, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as exc:
            detail = " ".join(str(exc).split())[:160]
            case.add(
                "outputs-match-eager", f"output {i} differs from eager: {detail}", f"output {i}"
            )


def _delegate_events(etdump: ETDump) -> Iterable[tuple[int, int, ProfileEvent, int | str]]:
    """``(run, position, profile event, identifier)`` of every delegate-logged event."""
    for r, run in enumerate(etdump.run_data):
        for k, event in enumerate(run.events or ()):
            pe = event.profile_event
            if pe is None:
                continue
            if pe.delegate_debug_id_int != -1:
                yield r, k, pe, pe.delegate_debug_id_int
            elif pe.delegate_debug_id_str:
                yield r, k, pe, pe.delegate_debug_id_str


def _wrapped_end(start: int, end: int) -> int | None:
    """``end`` unwrapped when the counter wrapped between start and end, else ``None``."""
    for width in _WRAP:
        if start < width and start - end > width // 2:  # start near the top, end near zero
            return end + width
    return None


def _nested(start: int, end: int, call_start: int, call_end: int) -> bool:
    """``[start, end]`` lies inside ``[call_start, call_end]``, on a counter that may wrap
    (32-bit when every value fits, else 64-bit): offsets are taken from the call's start."""
    width = _WRAP[0] if max(start, end, call_start, call_end) < _WRAP[0] else _WRAP[1]

    def offset(t: int) -> int:
        return (t - call_start) % width

    return offset(start) <= offset(end) <= offset(call_end)


def check_events(
    case: ModelCheck, etdump: ETDump, dmap: Mapping[int, Mapping[str, object]], backend_id: str
) -> set[tuple[int, int | str]]:
    """Rules ``no-orphan-events`` and ``delegate-event-times`` on the delegate events of
    ``etdump`` (``dmap``: the method's delegate map, by instruction); returns the orphans,
    ``(instruction, identifier)``."""
    orphans: set[tuple[int, int | str]] = set()
    for r, k, pe, ident in _delegate_events(etdump):
        iid = pe.instruction_id
        entry = dmap.get(iid)
        where = f"event {k} of run {r}, instruction {iid}, identifier {ident!r}"
        known = entry.get("delegate_map") if entry is not None else None
        if not isinstance(known, Mapping) or ident not in known:
            orphans.add((iid, ident))
            case.add(
                "no-orphan-events",
                f"identifier {ident!r} logged by instruction {iid} is not in its delegate map",
                where,
            )
        start, end = pe.start_time, pe.end_time
        if end < start and _wrapped_end(start, end) is None:
            case.add("delegate-event-times", f"ends ({end}) before it starts ({start})", where)
            continue
        run_events = etdump.run_data[r].events
        call = next(
            (
                e.profile_event
                for e in run_events[k + 1 :]
                if e.profile_event is not None
                and e.profile_event.name == "DELEGATE_CALL"
                and e.profile_event.instruction_id == iid
            ),
            None,
        )
        if call is None:
            case.add("delegate-event-times", "no DELEGATE_CALL of its instruction follows", where)
        elif not _nested(start, end, call.start_time, call.end_time):
            case.add(
                "delegate-event-times",
                f"[{start}, {end}] is not inside its DELEGATE_CALL "
                f"[{call.start_time}, {call.end_time}]",
                where,
            )
    return orphans


def check_metadata(case: ModelCheck, recorder: Recorder, etdump: ETDump, backend_id: str) -> None:
    """Rule ``metadata-round-trip``: what the backend encoded (seen by ``recorder``) and
    logged in ``etdump`` is read back by a ``dl_parse_delegate_metadata`` plugin."""
    from delegate_lens import hooks

    def parse(raw: bytes) -> tuple[object, str | None]:
        given = [raw]
        try:
            parsed = hooks.parse_delegate_metadata(backend_id, given, strict=True)
            # the built-in metadata_fallback answers with the list given: nothing parsed it
            return (None if parsed is given else parsed), None
        except Exception as exc:
            return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    seen: set[bytes] = set()
    for metadata, raw in recorder.encoded:
        if raw in seen:
            continue
        seen.add(raw)
        parsed, error = parse(raw)
        subject = f"metadata {metadata!r}"
        if error is not None:
            case.add("metadata-round-trip", f"its parser cannot read {raw!r}: {error}", subject)
        elif parsed is None:
            case.add("metadata-round-trip", "no dl_parse_delegate_metadata reads it back", subject)
        elif isinstance(metadata, Mapping) and isinstance(parsed, Mapping):
            for key, value in metadata.items():
                back = parsed.get(key)
                back = back[0] if isinstance(back, list) and len(back) == 1 else back
                if key in parsed and back != value:
                    case.add(
                        "metadata-round-trip",
                        f"field {key!r} reads back as {back!r}, was logged as {value!r}",
                        subject,
                    )
    for _r, _k, pe, ident in _delegate_events(etdump):
        logged = pe.delegate_debug_metadata
        if logged and bytes(logged) not in seen:
            seen.add(bytes(logged))
            _parsed, error = parse(bytes(logged))
            if error is not None:
                case.add(
                    "metadata-round-trip",
                    f"its parser cannot read {bytes(logged)!r}: {error}",
                    f"identifier {ident!r}",
                )


def _example_inputs(model: torch.nn.Module) -> Sequence[object]:
    inputs = getattr(model, "example_inputs", None)
    if not isinstance(inputs, Sequence):
        raise UsageError(
            f"model {type(model).__name__} has no example_inputs (a tuple): give it as a "
            "(module, inputs) pair"
        )
    return inputs


def check_etrecord(case: ModelCheck, path: Path, manager: ProgramManager) -> None:
    """Rule ``etrecord-round-trip``: the ETRecord at ``path`` reads back with the maps of
    ``manager``."""
    import delegate_lens as dl

    try:
        record = dl.parse_etrecord(str(path))
    except DelegateLensError as exc:
        case.add("etrecord-round-trip", f"cannot be read back: {exc}", str(path.name))
        return
    if record.debug_handle_map != manager.debug_handle_map:
        case.add(
            "etrecord-round-trip", "debug_handle_map differs after reading", "debug_handle_map"
        )
    for method, entries in manager.delegate_map.items():
        want = {
            i: {"name": e["name"], "delegate_map": e["delegate_map"]} for i, e in entries.items()
        }
        if (record.delegate_map or {}).get(method) != want:
            case.add(
                "etrecord-round-trip",
                f"delegate_map of {method} differs after reading",
                f"method {method}",
            )


def check_links(
    case: ModelCheck, etdump_bytes: bytes, record_path: Path, orphans: set[tuple[int, int | str]]
) -> None:
    """Rule ``events-link-to-operators``: in the Inspector, every operator-level event links
    to an operator (the ``orphans`` of :func:`check_events` are reported there)."""
    from delegate_lens.inspector import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # metadata the parser rejects is its own rule
        inspector = Inspector(etdump_data=etdump_bytes, etrecord=str(record_path))
        for block in inspector.event_blocks:
            if block.name != "Execute":
                continue
            for event in block.events:
                if event.instruction_id is None or str(event.name).startswith("Method::"):
                    continue  # method-level events link to no operator
                ident = event.delegate_debug_identifier
                if ident is not None and (event.instruction_id, ident) in orphans:
                    continue  # reported as no-orphan-events
                if ident is not None and any(
                    iid == event.instruction_id and str(o) == str(ident) for iid, o in orphans
                ):
                    continue
                if not event.debug_handles or not event.op_types:
                    case.add(
                        "events-link-to-operators",
                        f"event {event.name!r} (instruction {event.instruction_id}) links to no "
                        "operator in the Inspector",
                        f"event {event.name!r}",
                    )


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
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

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
    findings: list[Finding] = []
    counted: dict[str, int] = {}
    checked = 0

    def keep(new: list[Finding]) -> None:
        for f in new:
            counted[f.rule] = counted.get(f.rule, 0) + 1
            if counted[f.rule] <= _MAX_PER_RULE:
                findings.append(f)

    kwargs: dict[str, Any] = {"profile": profile, "runs": runs, "rtol": rtol, "atol": atol}
    for given_model in given_models:
        if isinstance(given_model, tuple):
            module, inputs = given_model
        else:
            module, inputs = given_model, _example_inputs(given_model)
        for specs in profile.compile_specs:
            keep(check_model(backend_id, module, inputs, compile_specs=specs, **kwargs))
            checked += 1

    if max_examples:
        example = [0]

        @hypothesis_seed(seed)
        @settings(
            max_examples=max_examples,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy, st.sampled_from(profile.compile_specs))
        def explore(model: torch.nn.Module, specs: tuple[CompileSpec, ...]) -> None:
            nonlocal checked
            if fail_fast and findings:
                return  # found: let hypothesis run out cheaply (raising would replay it)
            example[0] += 1
            checked += 1
            new = check_model(
                backend_id,
                model,
                _example_inputs(model),
                compile_specs=specs,
                seed=seed,
                example=example[0],
                **kwargs,
            )
            keep(new)

        if not (fail_fast and findings):
            explore()
    skipped = ("delegated-nodes-covered",) if profile.opaque else ()
    return ConformanceReport(
        backend_id, tuple(RULES), checked, findings, time.perf_counter() - t0, skipped
    )
