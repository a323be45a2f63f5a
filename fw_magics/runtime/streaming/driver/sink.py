"""Where a streaming job's results go: its changelog in the job directory, and the user's sink.

Every micro-batch is written by ``foreachBatch`` as ``changelog/batch=<id>/`` (Parquet,
``mode("overwrite")``: a batch Spark replays after a crash replaces itself, never doubles),
then to the user's sink if any (not the empty warm-up batch a query held during the backlog
runs, see ``job``), then a commit marker ``changelog/batch=<id>/_fw_committed``
(JSON, written atomically). Readers take only batches with a marker. The backlog's outputs are
the changelog's first part (batch -1): the backlog engine's committed result files.

The user's sink is a Parquet table directory (``sink="path"``: ``path/batch_id=<id>/`` with the
same overwrite and its own ``_fw_committed`` marker, and ``path/backlog/`` for the backlog part)
or a callable ``fn(df, batch_id)`` (Spark's ``foreachBatch`` form; the backlog part comes as
batch_id -1). Under Spark Connect the sink function runs in a Python process on the server:
it can write files the server sees but not the notebook's variables.
"""

from __future__ import annotations

import json
import os
import time

from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ....errors import FullWindowError
from ....operators.base import REMOVED
from ....operators.co_process import LATE_KINDS
from ....recovery.filesystem import Storage
from ....recovery.paths import CHANGELOG
from ..keyed.changelog import BACKLOG_BATCH, BATCH, KIND, RESTORED_BATCH, SEQ

MARKER = "_fw_committed"
BACKLOG_PART = "backlog"


def batch_dir(root: str, batch_id: int) -> str:
    return Storage(root).path(CHANGELOG, f"batch={batch_id}")


def check_sink(sink) -> None:
    """A sink: None, a function fn(df, batch_id), or a directory path (one that exists must be a folder)."""
    accepted = ("accepted: None (the job's changelog only), a directory path for a Parquet table, or a function "
                "fn(df, batch_id)")
    if sink is None or callable(sink):
        return
    if not isinstance(sink, (str, os.PathLike)) or not str(sink).strip():
        raise FullWindowError(f"sink {sink!r:.60}; {accepted}")
    path = os.fspath(sink)
    if "://" not in path and os.path.exists(path) and not os.path.isdir(path):
        raise FullWindowError(f"sink {path!r:.200} is not a folder (a file, a device or a FIFO); {accepted}")


def write_marker(directory: str, batch_id, extra: dict | None = None) -> None:
    doc = {"batch": batch_id, "time": round(time.time(), 3), **(extra or {})}
    Storage(directory).write_bytes(Storage(directory).path(MARKER), json.dumps(doc).encode())


class ChangelogSink:
    """The ``foreachBatch`` function of a streaming job (pickled; runs server-side under Connect)."""

    def __init__(self, root: str, columns: list[str], sink=None, hold: str | None = None, late: bool = False):
        self.root, self.columns, self.sink, self.hold = root, list(columns), sink, hold
        self.late = late  # an interval join's late records are among the rows: the user's sink gets the others

    def __call__(self, df, batch_id: int) -> None:
        if self.hold and not os.path.exists(self.hold):  # a warm-up batch during the backlog: it read nothing,
            df.write.format("noop").mode("overwrite").save()  # but Spark wants its state stores committed
            return
        part = batch_dir(self.root, batch_id)
        df.write.mode("overwrite").parquet(part)
        if self.sink is not None:
            written = df.sparkSession.read.schema(df.schema).parquet(part)
            if self.late:
                written = written.where(~F.col(KIND).isin(*LATE_KINDS.values()))
            written = written.select(*[F.col(f"`{c}`") for c in self.columns])
            deliver(self.sink, written, batch_id)
        write_marker(part, batch_id)


def deliver(sink, frame, batch_id: int) -> None:
    """Hand one part of the changelog (user columns only) to the user's sink, idempotently."""
    if sink is None:
        return
    if callable(sink):
        sink(frame, batch_id)
        return
    name = BACKLOG_PART if batch_id == BACKLOG_BATCH else f"batch_id={batch_id}"
    target = Storage(sink).path(name)
    frame.write.mode("overwrite").parquet(target)
    write_marker(target, batch_id)


def committed_batches(root: str) -> list[int]:
    """The micro-batch ids whose changelog part has its commit marker, in order."""
    storage = Storage(root)
    found = []
    for name in storage.listdir(storage.path(CHANGELOG)):
        if name.startswith("batch=") and name[6:].lstrip("-").isdigit():
            if storage.exists(storage.path(CHANGELOG, name, MARKER)):
                found.append(int(name[6:]))
    return sorted(found)


def changelog_frame(spark, root: str, output, backlog=None, restored=None):
    """Every committed changelog row: the output columns, kind, sequence and batch (-1: backlog,
    -2: the latest rows of the savepoint a job was restored from)."""
    from ..keyed.changelog import changelog_schema

    schema = changelog_schema(output)
    parts = []
    if restored is not None:
        parts.append(restored.withColumn(BATCH, F.lit(RESTORED_BATCH).cast("long")))
    if backlog is not None:
        parts.append(backlog.withColumn(BATCH, F.lit(BACKLOG_BATCH).cast("long")))
    batches = committed_batches(root)
    if batches:
        frame = spark.read.schema(schema).parquet(*[batch_dir(root, b) for b in batches])
        frame = frame.where(~F.col(KIND).isin(*LATE_KINDS.values()))  # an interval join's side output: late_frame
        # the batch id is in the directory name: the file's own path says which part a row is in
        batch = F.regexp_extract(F.col("_metadata.file_path"), r"/batch=(-?\d+)/", 1).cast("long")
        parts.append(frame.withColumn(BATCH, batch))
    if not parts:
        return spark.createDataFrame([], schema.add(BATCH, "long"))
    frame = parts[0]
    for other in parts[1:]:
        frame = frame.unionByName(other)
    return frame


def late_frame(spark, root: str, output, fields: tuple, side: str):
    """An interval join's late records of ``side`` ("left", "right") in every committed micro-batch: the
    input's columns, then the batch; in the order the operator met them."""
    from ...streaming.keyed.changelog import changelog_schema

    column = fields[("left", "right").index(side)]
    batches = committed_batches(root)
    if not batches:
        return spark.createDataFrame([], column.dataType.add(BATCH, "long"))
    frame = spark.read.schema(changelog_schema(output, fields)).parquet(*[batch_dir(root, b) for b in batches])
    batch = F.regexp_extract(F.col("_metadata.file_path"), r"/batch=(-?\d+)/", 1).cast("long")
    frame = frame.where((F.col(KIND) == LATE_KINDS[side]) & F.col(column.name).isNotNull())
    return frame.select(F.col(f"{column.name}.*"), batch.alias(BATCH), F.col(SEQ)).orderBy(BATCH, SEQ).drop(SEQ)


def latest_rows(changelog, key_names):
    """One row per key: its last changelog row (by batch, then sequence), every column kept; a key whose last
    row withdrew it (``REMOVED``: a mirror's deleted row) has none."""
    order = Window.partitionBy(*[F.col(f"`{k}`") for k in key_names]).orderBy(F.col(BATCH).desc(), F.col(SEQ).desc())
    return changelog.withColumn("__fw_rank", F.row_number().over(order)) \
        .where((F.col("__fw_rank") == 1) & ~F.coalesce(F.col(KIND) == REMOVED, F.lit(False))).drop("__fw_rank")


def latest_frame(changelog, key_names):
    """One row per key: its last changelog row's output columns."""
    return latest_rows(changelog, key_names).drop(KIND, SEQ, BATCH)
