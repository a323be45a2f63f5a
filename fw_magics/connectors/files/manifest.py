"""The manifest of a file source: every file it has seen, in discovery order, as JSON in the job directory.

::

    {"format": 1, "directory": "/data/orders", "glob": "*.parquet", "backlog": 3,
     "files": [{"name": "a.parquet", "size": 1234, "mtime_ns": 1700000000000000000}, ...]}

An entry may say ``"skipped": "<why>"``: a file the source will not read (``on_bad_file="skip"``,
or a file that was gone when the job started again); ``"reader": "arrow"`` says the backlog's
Parquet files are read by pyarrow, not Spark (a file with nanosecond timestamps, which Spark's
reader refuses).

The first ``backlog`` entries are the files present when the job first started: its backlog,
fixed for good (a restart reads them back, whatever the directory holds by then). Later files
are appended as the stream discovers them. A position in the stream is an index into
``files`` (the stream's offsets are ``{"files": n, ...}``), so it is plain JSON too.

Discovery lists the directory's regular files whose names match the source's ``glob``
(``*.parquet``, ``*.json`` or ``*.csv`` unless said), skipping names that start with "." or "_"
(where writers put files before renaming them into place, as Spark's file source expects), and
orders the new ones by modification time, then name. A file's size and modification time are
recorded when it is listed; the reader refuses a file that changed since (one being written in
place would be half-read). The manifest is only ever replaced
atomically (temporary file, fsync, rename), by one writer at a time: the job's driver at the
first start, then the stream's source. It is read back as the job directory's other files are
(``Storage.open_inside``: no link, a regular file, at most ``MAX_BYTES``) and checked whole: a
damaged or planted manifest is one line, never a half-read source.
"""

from __future__ import annotations

import fnmatch
import json
import os

from ...errors import FullWindowError, JobStorageError
from ...recovery.filesystem import Storage, UnsafeFile
from ...recovery.paths import SOURCE_MANIFEST

FORMAT = 1
#: The largest manifest read back: about 300,000 files' entries.
MAX_BYTES = 64 << 20
#: How many of the most recently listed files each look checks again for a change.
RECHECK = 100


def list_files(directory: str, glob: str = "*") -> list[dict]:
    """The directory's data files named like ``glob``, in discovery order: modification time, then name."""
    found = []
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        raise FullWindowError(f"the source directory {directory!r} does not exist (any more)") from None
    for entry in entries:
        if entry.name.startswith((".", "_")) or not fnmatch.fnmatchcase(entry.name, glob):
            continue
        if not entry.is_file(follow_symlinks=True):
            continue
        info = entry.stat(follow_symlinks=True)
        found.append({"name": entry.name, "size": info.st_size, "mtime_ns": info.st_mtime_ns})
    found.sort(key=lambda f: (f["mtime_ns"], f["name"]))
    return found


def check_manifest(doc, where: str, error=JobStorageError) -> dict:
    """``doc`` if it is a manifest fw-magics wrote (every field of the right type, every name a plain
    file name, once); ``error`` with one line naming ``where`` otherwise."""
    ok = (isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("directory"), str)
          and type(doc.get("backlog")) is int and isinstance(doc.get("files"), list)
          and 0 <= doc["backlog"] <= len(doc["files"]) and isinstance(doc.get("glob", "*"), str)
          and doc.get("reader", "spark") in ("spark", "arrow"))
    if ok:
        names = set()
        for f in doc["files"]:
            name = f.get("name") if isinstance(f, dict) else None
            if (not isinstance(name, str) or not name or len(name) > 255 or "/" in name or "\\" in name
                    or "\x00" in name or name in (".", "..") or name in names
                    or type(f.get("size")) is not int or type(f.get("mtime_ns")) is not int
                    or ("subtask" in f and type(f["subtask"]) is not int)
                    or ("skipped" in f and not isinstance(f["skipped"], str))
                    or ("changed" in f and f["changed"] is not True)):
                ok = False
                break
            names.add(name)
    if not ok:
        raise error(f"the source manifest {where} is not one fw-magics wrote (format {FORMAT})")
    return doc


