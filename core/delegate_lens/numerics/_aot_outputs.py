"""Reference (AOT) intermediate outputs: what the stored graph computed, keyed by handle.

Made with torch by :func:`delegate_lens.numerics.capture_intermediate_outputs`;
held and cached here as numpy arrays, so the Inspector compares them without torch. The
cache is an ``.npz`` file (numpy's own format, read with ``allow_pickle=False``) holding
one array per output and a JSON description of the graph.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from delegate_lens.errors import InspectorError

CACHE_SUFFIX = ".numerics.npz"
"""``<etrecord>`` + this suffix: where ``cache=True`` keeps the captured outputs."""
_FORMAT = "delegate-lens-aot-outputs/1"
Handles = tuple[int, ...]


@attrs.frozen(eq=False)
class AotOutputs:
    """The reference graph's intermediate outputs.

    :param graph: which graph ran: ``"exported_program"`` (ATen, handles propagated back
        from the edge program) or ``"edge_dialect_exported_program/<method>"``.
    :param outputs: ``{(handle,): numpy array, or list of arrays for multi-output nodes}``.
    :param op_names: ``{(handle,): node names with that handle, in graph order}``.
    :param stack_traces: ``{node name: stack trace or None}``.
    :param order: ``{handle: position of its last node in the graph}``.
    :param inputs_of: ``{handle: handles of the nodes feeding it}`` (through nodes
        without a handle), for ``first_divergence``.
    :param key: what the outputs were computed from (inputs and graph), for the cache.
    :param graph_outputs: the handle of the node behind each output of the graph, in
        output order (None where an output comes from no handled node; the whole tuple
        None when not known, e.g. a cache of an older delegate-lens): a partition's
        outputs are told apart with it.
    """

    graph: str
    outputs: Mapping[Handles, Any]
    op_names: Mapping[Handles, list[str]]
    stack_traces: Mapping[str, str | None]
    order: Mapping[int, int]
    inputs_of: Mapping[int, tuple[int, ...]]
    key: str = ""
    graph_outputs: tuple[int | None, ...] | None = None

    def __len__(self) -> int:
        return len(self.outputs)

    # ------------------------------------------------------------------ cache

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the outputs to ``path`` (an ``.npz`` file), atomically."""
        from delegate_lens.fileio import write_bytes_atomic

        arrays: dict[str, np.ndarray[Any, Any]] = {}
        entries = []
        for i, (handles, value) in enumerate(self.outputs.items()):
            if isinstance(value, list):
                names = []
                for j, item in enumerate(value):
                    arrays[f"o{i}_{j}"] = np.asarray(item)
                    names.append(f"o{i}_{j}")
                entries.append({"handles": list(handles), "list": names})
            else:
                arrays[f"o{i}"] = np.asarray(value)
                entries.append({"handles": list(handles), "array": f"o{i}"})
        meta = {
            "format": _FORMAT,
            "graph": self.graph,
            "key": self.key,
            "outputs": entries,
            "op_names": [[list(h), names] for h, names in self.op_names.items()],
            "stack_traces": dict(self.stack_traces),
            "order": [[h, p] for h, p in self.order.items()],
            "inputs_of": [[h, list(v)] for h, v in self.inputs_of.items()],
            "graph_outputs": None if self.graph_outputs is None else list(self.graph_outputs),
        }
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        return write_bytes_atomic(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AotOutputs:
        """Read outputs saved by :meth:`save`; InspectorError naming the file if it is not."""
        from delegate_lens.fileio import read_input

        data = read_input(path, "AOT outputs cache")
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                meta = json.loads(bytes(npz["meta"]).decode("utf-8"))
                if meta.get("format") != _FORMAT:
                    raise ValueError(f"format {meta.get('format')!r} is not {_FORMAT!r}")
                outputs: dict[Handles, Any] = {}
                for entry in meta["outputs"]:
                    handles = tuple(int(h) for h in entry["handles"])
                    if "list" in entry:
                        outputs[handles] = [npz[name] for name in entry["list"]]
                    else:
                        outputs[handles] = npz[entry["array"]]
            return cls(
                graph=str(meta["graph"]),
                outputs=outputs,
                op_names={tuple(h): list(n) for h, n in meta["op_names"]},
                stack_traces=dict(meta["stack_traces"]),
                order={int(h): int(p) for h, p in meta["order"]},
                inputs_of={int(h): tuple(int(x) for x in v) for h, v in meta["inputs_of"]},
                key=str(meta.get("key", "")),
                graph_outputs=_graph_outputs(meta.get("graph_outputs")),
            )
        except (KeyError, TypeError, ValueError, OSError, EOFError) as exc:
            raise InspectorError(
                f"{os.fspath(path)}: not an AOT outputs cache written by delegate-lens: {exc}"
            ) from None


def _graph_outputs(value: object) -> tuple[int | None, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(None if h is None else int(h) for h in value)
