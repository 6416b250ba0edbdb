"""What the Inspector reads from its ETRecord under the reference's names: the program of a
named graph (``get_exported_program``), the reference outputs of a bundled run
(``EventBlock.reference_output``) and the graph events are linked to
(``reference_graph_name``). Torch only when a program or the outputs are read."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import UnknownNameError

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord


EDGE_DIALECT_GRAPH_KEY = "edge_dialect_graph_module"
"""The reference's name of the edge program among the Inspector's graphs."""


def check_reference_graph_name(name: str) -> None:
    """:class:`~delegate_lens.errors.UnknownNameError` (a ``KeyError`` too, as the
    reference's failed lookup) unless ``name`` names the edge program (what events are
    linked to)."""
    if name in (EDGE_DIALECT_GRAPH_KEY, "edge_dialect_exported_program"):
        return
    raise UnknownNameError(
        f"reference_graph_name={name!r}: the Inspector links events to the edge program "
        f"({EDGE_DIALECT_GRAPH_KEY!r}), where every debug handle of the run is; for numeric "
        "gaps against another graph use calculate_numeric_gap(reference_graph=...)"
    )


def exported_program_of(
    record: ETRecord, graph: str | None, method: str | None, warn: Callable[[str], None]
) -> Any:
    """The program ``Inspector.get_exported_program(graph, method=...)`` gives (see there)."""
    if graph is None or graph in ("edge_dialect_exported_program", EDGE_DIALECT_GRAPH_KEY):
        return record.edge_program(method) if method else record.edge_dialect_program
    if graph == "exported_program":
        return record.exported_program
    names = list(record.graph_map_names)
    name = graph if graph in names or "/" in graph else f"{graph}/forward"
    if name not in names:
        warn(f"get_exported_program: no graph {graph!r} (graph_map: {names})")
        return None
    return (record.graph_map or {})[name]  # a dict: it has the name


def reference_output_loader(record: ETRecord | None, index: int | None) -> Callable[[], Any] | None:
    """Loads the expected outputs of bundled test case ``index`` of ``forward`` (None when
    there is no ETRecord or the record has no reference outputs). ``index`` is Python's, as
    the reference's: -1, a run not from a bundled input, gives the last test case's."""
    if record is None or index is None or not record.has_reference_outputs:
        return None

    def load() -> Any:
        outputs = record.reference_outputs() or {}
        per_case = outputs.get("forward") if isinstance(outputs, dict) else None
        if per_case is None or not -len(per_case) <= index < len(per_case):
            return None
        return per_case[index]

    return load
