"""The whole pipeline on an embedded model: what ``delegate-lens demo`` runs.

export -> lower to ``DemoBackend`` -> program + ETRecord -> N traced runs -> ETDump and
debug buffer -> the Inspector's table. Written against public API only, so it is also a
template for scripting the same flow with another backend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from delegate_lens.backends_demo._backend import BACKEND_ID
from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    import torch

    from delegate_lens.aot import ProgramManager
    from delegate_lens.bundled_program import BundledProgram
    from delegate_lens.inspector import Inspector


DEMO_FILES = {
    "program": "program.dlp",
    "etrecord": "etrecord.bin",
    "etdump": "etdump.etdp",
    "debug_buffer": "debug.bin",
    "bundled_program": "program.bpte",
}
"""What the demo writes into its output folder (``program.dlp`` is delegate-lens's program
format, not an ExecuTorch ``.pte``; ``program.bpte`` bundles it with test cases for
``delegate-lens verify``)."""

BUNDLED_TEST_CASES = 3
"""Test cases in the demo's ``program.bpte``: the example inputs and inputs of seeds 1, 2."""


def check_slowdown_target(graph_module: torch.fx.GraphModule, slowdown: str) -> None:
    """A :class:`UsageError` naming the valid names unless an op of a lowered DemoBackend
    partition answers to ``slowdown``'s op (see ``runtime.SLOWDOWN_SPEC``)."""
    from delegate_lens.aot import LoweredBackendModule
    from delegate_lens.backends_demo._blob import from_bytes
    from delegate_lens.backends_demo._runtime import op_names, parse_slowdown_value

    target, _ = parse_slowdown_value(slowdown)
    valid: set[str] = set()
    for module in graph_module.modules():
        if isinstance(module, LoweredBackendModule) and module.backend_id == BACKEND_ID:
            for op in from_bytes(module.processed_bytes).ops:
                valid |= op_names(op)
    if target not in valid:
        raise UsageError(
            f"--slowdown {slowdown!r}: no DemoBackend op is called {target!r}; this model's "
            f"are: {', '.join(sorted(valid, key=lambda n: (n.startswith('aten.'), n)))}"
        )


@attrs.frozen
class DemoResult:
    out_dir: Path
    paths: dict[str, Path]
    runs: int
    max_abs_error: float
    delegated_nodes: int
    non_delegated_nodes: int
    delegate_calls: int
    instructions: int
    seconds: float


def run_demo(
    model: str = "mlp",
    runs: int = 10,
    out_dir: str | Path = "delegate-lens-demo",
    identifiers: str = "int",
    debug_buffer_size: int = 4 << 20,
    echo: Callable[[str], None] = print,
    table_file: TextIO | None = None,
    show_table: bool = True,
    precision: str = "exact",
    numerics: bool = False,
    slowdown: str | None = None,
) -> DemoResult:
    """Run the demo; ``echo`` receives one line per step. Returns where the files are.

    ``precision`` (``exact``, ``fp16``, ``int8``) is the demo backend's compile spec of
    that name; with ``numerics`` the runs are compared with the reference graph
    (``Inspector.calculate_numeric_gap``) and the table printed.
    ``slowdown="<op>:<factor>"`` adds the demo backend's ``slowdown`` compile spec (a
    known regression, for ``delegate-lens compare``); an op no backend op answers to is a
    :class:`UsageError` before any file is written."""
    from delegate_lens.backends_demo._runtime import parse_slowdown_value

    if slowdown is not None:
        try:
            parse_slowdown_value(slowdown)  # before any work
        except ValueError as exc:
            raise UsageError(f"--slowdown: {exc}") from None
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.backends_demo._partitioner import DemoPartitioner
    from delegate_lens.runtime import ETDumpGen, Program

    t0 = time.perf_counter()
    out = Path(out_dir)
    paths = {key: out / name for key, name in DEMO_FILES.items()}

    module, inputs = make_model(model)
    echo(f"[1/6] export      {model}: {type(module).__name__} with torch.export")
    exported = torch.export.export(module, inputs)

    specs = [dl.CompileSpec("identifiers", identifiers.encode())]
    if precision != "exact":
        specs.append(dl.CompileSpec("precision", precision.encode()))
    if slowdown is not None:
        specs.append(dl.CompileSpec("slowdown", slowdown.encode()))
    edge = dl.to_edge_transform_and_lower(
        exported, partitioner=[DemoPartitioner(specs)], generate_etrecord=True
    )
    if slowdown is not None:  # a name no backend op has would slow nothing, silently
        check_slowdown_target(edge.exported_program().graph_module, slowdown)
    out.mkdir(parents=True, exist_ok=True)  # once the arguments are known to be good
    info = dl.get_delegation_info(edge.exported_program().graph_module)
    echo(
        f"[2/6] lower       to DemoBackend ({identifiers} identifiers): "
        f"{info.num_delegated_subgraphs} delegate(s), {info.num_delegated_nodes} nodes delegated, "
        f"{info.num_non_delegated_nodes} portable"
    )

    manager = edge.to_program()
    manager.save(paths["program"])
    n_instructions = sum(len(m.instructions) for m in manager.program.methods)
    echo(
        f"[3/6] program     {paths['program']} ({paths['program'].stat().st_size:,} bytes, "
        f"{n_instructions} instructions, {len(manager.program.delegates)} delegate blob(s))"
    )
    bundle_demo_program(manager, model, module, exact=precision == "exact").save(
        paths["bundled_program"]
    )
    echo(
        f"      bundled     {paths['bundled_program']} ({BUNDLED_TEST_CASES} test cases; "
        f"check them with: delegate-lens verify {paths['bundled_program']})"
    )
    manager.get_etrecord().save(paths["etrecord"])
    echo(f"[4/6] etrecord    {paths['etrecord']} ({paths['etrecord'].stat().st_size:,} bytes)")

    program = Program.load(paths["program"])
    tracer = ETDumpGen(debug_buffer_size=debug_buffer_size)
    method = program.load_method("forward", event_tracer=tracer)
    with torch.no_grad():
        expected = module(*inputs)
        outputs: list[Any] = []
        for _ in range(runs):
            outputs = method.execute(list(inputs))
    error = float((outputs[0] - expected).abs().max())
    tracer.write(paths["etdump"], paths["debug_buffer"])
    echo(
        f"[5/6] run         {runs} traced run(s); max |runtime - eager| = {error:.2e}; "
        f"{paths['etdump']} ({paths['etdump'].stat().st_size:,} bytes), "
        f"{paths['debug_buffer']} ({paths['debug_buffer'].stat().st_size:,} bytes)"
    )
    if tracer.debug_buffer_full:
        echo(
            f"      note: the debug buffer filled up; {tracer.dropped_debug_values} "
            "intermediate value(s) were not stored"
        )
    opened: list[Inspector] = []

    def inspector() -> Inspector:  # one Inspector for the table and the numerics, made once
        if not opened:
            from delegate_lens import Inspector

            opened.append(
                Inspector(
                    etdump_path=str(paths["etdump"]),
                    etrecord=str(paths["etrecord"]),
                    debug_buffer_path=str(paths["debug_buffer"]),
                )
            )
        return opened[0]

    if show_table:
        _inspect(inspector, paths, echo, table_file)
    if numerics:
        _numerics(inspector, paths, echo, table_file)
    return DemoResult(
        out,
        paths,
        runs,
        error,
        info.num_delegated_nodes,
        info.num_non_delegated_nodes,
        info.num_delegated_subgraphs,
        n_instructions,
        time.perf_counter() - t0,
    )


