"""Materialized results: one committed Arrow file per producer subtask (a BLOCKING result).

Executors write them (``write_partition`` runs inside a Spark task), each file with a JSON
sidecar holding its size, SHA-256 and record count. Reading them back gives a DataFrame
whose partition ``i`` is exactly producer subtask ``i``'s file, however large the file is.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import time

import pyarrow as pa
from pyspark.sql import types as T

from ...errors import JobStorageError
from ...recovery.filesystem import Storage
from ...recovery.integrity import MAX_SIDECAR, cut_short, file_intact, sidecar_problem, unreadable
from ...recovery.paths import RESULTS, result_file, result_sidecar
from ...spark.cancel_marks import cancelled

_SIDECAR = re.compile(r"(0|[1-9][0-9]{0,9})\.json")

META_SCHEMA = "subtask int, path string, size long, sha256 string, records long, duration double"


def result_path(storage: Storage, vertex: str, subtask: int) -> str:
    return storage.path(*result_file(vertex, subtask).split("/"))


def sidecar_path(storage: Storage, vertex: str, subtask: int) -> str:
    return storage.path(*result_sidecar(vertex, subtask).split("/"))


def folder_in_the_way(storage: Storage, vertex: str, subtasks) -> str | None:
    """What stops ``subtasks`` of ``vertex`` committing their results, in one line, or None: a folder
    where a result or its sidecar goes (a damaged or hostile job directory) fails the atomic
    rename inside the task, retried to exhaustion. A file or a link there is simply replaced."""
    if not storage.local:
        return None
    for i in sorted(subtasks):
        for relative, path in ((result_file(vertex, i), result_path(storage, vertex, i)),
                               (result_sidecar(vertex, i), sidecar_path(storage, vertex, i))):
            if os.path.isdir(path) and not os.path.islink(path):
                return f"{relative} is a folder where subtask {i}'s result goes; remove it (or run under another job_name)"
    return None


class _Hashing:
    """A write-only file that hashes and counts what passes through it."""

    def __init__(self, raw):
        self.raw, self.sha, self.size, self.closed = raw, hashlib.sha256(), 0, False

    def write(self, data) -> int:
        data = bytes(data)
        self.sha.update(data)
        self.size += len(data)
        self.raw.write(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _partition_id() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def write_partition(root: str, vertex: str, attempt: int, only, empty_schema: pa.Schema, batches,
                    counters: dict | None = None):
    """Inside a task: commit this partition's batches as ``results/<vertex>/<subtask>.arrow``.

    ``counters``: a dict the producing generator fills while it is consumed (what it counted:
    keys, state writes...); it is stored in the sidecar under "counters".
    """
    subtask = _partition_id()
    if only is not None and subtask not in only:
        return  # finished earlier: not recomputed, not rewritten
    started = time.monotonic()
    storage = Storage(root)
    path = result_path(storage, vertex, subtask)
    records = 0
    batches = iter(batches)
    first = next(batches, None)
    schema = first.schema if first is not None else empty_schema
    with storage.atomic(path) as raw:
        sink = _Hashing(raw)
        with pa.ipc.new_stream(sink, schema) as writer:
            if first is not None:
                for batch in itertools.chain([first], batches):
                    writer.write_batch(batch)
                    records += batch.num_rows
    meta = {
        "subtask": subtask, "attempt": attempt, "path": result_file(vertex, subtask),
        "size": sink.size, "sha256": sink.sha.hexdigest(), "records": records,
        "duration": round(time.monotonic() - started, 6),
    }
    if counters is not None:
        meta["counters"] = dict(counters)
    if cancelled():  # its action was cancelled while it ran: the sidecar is the commit, so none
        return
    storage.write_bytes(sidecar_path(storage, vertex, subtask), json.dumps(meta, sort_keys=True).encode())
    yield pa.RecordBatch.from_pylist(
        [{k: meta[k] for k in ("subtask", "path", "size", "sha256", "records", "duration")}],
        schema=pa.schema([("subtask", pa.int32()), ("path", pa.string()), ("size", pa.int64()),
                          ("sha256", pa.string()), ("records", pa.int64()), ("duration", pa.float64())]),
    )


def read_partition(root: str, groups: list[list[str]], batches, each=None, names=None):
    """Inside a task: partition ``i`` of ``spark.range(k)`` streams the result files of ``groups[i]``
    in order (nothing for an empty group: a partition whose output is not needed), each batch through
    ``each`` if given, else its columns ``names`` (a file may hold more: a backlog's typed states). A file
    that cannot be read whole (cut short, rewritten) fails the task in one line naming it."""
    storage = Storage(root)
    if each is None and names is not None:
        def each(batch):
            return batch.select(names) if batch.num_columns > len(names) else batch
    for batch in batches:
        for index in batch.column(0).to_pylist():
            for path in groups[index]:
                read = _read_whole(storage, path)
                yield from read if each is None else map(each, read)


def _read_whole(storage: Storage, path: str):
    """The record batches of the committed result file ``path``, to its end-of-stream marker."""
    where = storage.path(path)
    try:
        f = storage.open_inside(path)  # a regular file inside the job, never a link
    except OSError as error:
        raise JobStorageError(unreadable(where, error)) from None
    with f:
        try:
            if cut_short(f):
                raise JobStorageError(unreadable(where, "no end-of-stream marker: it was cut short"))
            yield from pa.ipc.open_stream(f)
        except (OSError, pa.ArrowException) as error:
            raise JobStorageError(unreadable(where, error)) from None


def read_results(spark, root: str, paths: list[str | None], schema, tasks: int | None = None, each=None):
    """A DataFrame of the result files ``paths`` (None: a file not needed).

    By default one partition per path, in order: subtask ``i`` stays partition ``i`` (what a
    pointwise edge reads). ``tasks``: the files that are needed spread over that many
    partitions instead, round-robin, for a consumer that hash-partitions what it reads anyway
    (an all-to-all edge): fewer tasks, each starting one Python worker, for the same records.
    ``each``: a function of each record batch read, whose batches (of ``schema``) the frame holds
    instead (the rows and columns wanted, chosen by Arrow in the task before the JVM sees them).
    """
    if tasks is None:
        groups = [[path] if path is not None else [] for path in paths]
    else:
        needed = [path for path in paths if path is not None]
        tasks = max(1, min(tasks, len(needed)))
        groups = [needed[i::tasks] for i in range(tasks)]
    k = len(groups)
    names = list(schema.names) if isinstance(schema, T.StructType) else None
    task = functools.partial(read_partition, root, groups, each=each, names=names)
    return spark.range(0, k, 1, k).mapInArrow(task, schema)


def committed(storage: Storage, vertex: str) -> dict[int, dict]:
    """The sidecars of every committed subtask of a vertex (what survived a failure).

    A sidecar is read back like any file of the job directory: a regular file, bounded in
    size, JSON with the fields the runtime writes for that very subtask, and its result file
    intact; anything else is ignored (that subtask simply runs again).
    """
    found = {}
    try:
        names = storage.listdir_inside(f"{RESULTS}/{vertex}")
    except (OSError, ValueError):
        return found
    for name in names:
        match = _SIDECAR.fullmatch(name)
        if match is None:
            continue
        subtask = int(match.group(1))
        try:
            with storage.open_inside(f"{RESULTS}/{vertex}/{name}", max_bytes=MAX_SIDECAR) as f:
                meta = json.loads(f.read())
        except (OSError, ValueError, RecursionError):
            continue
        if sidecar_problem(meta, vertex, subtask) is None and file_intact(storage, meta) is None:
            found[subtask] = meta
    return found
