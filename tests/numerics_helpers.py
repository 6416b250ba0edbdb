"""Build a demo-backend run for the numerics tests: lower, save, run with a debug buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def demo_run(
    out: Path,
    model: str = "mlp",
    specs: dict[str, bytes] | None = None,
    runs: int = 1,
    representative_inputs: Any = None,
    debug_buffer_size: int = 1 << 20,
) -> dict[str, Path]:
    """``{"etrecord", "etdump", "debug_buffer"}`` of ``runs`` traced runs of ``model``."""
    import torch

    import delegate_lens as dl
    from delegate_lens.backends_demo._models import make_model
    from delegate_lens.backends_demo._partitioner import DemoPartitioner
    from delegate_lens.runtime import ETDumpGen, Program

    module, inputs = make_model(model)
    compile_specs = [dl.CompileSpec("identifiers", b"str")]
    compile_specs += [dl.CompileSpec(k, v) for k, v in (specs or {}).items()]
    edge = dl.to_edge_transform_and_lower(
        torch.export.export(module, inputs),
        partitioner=[DemoPartitioner(compile_specs)],
        generate_etrecord=True,
    )
    manager = edge.to_program()
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "program": out / "program.dlp",
        "etrecord": out / "etrecord.bin",
        "etdump": out / "etdump.etdp",
        "debug_buffer": out / "debug.bin",
    }
    manager.save(paths["program"])
    manager.get_etrecord(representative_inputs=representative_inputs).save(paths["etrecord"])
    tracer = ETDumpGen(debug_buffer_size=debug_buffer_size)
    method = Program.load(paths["program"]).load_method("forward", event_tracer=tracer)
    with torch.no_grad():
        for _ in range(runs):
            method.execute(list(inputs))
    tracer.write(paths["etdump"], paths["debug_buffer"])
    return paths
