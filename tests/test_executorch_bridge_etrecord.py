"""Our ETRecord writer given real ExecuTorch managers (issue 23, item 5): both Inspectors
(ours and the reference's, from the executorch package) read what it writes, and link
the real runtime's events to the same operators as from the reference's own ETRecord.

Skips (with the reason) only where executorch is not installed.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("executorch") is None,
        reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
    ),
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning"),
]


@pytest.fixture(scope="module")
def lowered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import torch
    from delegate_lens_executorch.runtime import run_program
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.linear(x)) + 1

    torch.manual_seed(2)
    inputs = (torch.randn(2, 8),)
    folder = tmp_path_factory.mktemp("real")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edge = to_edge_transform_and_lower(
            torch.export.export(Model().eval(), inputs),
            partitioner=[XnnpackPartitioner()],
            generate_etrecord=True,
        )
        manager = edge.to_executorch()
        manager.get_etrecord().save(str(folder / "reference.bin"))
    run = run_program(manager.buffer, list(inputs), runs=2, debug=True)
    (folder / "run.etdp").write_bytes(run.etdump)
    (folder / "debug.bin").write_bytes(run.debug_buffer or b"")
    return {"edge": edge, "manager": manager, "folder": folder, "inputs": inputs}


def _rows(inspector: Any) -> list[tuple[str, tuple[str, ...]]]:
    return [(e.name, tuple(e.op_types)) for b in inspector.event_blocks for e in b.events]


@pytest.mark.slow
def test_our_writer_takes_real_managers_and_both_inspectors_read_it(
    lowered: dict[str, Any],
) -> None:
    from executorch.devtools import Inspector as ReferenceInspector

    import delegate_lens

    folder: Path = lowered["folder"]
    ours = folder / "ours.bin"
    assert delegate_lens.generate_etrecord(ours, lowered["edge"], lowered["manager"]) == ours
    record = delegate_lens.parse_etrecord(ours)
    assert record.delegate_map == {"forward": {1: {"name": "XnnpackBackend", "delegate_map": {}}}}
    assert record.has_representative_inputs  # the ATen program's example inputs
    run, debug = str(folder / "run.etdp"), str(folder / "debug.bin")
    for reader in (delegate_lens.Inspector, ReferenceInspector):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from_ours = reader(etdump_path=run, etrecord=str(ours), debug_buffer_path=debug)
            from_reference = reader(
                etdump_path=run, etrecord=str(folder / "reference.bin"), debug_buffer_path=debug
            )
        rows = _rows(from_ours)
        assert rows == _rows(from_reference)  # the same links as the reference's own ETRecord
        assert ("DELEGATE_CALL", ()) not in rows  # the delegate call is linked to operators
    gaps = delegate_lens.Inspector(
        etdump_path=run, etrecord=str(ours), debug_buffer_path=debug
    ).calculate_numeric_gap(as_dataframe=False)
    assert gaps.rows and not any(row["diverged"] for row in gaps.rows)


def test_a_lowered_edge_manager_without_its_kept_copy_is_refused(
    lowered: dict[str, Any], tmp_path: Path
) -> None:
    import delegate_lens
    from delegate_lens.errors import UsageError

    edge = lowered["edge"]
    kept, edge._etrecord = edge._etrecord, None
    try:
        with pytest.raises(UsageError, match="already lowered"):
            delegate_lens.generate_etrecord(tmp_path / "r.bin", edge, lowered["manager"])
    finally:
        edge._etrecord = kept
    assert list(tmp_path.iterdir()) == []
