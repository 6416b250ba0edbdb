"""The Arrow arrays collect makes from buffers (``dataset._arrow``) equal what
``pyarrow.array`` makes, and collect and query never import pandas (``pyarrow.array``
and ``Array.to_numpy`` would: about 0.2 s on every run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

import pyarrow as pa
from etdump_variants import vary

from delegate_lens.dataset import collect, query
from delegate_lens.dataset._arrow import from_numpy, int_lists, string_lists, strings, to_numpy

_DTYPES = st.sampled_from([np.int8, np.int32, np.int64, np.uint64, np.bool_])


@settings(deadline=None)
@given(
    hnp.arrays(_DTYPES, st.integers(0, 300)).flatmap(
        lambda a: st.tuples(st.just(a), hnp.arrays(np.bool_, len(a)))
    ),
    st.booleans(),
)
def test_from_numpy_is_pyarrow_array(pair: tuple[np.ndarray, np.ndarray], masked: bool) -> None:
    values, mask = pair
    ours = from_numpy(pa, values, mask=mask if masked else None)
    ours.validate(full=True)
    assert ours.equals(pa.array(values, mask=mask if masked else None))


def test_from_numpy_takes_views_and_a_type() -> None:
    base = np.arange(20, dtype=np.int64)
    view = base[::3]  # not contiguous
    assert from_numpy(pa, view).to_pylist() == view.tolist()
    assert from_numpy(pa, np.arange(4, dtype=np.int32), pa.int32()).type == pa.int32()
    read_only = np.broadcast_to(np.int32(7), (5,))
    assert from_numpy(pa, read_only).to_pylist() == [7] * 5


_TEXT = st.one_of(st.none(), st.text(max_size=8))


@settings(deadline=None)
@given(st.lists(_TEXT, max_size=50))
def test_strings_are_pyarrow_strings(values: list[str | None]) -> None:
    ours = strings(pa, values)
    ours.validate(full=True)
    assert ours.equals(pa.array(values, pa.string()))


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.text(max_size=5), max_size=4)), max_size=30))
def test_string_lists(values: list[list[str] | None]) -> None:
    ours = string_lists(pa, values)
    ours.validate(full=True)
    assert ours.equals(pa.array(values, pa.list_(pa.string())))


@settings(deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4)), max_size=30
    )
)
def test_int_lists(values: list[list[int] | None]) -> None:
    ours = int_lists(pa, values)
    ours.validate(full=True)
    assert ours.equals(pa.array(values, pa.list_(pa.int32())))


def test_strings_escape_text_that_is_not_unicode() -> None:
    """A file name that is not UTF-8 decodes to lone surrogates: stored escaped."""
    name = os.fsdecode(b"run\xff.etdp")
    array = strings(pa, [name, "ok", None])
    array.validate(full=True)
    assert array.to_pylist() == ["run\\udcff.etdp", "ok", None]


def test_a_file_name_that_is_not_utf8_is_collected(vectors_dir: Path, tmp_path: Path) -> None:
    """It used to fail its whole group of files (the good ones too) with a
    UnicodeEncodeError naming only the first."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    data = (vectors_dir / "mlp_xnnpack" / "etdump.etdp").read_bytes()
    try:
        (folder / os.fsdecode(b"bad\xff.etdp")).write_bytes(vary(data, 1))
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    (folder / "good.etdp").write_bytes(data)
    report = collect([str(folder)], str(tmp_path / "ds"))
    assert [r.status for r in report.results] == ["collected", "collected"]
    sources = query(str(tmp_path / "ds"), "SELECT DISTINCT source FROM events ORDER BY 1")
    assert sources.column("source").to_pylist() == [
        str(folder / "bad\\udcff.etdp"),
        str(folder / "good.etdp"),
    ]
    again = collect([str(folder)], str(tmp_path / "ds"))  # the manifest knows both
    assert [r.status for r in again.results] == ["skipped", "skipped"]


def test_to_numpy_views_a_slice_and_refuses_nulls() -> None:
    array = pa.array(np.arange(10, dtype=np.int32)).slice(3, 4)
    assert to_numpy(array, np.int32).tolist() == [3, 4, 5, 6]
    with pytest.raises(ValueError, match="nulls"):
        to_numpy(pa.array([1, None], pa.int32()), np.int32)


def test_collect_and_query_do_not_import_pandas(vectors_dir: Path, tmp_path: Path) -> None:
    vector = vectors_dir / "mlp_xnnpack"
    code = f"""
import sys
from delegate_lens.dataset import collect, query
collect([{str(vector / "etdump.etdp")!r}], {str(tmp_path / "a")!r})
collect([{str(vector / "etdump.etdp")!r}], {str(tmp_path / "b")!r},
        etrecord={str(vector / "etrecord.bin")!r})
rows = query({str(tmp_path / "b")!r}, "SELECT op_types, debug_handles FROM events").to_pylist()
assert rows and any(row["op_types"] for row in rows), rows[:3]
assert "pandas" not in sys.modules, "pandas was imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True)
