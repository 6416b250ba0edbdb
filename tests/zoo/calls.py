"""One set of reference-API calls on every zoo model, run through one library:

    python tests/zoo/calls.py executorch|delegate_lens ZOO_ROOT OUT.pkl [--import-executorch]

``ZOO_ROOT`` is the zoo or any folder of reference-made models laid out like it (``models``
below; ``differential.py`` here scores such a folder).

``executorch`` means ``executorch.devtools`` (the reference), ``delegate_lens`` the same code
with its imports changed. Each call's result is pickled in a canonical form of plain Python
values (``canon``, ``calls_canon.py``): tables as text, DataFrames as columns, dtypes and
cells, tensors as dtype, shape and values, exceptions as their class and its bases;
``{key: canonical}``. The calls here are the core set; ``calls_surface.py`` adds the rest
of the surface on each model (and the numeric gap's other arguments on a few),
``calls_general.py`` the calls on no one model (both imported from this folder).
``--import-executorch`` imports ``executorch.devtools`` first (delegate-lens with the
reference in the process). The test (``tests/test_differential.py``) compares the files.
Besides the calls' keys, the file holds ``__models__`` (the models measured),
``__malformed__`` (``{model: why}`` for a folder that could not be measured),
``__skipped__`` (the calls that do not apply to a model: it lacks the file they read) and
``__pair__`` (the two models whose files the call on a mismatched pair reads).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import os
import pickle
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calls_canon import canon, graph_canon, printed, raised, stdout_of
from calls_general import surface_general_calls
from calls_surface import gap_calls, surface_model_calls

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


class Lib:
    """The names a user imports, from the reference or from delegate-lens."""

    def __init__(self, which: str) -> None:
        root = "executorch.devtools" if which == "executorch" else "delegate_lens"
        self.root = root
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

    def module(self, path: str) -> Any:
        """The library's module at ``path`` below its root (``"etdump.serialize"``)."""
        return importlib.import_module(f"{self.root}.{path}")


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


