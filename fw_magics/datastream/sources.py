"""Where streams come from: a Spark DataFrame, a pandas DataFrame, Python records, a folder of files, a table."""

from __future__ import annotations

import functools

import pyarrow as pa
from pyspark.sql import DataFrame

from ..connectors.files.source import FilesSource
from ..connectors.postgres.source import TableSource
from ..connectors.postgres_cdc import source as changes_source
from ..errors import FullWindowError
from ..recovery.fingerprint import rows_digest
from ..spark.session import get_spark
from ..values.convert import RowWriter
from ..values.schema import arrow_schema, parse_schema
from .datastream import DataStream
from .lineage import Step
from .physical import workers


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
    declared = FilesSource.declare(spark, path, format, schema, event_time, watermark_delay, glob, on_bad_file,
                                   on_late, backlog)
    return _backlog_source(spark, declared, name)


def from_table(url, table, schema, order_by="id", event_time=None, watermark_delay="0 seconds",
               name: str | None = None, on_late: str = "drop", backlog: bool = True, changes: bool = False) -> DataStream:
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

    ``changes=True``: the table's snapshot, then every insert, update and delete committed after it, read
    from a replication slot the job creates at that snapshot (change data capture; the server needs
    ``wal_level = logical``, the role the REPLICATION right, the table a primary key, which ``schema``
    includes; ``order_by`` is not used). Each record is the row's columns, then ``op`` ("insert",
    "update_before", "update_after", "delete"), ``lsn`` and ``seq`` (its commit's place in the server's log
    and its place in that commit: the commit order) and ``commit_time`` (usable as ``event_time``).
    ``key_by(<primary key>).mirror()`` keeps the table's current rows. docs/streaming.md says more.
    """
    spark = get_spark()
    if changes is True:
        declared = changes_source.ChangesSource.declare(spark, url, table, schema, event_time, watermark_delay,
                                                        on_late, backlog)
        return _backlog_source(spark, declared, name)
    if changes is not False:
        raise FullWindowError(f"from_table changes {changes!r:.60}; accepted: False (rows inserted, by order_by) or "
                              "True (the table's snapshot, then its inserts, updates and deletes)")
    declared = TableSource.declare(spark, url, table, schema, order_by, event_time, watermark_delay, on_late, backlog)
    return _backlog_source(spark, declared, name)


def drop_slot(url, slot) -> bool:
    """Drop a replication slot fw-magics made for a job over a table's changes (``from_table(...,
    changes=True)``; a stopped job's repr names it) or for one of its savepoints, and its publication:
    the server stops keeping its log for it. Whether it was there. The job, started again, reads the
    table anew."""
    return changes_source.drop_slot(url, slot)


def _backlog_source(spark, declared, name) -> DataStream:
    """The DataStream of a source with a backlog its connector declared (``connectors``): outside a job it
    reads every record, then the new ones; ``start()`` reads it through the job's folder."""
    step = Step(name=_name(name, declared.name), kind="source", parallelism=None, detail=declared.detail,
                transform=lambda _, n: declared.stream())
    return DataStream(declared.stream, spark, step, declared.schema)


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
