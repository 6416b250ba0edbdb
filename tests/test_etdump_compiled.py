"""The compiled walk (delegate_lens.etdump._walk) decodes exactly what the numpy decoder
decodes, and accepts no buffer the numpy decoder rejects: on the reference vectors, on files
decoded together, and on mutated, truncated and crafted bytes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import flatbuffers
import numpy as np
import pytest
from conftest import VECTORS, choose, compiled_extension
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_etdump_robustness import MLP, RICH, SMALL, _named_profiles_file, mutated

from delegate_lens.config import compiled_code_off
from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import DecodedColumns, _walk_py, decode_columns, decode_many
from delegate_lens.etdump import _fastwalk as fastwalk
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._reader import _as_bytes, _Decoder, _guarded, _root_position

VECTOR_FILES = sorted(VECTORS.glob("*/etdump.etdp"))
BASES = {"small": SMALL, "rich": RICH, "mlp": MLP}


@pytest.fixture(autouse=True)
def compiled_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """These tests compare both paths: the compiled walk, whatever was chosen at import
    (skips where it is not built, but fails in CI)."""
    choose(fastwalk, compiled_extension(fastwalk.EXTENSION), monkeypatch)
    yield


@pytest.fixture
def numpy_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The walk's Python twin, as chosen without the extension or with it switched off."""
    choose(fastwalk, _walk_py, monkeypatch)
    yield


def _numpy(data: bytes) -> DecodedColumns:
    """What the numpy decoder alone makes of ``data`` (raises as it does)."""
    buf = Buffer(_as_bytes(data))
    roots = np.array([_root_position(buf)], dtype=np.int64)
    return _guarded(lambda: _Decoder(buf).numpy_columns(roots))


def _compiled(data: bytes) -> DecodedColumns | None:
    buf = Buffer(_as_bytes(data))
    return fastwalk.columns(buf, np.array([_root_position(buf)], dtype=np.int64))


def _resolved(decoded: DecodedColumns, codes: Any) -> Any:
    return np.array([*decoded.strings, None], dtype=object)[np.asarray(codes)]


def assert_same(a: DecodedColumns, b: DecodedColumns) -> None:
    """Equal columns; string codes may differ in order, their strings may not."""
    assert sorted(a.strings) == sorted(b.strings)
    for name in a.columns:
        if name in ("name", "delegate_debug_id_str"):
            assert list(_resolved(a, a.columns[name])) == list(_resolved(b, b.columns[name]))
        else:
            assert np.array_equal(a.columns[name], b.columns[name]), name
            assert a.columns[name].dtype == b.columns[name].dtype, name
    for name in ("run_name", "allocator_names"):
        assert list(_resolved(a, getattr(a, name))) == list(_resolved(b, getattr(b, name)))
    for name in ("bounds", "run_file", "run_bundled", "allocator_bounds", "versions"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.entry_events is None) == (b.entry_events is None)
    if a.entry_events is not None:
        assert np.array_equal(a.entry_events, b.entry_events)
    for k in range(a.n_files):
        assert a.etdump(k) == b.etdump(k)


def test_extension_is_built() -> None:
    """The README's install builds it (the fixture fails in CI without it); without it
    decoding is ~4x slower. It is chosen at import unless switched off."""
    assert fastwalk.COMPILED is not compiled_code_off()


def test_switch_off(numpy_only: None) -> None:
    assert _compiled(SMALL) is None
    assert_same(decode_columns(SMALL), _numpy(SMALL))


@pytest.mark.parametrize("path", VECTOR_FILES, ids=[p.parent.name for p in VECTOR_FILES])
def test_vectors_equal_numpy(path: Any) -> None:
    data = path.read_bytes()
    fast = _compiled(data)
    assert fast is not None
    assert_same(fast, _numpy(data))


@pytest.mark.parametrize("name", list(BASES))
def test_built_files_equal_numpy(name: str) -> None:
    fast = _compiled(BASES[name])
    assert fast is not None
    assert_same(fast, _numpy(BASES[name]))


def test_files_decoded_together_equal_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    datas = [p.read_bytes() for p in VECTOR_FILES if p.stat().st_size < 2_000_000]
    datas += [SMALL, RICH, MLP, SMALL]
    fast = decode_many(datas)
    choose(fastwalk, _walk_py, monkeypatch)
    assert_same(fast, decode_many(datas))


def test_shared_and_long_strings() -> None:
    """A writer may share one string (short or long) among many events."""
    b = flatbuffers.Builder(1024)
    long_name = "é" * 200
    shared = b.CreateString(long_name)
    short = b.CreateString("op")
    names = [
        shared if i % 3 == 0 else short if i % 3 == 1 else b.CreateString(f"n{i % 7}")
        for i in range(300)
    ]
    data = _named_profiles_file(b, names)
    fast = _compiled(data)
    assert fast is not None
    assert_same(fast, _numpy(data))
    assert len(fast.strings) == 2 + 7


def _outcome(data: bytes) -> tuple[str, str | DecodedColumns]:
    try:
        return "ok", _numpy(data)
    except ETDumpFormatError as exc:
        return "error", str(exc)


def _check_agrees(data: bytes) -> None:
    """The walk rejects (None) whatever numpy rejects, and equals it on the rest; and
    decode_columns (walk first, numpy on refusal) raises numpy's own message."""
    kind, numpy_result = _outcome(data)
    if kind == "error":
        with pytest.raises(ETDumpFormatError) as caught:
            decode_columns(data)
        assert str(caught.value) == numpy_result
    try:
        fast = _compiled(data)
    except ETDumpFormatError as exc:
        # _root_position, or a bad debug Value (decoded by numpy's code after the walk)
        assert kind == "error" and str(exc) == numpy_result
        return
    if kind == "error":
        assert fast is None, f"the walk accepted what numpy rejects: {numpy_result}"
    elif fast is not None:
        assert isinstance(numpy_result, DecodedColumns)
        assert_same(fast, numpy_result)


@pytest.mark.parametrize("base", list(BASES))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_bytes_agree_with_numpy(base: str, data: st.DataObject) -> None:
    _check_agrees(mutated(BASES[base], data))


@pytest.mark.parametrize("base", ["small", "rich"])
def test_every_truncation_agrees_with_numpy(base: str) -> None:
    body = BASES[base][4:]
    for cut in range(8, len(body)):
        _check_agrees(body[:cut])


@settings(max_examples=100, deadline=None)
@given(junk=st.binary(min_size=4, max_size=300))
def test_garbage_agrees_with_numpy(junk: bytes) -> None:
    _check_agrees(junk[:4] + b"ED00" + junk[4:])


def test_overlapping_long_strings_are_refused() -> None:
    """Events naming distinct, overlapping long strings (each starting 4 bytes further into
    one region, each ending at its end) would have the walk hash the region again and
    again: it refuses, as numpy does (their lengths add up to more than the file)."""
    b = flatbuffers.Builder(1024)
    n = 4000
    region = b"".join((n - 4 * j - 4).to_bytes(4, "little") for j in range(n // 4))
    vec = b.CreateByteVector(region)
    # all longer than 128 bytes: numpy's long-string path too
    data = _named_profiles_file(b, [vec - 4 - 4 * j for j in range(n // 4 - 40)])
    assert len(data) < n * 20
    assert _compiled(data) is None
    with pytest.raises(ETDumpFormatError, match="strings overlap"):
        decode_columns(data)
    _check_agrees(data)
