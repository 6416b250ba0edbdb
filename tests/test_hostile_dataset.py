"""The dataset under concurrent writers and damage (issue 24 defects 3, 4, 9, 10; issue 20
§5's collect items): two collects at once store each file once; a damaged part or
manifest entry is one line naming it, and ``collect --check``/``--repair`` find and drop
it; nothing collected is exit 2; a failed run leaves no empty dataset behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import VECTORS

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from delegate_lens.cli import main

MLP = VECTORS / "mlp_xnnpack" / "etdump.etdp"
GPT = VECTORS / "gpt_portable" / "etdump.etdp"

# a collect whose writing of a part is slow, so that a second one starts meanwhile
_SLOW_COLLECT = textwrap.dedent(
    """
    import sys, time
    from delegate_lens.dataset import _store as store

    write_part = store.DatasetStore.write_part

    def slow(self, table, files):
        print("writing", file=sys.__stdout__, flush=True)  # the CLI sends prints to stderr
        time.sleep(float(sys.argv[1]))
        return write_part(self, table, files)

    store.DatasetStore.write_part = slow
    from delegate_lens.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


def _rows(dataset: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in dataset.glob("part-*.parquet"))


def _collect(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "delegate_lens", "collect", *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_two_collects_at_once_store_each_file_once(tmp_path: Path) -> None:
    dataset = tmp_path / "D"
    argv = [str(MLP), str(GPT), "-o", str(dataset), "-q"]
    first = subprocess.Popen(
        [sys.executable, "-c", _SLOW_COLLECT, "3", "collect", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None and first.stdout.readline() == "writing\n"
    # the first holds the dataset, its part not written yet: a second run starts now
    second = _collect(str(MLP), str(GPT), "-o", str(dataset))
    assert first.wait(timeout=300) == 0
    assert second.returncode == 0, second.stderr
    assert "skipped 2 already collected" in second.stderr
    alone = tmp_path / "alone"
    assert _collect(str(MLP), str(GPT), "-o", str(alone), "-q").returncode == 0
    assert _rows(dataset) == _rows(alone) > 0
    assert len(list(dataset.glob("part-*.parquet"))) == 1


def _dataset(tmp_path: Path) -> Path:
    dataset = tmp_path / "D"
    assert main(["collect", str(MLP), str(GPT), "-o", str(dataset), "-q"]) == 0
    return dataset


def _damage(dataset: Path, how: str) -> Path:
    part = next(dataset.glob("part-*.parquet"))
    entry = next((dataset / "_manifest").glob("*.json"))
    if how == "garbage part":
        part.write_bytes(b"garbage")
        return part
    if how == "cut part":
        part.write_bytes(part.read_bytes()[:1000])
        return part
    if how == "bad json":
        entry.write_text('{"part":')
    elif how == "entry not an object":
        entry.write_text("[1, 2]")
    elif how == "entry without files":
        entry.write_text(json.dumps({"part": part.name}))
    return entry


_KINDS = ["garbage part", "cut part", "bad json", "entry not an object", "entry without files"]


@pytest.mark.parametrize("how", _KINDS)
def test_damaged_dataset_is_one_line_naming_the_file(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _dataset(tmp_path)
    damaged = _damage(dataset, how)
    capsys.readouterr()
    if "part" in how:  # a part listed in the manifest is read by query, not by collect
        commands = [["query", str(dataset), "select count(*) from events"]]
    else:  # a manifest entry is read by collect, not by query
        commands = [["collect", str(MLP), "-o", str(dataset), "-q"]]
    for argv in commands:
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
        assert damaged.name in err


@pytest.mark.parametrize("how", _KINDS)
def test_check_finds_and_repair_drops_the_damage(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _dataset(tmp_path)
    damaged = _damage(dataset, how)
    capsys.readouterr()
    assert main(["collect", "--check", "-o", str(dataset)]) == 1
    assert damaged.name in capsys.readouterr().out
    assert main(["collect", "--repair", "-o", str(dataset)]) == 0
    out = capsys.readouterr().out
    assert main(["collect", "--check", "-o", str(dataset)]) == 0
    assert capsys.readouterr().out.strip().endswith("ok")
    # the files whose rows were dropped are named, and collecting them again works
    if "part" in how:
        assert str(MLP) in out and str(GPT) in out
    assert main(["collect", str(MLP), str(GPT), "-o", str(dataset), "-q"]) == 0
    assert main(["query", str(dataset), "select count(*) as n from events", "-f", "csv"]) == 0
    alone = tmp_path / "alone"
    main(["collect", str(MLP), str(GPT), "-o", str(alone), "-q"])
    assert _rows(dataset) == _rows(alone)


def test_repair_drops_a_part_stored_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _dataset(tmp_path)
    # what two runs without a lock made: the same files in a second part
    part = next(dataset.glob("part-*.parquet"))
    entry = dataset / "_manifest" / (part.name[5:-8] + ".json")
    twin = "f" * 32
    shutil.copy(part, dataset / f"part-{twin}.parquet")
    text = entry.read_text().replace(part.name, f"part-{twin}.parquet")
    (dataset / "_manifest" / f"{twin}.json").write_text(text)
    once = _rows(dataset) // 2
    assert main(["collect", "--check", "-o", str(dataset)]) == 1
    assert "every file also in" in capsys.readouterr().out
    assert main(["collect", "--repair", "-o", str(dataset)]) == 0
    assert _rows(dataset) == once


def test_nothing_collected_is_exit_2_and_leaves_no_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"not an etdump at all")
    with pytest.raises(SystemExit) as info:
        main(["collect", str(bad), "-o", str(tmp_path / "D")])
    assert info.value.code == 2
    assert "nothing collected" in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "D").exists()


def test_missing_parent_folder_is_refused_as_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["collect", str(MLP), "-o", str(tmp_path / "no" / "D")])
    assert info.value.code == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_bad_etrecord_named_is_exit_2_before_anything_is_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.etrecord"
    bad.write_bytes(b"PK not really")
    with pytest.raises(SystemExit) as info:
        main(["collect", str(MLP), "--etrecord", str(bad), "-o", str(tmp_path / "D")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err
    assert not (tmp_path / "D").exists()


def test_unreachable_scheduler_leaves_no_dataset(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    result = _collect(
        str(MLP), "-o", str(tmp_path / "D"), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"
    )
    assert result.returncode != 0
    assert not (tmp_path / "D").exists()


_KILLED_COLLECT = textwrap.dedent(
    """
    import sys, time
    from delegate_lens.dataset import _store as store

    def stuck(self, path, write):  # a part half written, then the process dies
        folder, name = path.rsplit("/", 1)
        with open(f"{folder}/.{name}.1-abcd1234.tmp", "wb") as half:
            half.write(b"PAR1 half a part")
        print("writing", file=sys.__stdout__, flush=True)  # the CLI sends prints to stderr
        time.sleep(60)

    store.DatasetStore._write = stuck
    from delegate_lens.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_temporary_of_a_killed_collect_is_removed_by_the_next(tmp_path: Path) -> None:
    dataset = tmp_path / "D"
    stuck = subprocess.Popen(
        [sys.executable, "-c", _KILLED_COLLECT, "collect", str(MLP), "-o", str(dataset), "-q"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stuck.stdout is not None and stuck.stdout.readline() == "writing\n"
    finally:
        os.kill(stuck.pid, signal.SIGKILL)
        stuck.wait()
    assert [p.name for p in dataset.iterdir() if p.name.endswith(".tmp")]
    assert main(["collect", str(GPT), "-o", str(dataset), "-q"]) == 0
    assert not [p.name for p in dataset.iterdir() if p.name.endswith(".tmp")]
