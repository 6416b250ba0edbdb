"""One set of reference-API calls on every zoo model, run through one library:

    python tests/zoo/calls.py executorch|delegate_lens ZOO_ROOT OUT.pkl [--import-executorch]

``executorch`` means ``executorch.devtools`` (the reference), ``delegate_lens`` the same code
with its imports changed. Each call's result is pickled in a canonical form of plain Python
values (``canon``): tables as text, DataFrames as columns, dtypes and cells, tensors as
dtype, shape and values, exceptions as their class and its bases; ``{key: canonical}``.
``--import-executorch`` imports ``executorch.devtools`` first (delegate-lens with the
reference in the process). The test (``tests/test_differential.py``) compares the files.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import math
import pickle
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODULES = {
    "mlp": ["fc1", "fc2", "nope"],
    "cnn": ["conv1", "bn1", "fc"],
    "transformer": ["attn", "mlp", "ln1"],
    "gpt": ["blocks.0", "blocks.1.attn", "head"],
    "int8_cnn": ["conv1", "conv2"],
    "int8_linear": ["fc1"],
    "channels_last": ["conv"],
    "multi_output": ["fc"],
    "two_methods": ["fc"],
    "dynamic": ["fc"],
    "inf_constants": [""],
    "bundled": ["fc2"],
}


def _float(value: float) -> Any:
    return ("float", repr(float(value)))


def canon(value: Any) -> Any:
    """``value`` as plain, comparable Python values (no torch, numpy or pandas objects)."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return _float(value)
    module = type(value).__module__.split(".")[0]
    if module == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return ("ndarray", str(value.dtype), list(value.shape), _values(value.tolist()))
        if isinstance(value, np.floating):
            return _float(float(value))
        if isinstance(value, (np.integer, np.bool_)):
            return canon(value.item())
    if module == "torch":
        import torch

        if isinstance(value, torch.Tensor):
            return ("tensor", str(value.dtype), list(value.shape), _values(value.tolist()))
        if isinstance(value, torch.dtype):
            return ("dtype", str(value))
    if module == "pandas":
        import pandas as pd

        if isinstance(value, pd.DataFrame):
            return (
                "frame",
                [str(c) for c in value.columns],
                [str(d) for d in value.dtypes],
                [[canon(cell) for cell in row] for row in value.itertuples(index=False)],
            )
        if isinstance(value, pd.Series):
            return ("series", str(value.dtype), [canon(v) for v in value.tolist()])
    if isinstance(value, tuple):
        return ("tuple", [canon(v) for v in value])
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(canon(k), canon(v)) for k, v in value.items()])
    if hasattr(value, "value") and type(value).__mro__[-2].__name__ == "Enum":
        return ("enum", type(value).__name__, canon(value.value))
    return ("object", type(value).__name__)


def _values(values: Any) -> Any:
    if isinstance(values, list):
        return [_values(v) for v in values]
    if isinstance(values, float):
        return repr(values) if not math.isnan(values) else "nan"
    return values


def raised(exc: BaseException) -> Any:
    return ("raises", type(exc).__name__, [c.__name__ for c in type(exc).__mro__])


def target_name(target: Any) -> str:
    """An operator's qualified name (``aten.linear.default``), whether the graph holds
    ExecuTorch's edge operator (the reference) or torch's own (delegate-lens, which never
    imports executorch: a deliberate difference, docs/migrating.md)."""
    for op in (target, getattr(target, "_op", None)):  # an edge operator wraps torch's
        schema = getattr(op, "_schema", None)
        overload = getattr(op, "_overloadname", None)
        if schema is not None and isinstance(overload, str):
            return f"{schema.name.replace('::', '.')}.{overload}"
    return str(getattr(target, "__name__", target))


def graph_canon(program: Any) -> Any:
    """An ExportedProgram (or GraphModule) as its nodes: op, target, name, args' names."""
    if program is None:
        return None
    if isinstance(program, dict):  # methods: the reference's order comes from a set, so sorted
        return ("methods", [(k, graph_canon(program[k])) for k in sorted(program)])
    module = program.graph_module if hasattr(program, "graph_module") else program
    nodes = [
        (n.op, target_name(n.target), n.name, [str(a) for a in n.args if hasattr(a, "name")])
        for n in module.graph.nodes
    ]
    return ("graph", type(program).__name__, nodes)


