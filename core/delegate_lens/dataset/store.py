"""The dataset on disk (or in an object store): Parquet parts plus a manifest.

Layout of a dataset ``D``::

    D/part-<id>.parquet     events of one batch of ETDumps (schema: delegate_lens.dataset.schema)
    D/_manifest/<id>.json   {"part": "part-<id>.parquet", "files": [{"hash", "source", "rows"}]}

A part is written to a hidden temporary name and renamed into place (on object stores, where
one PUT is atomic, it is written under its name directly): a crash never leaves a
half-written ``part-*.parquet``. The part's own Parquet metadata holds the same file list as
its manifest entry, so a part whose manifest entry is missing (a crash between the two) is
still known, and its files are not collected twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

from delegate_lens.dataset._extras import require

__all__ = ["FILES_KEY", "DatasetStore"]

FILES_KEY = b"delegate_lens.files"
MANIFEST = "_manifest"


def _write_options(table: Any) -> dict[str, Any]:
    """``pyarrow.parquet.write_table``'s options for a part (measured with
    ``benchmarks/bench_collect.py --only parquet``): zstd at its default level 1 (level 3
    is no smaller here and a third slower; lz4 and snappy save under a tenth of the time
    for larger files: encoding, not compression, is most of the cost), dictionaries for
    the text columns, delta encoding for the ints that grow (times, runs, chain indices),
    plain for the small ones delta does not shrink (faster to write, as small)."""
    delta = ("run", "chain_index", "start_time", "duration")
    plain = ("event_index", "instruction_id")
    dictionary = [f.name for f in table.schema if f.name not in delta + plain]
    # min/max statistics only where readers prune with them (which files, labels, runs);
    # those of the per-event columns cost a tenth of the write and rarely prune anything,
    # nor do block's (every part has the same few blocks; 3% of the write)
    with_statistics = [f.name for f in table.schema if f.name in ("source", "file_hash", "run")]
    if "labels" in table.schema.names:  # a struct: its leaves are named labels.<name>
        with_statistics += [f"labels.{field.name}" for field in table.schema.field("labels").type]
    return {
        "compression": "zstd",
        "use_dictionary": dictionary,
        "column_encoding": {
            **dict.fromkeys(delta, "DELTA_BINARY_PACKED"),
            **dict.fromkeys(plain, "PLAIN"),
        },
        "write_statistics": with_statistics,
        "write_batch_size": 1 << 16,  # rows per encoding batch (1,024 by default)
    }


class DatasetStore:
    """A dataset at a local path or a URI that ``pyarrow.fs.FileSystem.from_uri`` knows
    (``s3://``, ``gs://``, ``hdfs://``, ``file://``)."""

    def __init__(self, location: str) -> None:
        fs = require("pyarrow.fs", "the dataset")
        self.location = location
        if "://" in location:
            self.fs, self.root = fs.FileSystem.from_uri(location)
            self.local = isinstance(self.fs, fs.LocalFileSystem)
        else:
            self.fs, self.root = fs.LocalFileSystem(), os.path.abspath(location)
            self.local = True
        self._fs_module = fs

    def _path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def create(self) -> None:
        """Make the dataset's folders (a no-op when they exist)."""
        info = self.fs.get_file_info(self.root)
        if info.type == self._fs_module.FileType.File:
            from delegate_lens.errors import UsageError

            raise UsageError(f"{self.location}: is a file, not a dataset folder")
        self.fs.create_dir(self._path(MANIFEST), recursive=True)

    def exists(self) -> bool:
        return bool(self.fs.get_file_info(self.root).type == self._fs_module.FileType.Directory)

    def parts(self) -> list[str]:
        """Paths of the committed parts (within the filesystem), sorted."""
        if not self.exists():
            return []
        selector = self._fs_module.FileSelector(self.root, recursive=False)
        names = [
            info.path
            for info in self.fs.get_file_info(selector)
            if info.base_name.startswith("part-") and info.base_name.endswith(".parquet")
        ]
        return sorted(names)

    def part_uris(self) -> list[str]:
        """The parts as paths (local) or URIs others (DuckDB, pyarrow) can open."""
        if self.local:
            return self.parts()
        scheme = self.location.split("://", 1)[0]
        return [f"{scheme}://{path}" for path in self.parts()]

    def manifest(self) -> dict[str, dict[str, Any]]:
        """``{file hash: {"source", "rows", "part"}}`` of every collected ETDump."""
        known: dict[str, dict[str, Any]] = {}
        listed: set[str] = set()
        folder = self._path(MANIFEST)
        if self.fs.get_file_info(folder).type == self._fs_module.FileType.Directory:
            selector = self._fs_module.FileSelector(folder, recursive=False)
            for info in self.fs.get_file_info(selector):
                if not info.base_name.endswith(".json") or info.base_name.startswith("."):
                    continue
                with self.fs.open_input_stream(info.path) as stream:
                    entry = json.loads(stream.read())
                listed.add(entry["part"])
                for item in entry["files"]:
                    known[item["hash"]] = {**item, "part": entry["part"]}
        pq = require("pyarrow.parquet", "the dataset")
        for part in self.parts():
            name = part.rsplit("/", 1)[-1]
            if name in listed:
                continue
            with self.fs.open_input_file(part) as stream:  # manifest entry lost: recover
                meta = pq.read_metadata(stream).metadata or {}
            for item in json.loads(meta.get(FILES_KEY, b"[]")):
                known[item["hash"]] = {**item, "part": name}
        return known

    def _write(self, path: str, write: Any) -> None:
        """``write(stream)`` into ``path`` atomically (temporary name + rename when local)."""
        if not self.local:
            with self.fs.open_output_stream(path) as stream:
                write(stream)
            return
        folder, name = path.rsplit("/", 1)
        tmp = f"{folder}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as stream:
                write(stream)
            self.fs.move(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)
            raise

    def write_part(self, table: Any, files: Sequence[dict[str, Any]]) -> str:
        """Commit ``table`` (the events of ``files``) as a new part; returns its name."""
        pq = require("pyarrow.parquet", "collect")
        part_id = uuid.uuid4().hex
        name = f"part-{part_id}.parquet"
        listing = json.dumps(list(files), separators=(",", ":")).encode()
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), FILES_KEY: listing})
        self._write(
            self._path(name), lambda stream: pq.write_table(table, stream, **_write_options(table))
        )
        # {"part": name, "files": listing}, the listing encoded once
        entry = b'{"part":%s,"files":%s}' % (json.dumps(name).encode(), listing)
        self._write(self._path(MANIFEST, f"{part_id}.json"), lambda stream: stream.write(entry))
        return name
