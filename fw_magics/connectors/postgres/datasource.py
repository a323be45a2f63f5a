"""``fw_table``: a Python data source over a PostgreSQL table, read in the order of one growing
integer column (``orderBy``: a serial or identity key), with psycopg.

Registered with ``spark.dataSource.register`` (classic and Spark Connect alike). Options: ``url``
(a libpq URL without a credential: ``~/.pgpass``, or ``PGPASSWORD`` set before Spark started, gives it), ``table``
(``name`` or ``schema.name``), ``orderBy``; ``after`` (read only rows whose ``orderBy`` is greater),
``through`` (a batch read: only rows up to it), ``partitions`` (a batch read: that many ranges of
``orderBy``, one Spark task each), ``hold`` (as ``fw_files``: no row is read before that file exists).
The schema is the reader's (``.schema(...)``): those columns are selected by name (``__fw_pos``: the
``orderBy`` column, for a non-keyed operator's read order).

As a stream, its offsets are JSON, ``{"id": n, "switch": 0|1}``: every row whose ``orderBy`` is at
most ``n`` has been read (``n`` None: none yet). The initial offset is ``after``, so a backlog row is
never read by the stream; the first ``latestOffset`` moves ``switch`` from 0 to 1, so the first
micro-batch runs at once (the switch), as ``fw_files``' does. It honours ``Trigger.AvailableNow``.

A row is fresh when its ``orderBy`` is greater than the greatest one read: rows must become visible in
that order (one writer, or keys assigned at commit). A transaction that commits a smaller key after a
greater one was read is not seen (docs/limits.md); Flink CDC reads the write-ahead log for that.
"""

from __future__ import annotations

import io

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, SupportsTriggerAvailableNow

from ...values.schema import arrow_schema
from ..base import HOLD_WAIT, POSITION, appears
from .client import bounds, connect, table_identifier

NAME = "fw_table"


class Range(InputPartition):
    """Rows with ``after < orderBy <= through`` (None: unbounded on that side): one Spark task."""

    def __init__(self, after: int | None, through: int | None):
        super().__init__((after, through))
        self.after, self.through = after, through


class _Reading:
    def __init__(self, options, schema):
        self.url, self.table, self.order_by = options["url"], options["table"], options["orderBy"]
        self.schema = schema

    def rows(self, part: Range):
        """The range's rows as Arrow record batches of the reader's schema, in ``orderBy`` order: the
        server writes them as CSV (``COPY ... TO STDOUT``), which Arrow's C++ reader parses as they come
        (about 3.5x faster than fetching Python tuples; timestamps cast to ``timestamptz`` and printed in
        UTC, so a zone-less column reads as UTC too)."""
        from psycopg import sql

        arrow = arrow_schema(self.schema)
        where = [sql.SQL("{} " + op + " {}").format(sql.Identifier(self.order_by), sql.Literal(bound))
                 for op, bound in ((">", part.after), ("<=", part.through)) if bound is not None]
        query = sql.SQL("COPY (SELECT {cols} FROM {t}{where} ORDER BY {o}) TO STDOUT WITH (FORMAT csv)").format(
            cols=timestamps_in_utc(arrow, self.order_by), t=table_identifier(self.table),
            where=sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where) if where else sql.SQL(""),
            o=sql.Identifier(self.order_by))
        with connect(self.url) as conn:
            conn.execute("SET TIME ZONE 'UTC'")
            with conn.cursor() as cur, cur.copy(query) as copy:
                yield from csv_batches(copy, arrow)


def timestamps_in_utc(arrow, order_by: str | None = None):
    """The columns of ``SELECT`` for ``arrow``'s fields (``POSITION``: ``order_by``), timestamps cast to
    ``timestamptz``: with the session in UTC, ``csv_batches`` reads them as UTC."""
    from psycopg import sql

    return sql.SQL(", ").join(
        sql.SQL("CAST({} AS timestamptz)").format(sql.Identifier(f.name)) if pa_timestamp(f.type)
        else sql.Identifier(order_by if f.name == POSITION else f.name) for f in arrow)


