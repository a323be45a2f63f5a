"""``fw_table_changes``: a Python data source over a PostgreSQL table's changes, read from the job's
replication slot (``slot``) after its snapshot, staged in the job's folder (``snapshot``).

Options: ``url``, ``table``, ``slot``, ``publication`` (the one made at the job's first start, before its
slot: a publication is looked up as the catalog was when each change was written, so one made later, as a
restored job's would be, is not there for the changes before it; the slot's name when not given), ``after`` (the LSN the stream starts
after: the slot's consistent point, or a savepoint's), ``snapshot`` (the folder of the staged snapshot's
Parquet files, read by the first micro-batch when ``unread`` is "1": a stream-mode job), ``hold`` (as
``fw_files``: nothing is read before that file exists). The schema is the reader's: the table's columns
read, then ``values.changes.CHANGE_COLUMNS``.

Its offsets are JSON, ``{"lsn": n, "snapshot": 0|1, "switch": 0|1}``: every transaction whose commit ends
at or before LSN ``n`` has been read (and the snapshot, with ``snapshot`` 1). ``latestOffset`` is the end of
the last transaction the slot can give now, so a micro-batch holds whole transactions, never part of one;
``read`` peeks the slot (it is not moved) and keeps the transactions ending in ``(start, end]``; ``commit``
advances the slot to ``end`` only once Spark committed the micro-batch. A micro-batch killed before its
commit is read again from the same slot, with the same offsets: nothing lost or read twice. The first
``latestOffset`` moves ``switch`` from 0 to 1, so the first micro-batch runs at once (the switch).
"""

from __future__ import annotations

import datetime as dt
import os

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, SupportsTriggerAvailableNow

from ...errors import FullWindowError
from ...values.changes import CHANGE_COLUMNS, lsn_text
from ...values.schema import arrow_schema
from ..base import HOLD_WAIT, appears
from . import pgoutput
from . import slot as slots

NAME = "fw_table_changes"
#: Rows per Arrow batch a change partition yields.
BATCH_ROWS = 8192


