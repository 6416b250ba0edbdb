"""Offsets that share what they point at (issue 35, item 2): a table or non-empty vector
named twice is refused, strings named again and again are held to a limit; the reference
vectors, our own files (which share equal strings) and shared empty vectors still read.
Every test runs on the compiled walk and on its Python twin (numpy alone)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import VECTORS, choose, compiled_extension
from etdump_shared import (
    KINDS,
    Plan,
    build,
    shared_events,
    shared_metadata,
    shared_name,
    shared_runs,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delegate_lens.config import reset_config
from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import ETDump, _walk_py, decode_many, dump, dumps, load, loads
from delegate_lens.etdump import _fastwalk as fastwalk
from delegate_lens.etdump._buffer import Buffer
from delegate_lens.etdump._limits import (
    DEFAULT_MAX_REFERENCES,
    DEFAULT_MAX_STRING_RATIO,
    STRING_SLACK,
    ReadLimits,
    how_to_raise,
    read_limits,
)
from delegate_lens.etdump._reader import _root_position

VECTOR_FILES = sorted(VECTORS.glob("*/etdump.etdp"))
TABLES = {"run", "event", "profile", "debug", "value", "tensor", "alloc"}
VECTORS_SHARED = {"events", "metadata", "sizes"}


@pytest.fixture(params=["compiled", "numpy"], autouse=True)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test on the compiled walk and on its Python twin."""
    if request.param == "compiled":
        choose(fastwalk, compiled_extension(fastwalk.EXTENSION), monkeypatch)
    else:
        choose(fastwalk, _walk_py, monkeypatch)
    yield request.param


