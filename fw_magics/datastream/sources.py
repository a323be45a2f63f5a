"""Where streams come from: a Spark DataFrame, a pandas DataFrame, Python records, a folder of files, a table."""

from __future__ import annotations

import functools
import os
import re
from urllib.parse import urlparse

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .. import verbs
from ..errors import FullWindowError, did_you_mean
from ..recovery.fingerprint import rows_digest
from ..spark.session import get_spark
from ..values.convert import RowWriter
from ..values.event_time import parse_delay
from ..values.schema import arrow_schema, parse_schema
from . import workers
from .datastream import DataStream
from .lineage import Step


def from_dataframe(df, name: str | None = None) -> DataStream:
    """A DataStream over a PySpark DataFrame; its partitions are the subtasks."""
    if not isinstance(df, DataFrame):
        raise FullWindowError(
            f"from_dataframe takes a PySpark DataFrame (classic or Spark Connect); got {type(df).__name__}"
        )
    step = Step(
        name=_name(name, "dataframe"), kind="source", parallelism=None,
        detail={"streaming": bool(df.isStreaming), "source": "dataframe", "identity": {"dataframe": df}},
        transform=lambda _, n: df,
    )
    return DataStream(df, df.sparkSession, step, df.schema)


def from_records(records, schema, partitions: int = 4, name: str | None = None) -> DataStream:
    """A DataStream of Python records (tuples, dicts or records) split into ``partitions``.

    Partition ``i`` holds the ``i``-th contiguous chunk of the records, in order. Every
    record is checked against ``schema`` (a DDL string or StructType) before any job runs.
    """
    _check_partitions(partitions)
    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise FullWindowError(f"from_records takes an iterable of records (tuples, dicts or records); "
                              f"got {type(records).__name__} {records!r:.60}")
    spark = get_spark()
    struct = parse_schema(schema, spark)
    writer = RowWriter(arrow_schema(struct), [f.dataType for f in struct.fields], "from_records")
    rows = list(records)
    table = pa.Table.from_batches([writer.batch(rows)]) if rows else arrow_schema(struct).empty_table()
    return _from_arrow(spark, table, struct, partitions, _name(name, "records"), "records")


def from_pandas(pdf, partitions: int = 4, name: str | None = None) -> DataStream:
    """A DataStream of a pandas DataFrame's rows, split into ``partitions`` contiguous chunks."""
    import pandas as pd
    from pyspark.sql.pandas.types import from_arrow_schema

    _check_partitions(partitions)
    if not isinstance(pdf, pd.DataFrame):
        raise FullWindowError(f"from_pandas takes a pandas DataFrame; got {type(pdf).__name__}")
    spark = get_spark()
    try:
        table = pa.Table.from_pandas(pdf, preserve_index=False)
        struct = from_arrow_schema(table.schema, prefer_timestamp_ntz=False)
        table = table.cast(arrow_schema(struct))
    except (TypeError, ValueError, pa.ArrowException) as error:
        raise FullWindowError(f"from_pandas cannot convert this DataFrame: {str(error).splitlines()[0]}") from None
    return _from_arrow(spark, table, struct, partitions, _name(name, "pandas"), "pandas")


