"""Sources with a backlog (FLIP-327's ``isBacklog``): what the streaming runtime asks of a source.

A source with a backlog (``FilesSource`` over a folder, ``TableSource`` over a PostgreSQL table) answers
these questions, all in JSON/DataFrames:

* ``describe()``: what it reads (recorded; a restart must describe the same source);
* ``record(root, backlog)``: at the job's *first* start, fix the backlog (the positions it ends
  at) in the job directory and return a JSON summary; a restart keeps what was recorded
  (``relist``: a file gone since is skipped, one changed is listed anew);
* ``backlog_frame(spark, root)``: a batch DataFrame of exactly the backlog;
* ``fresh_stream(spark, root, max_files, parallelism, hold)``: a streaming DataFrame starting
  right after the backlog, whose first micro-batch runs at once (the switch); with ``hold`` (a
  path), one that may start while the backlog runs and reads no fresh record before that file
  exists;
* ``stream(spark, root, max_files)``: a streaming DataFrame from the very beginning (``mode="stream"``,
  the baseline without a backlog phase).

* ``manifest(root)``: where it recorded its backlog (read back checked at a restart);
* ``saved_position``, ``position_fields``, ``position_snapshots``, ``read_since_switch``, ``restore_position``,
  ``same_place``: its position in a savepoint, and a restore laid out from it (``savepoints``), asked
  of each input (``inputs_at``, ``joined``: a source of two inputs answers for each one's).

:class:`FilesSource` implements them over a directory: the backlog is the files present at the
first start, recorded in a manifest; positions are indexes into it. :class:`TableSource` over a
table: the backlog is the rows up to the greatest ``order_by`` at the first start
(``source/table.json``); positions are ``order_by`` values (``table_source``).

**Kafka** fits the same interface; it is not implemented because ``spark-sql-kafka`` is not in
PySpark's jars and could not be resolved here (``spark.jars.packages`` found no Maven
repository). With the connector on the classpath it would be: ``record``: the latest
offset of every partition at the first start (from a batch read of the topic, or an admin
client), written as Kafka's offsets JSON ``{"topic": {"0": 42, "1": 17}}``; ``backlog_frame``:
``spark.read.format("kafka").option("startingOffsets", "earliest").option("endingOffsets",
<that JSON>)``; ``fresh_stream``: ``spark.readStream.format("kafka").option("startingOffsets",
<that JSON>)`` (plus one idle trigger for the switch, or none: Kafka's first batch runs at
start); ``stream``: ``startingOffsets="earliest"``; the value column parsed with
``from_json(value, schema)``.
"""

from __future__ import annotations

import json
import os

from pyspark.sql import DataFrame

from ..errors import FullWindowError, JobStorageError
from ..recovery.filesystem import Storage, UnsafeFile
from .files import datasource as files_source
from .files.manifest import Manifest, backlog_summary, check_manifest, relist
from .files.reading import bad_file
from .files.schema import check_first_file, footer_problem, nanoseconds
from .files.splits import SPLITS, restored_manifest, source_snapshots


class OneInput:
    """What a source of one input answers about its inputs (``ConnectedSource`` has two): itself, in the
    job's folder, at the position it saved."""

    def inputs_at(self, root: str, position: dict | None = None) -> list[tuple]:
        """Each input as (its source, its folder in the job's, its part of ``position``)."""
        return [(self, root, position)]

    @staticmethod
    def joined(parts: list[dict]) -> dict:
        """The source's whole from its inputs' parts, in ``inputs_at``'s order (positions, restore details)."""
        (part,) = parts
        return part


