"""The reference Inspector's remaining methods and attributes, kept for code written for it:
``get_vgf_neural_statistics``, ``write_tensorboard_artifact`` (a stub there: it writes
nothing; here it says so) and ``_reference_outputs``; ``op_graph_dict`` is an
``AttributeError`` that says why it is not provided.

:class:`ReferenceExtras` is a base of :class:`~delegate_lens.inspector.Inspector`.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

from delegate_lens.errors import InspectorWarning

if TYPE_CHECKING:
    from delegate_lens.etrecord import ETRecord
    from delegate_lens.inspector._tables import BlockTable


class ReferenceExtras:
    """The reference's odd ends (see :mod:`delegate_lens.inspector._reference_extras`)."""

    _etrecord: ETRecord | None
    _tables: list[BlockTable]

    def row_metadata(self, table: BlockTable, row: int) -> tuple[list[bytes], Any]:
        raise NotImplementedError

    @property
    def _reference_outputs(self) -> dict[str, Any]:
        """The ETRecord's reference outputs (``{method: [outputs of each test case]}``,
        torch tensors: loading them imports torch), ``{}`` without them, as the
        reference's Inspector attribute of this name."""
        record = self._etrecord
        outputs = None if record is None else record._reference_outputs
        return {} if outputs is None else dict(outputs)

    @property
    def op_graph_dict(self) -> Any:
        """Not provided: the reference's ``OperatorGraph`` objects are
        ``executorch.devtools.debug_format``'s, which delegate-lens does not provide. An
        ``AttributeError`` (as for any missing attribute) that says what to use instead."""
        raise AttributeError(
            "Inspector.op_graph_dict is not provided (its OperatorGraphs are "
            "executorch.devtools.debug_format's): Inspector.graph_view() gives the ETRecord's "
            "graphs with the rows linked to each node"
        )

    def get_vgf_neural_statistics(self) -> list[dict[str, Any]]:
        """The VGF neural statistics records among the delegate metadata of every row, in
        row order, parsed by
        :func:`~delegate_lens.inspector.parse_vgf_neural_statistics_delegate_metadata`
        (each blob's ``raw_data`` decoded); ``[]`` when no backend logged any."""
        from delegate_lens.inspector._reference_utils import (
            parse_vgf_neural_statistics_delegate_metadata,
        )

        records: list[dict[str, Any]] = []
        for table in self._tables:
            for row in range(table.n_rows):
                raws, _ = self.row_metadata(table, row)
                if raws:
                    records.extend(parse_vgf_neural_statistics_delegate_metadata(raws))
        return records

    def write_tensorboard_artifact(self, path: str | os.PathLike[str]) -> None:
        """Kept for code that calls it: the reference's writes nothing (it is not
        implemented there), and neither does this one, which says so in an
        :class:`~delegate_lens.errors.InspectorWarning` rather than in silence. For a
        timeline, ``delegate-lens inspect --format perfetto``."""
        warnings.warn(
            f"write_tensorboard_artifact wrote nothing to {os.fspath(path)!r}: it is not "
            "implemented (nor in the reference); export a Perfetto trace instead "
            "(delegate-lens inspect --format perfetto)",
            InspectorWarning,
            stacklevel=2,
        )
