"""Small ETDumps that share nothing yet cost much to write (issue 35, item 2): 245,000
rows packed in 4.9 MB (``inspect -f json`` took 597 MB), tensors each naming the whole
debug buffer (1,000 of them on 4 MB took 3.95 GB), a tensor of 10**10 elements without a
buffer (a traceback from ``np.zeros``). Each is one error line naming the limit, or costs
nothing; memory is measured in a child process (its ``VmHWM``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from delegate_lens.config import reset_config
from delegate_lens.errors import ETDumpFormatError, InspectorError
from delegate_lens.etdump import (
    DebugEvent,
    ETDump,
    Event,
    RunData,
    ScalarType,
    Tensor,
    Value,
    ValueType,
    dumps,
)
from delegate_lens.inspector import Inspector, json_input, table_input
from delegate_lens.inspector._debugdata import ZEROS_BUDGET

sys.path.insert(0, str(Path(__file__).parent))
from etdump_shared import packed_events, tensors_on_one_buffer

# The peak of the child's own memory: VmHWM, as ru_maxrss keeps the peak of the process
# image before exec (pytest's, which may be larger than any limit tested here).
_CHILD = """
import sys
from delegate_lens.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
sys.stderr.write(f"\\nPEAK {peak}\\n")
sys.exit(code)
"""


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, int]:
    """Exit code, error text and peak memory (bytes) of ``delegate-lens ARGV`` in a child."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    err, _, peak = done.stderr.rpartition("\nPEAK ")
    return done.returncode, err.lstrip("\n"), int(peak) * 1024


@pytest.fixture(autouse=True)
def _fresh_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS", raising=False)
    monkeypatch.delenv("DELEGATE_LENS_CONFIG", raising=False)
    reset_config()


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("packed") / "packed.etdp"
    path.write_bytes(packed_events(245_000))
    assert path.stat().st_size < 5_000_000
    return path


@pytest.mark.parametrize("fmt", ["json", "table", "chrome-trace"])
def test_a_small_file_of_many_rows_is_refused_cheaply(
    packed: Path, tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / "out"
    code, err, peak = _run(["inspect", str(packed), "-f", fmt, "-o", str(out)])
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert f"{packed}: 245,000 rows" in err and "[inspector] max_rows = 100,000" in err
    assert "DELEGATE_LENS_OPTIONS='inspector.max_rows = 245000'" in err
    assert peak < 250 << 20, peak  # 597 MB as JSON before the limit
    assert not out.exists()


def test_max_rows_is_raised_by_chosen_configuration_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rows.etdp"
    path.write_bytes(packed_events(300))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text("[inspector]\nmax_rows = 200\n")
    reset_config()
    with pytest.raises(InspectorError, match=r"300 rows .* max_rows = 200 "):
        json_input(Inspector(etdump_path=path))
    (tmp_path / "delegate-lens.toml").write_text("[inspector]\nmax_rows = 1000000\n")
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "inspector.max_rows = 100")
    reset_config()
    with pytest.raises(InspectorError, match="max_rows = 100 "):
        table_input(Inspector(etdump_path=path))
    monkeypatch.setenv("DELEGATE_LENS_OPTIONS", "inspector.max_rows = 300")
    reset_config()
    assert len(table_input(Inspector(etdump_path=path)).rows) == 300


def test_tensors_naming_one_buffer_are_refused_cheaply(tmp_path: Path) -> None:
    etdump, buffer = tmp_path / "dbg.etdp", tmp_path / "dbg.bin"
    etdump.write_bytes(tensors_on_one_buffer(150, 1_000_000))
    buffer.write_bytes(bytes(4_000_000))
    argv = ["inspect", str(etdump), "--debug-buffer", str(buffer), "-f", "csv"]
    code, err, peak = _run([*argv, "-o", str(tmp_path / "out.csv")])
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
    assert f"{etdump}: run 0 ('Execute'), event 2 (debug event 'op2', instruction 2)" in err
    assert "[inspector] max_debug_ratio = 2 times its 4,000,000 bytes plus 1 MiB" in err
    assert peak < 250 << 20, peak  # 600 MB before (each tensor copied)
    code, err, _ = _run(
        [*argv, "-o", str(tmp_path / "out.csv")],
        env={"DELEGATE_LENS_OPTIONS": "inspector.max_debug_ratio = 150"},
    )
    assert code == 0, err


