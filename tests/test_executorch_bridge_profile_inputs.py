"""``delegate-lens profile`` / ``delegate_lens.profile``: inputs from ``.npy`` and ``.npz``
files besides ``torch.save`` ones; every path it names (the files it lists, the report's
header and Perfetto hint, its errors) is the file in the output folder, never the staging
folder that is gone when it returns; a damaged program is blamed before missing inputs.

The runs need the real runtime (skip without ``executorch``); reading the inputs files
needs only the bridge plugin, numpy and torch.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import VECTORS

from delegate_lens.cli import main
from delegate_lens.errors import UsageError

pytestmark = [
    pytest.mark.usefixtures("fresh_plugin_manager"),
    pytest.mark.skipif(
        importlib.util.find_spec("delegate_lens_executorch") is None,
        reason="the executorch bridge is not installed: pip install 'delegate-lens[executorch]'",
    ),
]
needs_executorch = pytest.mark.skipif(
    importlib.util.find_spec("executorch") is None,
    reason="executorch is not installed: pip install 'delegate-lens[executorch]'",
)

PTE = VECTORS / "mlp_xnnpack" / "model.pte"
ETRECORD = VECTORS / "mlp_xnnpack" / "etrecord.bin"
KINDS = (".npy", ".npz", "torch.save")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("inputs")
    x = np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)
    np.save(folder / "x.npy", x)
    np.savez(folder / "x.npz", x)
    np.savez(folder / "two.npz", x, x)
    np.save(folder / "wrong.npy", np.zeros((3, 5), np.float32))
    return {name: folder / name for name in ("x.npy", "x.npz", "two.npz", "wrong.npy")}


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


# ---------------------------------------------------------------- reading the files


def test_npy_is_one_input_npz_the_inputs_in_archive_order(tmp_path: Path) -> None:
    from delegate_lens_executorch.profiling import load_inputs

    a, b = np.arange(6.0).reshape(2, 3), np.array([7, 8], np.int64)
    np.save(tmp_path / "a.npy", a)
    np.savez(tmp_path / "pos.npz", a, b)  # arr_0, arr_1
    np.savez(tmp_path / "kw.npz", y=b, x=a)  # keyword order, names not used
    np.savez(tmp_path / "many.npz", *[np.full(1, i) for i in range(12)])  # arr_10 after arr_9
    (tmp_path / "a.bin").write_bytes((tmp_path / "a.npy").read_bytes())  # told by content
    [one] = load_inputs(tmp_path / "a.npy")
    assert isinstance(one, np.ndarray) and np.array_equal(one, a)  # numpy until the runtime
    assert [v.tolist() for v in load_inputs(tmp_path / "pos.npz")] == [a.tolist(), b.tolist()]
    assert [v.tolist() for v in load_inputs(tmp_path / "kw.npz")] == [b.tolist(), a.tolist()]
    assert [int(v[0]) for v in load_inputs(tmp_path / "many.npz")] == list(range(12))
    assert np.array_equal(load_inputs(str(tmp_path / "a.bin"))[0], a)


def test_arrays_become_native_writable_tensors_for_the_runtime(tmp_path: Path) -> None:
    import torch
    from delegate_lens_executorch.profiling import as_runtime_value

    big_endian = np.arange(4, dtype=">f4")
    tensor = as_runtime_value(big_endian)
    assert isinstance(tensor, torch.Tensor) and tensor.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(UsageError, match=r"^x\.npy: an input array of dtype <U1 cannot be"):
        as_runtime_value(np.array(["a"]), "x.npy")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("inputs.txt", b"1 2 3\n"),
        ("garbage.npy", b"\x93NUMPYnot really"),
        ("garbage.npz", b"PK\x03\x04 not really a zip"),
        ("objects.npy", None),  # pickled objects: never loaded
        ("dict.pt", None),  # a torch.save file of something else than inputs
    ],
)
def test_any_other_file_names_itself_and_every_kind_read(
    tmp_path: Path, name: str, content: bytes | None
) -> None:
    from delegate_lens_executorch.profiling import load_inputs

    path = tmp_path / name
    if name == "objects.npy":
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif name == "dict.pt":
        import torch

        torch.save({"x": torch.zeros(2)}, path)
    else:
        assert content is not None
        path.write_bytes(content)
    with pytest.raises(UsageError) as info:
        load_inputs(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert all(kind in message for kind in KINDS), message


# ---------------------------------------------------------------- runs


@needs_executorch
@pytest.mark.slow
def test_profile_cli_with_npy_names_only_files_that_remain(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What a user copies from the output, the report's header and its Perfetto hint
    works after the command returns (they named the staging folder's etdump.etdp before:
    ``.profile-xxxx/``, now ``.out.<pid>-xxxx.tmp/``)."""
    monkeypatch.chdir(tmp_path)  # relative paths, as typed
    argv = ["profile", str(PTE), "--etrecord", str(ETRECORD), "--inputs", str(files["x.npy"])]
    assert main([*argv, "--debug", "-o", "out"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed and all(Path(p).is_file() for p in listed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the staging folder went
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    found = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', html)
    assert found is not None
    meta = json.loads(found.group(1))["meta"]
    assert meta["etdump"] == os.path.join("out", "etdump.etdp")  # the page's header
    assert Path(meta["etdump"]).is_file() and Path(meta["etrecord"]).is_file()
    for name in ("inspector.txt", "numeric_gaps.txt", "report.html"):
        text = (tmp_path / "out" / name).read_text(encoding="utf-8")
        assert ".profile-" not in text and re.search(r"\.out\.\d+-\w{8}\.tmp", text) is None
    assert "first divergence: none" in (tmp_path / "out" / "numeric_gaps.txt").read_text()
    # the Perfetto hint, as report.js builds it, run as the user would
    hint = ["inspect", meta["etdump"], "--etrecord", meta["etrecord"]]
    assert main([*hint, "--format", "chrome-trace", "-o", "trace.json"]) == 0
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]


@needs_executorch
@pytest.mark.slow
def test_profile_python_with_npz(files: dict[str, Path], tmp_path: Path) -> None:
    import delegate_lens

    inspector = delegate_lens.profile(PTE, inputs=files["x.npz"], runs=2, output_dir=tmp_path)
    assert inspector.etdump_path == tmp_path / "etdump.etdp" and inspector.etdump_path.is_file()
    delegate = [e for e in inspector.event_blocks[-1].events if e.name == "DELEGATE_CALL"]
    assert len(delegate) == 1
    perf = delegate[0].perf_data
    assert perf is not None and len(perf.raw) == 2


@needs_executorch
@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        ("wrong.npy", "it takes [2, 16], given [3, 5]"),  # the array reached the runtime
        ("two.npz", "it takes [2, 16], given [2, 16], [2, 16]"),  # both, by position
    ],
)
def test_profile_runs_the_arrays_it_read(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], inputs: str, words: str
) -> None:
    err = _fails(capsys, ["profile", str(PTE), "--inputs", str(files[inputs])])
    assert "failed in the ExecuTorch runtime" in err and words in err


