"""``collect --check`` / ``--repair``: find and drop what is damaged in a dataset.

What is checked, part by part (in name order): that its Parquet footer and its ``file_hash``
column read, that a manifest entry reads, that every entry's part exists, and that no
ETDump is stored twice (two runs into one dataset before it had a lock, a copy of a part).
``--repair`` takes the dataset's write lock and drops a damaged part and its entry, an entry
whose part is gone, a part whose every file is stored in an earlier one; a part with only
some files stored earlier is written again without them. The ETDumps whose rows were
dropped are named, to collect again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from delegate_lens.dataset._extras import require
from delegate_lens.dataset._store import MANIFEST, DatasetStore
from delegate_lens.errors import UsageError

if TYPE_CHECKING:
    pass


@attrs.frozen
class Problem:
    """One thing wrong: ``path`` (a part or a manifest entry), ``what`` is wrong, and what
    ``--repair`` does (or did) about it."""

    path: str
    what: str
    repair: str


@attrs.frozen
class DatasetCheck:
    """What :func:`check_dataset` found (and, when repairing, did)."""

    location: str
    parts: int
    problems: list[Problem] = attrs.field(factory=list)
    lost_sources: list[str] = attrs.field(factory=list)  # to collect again
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


def _entry_path(store: DatasetStore, part_name: str) -> str:
    part_id = part_name[len("part-") : -len(".parquet")]
    return store._path(MANIFEST, f"{part_id}.json")


def check_dataset(location: str, *, repair: bool = False) -> DatasetCheck:
    """Check the dataset at ``location``; with ``repair``, drop what is damaged."""
    store = DatasetStore(location)
    if not store.is_dataset():
        raise UsageError(f"{location}: no such dataset")
    hold = store.writing() if repair else contextlib.nullcontext()
    with hold:
        return _check(store, repair)


def _check(store: DatasetStore, repair: bool) -> DatasetCheck:
    pq = require("pyarrow.parquet", "collect --check")
    problems: list[Problem] = []
    lost: list[str] = []
    actions: list[tuple[str, Any]] = []  # what repairing does, in order
    listed: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for path, entry in store.manifest_entries():
        if isinstance(entry, Exception):
            problems.append(Problem(path, f"manifest entry unreadable: {_first(entry)}", "drop it"))
            actions.append(("delete", path))
        else:
            listed[entry["part"]] = (path, entry["files"])
    parts = {path.rsplit("/", 1)[-1]: path for path in store.parts()}
    for name, (path, entry_files) in sorted(listed.items()):
        if name not in parts:
            problems.append(Problem(path, f"manifest entry of a missing part {name}", "drop it"))
            actions.append(("delete", path))
            lost += [str(item.get("source", item["hash"])) for item in entry_files]
    seen: dict[str, str] = {}
    for name, path in sorted(parts.items()):
        listing = store.part_listing(path)
        files: list[dict[str, Any]] | Exception = listed[name][1] if name in listed else listing
        if not isinstance(listing, Exception):
            try:
                with store.fs.open_input_file(path) as stream:
                    pq.read_table(stream, columns=["file_hash"])  # readable, or damaged
            except Exception as exc:
                listing = exc
        if isinstance(listing, Exception):
            problems.append(Problem(path, f"damaged part: {_first(listing)}", "drop it"))
            actions += [("delete", path), ("delete", _entry_path(store, name))]
            if not isinstance(files, Exception):
                lost += [str(item.get("source", item["hash"])) for item in files]
            continue
        assert not isinstance(files, Exception)
        again = {item["hash"] for item in files if item["hash"] in seen}
        if again and len(again) == len({item["hash"] for item in files}):
            problems.append(
                Problem(path, f"every file also in {seen[next(iter(again))]}", "drop it")
            )
            actions += [("delete", path), ("delete", _entry_path(store, name))]
            continue
        if again:
            problems.append(
                Problem(
                    path, f"{len(again)} file(s) also in an earlier part", "write it without them"
                )
            )
            actions.append(("rewrite", (path, name, files, again)))
        for item in files:
            seen.setdefault(item["hash"], name)
    if repair:
        for action, what in actions:
            if action == "delete":
                with contextlib.suppress(FileNotFoundError):
                    store.fs.delete_file(what)
            else:
                drop_files(store, *what)
    return DatasetCheck(store.location, len(parts), problems, sorted(set(lost)), repair)


def drop_files(
    store: DatasetStore, path: str, name: str, files: Sequence[Mapping[str, object]], drop: set[str]
) -> None:
    """Write the part ``name`` (at ``path``, listing ``files``) again without the files
    whose hash is in ``drop``, then remove the old part and its manifest entry; a part left
    with no file is removed."""
    pa = require("pyarrow", "collect")
    pq = require("pyarrow.parquet", "collect")
    pc = require("pyarrow.compute", "collect")
    kept = [item for item in files if item["hash"] not in drop]
    if kept:
        with store.fs.open_input_file(path) as stream:
            table = pq.read_table(stream)
        keep = pc.invert(pc.is_in(table.column("file_hash"), value_set=pa.array(sorted(drop))))
        table = table.filter(keep).replace_schema_metadata(None)
        store.write_part(table, kept)
    store.fs.delete_file(path)
    with contextlib.suppress(FileNotFoundError):
        store.fs.delete_file(_entry_path(store, name))


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def format_check(check: DatasetCheck) -> str:
    """The report ``collect --check`` prints."""
    lines = [
        f"{problem.path}: {problem.what} ({'' if check.repaired else 'repair: '}"
        f"{'done: ' if check.repaired else ''}{problem.repair})"
        for problem in check.problems
    ]
    verdict = "ok" if check.ok else f"{len(check.problems)} problem(s)"
    lines.append(f"{check.location}: {check.parts} part(s), {verdict}")
    if check.lost_sources:
        lines.append("collect again: " + " ".join(check.lost_sources))
    return "\n".join(lines) + "\n"