class FilesSource(OneInput):
    """A directory of Parquet, JSON or CSV files (``fw.from_files``): every mode reads its files the
    same way (``file_reading``), through the manifest of the job that reads it."""

    def __init__(self, detail: dict, schema):
        self.directory = detail["path"]
        self.format = detail["format"]
        self.event_time = detail["event_time"]
        self.delay_ms = detail["delay_ms"]
        self.glob = detail.get("glob", "*")
        self.on_bad_file = detail.get("on_bad_file", "fail")
        self.on_late = detail.get("on_late", "drop")
        self.schema = schema
        self.delays = {None: self.delay_ms}  # the watermark delay of its one input (backlog.switch_watermark)
        self.has_backlog = detail.get("backlog", True)

    def describe(self) -> dict:
        """What it reads: a restart must describe the same source (``on_bad_file`` and ``on_late`` may change)."""
        return {"kind": "files", "path": self.directory, "format": self.format, "schema": self.schema.simpleString(),
                "event_time": self.event_time, "delay_ms": self.delay_ms, "glob": self.glob,
                **({} if self.has_backlog else {"backlog": False})}

    def manifest(self, root: str) -> Manifest:
        return Manifest(root)

    def record(self, root: str, backlog: bool) -> tuple[dict, list[dict]]:
        """At the first start: the files present now (the backlog, or with ``backlog=False`` the stream's
        first files), the schema checked against the first, a Parquet backlog's footers checked. Returns
        the backlog's summary and the files skipped (a bad one with ``on_bad_file="skip"``)."""
        manifest = self.manifest(root)
        doc = manifest.listing(self.directory, self.glob, backlog)
        skipped = self._check_footers(doc) if backlog and self.format == "parquet" else []
        readable = [e for e in doc["files"] if not e.get("skipped")]
        if readable:
            check_first_file(self.directory, readable[0], self.format, self.arrow_schema)
        manifest.write(doc)
        return backlog_summary(doc), skipped

    def _check_footers(self, doc: dict) -> list[dict]:
        skipped = []
        for index in range(doc["backlog"]):
            entry = doc["files"][index]
            problem, schema = footer_problem(os.path.join(self.directory, entry["name"]))
            if problem is not None:
                if self.on_bad_file != "skip":
                    bad_file(None, self.directory, entry["name"], problem, "fail")
                doc["files"][index] = entry = dict(entry, skipped=problem)
                skipped.append(entry)
            elif nanoseconds(schema, self.schema.names):
                doc["reader"] = "arrow"  # Spark's Parquet reader refuses nanosecond timestamps
        return skipped

    def relist(self, root: str) -> list[dict]:
        """At a restart: the manifest's files as they are now (a gone file skipped, a changed one listed
        anew); the entries that changed."""
        manifest = self.manifest(root)
        if not manifest.exists():
            return []
        doc, changed = relist(manifest.read())
        if changed:
            manifest.write(doc)
        return changed

    @property
    def arrow_schema(self):
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(self.schema, timezone="UTC")

    def backlog_frame(self, spark, root: str) -> DataFrame:
        doc = self.manifest(root).read()
        paths = [os.path.join(doc["directory"], f["name"]) for f in doc["files"][: doc["backlog"]]
                 if not f.get("skipped")]
        if not paths:
            return spark.createDataFrame([], self.schema)
        if self.format == "parquet" and doc.get("reader", "spark") == "spark":  # Spark's own: the fastest way in
            return spark.read.schema(self.schema).parquet(*paths)
        files_source.register(spark)
        return self._options(spark.read, spark, root).load()

    def _options(self, reader, spark, root: str):
        return (reader.format(files_source.NAME).schema(self.schema).option("root", root)
                .option("format", self.format).option("onBadFile", self.on_bad_file)
                .option("timeZone", spark.conf.get("spark.sql.session.timeZone")))

    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None) -> DataFrame:
        """The stream of every manifest file after the backlog (all of them in mode "stream")."""
        files_source.register(spark)
        reader = self._options(spark.readStream, spark, root)
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
        reader = (self._options(spark.readStream, spark, root).schema(schema)
                  .option("parallelism", str(parallelism)).option("subtaskColumns", "true"))
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load()

    # -- its position in a savepoint (savepoints.py) --------------------------------------------------

    def saved_position(self, root: str, end: dict) -> dict:
        """What a savepoint keeps of the source after a micro-batch whose end offset was ``end``: the
        manifest, its first ``end["files"]`` files read (``backlog``)."""
        return dict(self.manifest(root).read(), backlog=int(end["files"]))

    def position_fields(self, position: dict) -> dict:
        """What the savepoint's document says of it: how many files were read."""
        return {"read_files": position["backlog"]}

    def position_snapshots(self, position: dict, parallelism: int) -> list[dict]:
        """The source subtasks' operator state: its splits, the read ones marked (``splits``)."""
        return source_snapshots(position["files"], position["backlog"], parallelism)

    def read_since_switch(self, spark, root: str, position: dict, scratch: str):
        """A batch DataFrame of what the stream read up to ``position`` (not the backlog), or None."""
        manifest = self.manifest(root).read()
        first, read = min(manifest.get("backlog", 0), position["backlog"]), position["backlog"]
        if read == first:
            return None
        doc = dict(position, files=position["files"][first:read], backlog=read - first)
        if self.format == "parquet":
            paths = [os.path.join(doc["directory"], f["name"]) for f in doc["files"] if not f.get("skipped")]
            return spark.read.schema(self.schema).parquet(*paths)
        Manifest(root, scratch).write(doc)
        files_source.register(spark)
        return (spark.read.format(files_source.NAME).schema(self.schema).option("root", root)
                .option("manifest", scratch).option("format", self.format).load())

    def restore_position(self, root: str, snapshots: list[dict], position: dict, parallelism: int) -> dict:
        """Lay a restored job's source out: the splits redistributed to ``parallelism`` subtasks, the read
        files its backlog (never read again); the switch event's detail."""
        manifest = restored_manifest(snapshots, position, parallelism)
        self.manifest(root).write(manifest)
        return {"read_files": manifest["backlog"]}

    def same_place(self, position: dict) -> str | None:
        """Why a savepoint's position is not of this source (another folder), or None."""
        if position["directory"] != self.directory:
            return f"lists the files of {position['directory']!r:.200}, not of the job's source {self.directory!r:.200}"
        return None

    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None) -> DataFrame:
        """A stream-mode job's stream: its own files from the first, through the manifest; a job recorded
        before stream mode had a manifest keeps Spark's file source, which its checkpoint was made with."""
        if self.manifest(root).exists():
            return self.fresh_stream(spark, root, max_files)
        reader = spark.readStream.schema(self.schema).format(self.format)
        if self.format == "csv":
            reader = reader.option("header", "true")
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load(self.directory)


