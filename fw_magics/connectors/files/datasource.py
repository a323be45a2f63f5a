"""``fw_files``: a Python data source over a directory that reads only what the manifest says.

Registered with ``spark.dataSource.register`` (classic and Spark Connect alike). Options:
``root`` (the job's folder) and ``manifest`` (the manifest's place in it, ``source/manifest.json``
unless said), ``format`` (parquet, json, csv), ``maxFilesPerTrigger``,
``backlog`` ("true": a batch read of exactly the backlog files), ``parallelism`` (the source
subtasks: a micro-batch reads its new files as one partition per owner subtask, see ``splits``;
unset: one partition per file), ``subtaskColumns`` ("true", with ``parallelism``: every row
also carries ``__fw_subtask``, the source subtask that read it, and ``__fw_pos``, its place in
what that subtask read in the micro-batch; the schema given must end with both), ``hold`` (a
path: the fresh files are held back until that file exists). The schema is the one the
reader is given (``.schema(...)``), which every file is cast to, columns matched by name
(a column a file lacks is null).

As a stream, its offsets are JSON, ``{"files": n, "switch": 0|1}``: the first ``n`` manifest
entries have been read. The initial offset is the end of the backlog, so a backlog file is
never read by the stream. The first ``latestOffset`` always moves ``switch`` from 0 to 1, so
the query's first micro-batch runs at once even when no fresh file has arrived yet: the batch
in which Spark applies the backlog's state (``initialState``) and checkpoints it. It honours
``maxFilesPerTrigger`` and ``Trigger.AvailableNow``.

With ``hold``, the query can start while the backlog still runs: until the hold file exists
(the backlog's handover, written at the switch) the first ``latestOffset`` is ``{"files": n,
"switch": 1, "held": 1}``, so its first micro-batch reads nothing and only warms the query
up (planning, Python workers, state stores), and later calls return the start unchanged (no
batch); each waits up to ``HOLD_WAIT`` for the file first. Once the file exists, a
micro-batch runs only when there are fresh files; from a fresh checkpoint the first one still
runs at once (``switch`` 0 to 1), as without ``hold``.

A Kafka source would implement the same offsets per partition (see ``connectors.base``).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, SupportsTriggerAvailableNow

from ...recovery.paths import SOURCE_MANIFEST
from ...values.schema import arrow_schema
from ..base import HOLD_WAIT, POSITION, SUBTASK, appears
from .manifest import Manifest
from .reading import bad_file, read_entry
from .splits import subtask_files

NAME = "fw_files"


class FilePartition(InputPartition):
    """Manifest entries to read (one Spark task): one file of the backlog, or one source subtask's
    new files in a micro-batch (``subtask``: its number, when the rows carry it; see ``splits``)."""

    def __init__(self, directory: str, entries: list[dict], subtask: int | None = None):
        super().__init__([e["name"] for e in entries])
        self.directory, self.entries, self.subtask = directory, entries, subtask


class _Reading:
    """What every reader of the source needs to read a manifest entry (``file_reading.read_entry``)."""

    def __init__(self, options, schema):
        self.root = options["root"]
        self.manifest = Manifest(self.root, options.get("manifest") or SOURCE_MANIFEST)
        self.format = options["format"]
        self.policy = options.get("onBadFile") or "fail"
        self.time_zone = options.get("timeZone") or "UTC"
        self.schema = schema

    def rows(self, partition: FilePartition, schema):
        for entry in partition.entries:
            yield from read_entry(self.root, partition.directory, entry, self.format, schema, self.policy,
                                  self.time_zone)


class FilesStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options, schema):
        _Reading.__init__(self, options, schema)
        self.max_files = int(options.get("maxFilesPerTrigger") or 0)
        self.parallelism = int(options.get("parallelism") or 0)
        self.subtask_columns = options.get("subtaskColumns") == "true" and self.parallelism > 0
        self.hold = options.get("hold")
        self.target = None

    def initialOffset(self) -> dict:
        return {"files": int(self.manifest.read()["backlog"]), "switch": 0}

    def getDefaultReadLimit(self):
        return ReadMaxFiles(self.max_files) if self.max_files else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = len(self.manifest.discover(self._changed)["files"])

    def _changed(self, entry: dict, problem: str) -> None:
        """A file listed before that changed since: one line (on_bad_file "fail"), or recorded as skipped."""
        bad_file(self.root, self.manifest.read()["directory"], entry["name"], problem, self.policy)

    def latestOffset(self, start: dict, limit) -> dict:
        if self.hold and not appears(self.hold, HOLD_WAIT):  # the backlog still runs: read nothing yet
            return {"files": start["files"], "switch": 1, "held": 1}
        available = self.target if self.target is not None else len(self.manifest.discover(self._changed)["files"])
        end = max(available, start["files"])
        if isinstance(limit, ReadMaxFiles):
            end = min(end, start["files"] + limit.max_files)
        if self.hold and end == start["files"] and start.get("switch"):
            return start  # released, nothing new: no micro-batch
        return {"files": end, "switch": 1}

    def partitions(self, start: dict, end: dict):
        doc = self.manifest.read()
        directory, by_name = doc["directory"], {e["name"]: e for e in doc["files"][start["files"]:end["files"]]}
        if self.parallelism:  # one partition per source subtask that owns a new file
            return [FilePartition(directory, [by_name[n] for n in names], subtask if self.subtask_columns else None)
                    for subtask, names in subtask_files(doc["files"], start["files"], end["files"], self.parallelism)]
        return [FilePartition(directory, [entry]) for entry in by_name.values()]

    def read(self, partition):
        if self.subtask_columns:
            yield from _with_subtask(self, partition)
            return
        yield from self.rows(partition, arrow_schema(self.schema))

    def commit(self, end: dict) -> None:
        pass


def _with_subtask(reader: _Reading, partition: FilePartition):
    """The partition's rows with ``__fw_subtask`` (its subtask) and ``__fw_pos`` (0, 1, ... in read order)."""
    import pyarrow as pa

    full = arrow_schema(reader.schema)
    data = pa.schema([f for f in full if f.name not in (SUBTASK, POSITION)])
    position = 0
    for batch in reader.rows(partition, data):
        n = batch.num_rows
        columns = list(batch.columns) + [pa.array([partition.subtask] * n, pa.int32()),
                                         pa.array(range(position, position + n), pa.int64())]
        position += n
        yield pa.RecordBatch.from_arrays(columns, schema=full)


class FilesBatchReader(_Reading, DataSourceReader):
    """Exactly the backlog files, one partition each."""

    def partitions(self):
        doc = self.manifest.read()
        return [FilePartition(doc["directory"], [entry]) for entry in doc["files"][: doc["backlog"]]]

    def read(self, partition: FilePartition):
        yield from self.rows(partition, arrow_schema(self.schema))


class FilesDataSource(DataSource):
    """The ``fw_files`` format: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        raise ValueError("the fw_files source needs a schema: spark.readStream.format('fw_files').schema(...)")

    def streamReader(self, schema):
        return FilesStreamReader(self.options, schema)

    def reader(self, schema):
        return FilesBatchReader(self.options, schema)


def register(spark) -> None:
    """Make ``format("fw_files")`` known to this session (again: harmless)."""
    spark.dataSource.register(FilesDataSource)
