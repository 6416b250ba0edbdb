"""Replay the hostile-input probe (issue 24): every class of abuse, one line of figures each.

    python benchmarks/hostile.py [--mutants N] [--kills N] [--seed S] [--timeout SECONDS]
                                 [--only CLASS ...]

Classes (``--only`` picks some): ``fuzz`` (mutants of every file kind: ETDump, ETRecord,
bundled program, debug buffer, ETDump JSON), ``bombs`` (zip bombs in ETRecords, made
here), ``kills`` (``kill -9`` during writes of a report, an ETDump and a dataset part),
``concurrent`` (two collects into one dataset at once), ``datasets`` (damaged parts and
manifest entries), ``plugins`` (misbehaving plugins, in hooks and at import, loaded with
``-p`` and as entry points: ``hostile_plugins.py``), ``paths`` (outputs
that are FIFOs, sockets, folders, links to an input, names with control characters),
``limits`` (``query -o`` inside its dataset, endless and memory-hungry queries, tensors of
too many dimensions, ``profile`` runs past one ETDump: ``hostile_limits.py``), ``report``
(pages of files whose every name is hostile to HTML: ``hostile_report.py``), ``programs``
(mutants of a real program through ``profile`` and, bundled, ``verify``: the runtime
crashes on many; ``hostile_programs.py``), ``shared`` (ETDumps under 5 MB whose offsets
name one run, event, metadata vector or 4 MB name again and again, or that share nothing
yet pack 245,000 rows, or 1,000 tensors on one debug buffer: ``hostile_shared.py``).

Each case is one ``delegate-lens`` process. Per class it prints: cases, clean (exit 0/1, or
exit 2 with one ``error:`` line), tracebacks, signals (a command killed by a signal: a
crash), hangs (past ``--timeout``), peak memory of the
largest process (MB, from ``wait4``) and the largest input, and bad files (a partial or lost
output, a temporary left after the next write, a dataset with rows twice). Tracebacks,
signals, hangs and bad files must be 0; peak under 500 MB for inputs under 5 MB. Exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hostile_common import CLI, MLP, Tally, run
from hostile_limits import limits
from hostile_plugins import plugins
from hostile_programs import programs
from hostile_report import report_pages
from hostile_shared import shared

# ---------------------------------------------------------------- mutation fuzz


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.choice(["flip", "cut", "splice", "zero", "grow"])
    if kind == "flip" and buf:
        for _ in range(rng.randint(1, 16)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif kind == "cut" and buf:
        del buf[rng.randrange(len(buf)) :]
    elif kind == "splice" and len(buf) > 8:
        a = rng.randrange(len(buf))
        b = rng.randrange(len(buf))
        buf[a:a] = buf[b : b + rng.randint(1, 64)]
    elif kind == "zero" and buf:
        a = rng.randrange(len(buf))
        buf[a : a + rng.randint(1, 256)] = bytes(min(256, len(buf) - a))
    else:
        buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return bytes(buf)


def fuzz(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("fuzz")
    rng = random.Random(args.seed)
    bpte = Path(__file__).resolve().parent.parent / "tests/data/bundled_program/reference_add.bpte"
    kinds: list[tuple[str, bytes, Callable[[Path], list[str]]]] = [
        ("etdp", (MLP / "etdump.etdp").read_bytes(), lambda p: ["inspect", str(p), "-f", "json"]),
        (
            "etrecord",
            (MLP / "etrecord.bin").read_bytes(),
            lambda p: ["inspect", str(MLP / "etdump.etdp"), "--etrecord", str(p), "-f", "csv"],
        ),
        (
            "debug.bin",
            (MLP / "debug.bin").read_bytes(),
            lambda p: ["inspect", str(MLP / "etdump.etdp"), "--debug-buffer", str(p), "-f", "json"],
        ),
        (
            "json",
            (MLP / "etdump.json").read_bytes(),
            lambda p: ["etdump", "from-json", str(p), "-o", str(p) + ".etdp"],
        ),
    ]
    if bpte.is_file():
        kinds.append(("bpte", bpte.read_bytes(), lambda p: ["verify", str(p)]))
    for suffix, original, command in kinds:
        for i in range(args.mutants):
            path = work / f"mutant{i}.{suffix}"
            path.write_bytes(mutate(original, rng))
            run(tally, command(path), timeout=args.timeout, inputs=[path])
            path.unlink()
    return tally


# ---------------------------------------------------------------- zip bombs


def _deflated_entry(archive: zipfile.ZipFile, name: str, size: int, prefix: bytes) -> None:
    """An entry of ``size`` bytes (``prefix`` then spaces), deflated chunk by chunk."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w", force_zip64=True) as stream:
        stream.write(prefix)
        left = size - len(prefix)
        chunk = b" " * (1 << 20)
        while left > 0:
            stream.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)