def check_table_position(doc, where: str, error) -> dict:
    """``doc`` if it is a table source's position fw-magics wrote; ``error`` with one line naming ``where``."""
    if not (isinstance(doc, dict) and doc.get("format") == 1 and (doc.get("rows") is None or type(doc["rows"]) is int)
            and (doc.get("through") is None or type(doc.get("through")) is int) and isinstance(doc.get("table"), str)):
        raise error(f"the table source's position {where} is not one fw-magics wrote (format 1)")
    return doc


class TablePosition:
    """Where a table source's backlog ends (``source/table.json`` in the job's folder): ``through``, the
    greatest ``order_by`` at the first start (None: an empty table, or a job without a backlog; a restored
    job: the greatest its savepoint had read), and its ``rows``. Written once, at the first start; read
    back checked, as the manifest is."""

    RELATIVE = "source/table.json"

    def __init__(self, root: str):
        self._storage = Storage(root)
        self.path = self._storage.path(self.RELATIVE)

    def exists(self) -> bool:
        return self._storage.present_inside(self.RELATIVE)

    def read(self) -> dict:
        try:
            with self._storage.open_inside(self.RELATIVE, 4096) as f:
                doc = json.loads(f.read())
        except (UnsafeFile, ValueError, UnicodeDecodeError):
            doc = None
        return check_table_position(doc, self.path, JobStorageError)

    def write(self, doc: dict) -> None:
        self._storage.write_bytes(self.path, json.dumps(doc).encode())