@pytest.fixture
def options(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Set ``DELEGATE_LENS_OPTIONS`` for one test (the configuration re-read)."""

    def set_options(text: str) -> None:
        monkeypatch.setenv("DELEGATE_LENS_OPTIONS", text)
        reset_config()

    yield set_options
    monkeypatch.delenv("DELEGATE_LENS_OPTIONS", raising=False)
    reset_config()


def _refused(data: bytes, *words: str) -> str:
    with pytest.raises(ETDumpFormatError) as caught:
        loads(data)
    message = str(caught.value)
    for word in words:
        assert word in message, message
    return message


def _walked(data: bytes) -> bool:
    """Whether the compiled walk (as chosen) decoded ``data`` itself."""
    buf = Buffer(data)
    return fastwalk.columns(buf, np.array([_root_position(buf)], dtype=np.int64)) is not None


# --- the reference vectors and our own files still read ------------------------------------------


@pytest.mark.parametrize("file", VECTOR_FILES, ids=lambda p: p.parent.name)
def test_the_vectors_read_as_before_and_in_the_walk(file: Path, path: str) -> None:
    data = file.read_bytes()
    etdump = loads(data)
    assert loads(dumps(etdump)) == etdump  # our writer shares equal strings: still read
    if path == "compiled":
        assert _walked(data) and _walked(dumps(etdump))  # nothing declined to numpy


def test_files_decoded_together_read() -> None:
    datas = [p.read_bytes() for p in VECTOR_FILES if p.stat().st_size < 2_000_000]
    datas += [dumps(loads(d)) for d in datas]
    joined = decode_many(datas)
    for k, data in enumerate(datas):
        assert joined.etdump(k) == loads(data)


def test_shared_empty_vectors_read() -> None:
    """A writer may name one empty vector many times: it costs nothing per offset."""
    plan = Plan(
        events=(("profile", "debug", "profile"), (), ("debug",), ()),
        reuse={"metadata": (-1, 0), "sizes": (-1, 0), "events": (-1, -1, -1, 1)},
        metadata_size=0,
        sizes=0,
    )
    data, shared = build(plan)
    assert not shared  # only empty vectors reused
    assert loads(data) == loads(build(plan, share=False)[0])


# --- the four amplifications of issue 35, by structure --------------------------------------------


def test_a_metadata_vector_named_by_many_events() -> None:
    message = _refused(shared_metadata(500, 4096), "delegate_debug_metadata vector")
    assert "named by 500 offsets" in message and "max_references" in message


def test_a_run_named_many_times() -> None:
    _refused(shared_runs(2000), "RunData table", "named by 2,000 offsets", "max_references")


def test_an_event_named_many_times() -> None:
    _refused(shared_events(3000), "Event table", "named by 3,000 offsets", "max_references")


def test_a_long_name_named_many_times(options: object) -> None:
    data = shared_name(100, 1 << 20)  # 100 MiB of names in a 1 MB file
    message = _refused(data, "max_string_ratio", "the longest", "1,048,576 bytes")
    assert "byte offset" in message
    options("etdump.max_string_ratio = 200")  # type: ignore[operator]
    names = loads(data).run_data[0].columns
    assert len(names) == 100 and names.strings[-1] == "n" * (1 << 20)


def test_shared_short_names_read() -> None:
    """Our writer names each distinct string once: 482,002 events, 18 names. Fine."""
    data = shared_name(5000, 64)
    assert len(loads(data).run_data[0].columns) == 5000


def test_the_error_names_the_file_the_limit_and_how_to_raise(tmp_path: Path) -> None:
    target = tmp_path / "hostile.etdp"
    target.write_bytes(shared_events(1000))
    with pytest.raises(ETDumpFormatError) as caught:
        load(target)
    message = str(caught.value)
    assert message.startswith(f"{target}: the Event table at byte offset ")
    assert "[etdump] max_references = 1" in message
    assert "DELEGATE_LENS_OPTIONS='etdump.max_references = 1000'" in message
    assert "docs/trust.md" in message
    assert "max_references = 1200000'" in how_to_raise("max_references", 1_200_000)


def test_docs_state_the_code_s_limits() -> None:
    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "trust.md").read_text().split())
    assert DEFAULT_MAX_REFERENCES == 1 and "| `max_references` | 1 |" in text
    assert DEFAULT_MAX_STRING_RATIO == 8 and "| `max_string_ratio` | 8 |" in text
    assert STRING_SLACK == 32 << 20 and "the file's size, plus 32 MiB |" in text


def test_a_raised_limit_decodes_shared_tables(options: object) -> None:
    data = shared_events(50)
    _refused(data, "max_references")
    options("etdump.max_references = 50")  # type: ignore[operator]
    run = loads(data).run_data[0]
    assert len(run.events) == 50 and set(run.columns.start_time.tolist()) == {1}
    options("etdump.max_references = 49")  # type: ignore[operator]
    _refused(data, "named by 50 offsets")


def test_a_file_in_the_current_folder_may_lower_a_limit_never_raise_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "delegate-lens.toml").write_text(
        "[etdump]\nmax_references = 1000000\nmax_string_ratio = 2\n"
    )
    reset_config()
    try:
        assert read_limits() == ReadLimits(max_references=1, max_string_ratio=2)
        _refused(shared_events(10), "max_references = 1")
    finally:
        reset_config()


def test_overlapping_metadata_vectors_are_refused() -> None:
    """Distinct metadata vectors that overlap (each 4 bytes further into one region, each
    claiming to its end) would cost the file's size per event: refused as too many bytes."""
    import flatbuffers
    from etdump_shared import _event, _one_run, _profile

    b = flatbuffers.Builder(1024)
    n = 2000
    region = b"".join((n - 4 * j - 4).to_bytes(4, "little") for j in range(n // 4))
    vec = b.CreateByteVector(region)
    events = [_event(b, 0, _profile(b, None, vec - 4 - 4 * j, j)) for j in range(n // 4 - 10)]
    _refused(_one_run(b, events), "delegate_debug_metadata vectors claim more bytes")


# --- any sharing: refused, or read as the same file without it ------------------------------------


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    runs = draw(
        st.lists(
            st.lists(st.sampled_from(["profile", "debug", "alloc"]), max_size=4).map(tuple),
            min_size=1,
            max_size=4,
        ).map(tuple)
    )
    reuse = {
        kind: tuple(draw(st.lists(st.integers(-3, 5), max_size=8)))
        for kind in draw(st.sets(st.sampled_from(KINDS)))
    }
    return Plan(
        events=runs,
        reuse=reuse,
        metadata_size=draw(st.sampled_from([0, 3])),
        sizes=draw(st.sampled_from([0, 2])),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans())
def test_any_sharing_is_refused_or_read_without_it(plan: Plan) -> None:
    data, shared = build(plan)
    plain = loads(build(plan, share=False)[0])
    if shared - {"name"}:  # a table or non-empty vector named twice
        message = _refused(data, "byte offset")
        assert "max_references" in message or "claim more bytes" in message, message
        try:  # the compiled walk declines it (numpy names it), or raises numpy's error
            assert not _walked(data)  # (debug values are numpy's in both paths)
        except ETDumpFormatError as error:
            assert str(error) == message
    else:  # only strings or empty vectors shared: the same content, no per-offset cost
        assert loads(data) == plain
        assert _walked(data) == (fastwalk.walk is not _walk_py.walk)  # the walk reads it


# --- memory: the four files of issue 35 at full size, in a fresh process ------------------------

# The child's own peak: VmHWM, as ru_maxrss keeps the peak of the process image before exec
# (pytest's, which may be larger than the limit tested here).
_CHILD = """
import sys
from delegate_lens.errors import ETDumpFormatError
from delegate_lens.etdump import load
try:
    load(sys.argv[1])
    print("read", end=" ")
except ETDumpFormatError as error:
    print("refused", end=" ")
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "make",
    [
        lambda: shared_metadata(100_000, 4096),
        lambda: shared_runs(1_000_000),
        lambda: shared_events(1_200_000),
        lambda: shared_name(1000, 4 << 20),
    ],
    ids=["metadata", "runs", "events", "name"],
)
def test_the_files_of_issue_35_are_refused_in_little_memory(
    make: object, path: str, tmp_path: Path
) -> None:
    data = make()  # type: ignore[operator]
    assert len(data) < 5_000_000
    target = tmp_path / "hostile.etdp"
    target.write_bytes(data)
    env = dict(os.environ)
    if path == "numpy":
        env["DELEGATE_LENS_NO_COMPILED"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(target)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.split()
    assert out[0] == "refused"
    assert int(out[1]) < 300 * 1024  # KiB: far under the 500 MB promised


def test_our_writer_given_one_run_twice_shares_nothing(tmp_path: Path) -> None:
    """Our writer, given one run object (with debug entries) twice, writes two runs:
    no Value table is named twice."""
    run = load(VECTORS / "mlp_xnnpack" / "etdump.etdp").run_data[1]
    assert run.columns.debug_entries
    twice = ETDump(run_data=[run, run, run])
    dump(twice, tmp_path / "twice.etdp")
    assert load(tmp_path / "twice.etdp") == twice
