"""A savepoint on disk: a self-describing, versioned directory, written atomically, read as untrusted.

No Spark here (pyarrow and JSON only). ``<job>/savepoints/savepoint-000001/`` holds::

    savepoint.json         the document: format, version, job, graph, parallelism, source, watermark,
                           the batch it was taken after, and every other file's size and SHA-256
    operator-state.json    fw_magics.state's versioned operator-state document (the source's splits)
    source-manifest.json   the source's manifest (its files in order, "backlog": how many were read)
    keyed-state.parquet    the keyed state: the key column(s) and ``__fw_state`` (the per-key core's
                           JSON, its pending timers included), one row per key
    latest.parquet         each key's latest changelog row as of that batch (the output columns,
                           kind and sequence): what a restored job's ``latest()`` shows for a key
                           until it sees a fresh record (version 2; a version 1 savepoint lacks it)

Writing (:func:`write_savepoint`): every file goes into ``savepoints/.tmp-<random>/``, is fsynced,
``savepoint.json`` last; then the directory is renamed to its final name and the parent fsynced.
A crash at any point leaves the earlier savepoints as they were and at worst a ``.tmp-`` directory
that nothing reads. The ``savepoint_writing`` hook (``fn(directory, step)``) is called after each
file, for tests that kill the writer.

Reading (:func:`load_savepoint`): the directory is untrusted input. Only the five names above are
opened, each must be a regular file (no symlink) inside the directory, its size and SHA-256 must
match the document; JSON is parsed, nothing is unpickled or run. An unknown format or version,
or anything else wrong, is refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass

from .. import hooks
from ..errors import FullWindowError
from ..recovery.paths import SAVEPOINTS
from ..state import parse_operator_state
from .manifest import check_manifest

FORMAT = "fw-magics/savepoint"
VERSION = 2
READABLE = (1, 2)  # version 1 lacks latest.parquet
DOCUMENT = "savepoint.json"
OPERATOR_STATE = "operator-state.json"
MANIFEST = "source-manifest.json"
KEYED = "keyed-state.parquet"
LATEST = "latest.parquet"
FILES = (OPERATOR_STATE, MANIFEST, KEYED, LATEST)
FILES_OF = {1: FILES[:3], 2: FILES}
_NAME = re.compile(r"savepoint-(\d{6})")
_MAX_JSON = 64 << 20

hooks.define("savepoint_writing", "fn(directory, step)")


class SavepointError(FullWindowError):
    """A savepoint that cannot be read or restored, in one line."""


@dataclass(frozen=True, repr=False)
class Savepoint:
    """A savepoint read back and checked: its document, operator state, manifest and keyed-state file."""

    path: str
    document: dict
    operator_state: dict  # operator name -> [subtask snapshot, ...]
    manifest: dict
    keyed_path: str
    latest_path: str | None  # None: a version 1 savepoint, which did not keep the latest rows

    @property
    def parallelism(self) -> int:
        return self.document["parallelism"]

    def __repr__(self) -> str:
        doc = self.document
        return (f"Savepoint({os.path.basename(self.path)} of job {doc.get('job')!r}: after micro-batch "
                f"{doc.get('batch')}, parallelism {self.parallelism}, {doc.get('read_files')} of "
                f"{len(self.manifest.get('files', []))} files read, operator state of "
                f"{', '.join(self.operator_state) or 'none'})")


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: str, data: bytes) -> dict:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _digest(path: str) -> dict:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"size": os.path.getsize(path), "sha256": h.hexdigest()}


def savepoints_dir(root: str) -> str:
    return os.path.join(root, SAVEPOINTS)


def list_savepoints(root: str) -> list[str]:
    """The savepoint directories of the job at ``root``, oldest first (only complete ones: renamed into place)."""
    base = savepoints_dir(root)
    try:
        names = sorted(n for n in os.listdir(base) if _NAME.fullmatch(n))
    except FileNotFoundError:
        return []
    return [os.path.join(base, n) for n in names if os.path.isfile(os.path.join(base, n, DOCUMENT))]


def _write_table(directory: str, name: str, table) -> dict:
    import pyarrow.parquet as pq

    path = os.path.join(directory, name)
    pq.write_table(table, path)
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    hooks.trigger("savepoint_writing", directory, name)
    return dict(_digest(path), rows=table.num_rows)


def write_savepoint(root: str, document: dict, operator_state: dict, manifest: dict, keyed, latest=None) -> str:
    """Write a savepoint of the job at ``root`` atomically; returns its directory.

    ``document``: the JSON fields of savepoint.json (format, version and files are added);
    ``operator_state``: a ``fw_magics.state.operator_state_document``; ``manifest``: the source's
    manifest; ``keyed``: a pyarrow Table of the keyed state; ``latest``: one of each key's latest
    changelog row (None: an empty table, for a job without keyed output).
    """
    import pyarrow as pa

    if not os.path.isabs(root) or "://" in root:
        root = os.path.abspath(root)
    base = savepoints_dir(root)
    os.makedirs(base, exist_ok=True)
    existing = list_savepoints(root)
    number = int(_NAME.fullmatch(os.path.basename(existing[-1])).group(1)) + 1 if existing else 1
    final = os.path.join(base, f"savepoint-{number:06d}")
    tmp = os.path.join(base, f".tmp-{uuid.uuid4().hex}")
    os.makedirs(tmp)
    files = {KEYED: _write_table(tmp, KEYED, keyed),
             LATEST: _write_table(tmp, LATEST, pa.table({}) if latest is None else latest)}
    files[OPERATOR_STATE] = _write(os.path.join(tmp, OPERATOR_STATE), json.dumps(operator_state).encode())
    hooks.trigger("savepoint_writing", tmp, OPERATOR_STATE)
    files[MANIFEST] = _write(os.path.join(tmp, MANIFEST), json.dumps(manifest).encode())
    hooks.trigger("savepoint_writing", tmp, MANIFEST)
    doc = {"format": FORMAT, "version": VERSION, **document,
           "keyed_schema": [[f.name, str(f.type)] for f in keyed.schema], "files": files}
    _write(os.path.join(tmp, DOCUMENT), json.dumps(doc, indent=1).encode())
    hooks.trigger("savepoint_writing", tmp, DOCUMENT)
    _fsync_dir(tmp)
    os.rename(tmp, final)
    _fsync_dir(base)
    return final


def _read_json(path: str, what: str):
    if os.path.getsize(path) > _MAX_JSON:
        raise SavepointError(f"{what} {path} is larger than {_MAX_JSON >> 20} MiB; not a savepoint fw-magics wrote")
    with open(path, "rb") as f:
        try:
            return json.loads(f.read())
        except (ValueError, UnicodeDecodeError) as error:
            raise SavepointError(f"{what} {path} is not JSON ({error}); not a savepoint fw-magics wrote") from None


def _inside(directory: str, name: str) -> str:
    """``directory/name`` after checking it is a regular file inside ``directory`` (no link, no escape)."""
    path = os.path.join(directory, name)
    if os.path.islink(path) or not os.path.isfile(path):
        raise SavepointError(f"savepoint {directory} lacks the regular file {name!r}")
    if os.path.dirname(os.path.realpath(path)) != os.path.realpath(directory):
        raise SavepointError(f"savepoint file {name!r} resolves outside {directory}; refused")
    return path


def load_savepoint(path) -> Savepoint:
    """Read and check the savepoint directory ``path`` (see the module docstring); one-line errors."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise SavepointError(f"from_savepoint {path!r}; accepted: the path job.savepoint() returned")
    directory = os.path.abspath(os.fspath(path))
    if not os.path.isdir(directory):
        raise SavepointError(f"savepoint {directory} is not a directory; accepted: the path job.savepoint() returned")
    doc = _read_json(_inside(directory, DOCUMENT), "savepoint document")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SavepointError(f"savepoint {directory} has format {got!r}; accepted: {FORMAT!r}")
    if type(doc.get("version")) is not int or doc["version"] not in READABLE:
        newer = " (written by a newer fw-magics; upgrade to read it)" if type(doc.get("version")) is int \
            and doc["version"] > VERSION else ""
        raise SavepointError(f"savepoint {directory} has version {doc.get('version')!r}{newer}; accepted: "
                             f"{', '.join(map(str, READABLE))}")
    needed = {"job", "graph", "parallelism", "source", "watermark", "key_names", "files"}
    missing = sorted(needed - set(doc))
    if missing:
        raise SavepointError(f"savepoint document {directory} lacks {', '.join(missing)}")
    if type(doc["parallelism"]) is not int or doc["parallelism"] < 1:
        raise SavepointError(f"savepoint {directory} has parallelism {doc['parallelism']!r}; accepted: an int >= 1")
    files, expected = doc["files"], FILES_OF[doc["version"]]
    if not isinstance(files, dict) or set(files) != set(expected):
        raise SavepointError(f"savepoint {directory} lists files {sorted(files) if isinstance(files, dict) else files!r}"
                             f"; accepted: exactly {', '.join(expected)}")
    for name in expected:
        recorded, path = files[name], _inside(directory, name)
        # the size first: a file of the wrong size is refused without reading it
        if (not isinstance(recorded, dict) or recorded.get("size") != os.path.getsize(path)
                or recorded.get("sha256") != _digest(path)["sha256"]):
            raise SavepointError(f"savepoint file {name!r} in {directory} does not match its recorded size and "
                                 "SHA-256; the savepoint is damaged")
    try:
        operators = parse_operator_state(_read_json(_inside(directory, OPERATOR_STATE), "operator state"))
    except FullWindowError as error:
        raise SavepointError(f"savepoint {directory}: {error}") from None
    manifest = check_manifest(_read_json(_inside(directory, MANIFEST), "source manifest"), f"of savepoint {directory}",
                              SavepointError)
    latest = os.path.join(directory, LATEST) if LATEST in expected else None
    return Savepoint(directory, doc, operators, manifest, os.path.join(directory, KEYED), latest)