class TableSource(OneInput):
    """A PostgreSQL table read in the order of a growing integer column (``fw.from_table``): the backlog is
    every row up to the greatest ``order_by`` at the first start, read as a partitioned batch; fresh rows
    are those with a greater one, read by the ``fw_table`` stream (see table_source)."""

    def __init__(self, detail: dict, schema):
        self.url, self.table, self.order_by = detail["url"], detail["table"], detail["order_by"]
        self.event_time, self.delay_ms = detail["event_time"], detail["delay_ms"]
        self.on_late = detail.get("on_late", "drop")
        self.schema = schema
        self.delays = {None: self.delay_ms}
        self.has_backlog = detail.get("backlog", True)

    def describe(self) -> dict:
        return {"kind": "table", "url": self.url, "table": self.table, "order_by": self.order_by,
                "schema": self.schema.simpleString(), "event_time": self.event_time, "delay_ms": self.delay_ms,
                **({} if self.has_backlog else {"backlog": False})}

    def manifest(self, root: str) -> TablePosition:
        return TablePosition(root)

    def _bounds(self, count: bool = False) -> tuple:
        """The table's least and greatest ``order_by`` (and its row count with ``count``), or one line
        naming the table and why it cannot be read, before any Spark job would fail on it at length."""
        from .postgres.client import bounds, failure

        try:
            return bounds(self.url, self.table, self.order_by, count=count)
        except Exception as error:  # psycopg's OperationalError: the server stopped, the table dropped
            raise FullWindowError(f"the job cannot read {self.table!r} at {self.url}: {failure(error)}") from None

    def record(self, root: str, backlog: bool) -> tuple[dict, list[dict]]:
        """At the first start: the greatest ``order_by`` now ends the backlog (none without one)."""
        _, through, rows = self._bounds(count=backlog)  # a count scans: only for a backlog
        if not backlog:  # the stream reads every row: nothing ends a backlog
            through, rows = None, 0
        TablePosition(root).write({"format": 1, "table": self.table, "through": through, "rows": rows})
        return {"rows": rows}, []

    def relist(self, root: str) -> list[dict]:
        """At a restart: the table must still be readable (one line if not); it has no files to list again."""
        self._bounds()
        return []

    def _reader(self, reader, spark):
        from .postgres import datasource as table_source

        return table_source.reader(reader, spark, self.url, self.table, self.order_by, self.schema)

    @staticmethod
    def _after_recorded(reader, root: str):
        """``reader`` set to read only the rows after the recorded position (every row when there is none)."""
        through = TablePosition(root).read()["through"]
        return reader if through is None else reader.option("after", str(through))

    def backlog_frame(self, spark, root: str) -> DataFrame:
        through = TablePosition(root).read()["through"]
        if through is None:
            return spark.createDataFrame([], self.schema)
        from ..spark.flavour import flavour_of

        parts = flavour_of(spark).cores(spark) or 2  # ranges of order_by, one task each
        return self._reader(spark.read, spark).option("through", str(through)).option("partitions", str(parts)).load()

    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None) -> DataFrame:
        """The rows after the backlog (every row in mode "stream")."""
        reader = self._after_recorded(self._reader(spark.readStream, spark), root)
        if hold:
            reader = reader.option("hold", hold)
        return reader.load()

    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None) -> DataFrame:
        return self.fresh_stream(spark, root, max_files)

    def operator_stream(self, spark, root: str, max_files: int | None, parallelism: int) -> DataFrame:
        """The stream of a non-keyed operator job: the rows after the recorded position, each with
        ``__fw_subtask`` 0 (a table is one split, read by source subtask 0 as ``position_snapshots``
        records it) and ``__fw_pos``, its ``order_by`` (the order read)."""
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        schema = T.StructType(list(self.schema.fields) + [T.StructField(files_source.POSITION, T.LongType())])
        frame = self._after_recorded(self._reader(spark.readStream, spark).schema(schema), root).load()
        return frame.select(*[F.col("`" + name.replace("`", "``") + "`") for name in self.schema.names],
                            F.lit(0).cast("int").alias(files_source.SUBTASK), F.col(files_source.POSITION))

    # -- its position in a savepoint (savepoints.py): the greatest order_by read ----------------------

    def saved_position(self, root: str, end: dict) -> dict:
        return {"format": 1, "table": self.table, "through": end["id"], "rows": None}

    def position_fields(self, position: dict) -> dict:
        return {"read_through": position["through"]}

    def position_snapshots(self, position: dict, parallelism: int) -> list[dict]:
        """One split, the table up to ``through``, owned by source subtask 0 (the stream reads it as one)."""
        unit = {"table": self.table, "through": position["through"]}
        return [{SPLITS: {"mode": "split", "units": [unit] if i == 0 else []}} for i in range(parallelism)]

    def read_since_switch(self, spark, root: str, position: dict, scratch: str):
        after = TablePosition(root).read()["through"]
        if position["through"] is None or position["through"] == after:
            return None
        reader = self._reader(spark.read, spark).option("through", str(position["through"]))
        return (reader if after is None else reader.option("after", str(after))).load()

    def restore_position(self, root: str, snapshots: list[dict], position: dict, parallelism: int) -> dict:
        """A restored job reads the rows after the savepoint's ``through``: its backlog is what was read."""
        units = [u for s in snapshots for u in s.get(SPLITS, {}).get("units", [])]
        if units != [{"table": self.table, "through": position["through"]}]:
            raise FullWindowError(f"the savepoint's source state {units!r:.120} is not the table {self.table!r} "
                                  f"read up to {position['through']}")
        self._bounds()
        TablePosition(root).write(dict(position, rows=None))
        return {}

    def same_place(self, position: dict) -> str | None:
        return None if position["table"] == self.table else f"read the table {position['table']!r}"