def _printed(function: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    out = io.StringIO()
    function(*args, file=out, **kwargs)
    return out.getvalue()


class Lib:
    """The names a user imports, from the reference or from delegate-lens."""

    def __init__(self, which: str) -> None:
        root = "executorch.devtools" if which == "executorch" else "delegate_lens"
        top = importlib.import_module(root)
        self.Inspector = top.Inspector
        self.parse_etrecord = top.parse_etrecord
        self.ETRecord = top.ETRecord
        inspector = importlib.import_module(f"{root}.inspector")
        self.compare_results = inspector.compare_results
        self.TimeScale = inspector.TimeScale
        utils = importlib.import_module(f"{root}.inspector._inspector_utils")
        self.utils = utils
        debug = importlib.import_module(f"{root}.backend_debug")
        self.get_delegation_info = debug.get_delegation_info
        self.print_delegation_info = debug.print_delegation_info


def _event_fields(event: Any) -> Any:
    perf = event.perf_data
    return {
        "name": event.name,
        "raw": None if perf is None else canon(list(perf.raw)),
        "avg": None if perf is None else canon(perf.avg),
        "p50": None if perf is None else canon(perf.p50),
        "op_types": canon(event.op_types),
        "delegate_debug_identifier": canon(event.delegate_debug_identifier),
        "is_delegated_op": canon(event.is_delegated_op),
        "delegate_backend_name": canon(event.delegate_backend_name),
        "debug_handles": canon(event.debug_handles),
        "stack_traces": canon(dict(event.stack_traces)),
        "module_hierarchy": canon(dict(event.module_hierarchy)),
        "debug_data": canon(event.debug_data),
        "num_outputs": canon(getattr(event, "num_outputs", None)),
        "_instruction_id": canon(getattr(event, "_instruction_id", None)),
        "_delegate_debug_metadatas": canon(getattr(event, "_delegate_debug_metadatas", None)),
    }


def model_calls(lib: Lib, folder: Path, name: str) -> dict[str, Callable[[], Any]]:
    """The calls on one zoo folder, by name; each returns a canonical value."""
    files = {
        "etdump_path": str(folder / "etdump.etdp"),
        "etrecord": str(folder / "etrecord.bin"),
        "debug_buffer_path": str(folder / "debug.bin"),
    }
    state: dict[str, Any] = {}

    def inspector() -> Any:
        if "inspector" not in state:
            state["inspector"] = lib.Inspector(**files)
        return state["inspector"]

    def record() -> Any:
        if "record" not in state:
            state["record"] = lib.parse_etrecord(files["etrecord"])
        return state["record"]

    def edge_graph() -> Any:
        program = record().edge_dialect_program
        if isinstance(program, dict):
            program = program["forward"]
        return program.graph_module

    def tsv() -> str:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out.tsv"
            inspector().save_data_to_tsv(str(path))
            return path.read_text()

    calls: dict[str, Callable[[], Any]] = {
        "Inspector": lambda: canon(len(inspector().event_blocks)),
        "Inspector(no debug buffer).to_dataframe": lambda: canon(
            lib.Inspector(
                etdump_path=files["etdump_path"], etrecord=files["etrecord"]
            ).to_dataframe()
        ),
        "Inspector(no etrecord).print_data_tabular": lambda: _printed(
            lib.Inspector(etdump_path=files["etdump_path"]).print_data_tabular
        ),
        "print_data_tabular": lambda: _printed(inspector().print_data_tabular),
        "print_data_tabular(include_units=False)": lambda: _printed(
            inspector().print_data_tabular, include_units=False
        ),
        "print_data_tabular(include_delegate_debug_data=True)": lambda: _printed(
            inspector().print_data_tabular, include_delegate_debug_data=True
        ),
        "save_data_to_tsv": tsv,
        "to_dataframe": lambda: canon(inspector().to_dataframe()),
        "to_dataframe(include_units=False)": lambda: canon(
            inspector().to_dataframe(include_units=False)
        ),
        "to_dataframe(include_delegate_debug_data=True)": lambda: canon(
            inspector().to_dataframe(include_delegate_debug_data=True)
        ),
        "event_blocks[].to_dataframe": lambda: [
            canon(b.to_dataframe()) for b in inspector().event_blocks
        ],
        "event_blocks fields": lambda: [
            {
                "name": b.name,
                "bundled_input_index": canon(b.bundled_input_index),
                "run_output": canon(b.run_output),
                "reference_output": canon(b.reference_output),
                "events": [_event_fields(e) for e in b.events],
            }
            for b in inspector().event_blocks
        ],
        "get_exported_program()": lambda: graph_canon(inspector().get_exported_program()),
        "get_op_list": lambda: canon(type(inspector().get_op_list("Execute"))),
        "parse_etrecord(etrecord_path=)": lambda: canon(
            type(lib.parse_etrecord(etrecord_path=files["etrecord"])).__name__
        ),
        "ETRecord.exported_program": lambda: graph_canon(record().exported_program),
        "ETRecord.export_graph_id": lambda: canon(record().export_graph_id),
        "ETRecord.edge_dialect_program": lambda: graph_canon(record().edge_dialect_program),
        "ETRecord.graph_map": lambda: canon(
            None if record().graph_map is None else sorted(record().graph_map)
        ),
        "ETRecord._debug_handle_map": lambda: canon(record()._debug_handle_map),
        "ETRecord._delegate_map": lambda: canon(record()._delegate_map),
        "ETRecord._instruction_id_to_num_outs_map": lambda: canon(
            record()._instruction_id_to_num_outs_map
        ),
        "ETRecord._representative_inputs": lambda: canon(record()._representative_inputs),
        "ETRecord._reference_outputs": lambda: canon(record()._reference_outputs),
        "get_delegation_info(edge).get_summary": lambda: lib.get_delegation_info(
            edge_graph()
        ).get_summary(),
        "get_delegation_info(edge).dataframe": lambda: canon(
            lib.get_delegation_info(edge_graph()).get_operator_delegation_dataframe()
        ),
        "get_delegation_info(edge).delegation_by_operator": lambda: canon(
            {
                k: (v.op_type, v.delegated, v.non_delegated)
                for k, v in lib.get_delegation_info(edge_graph()).delegation_by_operator.items()
            }
        ),
        "get_delegation_info(export).get_summary": lambda: lib.get_delegation_info(
            record().exported_program.graph_module
        ).get_summary(),
        "get_delegation_info(export).dataframe": lambda: canon(
            lib.get_delegation_info(
                record().exported_program.graph_module
            ).get_operator_delegation_dataframe()
        ),
        "print_delegation_info(edge)": lambda: _stdout(lib.print_delegation_info, edge_graph()),
        "_inspector_utils.get_aot_debug_handle_to_op_name_mapping(edge)": lambda: canon(
            lib.utils.get_aot_debug_handle_to_op_name_mapping(edge_graph())
        ),
        "_inspector_utils.get_aot_debug_handle_to_op_name_mapping(export)": lambda: canon(
            lib.utils.get_aot_debug_handle_to_op_name_mapping(
                record().exported_program.graph_module
            )
        ),
        "compare_results(run_output, reference)": lambda: canon(
            lib.compare_results(
                inspector().event_blocks[0].run_output, inspector().event_blocks[-1].run_output
            )
        ),
        "run_output == the runtime's outputs": lambda: _same_outputs(
            [b.run_output for b in inspector().event_blocks], folder / "runtime.pt"
        ),
        "get_exported_program('nope')": lambda: graph_canon(
            inspector().get_exported_program("nope")
        ),
        "calculate_numeric_gap('nope')": lambda: canon(inspector().calculate_numeric_gap("nope")),
    }
    for distance in ("MSE", "L1", "SNR"):
        calls[f"calculate_numeric_gap({distance!r})"] = lambda d=distance: canon(  # type: ignore[misc]
            inspector().calculate_numeric_gap(d)
        )
    for module in MODULES[name]:
        calls[f"find_total_for_module({module!r})"] = lambda m=module: canon(  # type: ignore[misc]
            inspector().find_total_for_module(m)
        )
    return calls


def _same_outputs(run_outputs: list[Any], saved: Path) -> Any:
    """Whether each block's run output is the runtime's last output of some method."""
    import torch

    outputs = torch.load(saved)
    wanted = [[torch.as_tensor(x) for x in v] for v in outputs.values()]
    found = []
    for run in run_outputs:
        got = [torch.as_tensor(x) for x in run or []]
        if not got:  # a block that logged no outputs (method init)
            continue
        found.append(
            any(
                len(w) == len(got) and all(torch.equal(a, b) for a, b in zip(w, got))
                for w in wanted
            )
        )
    return canon(found)


def _stdout(function: Callable[..., Any], *args: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(*args)
    return out.getvalue()


def general_calls(lib: Lib, zoo: Path) -> dict[str, Callable[[], Any]]:
    bad = zoo / "manifest.json"
    mlp = zoo / "mlp" / "xnnpack"
    u = lib.utils
    return {
        "ETRecord().graph_map": lambda: canon(lib.ETRecord().graph_map),
        "parse_etrecord(not a zip)": lambda: canon(lib.parse_etrecord(str(bad))),
        "parse_etrecord(missing)": lambda: canon(lib.parse_etrecord(str(zoo / "missing.bin"))),
        "Inspector(missing etdump)": lambda: canon(lib.Inspector(etdump_path=str(zoo / "missing"))),
        "Inspector(not an etdump)": lambda: canon(lib.Inspector(etdump_path=str(bad))),
        "Inspector(etdump, etrecord of another model)": lambda: canon(
            len(
                lib.Inspector(
                    etdump_path=str(mlp / "etdump.etdp"),
                    etrecord=str(zoo / "gpt" / "portable" / "etrecord.bin"),
                ).event_blocks
            )
        ),
        "TimeScale members": lambda: canon([(m.name, m.value) for m in lib.TimeScale]),
        "_inspector_utils.calculate_time_scale_factor": lambda: canon(
            [
                u.calculate_time_scale_factor(a, b)
                for a in lib.TimeScale
                for b in lib.TimeScale
                if a.value != "cycles" and b.value != "cycles"
            ]
        ),
        "_inspector_utils.find_op_names": lambda: canon(
            u.find_op_names((1, 2, 3), {(1,): ["a"], (2, 3): ["b", "c"], (4,): ["d"]})
        ),
        "_inspector_utils.is_inference_output_equal": lambda: canon(
            [
                u.is_inference_output_equal(1, 1),
                u.is_inference_output_equal("a", "b"),
                u.is_inference_output_equal(None, None),
            ]
        ),
    }


def run(which: str, zoo: Path) -> dict[str, Any]:
    lib = Lib(which)
    results: dict[str, Any] = {}
    manifest = json.loads((zoo / "manifest.json").read_text())
    jobs: list[tuple[str, Callable[[], Any]]] = list(general_calls(lib, zoo).items())
    for entry in manifest["models"]:
        if entry.get("error"):
            continue
        folder = zoo / entry["name"] / entry["backend"]
        prefix = f"{entry['name']}/{entry['backend']}"
        calls = model_calls(lib, folder, entry["name"])
        jobs += [(f"{prefix}: {key}", call) for key, call in calls.items()]
    for key, call in jobs:
        try:
            results[key] = call()
        except Exception as exc:
            results[key] = raised(exc)
    return results


def main() -> int:
    which, zoo, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    if which == "executorch" or "--import-executorch" in sys.argv:
        with contextlib.redirect_stdout(io.StringIO()):
            importlib.import_module("executorch.devtools")
    with contextlib.redirect_stdout(io.StringIO()):
        results = run(which, zoo)
    results["__torch_imported__"] = "torch" in sys.modules
    out.write_bytes(pickle.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
