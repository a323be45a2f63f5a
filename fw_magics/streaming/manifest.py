"""The manifest of a file source: every file it has seen, in discovery order, as JSON in the job directory.

::

    {"format": 1, "directory": "/data/orders", "backlog": 3,
     "files": [{"name": "a.parquet", "size": 1234, "mtime_ns": 1700000000000000000}, ...]}

The first ``backlog`` entries are the files present when the job first started: its backlog,
fixed for good (a restart reads them back, whatever the directory holds by then). Later files
are appended as the stream discovers them. A position in the stream is an index into
``files`` (the stream's offsets are ``{"files": n, ...}``), so it is plain JSON too.

Discovery lists the directory's regular files, skipping names that start with "." or "_"
(where writers put files before renaming them into place, as Spark's file source expects),
and orders the new ones by modification time, then name. The manifest is only ever replaced
atomically (temporary file, fsync, rename), by one writer at a time: the job's driver at the
first start, then the stream's source.
"""

from __future__ import annotations

import json
import os

from ..errors import FullWindowError
from ..recovery.filesystem import Storage

FORMAT = 1


def list_files(directory: str) -> list[dict]:
    """The directory's data files in discovery order: modification time, then name."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        raise FullWindowError(f"the source directory {directory!r} does not exist (any more)") from None
    for entry in entries:
        if entry.name.startswith((".", "_")) or not entry.is_file(follow_symlinks=True):
            continue
        info = entry.stat(follow_symlinks=True)
        found.append({"name": entry.name, "size": info.st_size, "mtime_ns": info.st_mtime_ns})
    found.sort(key=lambda f: (f["mtime_ns"], f["name"]))
    return found


class Manifest:
    """The manifest file at ``path`` (a local path in the job directory)."""

    def __init__(self, path: str):
        self.path = path
        self._storage = Storage(os.path.dirname(path))

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def read(self) -> dict:
        with open(self.path, "rb") as f:
            doc = json.loads(f.read())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("files"), list):
            raise FullWindowError(f"the source manifest {self.path} is not one fw-magics wrote (format {FORMAT})")
        return doc

    def write(self, doc: dict) -> None:
        self._storage.write_bytes(self.path, json.dumps(doc, separators=(",", ":")).encode())

    def record_backlog(self, directory: str) -> dict:
        """At the first start: every file present now is the backlog."""
        files = list_files(directory)
        doc = {"format": FORMAT, "directory": directory, "backlog": len(files), "files": files}
        self.write(doc)
        return doc

    def discover(self) -> dict:
        """Append the files that appeared since the last look; the manifest as it is now."""
        doc = self.read()
        known = {f["name"] for f in doc["files"]}
        new = [f for f in list_files(doc["directory"]) if f["name"] not in known]
        if new:
            doc["files"] = doc["files"] + new
            self.write(doc)
        return doc


def backlog_summary(doc: dict) -> dict:
    """What the event log records about the backlog: how many files and bytes."""
    backlog = doc["files"][: doc["backlog"]]
    return {"files": len(backlog), "bytes": sum(f["size"] for f in backlog)}
