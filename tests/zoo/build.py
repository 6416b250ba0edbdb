"""Build the zoo with the reference toolchain (ExecuTorch 1.5.1): run by the reference's Python.

    python tests/zoo/build.py OUT [--jobs 2] [--only NAME ...]

For each model of ``models.NAMES`` and each backend of ``models.BACKENDS`` (``xnnpack``:
lowered with the XNNPACK partitioner; ``portable``: not lowered), and each model of
``models.EXTRAS`` on the backends it lists, ``OUT/<name>/<backend>/`` gets ``model.pte``,
``etrecord.bin`` (with representative inputs), ``etdump.etdp`` and ``debug.bin`` from
ExecuTorch's runtime (Python bindings, ETDump on, a debug buffer of intermediate outputs),
``inputs.pt`` (``{method: [tensors]}``), ``eager.pt`` (eager torch's outputs per method),
``runtime.pt`` (the runtime's) and ``manifest.json``; the bundled model also
``model.bpte``; a model with ``reference_gaps`` has what the reference's
``Inspector.calculate_numeric_gap("MSE")`` gave in its ``manifest.json`` (rows, or the
error's class and message). A model that the toolchain cannot build or run leaves
``manifest.json`` with its ``error`` (and no other files are promised). ``OUT/manifest.json``
lists them all: ``models`` (those of ``NAMES``, which the differential suite measures) and
``extras``. ``--jobs`` workers (processes) share the models.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEBUG_BUFFER_SIZE = 2 << 20
RUNS = 2


def _quiet_imports() -> None:
    import logging
    import warnings

    warnings.simplefilter("ignore")
    for name in ("torchao", "torch.utils._pytree", "executorch", "root"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _export(module: Any, inputs: tuple[Any, ...], spec: dict[str, Any]) -> Any:
    import torch

    dynamic = spec.get("dynamic")
    shapes = None
    if dynamic:
        shapes = {
            arg: {
                dim: torch.export.Dim(f"{arg}_{dim}", min=lo, max=hi) for dim, (lo, hi) in d.items()
            }
            for arg, d in dynamic.items()
        }
    if spec.get("quantize"):
        from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
            XNNPACKQuantizer,
            get_symmetric_quantization_config,
        )
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        captured = torch.export.export(module, inputs).module()
        config = get_symmetric_quantization_config(is_per_channel=spec["quantize"] == "per_channel")
        quantizer = XNNPACKQuantizer().set_global(config)
        prepared = prepare_pt2e(captured, quantizer)
        prepared(*inputs)
        module = convert_pt2e(prepared)
    return torch.export.export(module, inputs, dynamic_shapes=shapes)


def _lower(exported: dict[str, Any], backend: str) -> Any:
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    partitioners = []
    if backend == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        partitioners = [XnnpackPartitioner()]
    return to_edge_transform_and_lower(
        exported,
        partitioner=partitioners,
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
        generate_etrecord=True,
    )


def _run(folder: Path, spec: dict[str, Any], run_inputs: dict[str, tuple[Any, ...]]) -> Any:
    from executorch.extension.pybindings import portable_lib as pl

    with contextlib.suppress(ImportError):  # the quantized kernels, for the portable int8 runs
        import executorch.kernels.quantized  # noqa: F401
    # the runtime keeps pointers into the bytes it loads: they must outlive the module
    data = (folder / ("model.bpte" if spec.get("bundled") else "model.pte")).read_bytes()
    if spec.get("bundled"):
        bundle = pl._load_bundled_program_from_buffer(data)
        module = pl._load_for_executorch_from_bundled_program(
            bundle, enable_etdump=True, debug_buffer_size=DEBUG_BUFFER_SIZE
        )
    else:
        module = pl._load_for_executorch_from_buffer(
            data, enable_etdump=True, debug_buffer_size=DEBUG_BUFFER_SIZE
        )
    outputs = {}
    for _ in range(RUNS):
        for method, inputs in run_inputs.items():
            outputs[method] = list(module.run_method(method, inputs))
    module.write_etdump_result_to_file(str(folder / "etdump.etdp"), str(folder / "debug.bin"))
    del module, data
    return outputs


def _bundle(folder: Path, program: Any, run_inputs: dict[str, tuple[Any, ...]], eager: Any) -> Any:
    from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
    from executorch.devtools.bundled_program.core import BundledProgram
    from executorch.devtools.bundled_program.serialize import (
        serialize_from_bundled_program_to_flatbuffer,
    )

    suites = [
        MethodTestSuite(
            method_name=method,
            test_cases=[MethodTestCase(inputs=list(inputs), expected_outputs=list(eager[method]))],
        )
        for method, inputs in run_inputs.items()
    ]
    bundled = BundledProgram(program, suites)
    (folder / "model.bpte").write_bytes(serialize_from_bundled_program_to_flatbuffer(bundled))
    return bundled


def _value(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape)}
    if isinstance(x, (list, tuple)):
        return [_value(v) for v in x]
    return repr(x)


def _reference_gaps(folder: Path) -> dict[str, Any]:
    """What the reference's ``Inspector.calculate_numeric_gap("MSE")`` gives on the model in
    ``folder``: ``{"rows": [...]}`` (handles, ops, gaps, the values' shapes) or ``{"error":
    class name, "message": ...}``."""
    import math

    from executorch.devtools import Inspector

    try:
        inspector = Inspector(
            etdump_path=str(folder / "etdump.etdp"),
            etrecord=str(folder / "etrecord.bin"),
            debug_buffer_path=str(folder / "debug.bin"),
        )
        frame = inspector.calculate_numeric_gap("MSE")
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)[:500]}
    rows = []
    for _, row in frame.iterrows():
        rows.append(
            {
                "aot_debug_handle": list(row["aot_debug_handle"]),
                "aot_ops": list(row["aot_ops"]),
                "runtime_ops": list(row["runtime_ops"]),
                "gap": [None if math.isnan(g) else g for g in row["gap"]],
                "aot": _value(row["aot_intermediate_output"]),
                "runtime": _value(row["runtime_intermediate_output"]),
            }
        )
    return {"rows": rows}


def build_one(name: str, backend: str, out: Path) -> dict[str, Any]:
    """Build, run and save one model on one backend; its manifest."""
    import torch
    from models import spec as model_spec

    folder = out / name / backend
    folder.mkdir(parents=True, exist_ok=True)
    spec = model_spec(name)
    started = time.monotonic()
    manifest: dict[str, Any] = {"name": name, "backend": backend, "runs": RUNS}
    try:
        exported, run_inputs, eager = {}, {}, {}
        for method, (module, inputs) in spec["methods"].items():
            exported[method] = _export(module, inputs, spec)
            run = inputs
            if spec.get("dynamic"):  # run on another size than the example's
                run = tuple(torch.cat([x, x[:2] * 0.5]) for x in inputs)
            run_inputs[method] = run
            with torch.no_grad():
                result = exported[method].module()(*run)
            eager[method] = list(result) if isinstance(result, (tuple, list)) else [result]
        single = len(exported) == 1 and "forward" in exported
        manager = _lower(exported["forward"] if single else exported, backend)
        program = manager.to_executorch()
        (folder / "model.pte").write_bytes(program.buffer)
        record = program.get_etrecord()
        if spec.get("representative_inputs") == "program_inputs":
            record.update_representative_inputs([list(run_inputs["forward"])])
        elif single:
            record.update_representative_inputs(list(run_inputs["forward"]))
        if spec.get("bundled"):
            bundled = _bundle(folder, program, run_inputs, eager)
            record.update_reference_outputs(bundled)
        record.save(str(folder / "etrecord.bin"))
        torch.save({m: list(v) for m, v in run_inputs.items()}, folder / "inputs.pt")
        torch.save(eager, folder / "eager.pt")
        outputs = _run(folder, spec, run_inputs)
        torch.save(outputs, folder / "runtime.pt")
        if spec.get("reference_gaps"):
            manifest["reference_gaps"] = _reference_gaps(folder)
        manifest.update(
            methods=list(run_inputs),
            inputs={m: [list(x.shape) for x in v] for m, v in run_inputs.items()},
            input_dtypes={m: [str(x.dtype) for x in v] for m, v in run_inputs.items()},
            outputs={m: [list(x.shape) for x in v] for m, v in outputs.items()},
            files=sorted(p.name for p in folder.iterdir()),
            delegated=backend == "xnnpack",
            max_abs_error={
                m: max(
                    float((a.float() - torch.as_tensor(b).float()).abs().max())
                    for a, b in zip(eager[m], outputs[m])
                )
                for m in outputs
            },
        )
    except Exception as exc:  # kept in the manifest: the tests say which model failed and why
        manifest["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        manifest["traceback"] = traceback.format_exc()[-3000:]
    manifest["seconds"] = round(time.monotonic() - started, 1)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _worker(jobs: list[tuple[str, str]], out: Path) -> None:
    _quiet_imports()
    sys.path.insert(0, str(HERE))
    with contextlib.redirect_stdout(io.StringIO()):
        import executorch.exir  # noqa: F401  (its chatter before the first model)
    for name, backend in jobs:
        manifest = build_one(name, backend, out)
        state = manifest.get("error", "ok")
        print(f"{name}/{backend}: {state} ({manifest['seconds']} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--worker", nargs="*", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.worker is not None:
        _worker([tuple(j.split("/", 1)) for j in args.worker], out)  # type: ignore[misc]
        return 0
    sys.path.insert(0, str(HERE))
    from models import BACKENDS, EXTRAS, NAMES

    backends = {**{n: BACKENDS for n in NAMES}, **EXTRAS}
    names = args.only or list(backends)
    jobs = [f"{n}/{b}" for n in names for b in backends[n]]
    # heaviest first, dealt round-robin so the workers finish together
    heavy = ("gpt", "int8_linear", "int8_pool_cnn", "int8_cnn", "int8_per_channel", "block")
    heavy += ("transformer", "two_methods", "cnn")
    jobs.sort(key=lambda j: heavy.index(j.split("/")[0]) if j.split("/")[0] in heavy else 99)
    started = time.monotonic()
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, str(out), "--worker", *jobs[i :: args.jobs]],
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        for i in range(max(1, args.jobs))
    ]
    codes = [w.wait() for w in workers]
    listed = []
    for job in jobs:
        path = out / job / "manifest.json"
        name, backend = job.split("/", 1)
        entry = {"name": name, "backend": backend, "error": "not built", "seconds": None}
        if path.exists():
            entry = json.loads(path.read_text())
        listed.append({k: entry.get(k) for k in ("name", "backend", "error", "seconds")})
    import importlib.metadata as md

    top = {
        "executorch": md.version("executorch"),
        "torch": md.version("torch"),
        "seconds": round(time.monotonic() - started, 1),
        "models": [e for e in listed if e["name"] not in EXTRAS],
        "extras": [e for e in listed if e["name"] in EXTRAS],
    }
    (out / "manifest.json").write_text(json.dumps(top, indent=1) + "\n")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