def model_calls(
    lib: Lib, folder: Path, modules: list[str], gaps: bool = False
) -> tuple[dict[str, Callable[[], Any]], list[str]]:
    """The calls on one model's folder, by name, each returning a canonical value; and the
    names of those left out as they do not apply (the folder lacks the file they read:
    ``etrecord.bin``, ``debug.bin``, ``runtime.pt``, ``model.pte``). ``modules`` are the
    names given to ``find_total_for_module`` (with ``""``, every module, and
    ``"L__self__"``, the root's key); ``gaps``: also ``calls_surface.gap_calls``."""
    has_record = (folder / "etrecord.bin").is_file()
    has_debug = (folder / "debug.bin").is_file()
    files = {
        "etdump_path": str(folder / "etdump.etdp"),
        "etrecord": str(folder / "etrecord.bin") if has_record else None,
        "debug_buffer_path": str(folder / "debug.bin") if has_debug else None,
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
        if isinstance(program, dict):  # several methods: forward, else the first by name
            program = program["forward" if "forward" in program else sorted(program)[0]]
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
        "Inspector(no etrecord).print_data_tabular": lambda: printed(
            lib.Inspector(etdump_path=files["etdump_path"]).print_data_tabular
        ),
        "print_data_tabular": lambda: printed(inspector().print_data_tabular),
        "print_data_tabular(include_units=False)": lambda: printed(
            inspector().print_data_tabular, include_units=False
        ),
        "print_data_tabular(include_delegate_debug_data=True)": lambda: printed(
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
        "print_delegation_info(edge)": lambda: stdout_of(lib.print_delegation_info, edge_graph()),
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
    for module in dict.fromkeys([*modules, "", "L__self__"]):  # also every module, the root
        calls[f"find_total_for_module({module!r})"] = lambda m=module: canon(  # type: ignore[misc]
            inspector().find_total_for_module(m)
        )
    needs = {  # a call that reads a file the folder lacks does not apply
        "ETRecord": has_record,
        "parse_etrecord": has_record,
        "get_delegation_info": has_record,
        "print_delegation_info": has_record,
        "_inspector_utils.get_aot": has_record,
        "Inspector(no debug buffer)": has_debug,
        # a gap without them is calls_general's (deliberate differences, counted once)
        "calculate_numeric_gap": has_record and has_debug,
        "run_output == the runtime's outputs": (folder / "runtime.pt").is_file(),
    }
    more, more_needs = surface_model_calls(lib, folder, files, inspector, record, edge_graph)
    calls.update(more)
    if gaps:
        calls.update(gap_calls(lib, inspector))
    needs.update(more_needs)
    skipped = [k for k in calls if any(k.startswith(p) and not ok for p, ok in needs.items())]
    return {k: v for k, v in calls.items() if k not in skipped}, skipped


def module_names(folder: Path, name: str) -> list[str]:
    """The modules whose totals are asked for: the folder's ``manifest.json`` ``modules``, else
    the zoo's own (``MODULES``) for a zoo model's name, else up to three module paths of the
    ETRecord's exported program (its nodes' ``nn_module_stack``, read from the file, so the
    same for both libraries) and one that no model has."""
    manifest = _model_manifest(folder)
    if isinstance(manifest.get("modules"), list):
        return [str(m) for m in manifest["modules"]]
    if name in MODULES:
        return MODULES[name]
    paths: set[str] = set()
    try:
        with zipfile.ZipFile(folder / "etrecord.bin") as record:
            graph = json.loads(record.read("exported_program"))["graph_module"]["graph"]
        for node in graph["nodes"]:
            stack = (node.get("metadata") or {}).get("nn_module_stack") or ""
            for frame in stack.split(";"):
                parts = frame.split(",")
                if len(parts) >= 3 and parts[1]:
                    paths.add(parts[1])
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile):
        pass  # no ETRecord, or not one: the ETRecord's own calls say so
    found = sorted(paths)
    picked = [found[i * (len(found) - 1) // 2] for i in range(3)] if len(found) > 3 else found
    return [*dict.fromkeys(picked), "no_such_module"]


def _model_manifest(folder: Path) -> dict[str, Any]:
    """A model folder's ``manifest.json`` (the zoo writes one; outside folders need not)."""
    path = folder / "manifest.json"
    if not path.is_file():
        return {}
    manifest = json.loads(path.read_text())
    if not isinstance(manifest, dict):
        raise ValueError("manifest.json is not a JSON object")
    return manifest


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


def general_calls(
    lib: Lib, zoo: Path, bad: Path, pair: tuple[Path, Path] | None, model: Path | None = None
) -> dict[str, Callable[[], Any]]:
    """Calls on no one model: ``bad`` is a file that is neither an ETRecord nor an ETDump,
    ``pair`` two model folders whose ETDump and ETRecord are read together (None: fewer
    than two models, the call left out), ``model`` a model folder with an ETRecord and a
    debug buffer (``calls_surface.surface_general_calls``; None: its calls left out)."""
    u = lib.utils
    calls: dict[str, Callable[[], Any]] = {
        "ETRecord().graph_map": lambda: canon(lib.ETRecord().graph_map),
        "parse_etrecord(not a zip)": lambda: canon(lib.parse_etrecord(str(bad))),
        "parse_etrecord(missing)": lambda: canon(lib.parse_etrecord(str(zoo / "missing.bin"))),
        "Inspector(missing etdump)": lambda: canon(lib.Inspector(etdump_path=str(zoo / "missing"))),
        "Inspector(not an etdump)": lambda: canon(lib.Inspector(etdump_path=str(bad))),
        "Inspector(etdump, etrecord of another model)": lambda: canon(
            len(
                lib.Inspector(
                    etdump_path=str(pair[0] / "etdump.etdp"),  # type: ignore[index]
                    etrecord=str(pair[1] / "etrecord.bin"),  # type: ignore[index]
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
    if pair is None:
        del calls["Inspector(etdump, etrecord of another model)"]
    return {**calls, **surface_general_calls(lib, model)}


MODEL_FILE = "etdump.etdp"
"""The file that makes a folder a model (beside it: ``etrecord.bin``, ``debug.bin`` ...)."""
_MODEL_HINTS = ("etrecord.bin", "debug.bin", "model.pte", "model.bpte")


def models(root: Path) -> tuple[dict[str, tuple[Path, str]], dict[str, str]]:
    """The models of a folder: ``({label: (folder, name)}, {label: why it is malformed})``.

    The zoo's layout: ``root/manifest.json`` lists ``models`` (``name``, ``backend``,
    ``error``), each in ``root/<name>/<backend>/``, labelled ``<name>/<backend>``. Any other
    folder: every folder under ``root`` (links followed) that holds ``etdump.etdp`` is a
    model, labelled by its path below ``root`` (``root`` itself when it is one), named by its
    ``manifest.json``'s ``name`` or else its folder's name. A folder that holds a model's
    other files (``etrecord.bin``, ``debug.bin``, ``model.pte``, ``model.bpte``) but no
    ``etdump.etdp``, or a listed model that failed to build or is missing, is malformed."""
    found: dict[str, tuple[Path, str]] = {}
    malformed: dict[str, str] = {}
    listed = _zoo_listing(root)
    if listed is not None:
        for entry in listed:
            label = f"{entry.get('name')}/{entry.get('backend')}"
            folder = root / str(entry.get("name")) / str(entry.get("backend"))
            if entry.get("error"):
                malformed[label] = f"did not build: {entry['error']}"
            elif not (folder / MODEL_FILE).is_file():
                malformed[label] = f"no {MODEL_FILE} in {folder}"
            else:
                found[label] = (folder, str(entry["name"]))
        return found, malformed
    for here, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        folder = Path(here)
        label = folder.relative_to(root).as_posix() if folder != root else root.name
        if MODEL_FILE in names:
            dirs[:] = []  # a model's folder holds no other model
            try:
                name = str(_model_manifest(folder).get("name") or folder.name)
            except (OSError, ValueError) as exc:
                malformed[label] = f"unreadable manifest.json: {type(exc).__name__}: {exc}"
                continue
            found[label] = (folder, name)
        elif any(hint in names for hint in _MODEL_HINTS):
            malformed[label] = f"no {MODEL_FILE} beside {sorted(set(names) & set(_MODEL_HINTS))}"
    return found, malformed


def _zoo_listing(root: Path) -> list[dict[str, Any]] | None:
    """The models ``root/manifest.json`` lists, the zoo's way; None for any other folder."""
    try:
        listed = json.loads((root / "manifest.json").read_text())["models"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(listed, list) or not all(isinstance(e, dict) for e in listed):
        return None
    return listed


def run(which: str, zoo: Path) -> dict[str, Any]:
    lib = Lib(which)
    results: dict[str, Any] = {}
    found, malformed = models(zoo)
    with tempfile.TemporaryDirectory() as tmp:
        bad = zoo / "manifest.json"
        if _zoo_listing(zoo) is None:  # a file that is neither an ETRecord nor an ETDump
            bad = Path(tmp) / "manifest.json"
            bad.write_text(json.dumps({"models": []}) + "\n")
        labels = [k for k, (folder, _) in found.items() if (folder / "etrecord.bin").is_file()]
        pair = (labels[0], labels[-1]) if len(labels) > 1 else None
        if {"mlp/xnnpack", "gpt/portable"} <= set(found):  # the zoo's pair
            pair = ("mlp/xnnpack", "gpt/portable")
        folders = None if pair is None else (found[pair[0]][0], found[pair[1]][0])
        full = [f for f, _ in found.values() if (f / "etrecord.bin").is_file()]
        full = [f for f in full if (f / "debug.bin").is_file()]
        if "mlp/xnnpack" in found:  # the zoo's
            full.insert(0, found["mlp/xnnpack"][0])
        jobs = list(general_calls(lib, zoo, bad, folders, full[0] if full else None).items())
        gap_labels = {k for k, (f, _) in found.items() if f in (full[:1] + full[-1:])}
        zoo_gaps = {"mlp/xnnpack", "cnn/portable", "int8_cnn/xnnpack"}  # where both answer
        if zoo_gaps <= set(found):
            gap_labels = zoo_gaps
        skipped: list[str] = []
        for label, (folder, name) in found.items():
            try:
                gaps = label in gap_labels  # the numeric gap's other arguments: a few models
                calls, left_out = model_calls(lib, folder, module_names(folder, name), gaps)
            except Exception as exc:  # reported by name; the other models are measured
                malformed[label] = f"{type(exc).__name__}: {exc}"
                continue
            jobs += [(f"{label}: {key}", call) for key, call in calls.items()]
            skipped += [f"{label}: {key}" for key in left_out]
        for key, call in jobs:
            try:
                results[key] = call()
            except Exception as exc:
                results[key] = raised(exc)
    results["__models__"] = [label for label in found if label not in malformed]
    results["__malformed__"] = malformed
    results["__skipped__"] = skipped
    results["__pair__"] = pair  # the models of "Inspector(etdump, etrecord of another model)"
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
