"""A savepoint on disk: a self-describing, versioned directory, written atomically, read as untrusted.

No Spark session is needed here (pyarrow and JSON only). ``<job>/savepoints/savepoint-000001/`` holds::

    savepoint.json         the document: format, version, job, graph, parallelism, source, watermark,
                           the batch it was taken after, every other file's size and SHA-256,
                           ``base``: the base files in partition order (version 3), for two
                           inputs ``tops``: each input's greatest event time read, and ``states``:
                           what its function declared of its keyed state (``declared``)
    operator-state.json    fw_magics.state's versioned operator-state document (each source's splits)
    source-manifest.json   the source's position: a folder's manifest (its files in order, "backlog": how
                           many were read) or a table's (``through``: the greatest order_by read); two
                           inputs': ``{"inputs": [position 1, position 2]}``
    base/0000.arrow ...    the base (version 3): the job's committed state files, one per partition
                           of Spark's hash of the key, sorted by key (a backlog's results: state rows
                           and output rows; from version 5 the states typed beside their JSON where
                           the function's declarations allow, ``keyed.typed_states``), shared with
                           the job's folder (hard links)
    keyed-state.parquet    the keyed state over the base: the key column(s) and ``__fw_state`` (the
                           per-key core's JSON, its pending timers included), one row per key the
                           stream wrote since the base; ``{}`` (a tombstone) for a base key it cleared.
                           Before version 3 there is no base and this is every key's state
    latest.parquet         each key's latest changelog row since the base (the output columns, kind
                           and sequence); a key not in it shows the base's last output row (version
                           2 and 3; a version 1 savepoint lacks it)

A savepoint is so **incremental**: what it writes grows with the keys the stream touched, not with
all the keys; the base costs a link per file. ``Savepoint.keyed_table()`` and ``latest_table()``
read the whole, layered, for tests and small savepoints.

Writing (:func:`write_savepoint`): every file goes into ``savepoints/.tmp-<random>/``, is fsynced,
``savepoint.json`` last; then the directory is renamed to its final name and the parent fsynced.
A crash at any point leaves the earlier savepoints as they were and at worst a ``.tmp-`` directory
that nothing reads (a failure this process sees removes its own). The ``savepoint_writing`` hook
(``fn(directory, step)``) is called after each file, for tests that kill the writer.

Reading (:func:`load_savepoint`): the directory is untrusted input. Only the names above are
opened, each must be a regular file (no symlink) inside the directory (``base/`` not a link);
every field of the document is checked for its type and range, then each file's size, the
Parquet files' footers (their row counts and columns: the keyed state is the key columns then
``__fw_state``), the base files' Arrow schemas (the same key types, the row kind, ``__fw_state``),
and only then the SHA-256 of each; every state in the keyed-state file must be a JSON object (a
base file's are read when the stream first meets their key). JSON is parsed, nothing is
unpickled or run. An unknown format or version, or anything else wrong, is refused in one line
naming the field or the file. A SHA-256 here finds damage, not a forgery: whoever can write the
savepoint can write its document too, so what a restore takes from it is checked against the job
it restores (``savepoints.check_restorable``), not trusted because it hashes right.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass

from .... import hooks
from ....connectors import registry as sources
from ....errors import FullWindowError
from ....graph import MAX_STATE_PARTITIONS, JobGraph
from ....operators import kind_named, names
from ....recovery.events import SOURCE
from ....recovery.paths import SAVEPOINTS
from ....state import parse_operator_state
from ....values.event_time import valid_watermark
from ..keyed.changelog import OUT, ROW, SEQ, STATE, STATE_ROW, TOMBSTONE
from ..keyed.keys import normal
from . import checks, declared

FORMAT = "fw-magics/savepoint"
VERSION = 5
#: Version 1 lacks latest.parquet; 2 has no base files; 3 no base_partitions, no top; a base file of 5 may hold its
#: states typed beside their JSON (``keyed.typed_states``), which fw-magics before 5 cannot read.
READABLE = (1, 2, 3, 4, 5)
DOCUMENT = "savepoint.json"
OPERATOR_STATE = "operator-state.json"
MANIFEST = "source-manifest.json"
KEYED = "keyed-state.parquet"
LATEST = "latest.parquet"
FILES = (OPERATOR_STATE, MANIFEST, KEYED, LATEST)
FILES_OF = {1: FILES[:3], 2: FILES, 3: FILES, 4: FILES, 5: FILES}
BASE = "base"  # the folder of the base files (version 3)
#: The longest micro-batch (or backlog) the saved job had completed, ms: a restored job's stall guard's reference.
LONGEST = "longest_ms"
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
    manifest: dict  # the source's position: a folder's manifest, or a table's ``through``
    keyed_path: str
    latest_path: str | None  # None: a version 1 savepoint, which did not keep the latest rows
    key_types: list  # the key columns' Arrow types in the keyed state
    base: tuple = ()  # version 3: the base files, (path, sha256) each, in partition order
    shape: checks.StateShape | None = None  # what its keyed states hold (their names, kinds, first values)

    @property
    def parallelism(self) -> int:
        return self.document["parallelism"]

    def keyed_table(self):
        """The whole keyed state (key columns, ``__fw_state``), the base's state rows under the keyed-state
        file's (its tombstones hide a base key), read into this process: for tests and small savepoints."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        over = pq.read_table(self.keyed_path)
        kept = [row for row in self._layered(over, STATE_ROW).values() if row[STATE] != TOMBSTONE]
        return pa.Table.from_pylist(kept, schema=over.schema)

    def latest_table(self):
        """Each key's latest changelog row (the output columns, kind, sequence): the base's outputs' last
        under the latest-rows file's, read into this process: for tests and small savepoints."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        latest = pq.read_table(self.latest_path)
        return pa.Table.from_pylist(list(self._layered(latest, OUT).values()), schema=latest.schema)

    def _layered(self, top, row_kind: str) -> dict:
        """Key -> row: the base files' rows of ``row_kind`` (in sequence order, the last of a key kept)
        with ``top``'s columns, then ``top``'s rows over them."""
        import pyarrow as pa
        import pyarrow.compute as pc

        keys = list(self.document["key_names"])
        rows = {}
        for path, _ in self.base:
            with pa.ipc.open_stream(pa.OSFile(path)) as reader:
                table = reader.read_all()
            table = table.filter(pc.equal(table.column(ROW), row_kind)).select(top.column_names)
            rows.update(_by_key(table.sort_by(SEQ) if SEQ in top.column_names else table, keys))
        rows.update(_by_key(top, keys))
        return rows

    def __repr__(self) -> str:
        doc = self.document
        read = sources.position_in_words(doc["source"], self.manifest)
        keys = doc.get("key_names") or []
        keyed = f"keyed state by {', '.join(map(str, keys))}, " if keys else ""
        return (f"Savepoint({os.path.basename(self.path)} of job {doc.get('job')!r}: after micro-batch "
                f"{doc.get('batch')}, parallelism {self.parallelism}, {read}, {keyed}operator state of "
                f"{', '.join(self.operator_state) or 'none'})")


def _by_key(table, keys: list) -> dict:
    """The rows of ``table`` by their key (``keys.normal``), the last one of each key kept."""
    return {normal(tuple(row[k] for k in keys)): row for row in table.to_pylist()}


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


def _write_table(directory: str, name: str, table) -> tuple[dict, list]:
    """Write ``table`` (a pyarrow Table, or ``write(path)`` that writes the Parquet file) as ``name``;
    its record (size, sha256, rows) and its columns' [name, Arrow type]."""
    import pyarrow.parquet as pq

    path = os.path.join(directory, name)
    if callable(table):
        table(path)
    else:
        pq.write_table(table, path)
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    hooks.trigger("savepoint_writing", directory, name)
    footer = pq.ParquetFile(path)
    schema = [[f.name, str(f.type)] for f in footer.schema_arrow]
    return dict(_digest(path), rows=footer.metadata.num_rows), schema