@needs_executorch
def test_profile_of_a_text_file_as_inputs_names_the_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inputs.txt").write_text("1 2 3\n")
    err = _fails(capsys, ["profile", str(PTE), "--inputs", str(tmp_path / "inputs.txt")])
    assert "inputs.txt" in err and all(kind in err for kind in KINDS), err


@needs_executorch
@pytest.mark.parametrize(
    "extra",
    [[], ["--etrecord", "{etrecord}"], ["--inputs", "{missing}"], ["--inputs", "{text}"]],
    ids=["no-inputs", "etrecord", "missing-inputs", "bad-inputs"],
)
def test_a_cut_program_is_blamed_before_its_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    cut = tmp_path / "cut.pte"
    cut.write_bytes(PTE.read_bytes()[:2000])
    text = tmp_path / "inputs.txt"
    text.write_text("1 2 3\n")
    values = {"etrecord": ETRECORD, "missing": tmp_path / "nope.npy", "text": text}
    argv = ["profile", str(cut), *(a.format(**values) for a in extra), "-o", str(tmp_path / "o")]
    err = _fails(capsys, argv)
    assert err.startswith(f"error: {cut}: the ExecuTorch runtime cannot load it: "), err
    assert "File size is too small" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.pte", "inputs.txt"]


@needs_executorch
def test_a_missing_method_is_blamed_before_the_inputs(capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(capsys, ["profile", str(PTE), "--method", "nope"])
    assert "no method 'nope' (methods: forward)" in err


@needs_executorch
@pytest.mark.slow
def test_a_failed_write_names_the_output_file_not_the_stage(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from delegate_lens import report
    from delegate_lens.fileio import write_atomic

    def full_disk(inspector: Any, path: Path, **kwargs: Any) -> Path:
        def write(stream: Any) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return write_atomic(path, write)  # names the staged file: profile renames it

    monkeypatch.setattr(report, "write_report", full_disk)
    out = tmp_path / "out"
    err = _fails(capsys, ["profile", str(PTE), "--inputs", str(files["x.npy"]), "-o", str(out)])
    assert err == f"error: {out / 'report.html'}: No space left on device\n"
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no staging folder