def bundle_demo_program(
    manager: ProgramManager, model: str, module: torch.nn.Module, *, exact: bool = True
) -> BundledProgram:
    """A :class:`~delegate_lens.bundled_program.BundledProgram` of ``manager``'s program
    with :data:`BUNDLED_TEST_CASES` test cases of ``forward``.

    The expected outputs are golden outputs: what the lowered program gives in the
    simulated runtime now (a later change to a backend or a kernel that alters them is
    what ``delegate-lens verify`` catches). Eager ``module`` agrees with them to about 1e-6
    (kernels fused in another order round differently), checked here with a loose bound
    unless the backend computes in lower precision (``exact=False``: its ``precision``
    compile spec), where the gap from eager is the point.
    """
    import torch

    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.bundled_program import BundledProgram, MethodTestCase, MethodTestSuite
    from delegate_lens.errors import RuntimeBackendError
    from delegate_lens.runtime import Program

    method = Program(manager.program).load_method("forward")
    cases = []
    with torch.no_grad():
        for seed in range(BUNDLED_TEST_CASES):
            inputs = list(make_model(model, seed=seed)[1])
            golden = method.execute(inputs)
            eager = module(*inputs)
            eager = list(eager) if isinstance(eager, tuple | list) else [eager]
            if exact and not all(
                torch.allclose(g, e, rtol=1e-3, atol=1e-5) for g, e in zip(golden, eager)
            ):
                raise RuntimeBackendError(f"demo {model}: the lowered program disagrees with eager")
            cases.append(MethodTestCase(inputs, golden))
    return BundledProgram(manager, [MethodTestSuite("forward", cases)])


def _inspect(
    inspector: Callable[[], Inspector],
    paths: dict[str, Path],
    echo: Callable[[str], None],
    file: TextIO | None,
) -> None:
    try:
        from delegate_lens import Inspector  # noqa: F401
    except (ImportError, AttributeError):
        echo("[6/6] inspect     (the Inspector is not available in this build)")
        return
    echo(
        f"[6/6] inspect     delegate-lens inspect {paths['etdump']} --etrecord {paths['etrecord']} "
        f"--debug-buffer {paths['debug_buffer']}"
    )
    opened = inspector()
    opened.print_data_tabular(file=file)
    lines = []
    for block in opened.event_blocks:
        for event in block.events:
            parsed = event.delegate_debug_metadatas
            if event.delegate_backend_name == BACKEND_ID and isinstance(parsed, dict) and parsed:
                kernel, flops, moved = (parsed[k][0] for k in ("kernel", "flops", "bytes_moved"))
                handles = event.debug_handles
                shown = [handles] if isinstance(handles, int) else list(handles or [])
                lines.append(
                    f"  {block.name:<8} {event.name!s:<24} {kernel:<26} "
                    f"{flops:>12,} {moved:>14,}  handles {shown}"
                )
    if lines:
        print(
            "\nDemoBackend metadata (parsed by its dl_parse_delegate_metadata; first sample):\n"
            f"  {'block':<8} {'identifier':<24} {'kernel':<26} {'flops':>12} {'bytes moved':>14}",
            *lines,
            sep="\n",
            file=file,
        )


def _numerics(
    inspector: Callable[[], Inspector],
    paths: dict[str, Path],
    echo: Callable[[str], None],
    file: TextIO | None,
) -> None:
    echo(
        f"numerics    delegate-lens numerics {paths['etdump']} --etrecord {paths['etrecord']} "
        f"--debug-buffer {paths['debug_buffer']}"
    )
    table = inspector().calculate_numeric_gap("MSE", as_dataframe=False)
    print("\n".join(table.format_lines()), file=file)