def bombs(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("bombs")
    source = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
    graph = next(n for n in source.namelist() if n.startswith("edge_dialect_exported_program/"))
    cases = {
        "three_1000MB_maps": {"debug_handle_map": 1000, "delegate_map": 1000, graph: 1000},
        "one_900MB_map": {"debug_handle_map": 900},
        "graph_500MB": {graph: 500},
        "modest_20MB_each": {"debug_handle_map": 20, "delegate_map": 20, graph: 20},
    }
    for name, sizes in cases.items():
        path = work / f"{name}.etrecord"
        # (writestr moves the ZipInfo it is given: a fresh reader per case)
        source = zipfile.ZipFile(io.BytesIO((MLP / "etrecord.bin").read_bytes()))
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as out:
            for info in source.infolist():
                if info.filename in sizes:
                    first = source.read(info.filename)
                    _deflated_entry(out, info.filename, sizes[info.filename] << 20, first)
                else:
                    out.writestr(info, source.read(info.filename), compress_type=zipfile.ZIP_STORED)
        etdump = str(MLP / "etdump.etdp")
        for argv in (
            ["etrecord", "show", str(path)],
            ["inspect", etdump, "--etrecord", str(path), "-f", "csv"],
            ["compare", etdump, etdump, "--etrecord", str(path)],
        ):
            run(tally, argv, timeout=args.timeout, inputs=[path])
        # a settings file in the current folder must not raise the limits
        (work / "delegate-lens.toml").write_text(
            "[etrecord]\nmax_compression_ratio = 1e12\nmax_inflated_total = 1e15\n".replace(
                "1e15", "1000000000000000"
            )
        )
        run(tally, ["etrecord", "show", str(path)], timeout=args.timeout, inputs=[path], cwd=work)
        (work / "delegate-lens.toml").unlink()
        path.unlink()
    return tally


# ---------------------------------------------------------------- kill -9 during writes


def kills(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("kills")
    rng = random.Random(args.seed)
    etdump, record = str(MLP / "etdump.etdp"), str(MLP / "etrecord.bin")
    old = b"the file that was there before\n"
    writers = {
        "report.html": lambda out: ["report", etdump, "--etrecord", record, "-o", str(out)],
        "events.csv": lambda out: [
            "inspect",
            etdump,
            "--etrecord",
            record,
            "-f",
            "csv",
            "-o",
            str(out),
        ],
        "copy.etdp": lambda out: ["etdump", "from-json", str(MLP / "etdump.json"), "-o", str(out)],
    }
    names = list(writers)
    for i in range(args.kills):
        name = names[i % len(names)]
        folder = work / f"kill{i}"
        folder.mkdir()
        target = folder / name
        target.write_bytes(old)
        tally.cases += 1
        proc = subprocess.Popen(
            [*CLI, *writers[name](target)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        content = target.read_bytes()
        whole = content == old or proc.returncode == 0 or _complete(name, content)
        if not whole:
            tally.bad_files += 1
            tally.notes.append(f"partial {target}")
        else:
            tally.clean += 1
        run(tally, writers[name](target), timeout=args.timeout)  # the next write cleans up
        left = [p.name for p in folder.iterdir() if p.name != name]
        if left:
            tally.bad_files += 1
            tally.notes.append(f"left behind in {folder}: {left}")
        shutil.rmtree(folder)
    # a dataset part: kill collect while it writes
    for i in range(max(1, args.kills // 10)):
        dataset = work / f"killed-dataset{i}"
        tally.cases += 1
        proc = subprocess.Popen(
            [
                *CLI,
                "collect",
                etdump,
                str(MLP.parent / "gpt_portable" / "etdump.etdp"),
                "-o",
                str(dataset),
                "-q",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        tally.clean += 1
        if dataset.exists():
            run(tally, ["collect", etdump, "-o", str(dataset), "-q"], timeout=args.timeout)
            left = [p.name for p in dataset.rglob("*.tmp")]
            if left:
                tally.bad_files += 1
                tally.notes.append(f"left behind in {dataset}: {left}")
            shutil.rmtree(dataset)
    return tally


def _complete(name: str, content: bytes) -> bool:
    if name.endswith(".html"):
        return content.rstrip().endswith(b"</html>")
    if name.endswith(".etdp"):
        return content == (MLP / "etdump.etdp").read_bytes() or len(content) > 100
    return content.endswith(b"\n")


# ---------------------------------------------------------------- concurrent collects


def concurrent(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("concurrent")
    inputs = [str(MLP / "etdump.etdp"), str(MLP.parent / "gpt_portable" / "etdump.etdp")]
    alone = work / "alone"
    run(tally, ["collect", *inputs, "-o", str(alone), "-q"], timeout=args.timeout)
    expected = _rows(alone)
    for trial in range(2):
        dataset = work / f"together{trial}"
        tally.cases += 2
        procs = [
            subprocess.Popen(
                [*CLI, "collect", *inputs, "-o", str(dataset), "-q"], stderr=subprocess.PIPE
            )
            for _ in range(2)
        ]
        codes = [proc.wait(timeout=args.timeout) for proc in procs]
        tally.clean += sum(code == 0 for code in codes)
        if _rows(dataset) != expected:
            tally.bad_files += 1
            tally.notes.append(f"{dataset}: {_rows(dataset)} rows, {expected} expected")
    return tally


def _rows(dataset: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in dataset.glob("part-*.parquet") if p.is_file())


# ---------------------------------------------------------------- damaged datasets


def datasets(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("datasets")
    base = work / "base"
    inputs = [str(MLP / "etdump.etdp"), str(MLP.parent / "gpt_portable" / "etdump.etdp")]
    run(tally, ["collect", *inputs, "-o", str(base), "-q"], timeout=args.timeout)
    damage: dict[str, Callable[[Path, Path], None]] = {
        "garbage part": lambda part, entry: part.write_bytes(b"garbage"),
        "empty part": lambda part, entry: part.write_bytes(b""),
        "cut part": lambda part, entry: part.write_bytes(part.read_bytes()[:1000]),
        "part is a folder": lambda part, entry: (part.unlink(), part.mkdir()),  # type: ignore[func-returns-value]
        "bad json entry": lambda part, entry: entry.write_text('{"part":'),
        "entry a list": lambda part, entry: entry.write_text("[1, 2]"),
        "entry without files": lambda part, entry: entry.write_text('{"part": "x"}'),
        "entry a folder": lambda part, entry: (entry.unlink(), entry.mkdir()),  # type: ignore[func-returns-value]
        "entry binary": lambda part, entry: entry.write_bytes(bytes(range(256))),
        "part lost": lambda part, entry: part.unlink(),
        "entry lost": lambda part, entry: entry.unlink(),
        "part twice": lambda part, entry: (
            shutil.copy(part, part.with_name("part-" + "f" * 32 + ".parquet")),
            (entry.parent / ("f" * 32 + ".json")).write_text(
                entry.read_text().replace(part.name, "part-" + "f" * 32 + ".parquet")
            ),
        ),
    }
    for name, hurt in damage.items():
        dataset = work / ("damaged-" + name.replace(" ", "-"))
        shutil.copytree(base, dataset)
        hurt(next(dataset.glob("part-*")), next((dataset / "_manifest").glob("*.json")))
        run(tally, ["query", str(dataset), "select count(*) from events"], timeout=args.timeout)
        run(tally, ["collect", *inputs, "-o", str(dataset), "-q"], timeout=args.timeout)
        run(tally, ["collect", "--check", "-o", str(dataset)], timeout=args.timeout)
        run(tally, ["collect", "--repair", "-o", str(dataset)], timeout=args.timeout)
        run(tally, ["collect", *inputs, "-o", str(dataset), "-q"], timeout=args.timeout)
        if _rows(dataset) != _rows(base):
            tally.bad_files += 1
            tally.notes.append(
                f"{name}: {_rows(dataset)} rows after repair and collect, {_rows(base)} expected"
            )
        shutil.rmtree(dataset)
    return tally


# ---------------------------------------------------------------- hostile paths


def paths(work: Path, args: argparse.Namespace) -> Tally:
    tally = Tally("paths")
    source = work / "view.json"
    shutil.copy(MLP / "etdump.json", source)
    etdump = work / "in.etdp"
    shutil.copy(MLP / "etdump.etdp", etdump)
    fifo = work / "fifo"
    os.mkfifo(fifo)
    sock_path = work / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    link = work / "link-to-input.csv"
    link.symlink_to(etdump)
    (work / "folder").mkdir()
    weird = work / "title\x1b]0;pwned\x07.etdp"
    shutil.copy(etdump, weird)
    before = {p: p.read_bytes() for p in (source, etdump)}
    cases = [
        ["inspect", str(etdump), "-o", str(etdump)],
        ["report", str(etdump), "-o", str(etdump)],
        ["etdump", "from-json", str(source), "-o", str(source)],
        ["inspect", str(etdump), "-f", "csv", "-o", str(link)],
        ["inspect", str(etdump), "-f", "csv", "-o", str(sock_path)],
        ["inspect", str(etdump), "-f", "csv", "-o", str(work / "folder")],
        ["inspect", str(etdump), "-f", "csv", "-o", str(work / "no" / "such" / "out.csv")],
        ["collect", str(etdump), "-o", str(work / "no" / "such" / "D")],
        ["inspect", str(etdump), "-f", "csv", "-o", "-"],
        ["etdump", "summary", str(weird)],
        ["etdump", "summary", str(work / "missing\x1b[2J.etdp")],
    ]
    for argv in cases:
        _, out, err = run(tally, argv, timeout=args.timeout)
        if "\x1b" in out + err:
            tally.bad_files += 1
            tally.notes.append("escape sequence printed: " + repr(argv))
    run(tally, ["etdump", "from-json", str(source), "-o", str(work / "plain.etdp")], timeout=60)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    run(tally, ["etdump", "from-json", str(source), "-o", str(fifo)], timeout=args.timeout)
    got = reader.communicate(timeout=args.timeout)[0]
    if not fifo.is_fifo() or got != (work / "plain.etdp").read_bytes():
        tally.bad_files += 1
        tally.notes.append("the FIFO was replaced or not written whole")
    server.close()
    for path, data in before.items():
        if path.read_bytes() != data:
            tally.bad_files += 1
            tally.notes.append(f"input overwritten: {path}")
    if not sock_path.is_socket() or not link.is_symlink() or (work / "no").exists():
        tally.bad_files += 1
        tally.notes.append("an output replaced a socket or a link, or made a missing folder")
    return tally


CLASSES: dict[str, Callable[[Path, argparse.Namespace], Tally]] = {
    "fuzz": fuzz,
    "bombs": bombs,
    "kills": kills,
    "concurrent": concurrent,
    "datasets": datasets,
    "plugins": plugins,
    "paths": paths,
    "limits": limits,
    "programs": programs,
    "report": report_pages,
    "shared": shared,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mutants", type=int, default=20, help="mutants per file kind (20)")
    parser.add_argument("--kills", type=int, default=12, help="kill -9 during writes (12)")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--timeout", type=float, default=120.0, help="a hang after this (s)")
    parser.add_argument("--only", nargs="*", choices=list(CLASSES), default=list(CLASSES))
    parser.add_argument("-v", "--verbose", action="store_true", help="print every note")
    args = parser.parse_args(argv)
    ok = True
    print(
        f"delegate-lens hostile probe, seed {args.seed}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    for name in args.only:
        with tempfile.TemporaryDirectory(prefix=f"dl-hostile-{name}-") as folder:
            tally = CLASSES[name](Path(folder), args)
        print(tally.line(), flush=True)
        for note in tally.notes[: None if args.verbose else 5]:
            print("    " + textwrap.shorten(note.replace("\n", " "), 200))
        ok &= tally.ok
    print("all clean" if ok else "FAILURES (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
