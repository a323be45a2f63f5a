"""A PostgreSQL table as a source with a backlog (``fw.from_table``), read in the order of a growing
integer column: the backlog is every row up to the greatest ``order_by`` at the first start
(``source/table.json``, :class:`TablePosition`); positions are ``order_by`` values. The table is
reached through psycopg (``client``) and read by the ``fw_table`` data source (``datasource``).
"""

from __future__ import annotations

import json
import re

from pyspark.sql import DataFrame

from ...errors import FullWindowError, JobStorageError, did_you_mean
from ...recovery.filesystem import Storage, UnsafeFile
from ...values.schema import parse_schema
from ..backlog_options import LATE_POLICIES, backlog_flag, check_policies, event_time_delay
from ..base import POSITION, SPLITS, SUBTASK, Declared, OneInput
from . import client as postgres
from . import datasource


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
    are those with a greater one, read by the ``fw_table`` stream (see datasource)."""

    kind = "table"
    PLACE = "table"
    POSITION_FIELDS = {
        "read_through": ("null or the greatest order_by read, an integer", lambda v: v is None or type(v) is int),
    }

    def __init__(self, detail: dict, schema):
        self.url, self.table, self.order_by = detail["url"], detail["table"], detail["order_by"]
        self.event_time, self.delay_ms = detail["event_time"], detail["delay_ms"]
        self.on_late = detail.get("on_late", "drop")
        self.schema = schema
        self.delays = {None: self.delay_ms}
        self.has_backlog = detail.get("backlog", True)

    @classmethod
    def declare(cls, spark, url, table, schema, order_by="id", event_time=None, watermark_delay="0 seconds",
                on_late: str = "drop", backlog: bool = True) -> Declared:
        """``fw.from_table``'s arguments checked (see its docstring), the table reached and its columns
        compared, in one line each; its step."""
        postgres.check_url(url)
        if not isinstance(table, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", table):
            raise FullWindowError(f"from_table table {table!r:.80}; accepted: a table name or schema.name "
                                  "(letters, digits, underscores)")
        struct = parse_schema(schema, spark)
        if not isinstance(order_by, str):
            raise FullWindowError(f"from_table order_by {order_by!r:.60}; accepted: the name of an integer column")
        delay_ms = event_time_delay(struct, event_time, watermark_delay)
        check_policies(("on_late", on_late, LATE_POLICIES))
        _check_table(url, table, struct, order_by)
        postgres.check_workers_can_connect(url)
        detail = {"source": cls.kind, "streaming": True, "url": url, "table": table, "order_by": order_by,
                  "event_time": event_time, "delay_ms": delay_ms, "on_late": on_late, "label": table,
                  "partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
                  "backlog": backlog_flag(backlog, "from_table")}
        return Declared(detail, struct, f"table({table})", lambda: datasource.every_row(spark, detail, struct))

    def describe(self) -> dict:
        return {"kind": self.kind, "url": self.url, "table": self.table, "order_by": self.order_by,
                "schema": self.schema.simpleString(), "event_time": self.event_time, "delay_ms": self.delay_ms,
                **({} if self.has_backlog else {"backlog": False})}

    @property
    def named(self) -> str:
        return self.table

    def reads_in_words(self) -> str:
        return f"the PostgreSQL table {self.table}, in the order of {self.order_by}"  # (not the URL: no secret)

    def there_now(self) -> str:
        try:
            low, high, _ = postgres.bounds(self.url, self.table, self.order_by)
        except Exception as error:  # psycopg's: the server stopped, the table dropped
            return f"cannot be read now ({postgres.failure(error)})"
        return "no rows" if high is None else f"rows with {self.order_by} from {low} to {high}"

    def why_no_max_files(self) -> str | None:
        return "a table source's micro-batch reads every new row"

    def manifest(self, root: str) -> TablePosition:
        return TablePosition(root)

    def _bounds(self, count: bool = False) -> tuple:
        """The table's least and greatest ``order_by`` (and its row count with ``count``), or one line
        naming the table and why it cannot be read, before any Spark job would fail on it at length."""
        try:
            return postgres.bounds(self.url, self.table, self.order_by, count=count)
        except Exception as error:  # psycopg's OperationalError: the server stopped, the table dropped
            raise FullWindowError(f"the job cannot read {self.table!r} at {self.url}: {postgres.failure(error)}") \
                from None

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
        return datasource.reader(reader, spark, self.url, self.table, self.order_by, self.schema)

    @staticmethod
    def _after_recorded(reader, root: str):
        """``reader`` set to read only the rows after the recorded position (every row when there is none)."""
        through = TablePosition(root).read()["through"]
        return reader if through is None else reader.option("after", str(through))

    def backlog_frame(self, spark, root: str) -> DataFrame:
        through = TablePosition(root).read()["through"]
        if through is None:
            return spark.createDataFrame([], self.schema)
        from ...spark.flavour import flavour_of

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

        schema = T.StructType(list(self.schema.fields) + [T.StructField(POSITION, T.LongType())])
        frame = self._after_recorded(self._reader(spark.readStream, spark).schema(schema), root).load()
        return frame.select(*[F.col("`" + name.replace("`", "``") + "`") for name in self.schema.names],
                            F.lit(0).cast("int").alias(SUBTASK), F.col(POSITION))

    # -- its position in a savepoint: the greatest order_by read ----------------------------------------

    def _read_through(self, through: int | None) -> dict:
        """Its position in a savepoint: the table read through the ``order_by`` value ``through`` (None: no row)."""
        return {"format": 1, "table": self.table, "through": through, "rows": None}

    def saved_position(self, root: str, end: dict) -> dict:
        return self._read_through(end["id"])

    def position_at(self, now: bool) -> dict:
        """Nothing read (``through`` None: a restore reads every row), or (``now``) every row present now: through
        the table's greatest ``order_by`` (None for an empty table, so nothing read); one line if it cannot be read."""
        return self._read_through(self._bounds()[1] if now else None)

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

    @classmethod
    def check_position(cls, doc, where: str, error) -> dict:
        return check_table_position(doc, where, error)

    @classmethod
    def position_in_words(cls, position: dict) -> str:
        return f"table {position.get('table')!r} read through {position.get('through')}"

    @classmethod
    def check_splits(cls, snapshots: list[dict], position: dict, where: str, error) -> None:
        """One split, the table read through the position's ``through``, as ``restore_position`` checks it."""
        units = [u for s in snapshots for u in s.get(SPLITS, {}).get("units", [])]
        if units != [{"table": position["table"], "through": position["through"]}]:
            raise error(f"{where}: its source state {units!r:.120} is not the table {position['table']!r:.80} read "
                        f"up to {position['through']}; the savepoint is damaged")

    @classmethod
    def check_position_fields(cls, document: dict, position: dict, where: str, error) -> None:
        if document.get("read_through", position.get("through")) != position.get("through"):
            raise error(f"{where}: field 'read_through' is {document['read_through']!r:.30}, but its source "
                        f"position says {position.get('through')!r:.30}; the savepoint is damaged")


def _check_table(url: str, table: str, struct, order_by: str) -> None:
    """One line when the table cannot be reached, is not there, lacks a column of ``struct`` or has no
    integer column ``order_by``."""
    found = check_columns(url, table, struct)
    if found.get(order_by) not in ("bigint", "integer", "smallint"):
        raise FullWindowError(f"from_table order_by {order_by!r}: {table!r} has "
                              f"{'it as ' + found[order_by] if order_by in found else 'no such column'}; accepted: "
                              "an integer column (bigint, integer) that grows with each insert, e.g. a serial key")


def check_columns(url: str, table: str, struct) -> dict[str, str]:
    """The table's columns and their types; one line when the table cannot be reached, is not there, or lacks
    a column of ``struct`` or has it of a type that ``struct`` cannot hold."""
    try:
        found = postgres.columns(url, table)
    except FullWindowError:
        raise
    except Exception as error:  # psycopg's OperationalError: refused, unknown host or database, bad role
        raise FullWindowError(f"from_table cannot read {table!r} at {url}: {postgres.failure(error)}") from None
    if not found:
        raise FullWindowError(f"from_table: no table {table!r} at {url}")
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
    return found