def read_only(path: str) -> None:
    """No one may write ``path`` from now on (its write bits cleared): a hard link shares its file, modes
    included, with every job and savepoint that holds it, and none of them writes a file in place."""
    mode = os.stat(path).st_mode
    if mode & 0o222:
        os.chmod(path, mode & 0o7555)


def share(source: str, target: str) -> None:
    """``target`` made the same file as ``source`` (a hard link: no byte copied), or a copy of it
    where the two folders are on different file systems; atomic either way. The file is read-only from
    then on, for every job and savepoint that shares it (each of them writes a new file, never in place)."""
    import shutil

    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    try:
        os.link(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
    read_only(tmp)
    os.replace(tmp, target)


def base_name(i: int) -> str:
    return f"{BASE}/{i:04d}.arrow"


def write_savepoint(root: str, document: dict, operator_state: dict, manifest: dict, keyed, latest=None,
                    base_files=(), final: str | None = None) -> str:
    """Write a savepoint of the job at ``root`` atomically; returns its directory.

    ``document``: the JSON fields of savepoint.json (format, version and files are added);
    ``operator_state``: a ``fw_magics.state.operator_state_document``; ``manifest``: the source's
    manifest; ``keyed``: the keyed state over the base (tombstones kept); ``latest``: each key's
    latest changelog row over the base's (None: an empty table, for a job without keyed output).
    Each a pyarrow Table or ``write(path)``, which writes it as a Parquet file (a Spark task: the
    rows never pass through this process). ``base_files``: the job's committed state files as (path,
    sha256), one per partition, shared into ``base/`` (hard links where the file system allows).
    ``final``: the directory to write (``fw.write_savepoint``'s path, its parent ``root``; it must not exist),
    instead of the job's next ``savepoints/savepoint-NNNNNN``.
    """
    import pyarrow as pa

    if not os.path.isabs(root) or "://" in root:
        root = os.path.abspath(root)
    if final is None:
        base = savepoints_dir(root)
        os.makedirs(base, exist_ok=True)
        existing = list_savepoints(root)
        number = int(_NAME.fullmatch(os.path.basename(existing[-1])).group(1)) + 1 if existing else 1
        final = os.path.join(base, f"savepoint-{number:06d}")
    else:
        base = root
        os.makedirs(base, exist_ok=True)
    tmp = os.path.join(base, f".tmp-{uuid.uuid4().hex}")
    os.makedirs(tmp)
    try:  # a failure (a Spark task refusing a value, a full disk) leaves no half-written folder behind
        files, columns = {}, {}
        for name, table in ((KEYED, keyed), (LATEST, pa.table({}) if latest is None else latest)):
            files[name], columns[name] = _write_table(tmp, name, table)
        based = []
        for i, (source, sha) in enumerate(base_files):
            share(source, os.path.join(tmp, base_name(i)))
            based.append({"name": base_name(i), "size": os.path.getsize(source), "sha256": sha})
        if based:
            _fsync_dir(os.path.join(tmp, BASE))
            hooks.trigger("savepoint_writing", tmp, BASE)
        files[OPERATOR_STATE] = _write(os.path.join(tmp, OPERATOR_STATE), json.dumps(operator_state).encode())
        hooks.trigger("savepoint_writing", tmp, OPERATOR_STATE)
        files[MANIFEST] = _write(os.path.join(tmp, MANIFEST), json.dumps(manifest).encode())
        hooks.trigger("savepoint_writing", tmp, MANIFEST)
        doc = {"format": FORMAT, "version": VERSION, **document,
               "keyed_schema": columns[KEYED], "files": files, "base": based,
               **({"base_partitions": len(based)} if based else {})}
        _write(os.path.join(tmp, DOCUMENT), json.dumps(doc, indent=1).encode())
        hooks.trigger("savepoint_writing", tmp, DOCUMENT)
        for name in (*files, DOCUMENT):  # the base files are read-only already (share)
            read_only(os.path.join(tmp, name))
        _fsync_dir(tmp)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(base)
    return final


def _read_json(path: str, what: str):
    if os.path.getsize(path) > _MAX_JSON:
        raise SavepointError(f"{what} {path} is larger than {_MAX_JSON >> 20} MiB; not a savepoint fw-magics wrote")
    with open(path, "rb") as f:
        try:
            return json.loads(f.read())
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
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
    """Read and check the savepoint directory ``path`` (see the module docstring); one-line errors.

    The order keeps a hostile savepoint cheap to refuse: the document's fields first, then each
    file's kind and size (nothing is read of a file of the wrong size), the Parquet files' footers
    and schemas, and only then the hashes.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise SavepointError(f"from_savepoint {path!r:.80}; accepted: the path job.savepoint() returned")
    directory = os.path.abspath(os.fspath(path))
    if not os.path.isdir(directory):
        raise SavepointError(f"savepoint {directory} is not a directory; accepted: the path job.savepoint() returned")
    doc = _read_json(_inside(directory, DOCUMENT), "savepoint document")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise SavepointError(f"savepoint {directory} has format {got!r:.60}; accepted: {FORMAT!r}")
    if type(doc.get("version")) is not int or doc["version"] not in READABLE:
        newer = " (written by a newer fw-magics; upgrade to read it)" if type(doc.get("version")) is int \
            and doc["version"] > VERSION else ""
        raise SavepointError(f"savepoint {directory} has version {doc.get('version')!r:.30}{newer}; accepted: "
                             f"{', '.join(map(str, READABLE))}")
    _check_fields(doc, directory)
    files, expected = doc["files"], FILES_OF[doc["version"]]
    if not isinstance(files, dict) or set(files) != set(expected):
        listed = sorted(map(str, files))[:8] if isinstance(files, dict) else files
        raise SavepointError(f"savepoint {directory} lists files {listed!r:.200}; accepted: exactly "
                             f"{', '.join(expected)}")
    paths = {name: _inside(directory, name) for name in expected}
    for name in expected:  # the size first: a file of the wrong size is refused without reading it
        recorded = files[name]
        if not isinstance(recorded, dict) or recorded.get("size") != os.path.getsize(paths[name]):
            raise _damaged(name, directory)
    shape = checks.StateShape()
    try:
        keyed_types = checks.check_tables(doc, paths, _keyed(doc), KEYED, LATEST)
        base = _check_base(doc, directory, keyed_types, shape)
        for name in expected:
            if files[name].get("sha256") != _digest(paths[name])["sha256"]:
                raise _damaged(name, directory)
        for (path, sha), record in zip(base, doc.get("base", [])):
            if _digest(path)["sha256"] != sha:
                raise _damaged(record["name"], directory)
        checks.check_watermark(doc)
        if _keyed(doc):
            checks.check_states(paths[KEYED], KEYED, shape)
    except checks.Refused as refused:
        where = f"savepoint file {refused.file!r} in {directory}" if refused.file else f"savepoint {directory}"
        raise SavepointError(f"{where} {refused}" if refused.file else f"{where}: {refused}") from None
    try:
        operators = parse_operator_state(_read_json(paths[OPERATOR_STATE], "operator state"))
    except FullWindowError as error:
        raise SavepointError(f"savepoint {directory}: {error}") from None
    manifest = sources.check_saved_position(_read_json(paths[MANIFEST], "source manifest"), doc["source"],
                                            f"of savepoint {directory}", SavepointError)
    sources.check_position_fields(doc, manifest, f"savepoint {directory}", SavepointError)
    sources.check_saved_splits(operators, _source_operators(doc), doc["source"], manifest, f"savepoint {directory}",
                               SavepointError)
    return Savepoint(directory, doc, operators, manifest, paths[KEYED], paths.get(LATEST), keyed_types, tuple(base),
                     shape)


def _source_operators(doc: dict) -> list[str]:
    """The names of the source operators in the savepoint's graph, in order (each one's splits are its state)."""
    return JobGraph.from_json(doc["graph"]).source_names()


def _check_base(doc: dict, directory: str, key_types: list, shape) -> list:
    """A savepoint's base files (version 3 on): listed in partition order, as many as the partitions they
    were written in, each a regular file of its recorded size inside ``base/``, read to its end
    (``checks.read_base_file``); (path, sha256) each, hashed by the caller."""
    records = doc.get("base", [])
    if doc["version"] < 3 or (not _keyed(doc) and not records):
        return []
    if not isinstance(records, list) or len(records) > MAX_STATE_PARTITIONS or not all(
            isinstance(r, dict) and r.get("name") == base_name(i) and type(r.get("size")) is int
            and isinstance(r.get("sha256"), str) and len(r["sha256"]) == 64 for i, r in enumerate(records)):
        raise SavepointError(f"savepoint {directory}: field 'base' is {records!r:.100}; accepted: a list of "
                             f"{{name: {base_name(0)!r}, size, sha256}}, one per partition in order")
    if records and not _keyed(doc):
        raise SavepointError(f"savepoint {directory}: field 'base' lists files; accepted: [] for a non-keyed "
                             "operator's savepoint")
    if records and os.path.islink(os.path.join(directory, BASE)):
        raise SavepointError(f"savepoint folder {BASE!r} in {directory} is a link; refused")
    checks.base_count(doc, records)
    found = []
    for index, record in enumerate(records):
        name = record["name"]
        path = _inside(os.path.join(directory, BASE), os.path.basename(name))
        if os.path.getsize(path) != record["size"]:
            raise _damaged(name, directory)
        checks.read_base_file(path, name, list(doc["key_names"]), key_types, index, len(records), shape)
        found.append((path, record["sha256"]))
    return found


def _damaged(name: str, directory: str) -> SavepointError:
    return SavepointError(f"savepoint file {name!r} in {directory} does not match its recorded size and SHA-256; "
                          "the savepoint is damaged")


def _is_text(value, limit: int) -> bool:
    return isinstance(value, str) and 0 < len(value) <= limit and "\x00" not in value


#: Each field of the document, what it accepts (for the message) and the check.
_FIELDS = {
    "job": ("a job name", lambda v: _is_text(v, 200)),
    "graph": ("the job graph as JSON text", lambda v: _is_text(v, _MAX_JSON)),
    "parallelism": (f"an integer from 1 to {MAX_STATE_PARTITIONS}",
                    lambda v: type(v) is int and 1 <= v <= MAX_STATE_PARTITIONS),
    "source": (sources.DESCRIBED,
               lambda v: SOURCE.problem(v) is None and all(_is_text(place, 4096) for place in sources.places(v))),
    "watermark": ("null or epoch milliseconds of the years 1 to 9999", valid_watermark),
    "key_names": ("a list of distinct column names",
                  lambda v: isinstance(v, list) and len(v) <= 64 and all(_is_text(k, 1024) for k in v)
                  and len(set(v)) == len(v)),
    "kind": (f"{', '.join(names()[:-1])} or {names()[-1]}", lambda v: isinstance(v, str) and v in names()),
    "batch": ("a micro-batch id, an integer >= 0", lambda v: type(v) is int and 0 <= v < 2**62),
    **sources.position_document_fields(),  # how far the source read: each kind's own (read_files, read_through)
    "top": ("null or the newest event time read, epoch milliseconds of the years 1 to 9999", valid_watermark),
    "base_partitions": (f"the partitions the base was written in, an integer from 1 to {MAX_STATE_PARTITIONS}",
                        lambda v: type(v) is int and 1 <= v <= MAX_STATE_PARTITIONS),
    declared.FIELD: ("what the job's function declared of its keyed state, " + declared.ACCEPTED, declared.valid),
    LONGEST: ("null or milliseconds, an integer >= 0", lambda v: v is None or (type(v) is int and 0 <= v < 2**62)),
    "tops": ("each input's greatest event time read, {'1': ms, '2': ms}",
             lambda v: isinstance(v, dict) and 0 < len(v) <= 2 and all(k in ("1", "2") and type(x) is int
                                                                       and valid_watermark(x) for k, x in v.items())),
}
_REQUIRED = ("job", "graph", "parallelism", "source", "watermark", "key_names", "files")


def _keyed(doc: dict) -> bool:
    """Whether the savepoint's operator kind (checked by ``_check_fields``; none recorded: an older keyed
    job's) keeps keyed state."""
    return "kind" not in doc or kind_named(doc["kind"]).keyed


def _check_fields(doc: dict, directory: str) -> None:
    """Every field of the document of the type and in the range it must be, before any file is read."""
    missing = [name for name in _REQUIRED if name not in doc]
    if missing:
        raise SavepointError(f"savepoint document {directory} lacks {', '.join(missing)}")
    for name, (accepted, ok) in _FIELDS.items():
        if name in doc and not ok(doc[name]):
            raise SavepointError(f"savepoint {directory}: field {name!r} is {doc[name]!r:.60}; accepted: {accepted}")
    try:
        JobGraph.from_json(doc["graph"])
    except FullWindowError as error:
        raise SavepointError(f"savepoint {directory}: field 'graph' is not a job graph ({error})") from None
    if not _keyed(doc) and doc["key_names"]:
        raise SavepointError(f"savepoint {directory}: field 'key_names' is {doc['key_names']!r:.60}; accepted: [] "
                             "for a non-keyed operator's savepoint")