def listing(directory: str, glob: str, backlog: bool = True) -> dict:
    """A manifest of the files present now in ``directory``: all read (``backlog``) or none."""
    files = list_files(directory, glob)
    return {"format": FORMAT, "directory": directory, "glob": glob, "backlog": len(files) if backlog else 0,
            "files": files}


class Manifest:
    """The manifest of the job at ``root`` (``relative``: where in its folder; ``source/manifest.json``)."""

    def __init__(self, root: str, relative: str = SOURCE_MANIFEST):
        self.root, self.relative = root, relative
        self._storage = Storage(root)
        self.path = self._storage.path(relative)

    def exists(self) -> bool:
        """Whether something is there (a link or a FIFO too: ``read()`` then says why it is not read)."""
        return self._storage.present_inside(self.relative)

    def read(self) -> dict:
        try:
            with self._storage.open_inside(self.relative, MAX_BYTES) as f:
                data = f.read()
        except UnsafeFile as error:
            raise JobStorageError(f"the source manifest {self.path} is not read: {error}") from None
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            doc = None
        return check_manifest(doc, self.path)

    def write(self, doc: dict) -> None:
        self._storage.write_bytes(self.path, json.dumps(doc, separators=(",", ":")).encode())

    def listing(self, directory: str, glob: str, backlog: bool = True) -> dict:
        """At the first start: the files present now, the backlog (``backlog``) or the stream's first files."""
        return listing(directory, glob, backlog)

    def discover(self, changed=None) -> dict:
        """Append the files that appeared since the last look; the manifest as it is now.

        With ``changed`` (a function of an entry and why), the most recent ``RECHECK`` files listed
        before are looked at again: one that grew or was rewritten since (rows appended to a CSV
        file after it was read would never be read) is handed to it, once."""
        doc = self.read()
        known = {f["name"] for f in doc["files"]}
        listed = list_files(doc["directory"], doc.get("glob", "*"))
        new = [f for f in listed if f["name"] not in known]
        seen = False
        if changed is not None:
            now = {f["name"]: f for f in listed}
            for index in range(max(0, len(doc["files"]) - RECHECK), len(doc["files"])):
                entry = doc["files"][index]
                current = now.get(entry["name"])
                if entry.get("skipped") or entry.get("changed") or current is None:
                    continue
                if (current["size"], current["mtime_ns"]) != (entry["size"], entry["mtime_ns"]):
                    doc["files"][index] = dict(entry, changed=True)
                    seen = True
                    changed(entry, f"it changed after it was listed ({entry['size']:,} bytes then, "
                                   f"{current['size']:,} now): write each file whole, under a name starting with "
                                   "'.', then rename it into place")
        if new or seen:
            doc["files"] = doc["files"] + new
            self.write(doc)
        return doc


def backlog_summary(doc: dict) -> dict:
    """What the event log records about the backlog: how many files and bytes (and how many skipped)."""
    backlog = doc["files"][: doc["backlog"]]
    summary = {"files": len(backlog), "bytes": sum(f["size"] for f in backlog)}
    skipped = sum(1 for f in backlog if f.get("skipped"))
    if skipped:
        summary["skipped"] = skipped
    return summary


def relist(doc: dict) -> tuple[dict, list[dict]]:
    """At a restart: every file the manifest lists, as it is now. A file that is gone is marked skipped
    (it was removed: never read again); one whose size or modification time changed is listed anew
    (fixed: read as it is now, if it was not read yet). Returns the manifest and the changed entries."""
    changed = []
    files = []
    for entry in doc["files"]:
        if not entry.get("skipped"):
            try:
                info = os.stat(os.path.join(doc["directory"], entry["name"]))
            except FileNotFoundError:
                entry = dict(entry, skipped="it was gone when the job started again")
                changed.append(entry)
            else:
                if (info.st_size, info.st_mtime_ns) != (entry["size"], entry["mtime_ns"]):
                    entry = dict(entry, size=info.st_size, mtime_ns=info.st_mtime_ns)
                    changed.append(entry)
        files.append(entry)
    return dict(doc, files=files), changed