def test_tensors_within_the_buffer_read_as_before(tmp_path: Path) -> None:
    etdump = tmp_path / "dbg.etdp"
    etdump.write_bytes(tensors_on_one_buffer(2, 4))
    data = np.arange(4, dtype=np.float32).tobytes()
    (tmp_path / "dbg.bin").write_bytes(data)
    inspector = Inspector(etdump_path=etdump, debug_buffer_path=tmp_path / "dbg.bin")
    values = [v for vs in inspector.tables[0].debug_data.values() for v in vs]
    assert [v.tolist() for v in values] == [[0.0, 1.0, 2.0, 3.0]] * 2
    assert all(v.flags.writeable for v in values)  # copies, as before


def _huge(sizes: list[int]) -> ETDump:
    tensor = Tensor(scalar_type=ScalarType.FLOAT, sizes=sizes, strides=[1] * len(sizes))
    entry = Value(val=ValueType.Tensor, tensor=tensor)
    event = Event(debug_event=DebugEvent(name="op", instruction_id=1, debug_entry=entry))
    return ETDump(run_data=[RunData(name="Execute", events=[event])])


def test_a_huge_tensor_without_a_buffer_allocates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "huge.etdp"
    path.write_bytes(dumps(_huge([10**10])))
    code, err, peak = _run(["inspect", str(path), "-f", "json", "-o", str(tmp_path / "o.json")])
    assert code == 0 and "Traceback" not in err, err  # np.zeros of 37 GiB before
    assert peak < 250 << 20, peak
    assert json.loads((tmp_path / "o.json").read_text())["blocks"][0]["events"][0][
        "debug_data"
    ] == [None]
    with pytest.warns(UserWarning):
        inspector = Inspector(etdump_path=path)
        zeros = inspector.tables[0].zeros_debug_data or {}
        (value,) = [v for vs in zeros.values() for v in vs]
        (tensor,) = [v for b in inspector.event_blocks for e in b.events for v in e.debug_data]
    assert value.shape == (10**10,) and not value.flags.writeable and value.strides == (0,)
    assert tuple(tensor.shape) == (10**10,) and tensor.stride() == (0,)  # torch: expanded


def test_small_zeros_are_arrays_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "small.etdp"
    path.write_bytes(dumps(_huge([ZEROS_BUDGET // 8])))
    inspector = Inspector(etdump_path=path)
    zeros = inspector.tables[0].zeros_debug_data or {}
    (value,) = [v for vs in zeros.values() for v in vs]
    assert value.flags.writeable and not value.any()


def test_sizes_no_array_can_have_are_one_error(tmp_path: Path) -> None:
    path = tmp_path / "huge.etdp"
    path.write_bytes(dumps(_huge([2**40, 2**40])))
    with pytest.raises(ETDumpFormatError, match="more than any array can hold"):
        Inspector(etdump_path=path)
    code, err, _ = _run(["inspect", str(path)])
    assert code == 2 and err.count("\n") == 1 and "more than any array can hold" in err, err


def test_json_written_in_chunks_is_the_same_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from delegate_lens.exporters import _json
    from delegate_lens.exporters._json import write_json

    path = tmp_path / "rows.etdp"
    path.write_bytes(packed_events(1000))
    data = json_input(Inspector(etdump_path=path))
    texts = []
    for chunk in (7, 1000, 10**9):
        monkeypatch.setattr(_json, "_CHUNK", chunk)
        out = io.StringIO()
        write_json(data, out)
        texts.append(out.getvalue())
    assert texts[0] == texts[1] == texts[2]
    assert len(json.loads(texts[0])["blocks"][0]["events"]) == 1000


def test_docs_state_the_inspector_limits() -> None:
    from delegate_lens.inspector._limits import (
        BYTES_PER_ROW,
        DEBUG_SLACK,
        DEFAULT_MAX_DEBUG_RATIO,
        DEFAULT_MAX_ROWS,
    )

    text = " ".join((Path(__file__).parents[1] / "docs" / "trust.md").read_text().split())
    assert DEFAULT_MAX_ROWS == 100_000 and "| `max_rows` | 100,000 |" in text
    assert BYTES_PER_ROW == 64 and "one per 64 bytes of the ETDump" in text
    assert DEFAULT_MAX_DEBUG_RATIO == 2 and "| `max_debug_ratio` | 2 |" in text
    assert DEBUG_SLACK == 1 << 20 and "buffer's size, plus 1 MiB" in text
    assert ZEROS_BUDGET == 64 << 20 and "up to 64 MiB in all" in text