class Staged(InputPartition):
    """One Parquet file of the staged snapshot."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class Changes(InputPartition):
    """The transactions whose commit ends in ``(after, through]``."""

    def __init__(self, after: int, through: int):
        super().__init__((after, through))
        self.after, self.through = after, through


def change_batches(transactions, table: str, schema, after: int, through: int):
    """The Arrow batches (``schema``: the table's columns read, then the change columns) of the changes in
    ``transactions`` that end in ``(after, through]``; one line for a truncate, a column of ``schema``
    the table no longer has, or a value the change left out."""
    import pyarrow as pa

    arrow = arrow_schema(schema)
    names = [n for n in schema.names if n not in CHANGE_COLUMNS]
    convert = [pgoutput.converter(schema[n].dataType.typeName()) for n in names]
    rows: list = []
    positions: dict = {}
    for txn in transactions:
        if not after < txn.end_lsn <= through:
            continue
        if txn.truncated:
            raise FullWindowError(
                f"table {table!r} was truncated (the transaction ending at LSN {lsn_text(txn.end_lsn)}): a "
                "TRUNCATE removes every row without a change per row, which the job cannot follow; "
                "start(..., reset=True) reads the table anew")
        when = dt.datetime.fromtimestamp(txn.commit_us / 1e6, dt.timezone.utc)
        for seq, change in enumerate(txn.changes):
            where = positions.get(id(change.relation))
            if where is None:
                where = positions[id(change.relation)] = _positions(change.relation, names, table, txn.end_lsn)
            values = change.values
            row = []
            for name, at, to_value in zip(names, where, convert):
                value = values[at]
                if value is pgoutput.UNCHANGED:
                    raise FullWindowError(
                        f"column {name!r} of table {table!r}: an update left its large (TOASTed) value out of the "
                        f"change (LSN {lsn_text(txn.end_lsn)}); ALTER TABLE {table} REPLICA IDENTITY FULL, then "
                        "start(..., reset=True)")
                try:
                    row.append(to_value(value))
                except ValueError:
                    raise FullWindowError(
                        f"column {name!r} of table {table!r} holds {value!r:.40}, which "
                        f"{schema[name].dataType.simpleString()} cannot hold (LSN {lsn_text(txn.end_lsn)}); "
                        "was its type changed? Declare the schema as the table is and start(..., reset=True)") \
                        from None
            rows.append(row + [change.op, txn.end_lsn, seq, when])
            if len(rows) >= BATCH_ROWS:
                yield _batch(pa, rows, arrow)
                rows = []
    if rows:
        yield _batch(pa, rows, arrow)


def _positions(relation, names: list[str], table: str, lsn: int) -> list[int]:
    missing = [n for n in names if n not in relation.columns]
    if missing:
        raise FullWindowError(
            f"column {missing[0]!r} of table {table!r} was dropped or renamed while the job reads it (LSN "
            f"{lsn_text(lsn)}); declare the columns the table has now and start(..., reset=True) (a column "
            "added is not read: the schema lists what is)")
    return [relation.columns.index(n) for n in names]


def _batch(pa, rows: list, arrow):
    columns = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, arrow)],
                                      schema=arrow)


class ChangesStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options, schema):
        if not options.get("slot"):
            raise FullWindowError(f"the changes of {options.get('table')!r} are read by a job, from its replication "
                                  "slot: key_by(<primary key>).mirror() or another keyed operator, then .start()")
        self.url, self.table, self.slot = options["url"], options["table"], options["slot"]
        self.publication = options.get("publication") or self.slot
        self.after = int(options["after"])
        self.snapshot, self.unread = options.get("snapshot"), options.get("unread") == "1"
        self.hold = options.get("hold")
        self.schema = schema
        self.target = None
        self._conn = None

    def _connection(self):
        if self._conn is None or self._conn.closed:
            self._conn = slots.connect(self.url)
        return self._conn

    def _last(self) -> int | None:
        try:
            return slots.last_commit(self._connection(), self.slot, self.publication, self.table)
        except FullWindowError:
            raise
        except Exception:  # the server restarted: connect again, once
            self._conn = None
            return slots.last_commit(self._connection(), self.slot, self.publication, self.table)

    def initialOffset(self) -> dict:
        return {"lsn": self.after, "snapshot": 0 if self.unread else 1, "switch": 0}

    def getDefaultReadLimit(self):
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._last() or self.after

    def latestOffset(self, start: dict, limit) -> dict:
        if self.hold and not appears(self.hold, HOLD_WAIT):  # the backlog still runs: read nothing yet
            return {**start, "switch": 1, "held": 1}
        top = self.target if self.target is not None else self._last()
        end = {"lsn": max(start["lsn"], top or 0), "snapshot": 1, "switch": 1}
        if self.hold and end["lsn"] == start["lsn"] and start.get("switch") and start.get("snapshot"):
            return start  # released, nothing new: no micro-batch
        return end

    def partitions(self, start: dict, end: dict):
        parts = []
        if not start.get("snapshot") and end.get("snapshot") and self.snapshot:
            parts += [Staged(os.path.join(self.snapshot, name)) for name in sorted(os.listdir(self.snapshot))
                      if name.endswith(".parquet")]
        if end["lsn"] > start["lsn"]:
            parts.append(Changes(start["lsn"], end["lsn"]))
        return parts

    def read(self, partition):
        if isinstance(partition, Staged):
            import pyarrow.parquet as pq

            yield from pq.ParquetFile(partition.path).iter_batches(BATCH_ROWS)
            return
        with slots.connect(self.url) as conn:
            found = slots.messages(conn, self.slot, self.publication, partition.through, self.table)
        yield from change_batches(pgoutput.transactions(found), self.table, self.schema, partition.after,
                                  partition.through)

    def commit(self, end: dict) -> None:
        if end["lsn"] > self.after:
            slots.advance(self._connection(), self.slot, end["lsn"], self.table)

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.close()


class ChangesDataSource(DataSource):
    """The ``fw_table_changes`` format: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        raise ValueError("the fw_table_changes source needs a schema: .schema(...)")

    def streamReader(self, schema):
        return ChangesStreamReader(self.options, schema)


def outside_a_job(spark, url: str, table: str, schema):
    """The stream a ``from_table(..., changes=True)`` stream is outside a job: it plans as the job's does,
    and starting it by itself is one line (a job has the slot)."""
    spark.dataSource.register(ChangesDataSource)
    return spark.readStream.format(NAME).schema(schema).option("url", url).option("table", table).load()


def reader(spark, url: str, table: str, slot: str, schema, after: int, snapshot: str | None, unread: bool,
           publication: str | None = None):
    """A ``readStream`` set to read ``table``'s changes from ``slot`` (through ``publication``) after LSN ``after``."""
    spark.dataSource.register(ChangesDataSource)
    stream = (spark.readStream.format(NAME).schema(schema).option("url", url).option("table", table)
              .option("slot", slot).option("publication", publication or slot).option("after", str(after))
              .option("unread", "1" if unread else "0"))
    return stream.option("snapshot", snapshot) if snapshot else stream
