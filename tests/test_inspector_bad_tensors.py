"""A debug event's tensor of a shape no array can have (issue 35, item 7): more dimensions
than numpy's limit, or a negative size, in a damaged ETDump. Read with or without a debug
buffer, it is one error naming the file, the event and the field, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from delegate_lens.cli import main
from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import (
    DebugEvent,
    ETDump,
    Event,
    ProfileEvent,
    RunData,
    ScalarType,
    Tensor,
    TensorList,
    Value,
    ValueType,
    dumps,
)
from delegate_lens.inspector import Inspector
from delegate_lens.inspector._debugdata import MAX_DIMS


def _dump(*values: Value) -> ETDump:
    events = [
        Event(profile_event=ProfileEvent(name="op", instruction_id=1, start_time=5, end_time=9))
    ]
    events += [
        Event(debug_event=DebugEvent(name="op", instruction_id=1, debug_entry=value))
        for value in values
    ]
    return ETDump(run_data=[RunData(name="Execute", events=events)])


def _tensor(sizes: list[int]) -> Tensor:
    return Tensor(scalar_type=ScalarType.FLOAT, sizes=sizes, strides=[1] * len(sizes))


DEEP_EMPTY = [0] + [1] * MAX_DIMS  # no bytes: inflated without a buffer (np.zeros)
DEEP_ONE = [1] * (MAX_DIMS + 1)  # four bytes: read from the buffer


def _write(tmp_path: Path, *values: Value) -> Path:
    path = tmp_path / "damaged.etdp"
    path.write_bytes(dumps(_dump(*values)))
    return path


def _inspect_fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["inspect", *argv])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    return captured.err


def test_too_many_dimensions_without_a_buffer_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, Value(val=ValueType.Tensor, tensor=_tensor(DEEP_EMPTY)))
    err = _inspect_fails(capsys, [str(path)])
    assert f"{path}: run 0 ('Execute'), event 1 (debug event 'op', instruction 1)" in err
    assert f"debug_entry.tensor.sizes has {MAX_DIMS + 1} dimensions; a tensor has at most" in err
    with pytest.raises(ETDumpFormatError, match=r"event 1 .*debug_entry\.tensor\.sizes has"):
        Inspector(etdump_path=path)


def test_too_many_dimensions_with_a_buffer_is_the_same_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, Value(val=ValueType.Tensor, tensor=_tensor(DEEP_ONE)))
    buffer = tmp_path / "debug.bin"
    buffer.write_bytes(bytes(64))
    err = _inspect_fails(capsys, [str(path), "--debug-buffer", str(buffer)])
    assert "debug_entry.tensor.sizes has" in err
    with pytest.raises(ETDumpFormatError, match="dimensions"):
        Inspector(etdump_path=path, debug_buffer_path=buffer)


def test_a_negative_size_in_a_tensor_list_names_its_index(tmp_path: Path) -> None:
    tensors = TensorList([_tensor([2]), _tensor([3, -4])])
    path = _write(tmp_path, Value(val=ValueType.TensorList, tensor_list=tensors))
    with pytest.raises(ETDumpFormatError) as info:
        Inspector(etdump_path=path)
    assert "debug_entry.tensor_list.tensors[1].sizes[1] is -4; a size is never negative" in str(
        info.value
    )


def test_an_etdump_in_memory_is_named_as_such() -> None:
    dump = _dump(Value(val=ValueType.Tensor, tensor=_tensor(DEEP_EMPTY)))
    with pytest.raises(ETDumpFormatError, match=r"^the ETDump: run 0 \('Execute'\), event 1"):
        Inspector(etdump=dump)


def test_as_many_dimensions_as_an_array_may_have_still_work(tmp_path: Path) -> None:
    path = _write(tmp_path, Value(val=ValueType.Tensor, tensor=_tensor([0] * MAX_DIMS)))
    inspector = Inspector(etdump_path=path)
    (value,) = [v for block in inspector.event_blocks for e in block.events for v in e.debug_data]
    assert value.shape == (0,) * MAX_DIMS
