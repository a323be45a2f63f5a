"""A folder of Parquet, JSON or CSV files as a source with a backlog (``fw.from_files``).

The backlog is the files present at the job's first start, recorded in a manifest (``manifest``);
positions are indexes into it. Every mode reads its files the same way (``reading``), through the
``fw_files`` data source (``datasource``) and the manifest of the job that reads it; the files are
spread over the source subtasks as splits (``splits``), each file's schema checked (``schema``).
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from pyspark.sql import DataFrame

from ...errors import FullWindowError, FwMagicsError, did_you_mean
from ...values.schema import arrow_schema, parse_schema
from ..backlog_options import LATE_POLICIES, backlog_flag, check_policies, event_time_delay
from ..base import POSITION, SUBTASK, Declared, OneInput
from . import datasource as files_source
from .manifest import Manifest, backlog_summary, check_manifest, list_files, listing, relist
from .reading import bad_file
from .schema import check_first_file, footer_problem, nanoseconds
from .splits import read_splits, restored_manifest, source_snapshots

FILE_FORMATS = ("parquet", "json", "csv")
#: The names a source reads by default, per format (``glob=`` says otherwise; fnmatch rules).
DEFAULT_GLOBS = {"parquet": "*.parquet", "json": "*.json", "csv": "*.csv"}
BAD_FILE_POLICIES = ("fail", "skip")


class FilesSource(OneInput):
    """A directory of Parquet, JSON or CSV files (``fw.from_files``): every mode reads its files the
    same way (``file_reading``), through the manifest of the job that reads it."""

    kind = "files"
    PLACE = "path"
    ADDED_SINCE = ("glob",)  # a record from before sources had a glob read every name
    POSITION_FIELDS = {
        "read_files": ("a number of files, an integer >= 0", lambda v: type(v) is int and 0 <= v < 2**62),
    }

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

    @classmethod
    def declare(cls, spark, path, format, schema, event_time=None, watermark_delay="0 seconds",
                glob: str | None = None, on_bad_file: str = "fail", on_late: str = "drop",
                backlog: bool = True) -> Declared:
        """``fw.from_files``'s arguments checked (see its docstring), in one line each; its step."""
        directory = _directory(path)
        fmt = _file_format(format)
        struct = parse_schema(schema, spark)
        if len(set(struct.names)) != len(struct.names):
            twice = next(n for n in struct.names if struct.names.count(n) > 1)
            raise FullWindowError(f"from_files schema names column {twice!r} twice; accepted: distinct column names")
        delay_ms = event_time_delay(struct, event_time, watermark_delay)
        pattern = DEFAULT_GLOBS[fmt] if glob is None else glob
        if not isinstance(pattern, str) or not pattern.strip() or "/" in pattern or "\x00" in pattern:
            raise FullWindowError(f"glob {glob!r:.60}; accepted: None ({DEFAULT_GLOBS[fmt]!r} for {fmt}) or a "
                                  "file-name pattern such as 'orders-*.parquet' (no '/')")
        check_policies(("on_bad_file", on_bad_file, BAD_FILE_POLICIES), ("on_late", on_late, LATE_POLICIES))
        label = os.path.basename(directory.rstrip("/")) or directory
        detail = {
            "source": cls.kind, "streaming": True, "path": directory, "format": fmt, "event_time": event_time,
            "delay_ms": delay_ms, "partitions": int(spark.conf.get("spark.sql.shuffle.partitions")), "label": label,
            "glob": pattern, "on_bad_file": on_bad_file, "on_late": on_late,
            "backlog": backlog_flag(backlog, "from_files"),
        }
        return Declared(detail, struct, f"files({label})", lambda: spark_file_stream(spark, struct, fmt, directory))

    def describe(self) -> dict:
        """What it reads: a restart must describe the same source (``on_bad_file`` and ``on_late`` may change)."""
        return {"kind": self.kind, "path": self.directory, "format": self.format,
                "schema": self.schema.simpleString(), "event_time": self.event_time, "delay_ms": self.delay_ms,
                "glob": self.glob, **({} if self.has_backlog else {"backlog": False})}

    @property
    def named(self) -> str:
        return os.path.basename(self.directory.rstrip("/"))

    def reads_in_words(self) -> str:
        return f"the folder {self.directory}: {self.format} files named {self.glob}"

    def there_now(self) -> str:
        from .manifest import list_files

        try:
            found = list_files(self.directory, self.glob)
        except (OSError, FullWindowError) as error:
            return f"cannot be listed now ({getattr(error, 'strerror', None) or error})"
        size = sum(f["size"] for f in found)
        return f"{len(found):,} file{'s' * (len(found) != 1)}, {size:,} bytes"

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
            check_first_file(self.directory, readable[0], self.format, arrow_schema(self.schema))
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
        schema = T.StructType(list(self.schema.fields) + [T.StructField(SUBTASK, T.IntegerType()),
                                                          T.StructField(POSITION, T.LongType())])
        reader = (self._options(spark.readStream, spark, root).schema(schema)
                  .option("parallelism", str(parallelism)).option("subtaskColumns", "true"))
        if max_files:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.load()

    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None) -> DataFrame:
        """A stream-mode job's stream: its own files from the first, through the manifest; a job recorded
        before stream mode had a manifest keeps Spark's file source, which its checkpoint was made with."""
        if self.manifest(root).exists():
            return self.fresh_stream(spark, root, max_files)
        return spark_file_stream(spark, self.schema, self.format, self.directory, max_files)

    def lag(self, root: str, end: dict) -> dict:
        """The files in its folder now (named like its glob) that are not among the manifest's first
        ``end["files"]``: not read yet (listed, not opened)."""
        read = end.get("files") if isinstance(end, dict) else None
        if type(read) is not int or read < 0:
            return {}
        try:
            doc = self.manifest(root).read()
            listed = list_files(doc["directory"], doc.get("glob", "*"))
        except (FwMagicsError, OSError):  # the folder or the manifest gone: the job says so elsewhere
            return {}
        done = {entry["name"] for entry in doc["files"][:read]}
        return {"files_behind": sum(1 for f in listed if f["name"] not in done)}

    # -- its position in a savepoint: the manifest, its first ``backlog`` files read ------------------

    def saved_position(self, root: str, end: dict) -> dict:
        """What a savepoint keeps of the source after a micro-batch whose end offset was ``end``: the
        manifest, its first ``end["files"]`` files read (``backlog``)."""
        return dict(self.manifest(root).read(), backlog=int(end["files"]))

    def position_at(self, now: bool) -> dict:
        """The files present now as a manifest, none read, or (``now``) all read."""
        return listing(self.directory, self.glob, backlog=now)

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

    @classmethod
    def check_position(cls, doc, where: str, error) -> dict:
        """A savepoint's position of a folder: a manifest fw-magics wrote (``manifest.check_manifest``)."""
        return check_manifest(doc, where, error)

    @classmethod
    def position_in_words(cls, position: dict) -> str:
        return f"{position.get('backlog')} of {len(position['files'])} files read"

    @classmethod
    def check_splits(cls, snapshots: list[dict], position: dict, where: str, error) -> None:
        """Every manifest file a split once, the read ones its first ``backlog`` files (``splits.read_splits``)."""
        def refused(problem: str):
            return error(f"{where}: {problem}")

        read_splits(snapshots, position, refused)

    @classmethod
    def check_position_fields(cls, document: dict, position: dict, where: str, error) -> None:
        if "backlog" in position and document.get("read_files", position["backlog"]) != position["backlog"]:
            raise error(f"{where}: field 'read_files' is {document['read_files']!r:.30}, but its manifest says "
                        f"{position['backlog']} files were read; the savepoint is damaged")


def spark_file_stream(spark, schema, fmt: str, directory: str, max_files: int | None = None) -> DataFrame:
    """Spark's own file stream source over ``directory``: a ``fw.from_files`` stream outside a job, and the
    stream of a job recorded before stream mode had a manifest."""
    reader = spark.readStream.schema(schema).format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    return reader.load(directory)


def _directory(path) -> str:
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise FullWindowError(f"from_files takes a directory path; got {type(path).__name__} {path!r:.60}")
    scheme = urlparse(path).scheme
    if scheme not in ("", "file"):
        return path.rstrip("/")  # a remote file system: checked when the job starts
    local = os.path.abspath(urlparse(path).path if scheme == "file" else path)
    if not os.path.isdir(local):
        raise FullWindowError(
            f"from_files: {path!r} is not a directory{' (it is a file)' if os.path.exists(local) else ''}; "
            "accepted: the directory the files are written into (create it first)"
        )
    return local


def _file_format(fmt) -> str:
    if not isinstance(fmt, str) or fmt.lower() not in FILE_FORMATS:
        raise FullWindowError(
            f"unknown file format {fmt!r}{did_you_mean(fmt, FILE_FORMATS)}; accepted: {', '.join(FILE_FORMATS)}"
        )
    return fmt.lower()
