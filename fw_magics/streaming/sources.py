"""Sources with a backlog (FLIP-327's ``isBacklog``): what the streaming runtime asks of a source.

A source with a backlog (``FilesSource``, the one there is) answers five questions, all in JSON/DataFrames:

* ``describe()``: what it reads (recorded; a restart must describe the same source);
* ``record_backlog(root)``: at the job's *first* start, fix the backlog (the positions it ends
  at) in the job directory and return a JSON summary; a restart keeps what was recorded;
* ``backlog_frame(spark, root)``: a batch DataFrame of exactly the backlog;
* ``fresh_stream(spark, root, max_files, parallelism, hold)``: a streaming DataFrame starting
  right after the backlog, whose first micro-batch runs at once (the switch); with ``hold`` (a
  path), one that may start while the backlog runs and reads no fresh record before that file
  exists;
* ``full_stream(spark, max_files)``: a streaming DataFrame from the very beginning (``mode="stream"``,
  the baseline without a backlog phase).

:class:`FilesSource` implements them over a directory: the backlog is the files present at the
first start, recorded in a manifest; positions are indexes into it.

**Kafka** fits the same interface; it is not implemented because ``spark-sql-kafka`` is not in
PySpark's jars and could not be resolved here (``spark.jars.packages`` found no Maven
repository). With the connector on the classpath it would be: ``record_backlog``: the latest
offset of every partition at the first start (from a batch read of the topic, or an admin
client), written as Kafka's offsets JSON ``{"topic": {"0": 42, "1": 17}}``; ``backlog_frame``:
``spark.read.format("kafka").option("startingOffsets", "earliest").option("endingOffsets",
<that JSON>)``; ``fresh_stream``: ``spark.readStream.format("kafka").option("startingOffsets",
<that JSON>)`` (plus one idle trigger for the switch, or none: Kafka's first batch runs at
start); ``full_stream``: ``startingOffsets="earliest"``; the value column parsed with
``from_json(value, schema)``.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame

from . import files_source
from .manifest import Manifest, backlog_summary


class FilesSource:
    """A directory of Parquet, JSON or CSV files (``fw.from_files``)."""

    def __init__(self, detail: dict, schema):
        self.directory = detail["path"]
        self.format = detail["format"]
        self.event_time = detail["event_time"]
        self.delay_ms = detail["delay_ms"]
        self.schema = schema

    def describe(self) -> dict:
        return {"kind": "files", "path": self.directory, "format": self.format, "schema": self.schema.simpleString(),
                "event_time": self.event_time, "delay_ms": self.delay_ms}

    def manifest(self, root: str) -> Manifest:
        return Manifest(root)

    def record_backlog(self, root: str) -> dict:
        return backlog_summary(self.manifest(root).record_backlog(self.directory))

    def record_nothing_read(self, root: str) -> None:
        """A manifest with no backlog (every file is read by the stream), unless the job already has one."""
        manifest = self.manifest(root)
        if not manifest.exists():
            manifest.write({"format": 1, "directory": self.directory, "backlog": 0, "files": []})

    def backlog_paths(self, root: str) -> list[str]:
        doc = self.manifest(root).read()
        return [os.path.join(doc["directory"], f["name"]) for f in doc["files"][: doc["backlog"]]]

    def backlog_frame(self, spark, root: str) -> DataFrame:
        paths = self.backlog_paths(root)
        if not paths:
            return spark.createDataFrame([], self.schema)
        if self.format == "parquet":  # Spark's own reader: the fastest way in
            return spark.read.schema(self.schema).parquet(*paths)
        files_source.register(spark)  # CSV/JSON parsed as the fresh files will be (pyarrow)
        return (spark.read.format(files_source.NAME).schema(self.schema)
                .option("root", root).option("format", self.format).load())

    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None) -> DataFrame:
        files_source.register(spark)
        reader = (spark.readStream.format(files_source.NAME).schema(self.schema)
                  .option("root", root).option("format", self.format))
        if hold:  # no fresh file is read before this file exists (the backlog's handover)
            reader = reader.option("hold", hold)
        if parallelism:  # source subtasks: one partition per owner of new files (see splits)
            reader = reader.option("parallelism", str(parallelism))
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load()

    def operator_stream(self, spark, root: str, max_files: int | None, parallelism: int) -> DataFrame:
        """The stream of a non-keyed operator job: every manifest file after the backlog, each row with
        ``__fw_subtask`` (the source subtask that read it) and ``__fw_pos`` (see files_source)."""
        from pyspark.sql import types as T

        files_source.register(spark)
        schema = T.StructType(list(self.schema.fields) + [T.StructField(files_source.SUBTASK, T.IntegerType()),
                                                          T.StructField(files_source.POSITION, T.LongType())])
        reader = (spark.readStream.format(files_source.NAME).schema(schema)
                  .option("root", root).option("format", self.format)
                  .option("parallelism", str(parallelism)).option("subtaskColumns", "true"))
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load()

    def full_stream(self, spark, max_files: int | None) -> DataFrame:
        reader = spark.readStream.schema(self.schema).format(self.format)
        if self.format == "csv":
            reader = reader.option("header", "true")
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load(self.directory)


def source_of(stateful) -> FilesSource:
    """The backlog source of a StatefulStream, or a one-line error when its input has none."""
    from ..errors import FullWindowError

    step = stateful.source.step.lineage()[0]
    if step.detail.get("source") != "files":
        raise FullWindowError(
            f"start() runs a keyed operator over a source with a backlog: fw.from_files(...); "
            f"{stateful.source.name!r} is a {step.detail.get('source', 'derived')} stream"
        )
    return FilesSource(step.detail, stateful.source.schema)