def check_saved_position(doc, source: dict, where: str, error) -> dict:
    """A savepoint's source position checked as the source it describes (``source``, its ``describe()``) writes it:
    two inputs' (``{"inputs": [...]}``) each as its own source writes it."""
    if source.get("kind") == "connected":
        inputs = source["inputs"]
        if not (isinstance(doc, dict) and set(doc) == {"inputs"} and isinstance(doc["inputs"], list)
                and len(doc["inputs"]) == len(inputs)):
            raise error(f"the source position {where} is not one of {len(inputs)} inputs' positions fw-magics wrote")
        return {"inputs": [check_saved_position(own, described, f"{where} (input {number})", error)
                           for number, (own, described) in enumerate(zip(doc["inputs"], inputs), start=1)]}
    if source.get("kind") == "table":
        return check_table_position(doc, where, error)
    return check_manifest(doc, where, error)


def source_change(recorded: dict, now: dict) -> str | None:
    """How the source described as ``now`` differs from the one a job or a savepoint recorded, in
    words ("its path was '/a', now '/b'"), or None. A ``glob`` missing from a record is the one an
    older fw-magics read with (every name), not a difference."""
    for key, value in now.items():
        if key not in recorded and key == "glob":
            continue
        if key == "inputs" and isinstance(recorded.get(key), list) and len(recorded[key]) == len(value):
            for number, (was, is_now) in enumerate(zip(recorded[key], value), start=1):  # two inputs: each one's
                change = source_change(was if isinstance(was, dict) else {}, is_now)
                if change is not None:
                    return f"input {number}: {change}"
            continue
        if recorded.get(key) != value:
            return f"its {key} was {recorded.get(key)!r:.200}, now {value!r:.200}"
    return None


def _described_inputs(source) -> list[dict]:
    described = source.describe()
    return described.get("inputs", [described])


def kinds_of(source) -> list[str]:
    """The kinds of source it reads ("files", "table"), one per input."""
    return [d["kind"] for d in _described_inputs(source)]


def without_backlog(source) -> list[str]:
    """The inputs made with ``backlog=False`` (FLIP-327's ``isBacklog=false``), named by folder or table."""
    return [os.path.basename(d["path"].rstrip("/")) if "path" in d else d["table"]
            for d in _described_inputs(source) if d.get("backlog") is False]


def source_for(detail: dict, schema):
    """The backlog source a source step's ``detail`` describes (files, a table or two connected), or None."""
    if detail.get("source") == "connected":
        from .two_inputs.source import ConnectedSource

        return ConnectedSource(detail, schema, [source_for(d, s) for d, s, _ in detail["inputs"]])
    kind = {"files": FilesSource, "table": TableSource}.get(detail.get("source"))
    return None if kind is None else kind(detail, schema)


def source_of(stateful):
    """The backlog source of a StatefulStream, or a one-line error when its input has none."""
    step = stateful.source.step.lineage()[0]
    source = source_for(step.detail, stateful.source.schema)
    if source is None:
        raise FullWindowError(
            f"start() runs a keyed operator over a source with a backlog: fw.from_files(...) or fw.from_table(...); "
            f"{stateful.source.name!r} is a {step.detail.get('source', 'derived')} stream"
        )
    return source