def _from_arrow(spark, table: pa.Table, struct, partitions: int, name: str, source: str) -> DataStream:
    bounds = [len(table) * i // partitions for i in range(partitions + 1)]
    chunks = [_ipc(table.slice(bounds[i], bounds[i + 1] - bounds[i])) for i in range(partitions)]
    frame = spark.range(0, partitions, 1, partitions).mapInArrow(
        functools.partial(workers.emit_chunk, chunks), struct
    )
    step = Step(
        name=name, kind="source", parallelism=partitions,
        detail={"source": source, "rows": len(table), "identity": {"rows": rows_digest(chunks)}},
        transform=lambda _, n: frame,
    )
    return DataStream(frame, spark, step, struct)


FILE_FORMATS = ("parquet", "json", "csv")
#: The names a source reads by default, per format (``glob=`` says otherwise; fnmatch rules).
DEFAULT_GLOBS = {"parquet": "*.parquet", "json": "*.json", "csv": "*.csv"}
BAD_FILE_POLICIES = ("fail", "skip")
LATE_POLICIES = ("drop", "fail")


def from_files(path, format, schema, event_time=None, watermark_delay="0 seconds", name: str | None = None,
               glob: str | None = None, on_bad_file: str = "fail", on_late: str = "drop",
               backlog: bool = True) -> DataStream:
    """An unbounded DataStream over a directory of files (FLIP-327's source with a backlog).

    ``format``: "parquet", "json" (JSON Lines) or "csv" (with a header row); ``schema``: a
    DDL string or StructType (columns are matched by name). Only names matching ``glob`` are
    read (default ``*.parquet``, ``*.json``, ``*.csv`` by format); names starting with "." or
    "_" never are, so write each file under such a name and rename it into place. The schema is
    checked against the first file at the first start (a missing or mistyped column is one line).
    ``on_bad_file``: what a file that cannot be read (not of the format, truncated, gone, or
    changed after it was listed) does: "fail" (the job fails with one line naming the file; remove
    or fix it, start() again, nothing lost or counted twice) or "skip" (recorded in the event log
    and ``job.skipped_files``, never read). ``event_time``: a timestamp column; with it,
    ``watermark_delay`` ("10 seconds") bounds how late a record may come; late records and records
    without an event time are counted (``job.dropped``, each micro-batch's event), and
    ``on_late="fail"`` fails the job on the first one instead of dropping it. The files present
    when a job over it *first* starts are its backlog, recorded in the job directory; files that
    arrive later are fresh. Run it with ``key_by(...).reduce/aggregate/process(...).start()``.
    ``backlog=False``: the source reports no backlog (FLIP-327's ``isBacklog=false``): what is there at
    the first start is read as a stream, and a job reading it runs as a stream from the start (in mode
    "mixed" too; the job says why).
    """
    spark = get_spark()
    directory = _directory(path)
    fmt = _file_format(format)
    struct = parse_schema(schema, spark)
    if len(set(struct.names)) != len(struct.names):
        twice = next(n for n in struct.names if struct.names.count(n) > 1)
        raise FullWindowError(f"from_files schema names column {twice!r} twice; accepted: distinct column names")
    delay_ms = _event_time(struct, event_time, watermark_delay)
    pattern = DEFAULT_GLOBS[fmt] if glob is None else glob
    if not isinstance(pattern, str) or not pattern.strip() or "/" in pattern or "\x00" in pattern:
        raise FullWindowError(f"glob {glob!r:.60}; accepted: None ({DEFAULT_GLOBS[fmt]!r} for {fmt}) or a file-name "
                              "pattern such as 'orders-*.parquet' (no '/')")
    _policies(("on_bad_file", on_bad_file, BAD_FILE_POLICIES), ("on_late", on_late, LATE_POLICIES))
    label = os.path.basename(directory.rstrip("/")) or directory
    detail = {
        "source": "files", "streaming": True, "path": directory, "format": fmt, "event_time": event_time,
        "delay_ms": delay_ms, "partitions": int(spark.conf.get("spark.sql.shuffle.partitions")), "label": label,
        "glob": pattern, "on_bad_file": on_bad_file, "on_late": on_late, "backlog": _backlog(backlog, "from_files"),
    }

    def build():  # Spark's own file stream source (what mode="stream" runs)
        reader = spark.readStream.schema(struct).format(fmt)
        if fmt == "csv":
            reader = reader.option("header", "true")
        return reader.load(directory)

    step = Step(name=_name(name, f"files({label})"), kind="source", parallelism=None, detail=detail,
                transform=lambda _, n: build())
    return DataStream(build, spark, step, struct)


def from_table(url, table, schema, order_by="id", event_time=None, watermark_delay="0 seconds",
               name: str | None = None, on_late: str = "drop", backlog: bool = True) -> DataStream:
    """An unbounded DataStream over a PostgreSQL table (FLIP-327's source with a backlog, as a database's
    snapshot then its changes).

    ``url``: a libpq URL without a credential (``postgresql://user@host:5432/db``; the password comes from
    ``~/.pgpass``, or ``PGPASSWORD`` set before Spark starts, never the job's log); ``table``: ``name`` or ``schema.name``;
    ``schema``: the columns read (DDL string or StructType), checked against the table now; ``order_by``:
    an integer column of the table that grows with each insert (a serial or identity key; it need not be
    in ``schema``). The rows present when a job over it *first* starts (up to the greatest ``order_by``
    then) are its backlog, read as a partitioned Spark batch; rows inserted later are fresh, read by a
    Structured Streaming source whose offsets are that column's values. Rows are only ever inserted: an
    update or delete of a row read is not seen. ``event_time``, ``watermark_delay``, ``on_late`` and
    ``backlog`` as for ``from_files``. Names are PostgreSQL's as stored (an unquoted ``CREATE TABLE Orders`` is ``orders``).
    """
    from ..connectors.postgres import client as postgres

    spark = get_spark()
    postgres.check_url(url)
    if not isinstance(table, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", table):
        raise FullWindowError(f"from_table table {table!r:.80}; accepted: a table name or schema.name "
                              "(letters, digits, underscores)")
    struct = parse_schema(schema, spark)
    if not isinstance(order_by, str):
        raise FullWindowError(f"from_table order_by {order_by!r:.60}; accepted: the name of an integer column")
    delay_ms = _event_time(struct, event_time, watermark_delay)
    _policies(("on_late", on_late, LATE_POLICIES))
    _check_table(postgres, url, table, struct, order_by)
    postgres.check_workers_can_connect(url)
    detail = {"source": "table", "streaming": True, "url": url, "table": table, "order_by": order_by,
              "event_time": event_time, "delay_ms": delay_ms, "on_late": on_late, "label": table,
              "partitions": int(spark.conf.get("spark.sql.shuffle.partitions")), "backlog": _backlog(backlog, "from_table")}

    def build():  # every row, then the new ones (the streaming side reads it: fw_magics.verbs)
        return verbs.call("read_table", spark, detail, struct)

    step = Step(name=_name(name, f"table({table})"), kind="source", parallelism=None, detail=detail,
                transform=lambda _, n: build())
    return DataStream(build, spark, step, struct)


def _check_table(postgres, url: str, table: str, struct, order_by: str) -> None:
    """One line when the table cannot be reached, is not there, lacks a column of ``struct`` or has no
    integer column ``order_by``."""
    try:
        found = postgres.columns(url, table)
    except FullWindowError:
        raise
    except Exception as error:  # psycopg's OperationalError: refused, unknown host or database, bad role
        raise FullWindowError(f"from_table cannot read {table!r} at {url}: {postgres.failure(error)}") from None
    if not found:
        raise FullWindowError(f"from_table: no table {table!r} at {url}")
    if found.get(order_by) not in ("bigint", "integer", "smallint"):
        raise FullWindowError(f"from_table order_by {order_by!r}: {table!r} has "
                              f"{'it as ' + found[order_by] if order_by in found else 'no such column'}; accepted: "
                              "an integer column (bigint, integer) that grows with each insert, e.g. a serial key")
    for field in struct.fields:
        kind = re.sub(r"\(\d+(,\d+)?\)", "", found.get(field.name, ""))
        accepted = postgres.ACCEPTED_TYPES.get(field.dataType.typeName(), ())
        if field.name not in found:
            raise FullWindowError(f"from_table: table {table!r} has no column {field.name!r}"
                                  f"{did_you_mean(field.name, list(found), form=' (did you mean {!r}?)')}; "
                                  f"its columns are: {', '.join(found)}")
        if kind not in accepted:
            raise FullWindowError(f"from_table: column {field.name!r} of {table!r} is {kind}, read as "
                                  f"{field.dataType.simpleString()}; accepted for it: {', '.join(accepted) or 'none'}")


def _event_time(struct, event_time, watermark_delay) -> int:
    """The watermark delay in ms, once ``event_time`` is known to be a timestamp column of ``struct``."""
    if event_time is not None:
        if not isinstance(event_time, str) or event_time not in struct.names:
            raise FullWindowError(
                f"no event_time column {event_time!r}{did_you_mean(event_time, struct.names, form=' (did you mean {!r}?)')}"
                f"; columns are: {', '.join(struct.names)}"
            )
        kind = struct[event_time].dataType
        if not isinstance(kind, T.TimestampType):
            raise FullWindowError(
                f"event_time column {event_time!r} is {kind.simpleString()}; accepted: a timestamp column"
            )
    delay_ms = parse_delay(watermark_delay)
    if event_time is None and delay_ms:
        raise FullWindowError("watermark_delay needs an event_time column; pass event_time='<timestamp column>'")
    return delay_ms


def _backlog(value, what: str) -> bool:
    if not isinstance(value, bool):
        raise FullWindowError(f"{what} backlog {value!r:.60}; accepted: True (what is there at a job's first start is "
                              "its backlog) or False (no backlog: read as a stream from the first record)")
    return value


def _policies(*checks) -> None:
    for option, value, accepted in checks:
        if value not in accepted:
            hint = did_you_mean(value, accepted) if isinstance(value, str) else ""
            raise FullWindowError(f"{option} {value!r:.60}{hint}; accepted: {', '.join(accepted)}")


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


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _check_partitions(partitions) -> None:
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise FullWindowError(f"partitions must be a positive integer; got {partitions!r}")


def _name(name, default: str) -> str:
    if name is None:
        return default
    if not isinstance(name, str) or not name.strip():
        raise FullWindowError(f"name must be a non-empty string; got {name!r}")
    return name