def csv_batches(copy, arrow):
    """The non-empty Arrow record batches of ``arrow`` in what a ``COPY ... TO STDOUT WITH (FORMAT csv)``
    sends (``copy``: psycopg's), parsed by Arrow's C++ reader as the blocks come."""
    import pyarrow.csv as csv

    reader = csv.open_csv(
        io.BufferedReader(_Blocks(copy), 1 << 20),
        read_options=csv.ReadOptions(column_names=arrow.names, block_size=1 << 22),
        convert_options=csv.ConvertOptions(
            column_types=arrow, true_values=["t"], false_values=["f"], null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False))  # NULL: unquoted, "": quoted
    for batch in reader:
        if batch.num_rows:
            yield batch


class _Blocks(io.RawIOBase):
    """A file over the blocks ``COPY ... TO STDOUT`` sends, for Arrow's CSV reader."""

    def __init__(self, blocks):
        self._blocks, self._rest = iter(blocks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._rest:
            block = next(self._blocks, None)
            if block is None:
                return 0
            self._rest = bytes(block)
        n = min(len(buffer), len(self._rest))
        buffer[:n], self._rest = self._rest[:n], self._rest[n:]
        return n


def pa_timestamp(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_timestamp(kind)


def _split(after: int | None, through: int | None, low: int | None, parts: int) -> list[Range]:
    """``parts`` ranges of ``orderBy`` covering ``(after, through]`` (from ``low`` when ``after`` is None)."""
    start = (low - 1) if after is None and low is not None else after
    if through is None or start is None or parts <= 1 or through - start < parts:
        return [Range(after, through)]
    step = (through - start) / parts
    cuts = [start + round(step * i) for i in range(1, parts)]
    return [Range(a, b) for a, b in zip([after] + cuts, cuts + [through])]


class TableBatchReader(_Reading, DataSourceReader):
    """The rows up to ``through`` (after ``after``), in ``partitions`` ranges."""

    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.after = _int(options.get("after"))
        self.through = _int(options.get("through"))
        self.parts = int(options.get("partitions") or 1)

    def partitions(self):
        low = bounds(self.url, self.table, self.order_by)[0] if self.parts > 1 and self.after is None else None
        return _split(self.after, self.through, low, self.parts)

    def read(self, partition: Range):
        yield from self.rows(partition)


class TableStreamReader(_Reading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.after = _int(options.get("after"))
        self.hold = options.get("hold")
        self.target = None

    def initialOffset(self) -> dict:
        return {"id": self.after, "switch": 0}

    def getDefaultReadLimit(self):
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = bounds(self.url, self.table, self.order_by)[1]

    def latestOffset(self, start: dict, limit) -> dict:
        if self.hold and not appears(self.hold, HOLD_WAIT):  # the backlog still runs: read nothing yet
            return {"id": start["id"], "switch": 1, "held": 1}
        top = self.target if self.target is not None else bounds(self.url, self.table, self.order_by)[1]
        end = start["id"] if top is None or (start["id"] is not None and top <= start["id"]) else top
        if self.hold and end == start["id"] and start.get("switch"):
            return start  # released, nothing new: no micro-batch
        return {"id": end, "switch": 1}

    def partitions(self, start: dict, end: dict):
        if end["id"] is None or end["id"] == start["id"]:
            return []
        return [Range(start["id"], end["id"])]

    def read(self, partition: Range):
        yield from self.rows(partition)

    def commit(self, end: dict) -> None:
        pass


def _int(value) -> int | None:
    return None if value in (None, "") else int(value)


class TableDataSource(DataSource):
    """The ``fw_table`` format: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        raise ValueError("the fw_table source needs a schema: spark.readStream.format('fw_table').schema(...)")

    def streamReader(self, schema):
        return TableStreamReader(self.options, schema)

    def reader(self, schema):
        return TableBatchReader(self.options, schema)


def register(spark) -> None:
    """Make ``format("fw_table")`` known to this session (again: harmless)."""
    spark.dataSource.register(TableDataSource)


def reader(reader, spark, url: str, table: str, order_by: str, schema):
    """``reader`` (``spark.read`` or ``spark.readStream``) set to read ``table``'s ``schema`` columns."""
    register(spark)
    return (reader.format(NAME).schema(schema).option("url", url).option("table", table)
            .option("orderBy", order_by))


def every_row(spark, detail: dict, schema):
    """The stream of every row, then the new ones: a ``fw.from_table`` stream outside a job."""
    return reader(spark.readStream, spark, detail["url"], detail["table"], detail["order_by"], schema).load()
