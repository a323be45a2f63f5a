"""A PostgreSQL table's snapshot, then its changes, as one source with a backlog
(``fw.from_table(url, table, schema, changes=True)``; Flink CDC's snapshot-then-log on FLIP-327).

At the job's first start (``record``) the job's replication slot is created on the server at the exact
point of one snapshot of the table (``slot.create``), and the table's rows in that snapshot are staged as
Parquet files in the job's folder (``source/snapshot/``): the backlog, which a kill -9 or a restart reads
again as it was. Every change committed after the snapshot is fresh, read from the slot by the
``fw_table_changes`` stream (``datasource``), whose offsets are LSNs; the slot is advanced only after a
micro-batch committed. Each record is the row's columns, then ``op``, ``lsn``, ``seq``, ``commit_time``
(``fw_magics.values.changes``); a snapshot row is an insert at the slot's consistent point.

The position (``source/changes.json``, :class:`ChangesPosition`) is the LSN read through, the slot and the
publication; a savepoint keeps a copy of the slot (``saved_position``), from which each restore copies its
own, and every copy reads through the publication made at the first start (``datasource``: one made later
is not there for the changes written before it). A savepoint written from tables (``fw.write_savepoint(...,
positions="beginning")``) holds the position of nothing read (``unread_position``: no slot, no LSN): its restore
makes the job's slot at its start as a first start does (``record``), and its stream reads that snapshot, then
the changes, over the written state. One written with ``positions="now"`` holds a slot made at the write
(``position_at``: its own publication first, then the slot, as a first start makes them): every row present
then counts as read, and its restore copies that slot as a job's savepoint's, reading only the changes committed
after the write. Like a job's savepoint, it keeps the slot (and the server's log) until ``fw.drop_slot`` drops
it; a write that fails after it drops it (``discard_position``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ...errors import FullWindowError, JobStorageError
from ...recovery.filesystem import Storage, UnsafeFile
from ...values.changes import CHANGE_COLUMNS, CHANGE_TYPES, INSERT, LSN, SEQ, lsn_text, lsn_value
from ...values.schema import arrow_schema, parse_schema
from ..backlog_options import LATE_POLICIES, backlog_flag, check_policies, event_time_delay
from ..base import SPLITS, Declared, OneInput
from ..postgres import client as postgres
from ..postgres.datasource import csv_batches, timestamps_in_utc
from ..postgres.source import check_columns
from . import datasource
from . import slot as slots

#: Rows per staged Parquet file of the snapshot (the backlog's Spark batch reads them in parallel).
STAGED_ROWS = 250_000
_SLOT = re.compile(r"fw_[a-z0-9_]{1,60}")


def unread_position(table: str) -> dict:
    """The position of nothing read of ``table``'s changes (a savepoint written with ``positions="beginning"``): no
    slot yet; a restore makes its job's at its start, as a first start does."""
    return {"format": 1, "table": table, "slot": None, "lsn": None, "rows": None}


def is_unread(doc) -> bool:
    """Whether a savepoint's position ``doc`` is ``unread_position``'s, exactly (half of it is no position)."""
    return isinstance(doc, dict) and isinstance(doc.get("table"), str) and doc == unread_position(doc["table"])


def check_changes_position(doc, where: str, error) -> dict:
    """``doc`` if it is a table changes source's position fw-magics wrote; ``error`` with one line naming ``where``."""
    if not (isinstance(doc, dict) and doc.get("format") == 1 and isinstance(doc.get("table"), str)
            and isinstance(doc.get("slot"), str) and _SLOT.fullmatch(doc["slot"])
            and lsn_value(doc.get("lsn")) is not None and (doc.get("rows") is None or type(doc["rows"]) is int)
            and (doc.get("publication") is None or (isinstance(doc["publication"], str)
                                                     and _SLOT.fullmatch(doc["publication"])))):
        raise error(f"the table changes source's position {where} is not one fw-magics wrote (format 1)")
    return doc


class ChangesPosition:
    """Where a table's changes are read from (``source/changes.json``): the ``slot``, the ``lsn`` the stream
    starts after, the snapshot's ``rows``, and whether the stream reads the staged snapshot first
    (``unread``: a job without a backlog). Written once, at the first start or a restore; read back checked."""

    RELATIVE = "source/changes.json"
    SNAPSHOT = "source/snapshot"

    def __init__(self, root: str):
        self._storage = Storage(root)
        self.path = self._storage.path(self.RELATIVE)
        self.snapshot = self._storage.path(self.SNAPSHOT)

    def exists(self) -> bool:
        return self._storage.present_inside(self.RELATIVE)

    def read(self) -> dict:
        try:
            with self._storage.open_inside(self.RELATIVE, 4096) as f:
                doc = json.loads(f.read())
        except (UnsafeFile, ValueError, UnicodeDecodeError):
            doc = None
        doc = check_changes_position(doc, self.path, JobStorageError)
        if type(doc.get("unread", False)) is not bool:
            raise JobStorageError(f"the table changes source's position {self.path} is not one fw-magics wrote")
        return doc

    def write(self, doc: dict) -> None:
        self._storage.write_bytes(self.path, json.dumps(doc).encode())


class ChangesSource(OneInput):
    """A PostgreSQL table's snapshot (the backlog) then its changes from a replication slot (see the module
    docstring)."""

    kind = "table_changes"
    PLACE = "table"
    POSITION_FIELDS = {
        "read_lsn": ("null (nothing read yet) or an LSN as PostgreSQL writes it, e.g. '0/1505B58'",
                     lambda v: v is None or lsn_value(v) is not None),
    }

    def __init__(self, detail: dict, schema):
        self.url, self.table, self.keys = detail["url"], detail["table"], list(detail["keys"])
        self.event_time, self.delay_ms = detail["event_time"], detail["delay_ms"]
        self.on_late = detail.get("on_late", "drop")
        self.schema = schema
        self.delays = {None: self.delay_ms}
        self.has_backlog = detail.get("backlog", True)

    @classmethod
    def declare(cls, spark, url, table, schema, event_time=None, watermark_delay="0 seconds", on_late: str = "drop",
                backlog: bool = True) -> Declared:
        """``fw.from_table(..., changes=True)``'s arguments checked, the server, the role and the table checked,
        in one line each; its step. The records are ``schema``'s columns then ``CHANGE_COLUMNS``."""
        postgres.check_url(url)
        if not isinstance(table, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", table):
            raise FullWindowError(f"from_table table {table!r:.80}; accepted: a table name or schema.name "
                                  "(letters, digits, underscores)")
        columns = parse_schema(schema, spark)
        clash = [n for n in columns.names if n in CHANGE_COLUMNS]
        if clash:
            raise FullWindowError(f"from_table(changes=True): column {clash[0]!r} of {table!r} has the name of a change "
                                  f"record's own column ({', '.join(CHANGE_COLUMNS)}); leave it out of the schema")
        struct = T.StructType(list(columns.fields) + [T.StructField(n, parse_schema(f"x {CHANGE_TYPES[n]}", spark)[0]
                                                                    .dataType) for n in CHANGE_COLUMNS])
        delay_ms = event_time_delay(struct, event_time, watermark_delay)
        check_policies(("on_late", on_late, LATE_POLICIES))
        check_columns(url, table, columns)
        keys = _reached(lambda: slots.check_server(url, table), url, table)
        missing = [k for k in keys if k not in columns.names]
        if missing:
            raise FullWindowError(f"from_table(changes=True): the schema leaves out {missing[0]!r}, of the primary key "
                                  f"of {table!r} ({', '.join(keys)}), which says which row a change is of; add it")
        postgres.check_workers_can_connect(url)
        detail = {"source": cls.kind, "streaming": True, "url": url, "table": table, "keys": keys,
                  "event_time": event_time, "delay_ms": delay_ms, "on_late": on_late, "label": table,
                  "partitions": int(spark.conf.get("spark.sql.shuffle.partitions")),
                  "backlog": backlog_flag(backlog, "from_table"), "sequence": [LSN, SEQ]}
        return Declared(detail, struct, f"changes({table})", lambda: datasource.outside_a_job(spark, url, table, struct))

    def describe(self) -> dict:
        return {"kind": self.kind, "url": self.url, "table": self.table, "keys": ", ".join(self.keys),
                "schema": self.schema.simpleString(), "event_time": self.event_time, "delay_ms": self.delay_ms,
                **({} if self.has_backlog else {"backlog": False})}

    @property
    def named(self) -> str:
        return self.table

    def why_no_max_files(self) -> str | None:
        return "a micro-batch of a table's changes reads every transaction committed"

    def asks_a_server(self) -> bool:
        return True  # latestOffset peeks the slot: the decoding takes a while

    def manifest(self, root: str) -> ChangesPosition:
        return ChangesPosition(root)

    def kept_on_server(self, root: str) -> str | None:
        return self.kept_on_server_as(self.describe(), root)

    @classmethod
    def kept_on_server_as(cls, described: dict, root: str) -> str | None:
        position = ChangesPosition(root)
        if not position.exists():
            return None
        slot, url = position.read()["slot"], described.get("url")
        url = postgres.redacted(url) if isinstance(url, str) else "<the job's url>"  # untrusted: no secret repeated
        return (f"holds the replication slot {slot!r} on the server, which keeps the table's changes (WAL) until "
                f"the job reads them; fw.drop_slot({url!r}, {slot!r}) drops it")

    # -- the first start: the slot and the snapshot --------------------------------------------------

    def record(self, root: str, backlog: bool) -> tuple[dict, list[dict]]:
        """At the first start: the slot created at one snapshot, whose rows are staged in the job's folder
        (the backlog; a job without one reads them as its stream's first micro-batch)."""
        position = ChangesPosition(root)
        name = slots.slot_name(root)
        staging = position.snapshot + ".staging"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        lsn, rows = _reached(lambda: slots.create(self.url, self.table, name, lambda copy, at, now: self._stage(
            copy, staging, at, now)), self.url, self.table)
        shutil.rmtree(position.snapshot, ignore_errors=True)
        os.replace(staging, position.snapshot)
        position.write({"format": 1, "table": self.table, "slot": name, "lsn": lsn_text(lsn), "rows": rows,
                        "unread": not backlog})
        return {"rows": rows}, []

    def _stage(self, copy, folder: str, lsn: int, now) -> int:
        """The snapshot's rows (``copy``: a COPY in its transaction) as Parquet files in ``folder``, each row an
        insert at ``lsn`` (its ``seq`` its place in the snapshot)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from psycopg import sql

        arrow = arrow_schema(self.schema)
        names = [n for n in self.schema.names if n not in CHANGE_COLUMNS]
        columns = pa.schema([arrow.field(n) for n in names])
        query = sql.SQL("COPY (SELECT {cols} FROM {t} ORDER BY {keys}) TO STDOUT WITH (FORMAT csv)").format(
            cols=timestamps_in_utc(columns), t=postgres.table_identifier(self.table),
            keys=sql.SQL(", ").join(sql.Identifier(k) for k in self.keys))
        rows, writer, part = 0, None, 0
        with copy(query) as stream:
            blocks = iter(stream)
            first = next(blocks, None)  # an empty table sends nothing, which Arrow's CSV reader refuses
            for batch in [] if first is None else csv_batches(itertools.chain([first], blocks), columns):
                n = batch.num_rows
                extra = [pa.array([INSERT] * n, pa.string()), pa.array([lsn] * n, pa.int64()),
                         pa.array(range(rows, rows + n), pa.int32()),
                         pa.array([now] * n, arrow.field(CHANGE_COLUMNS[3]).type)]
                if writer is not None and writer.rows >= STAGED_ROWS:
                    writer.close()
                    writer, part = None, part + 1
                if writer is None:
                    writer = pq.ParquetWriter(os.path.join(folder, f"part-{part:05d}.parquet"), arrow)
                    writer.rows = 0
                writer.write_batch(pa.RecordBatch.from_arrays(list(batch.columns) + extra, schema=arrow))
                writer.rows += n
                rows += n
        if writer is not None:
            writer.close()
        return rows

    def relist(self, root: str) -> list[dict]:
        """At a restart: the slot must still be on the server and usable (one line if not)."""
        if ChangesPosition(root).exists():
            slots.check_usable(self.url, self.table, ChangesPosition(root).read()["slot"])
        return []

    # -- what the job reads ------------------------------------------------------------------------------

    def backlog_frame(self, spark, root: str) -> DataFrame:
        position = ChangesPosition(root)
        if not position.read()["rows"]:
            return spark.createDataFrame([], self.schema)
        return spark.read.schema(self.schema).parquet(position.snapshot)

    def _stream(self, spark, root: str, hold: str | None = None) -> DataFrame:
        position = ChangesPosition(root)
        doc = position.read()
        reader = datasource.reader(spark, self.url, self.table, doc["slot"], self.schema, lsn_value(doc["lsn"]),
                                   position.snapshot if doc.get("unread") else None, doc.get("unread", False),
                                   doc.get("publication"))
        return (reader.option("hold", hold) if hold else reader).load()

    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None) -> DataFrame:
        """The changes after the snapshot (and, for a job without a backlog, the snapshot first)."""
        return self._stream(spark, root, hold)

    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None) -> DataFrame:
        return self._stream(spark, root)

    def operator_stream(self, spark, root: str, max_files: int | None, parallelism: int) -> DataFrame:
        raise FullWindowError(f"a non-keyed operator does not read a table's changes yet; key them by the primary "
                              f"key of {self.table!r}: key_by({', '.join(repr(k) for k in self.keys)})")

    # -- its position in a savepoint: the LSN read through, and a copy of the slot --------------------

    def saved_position(self, root: str, end: dict) -> dict:
        """The LSN read through; the savepoint keeps a copy of the job's slot (made now), which a restore copies."""
        if not end.get("snapshot"):
            raise FullWindowError(f"the job has not read the snapshot of {self.table!r} yet; take the savepoint "
                                  "after its first micro-batch")
        doc = ChangesPosition(root).read()
        kept = slots.savepoint_slot_name(os.path.abspath(root), end["lsn"])
        _reached(lambda: slots.copy_slot(self.url, doc["slot"], kept), self.url, self.table)
        return {"format": 1, "table": self.table, "slot": kept, "lsn": lsn_text(end["lsn"]), "rows": None,
                "publication": doc.get("publication", doc["slot"])}

    def position_at(self, now: bool) -> dict:
        """Nothing read (``unread_position``: no slot; its restore makes one), asking the server nothing; or (``now``)
        everything committed now read: a publication of the table, then a slot at its consistent point (both named
        as a savepoint's slot), which its restore copies. ``discard_position`` drops them if the write fails."""
        if not now:
            return unread_position(self.table)
        name = slots.savepoint_slot_name(self.table)
        lsn, _ = _reached(lambda: slots.create(self.url, self.table, name, lambda copy, at, when: None), self.url,
                          self.table)
        return {"format": 1, "table": self.table, "slot": name, "lsn": lsn_text(lsn), "rows": None,
                "publication": name}

    def discard_position(self, position: dict) -> None:
        """Drop the slot ``position`` holds (``position_at``'s, ``saved_position``'s copy) and the publication of
        its name: its own (``position_at``'s); a copy's reads through the job's, which is left."""
        slot = position["slot"]
        if slot is None:
            return
        try:
            slots.drop(self.url, slot)
        except Exception as error:
            if not type(error).__module__.startswith("psycopg"):
                raise
            raise FullWindowError(f"the replication slot {slot!r} of table {self.table!r} is left on the server "
                                  f"({postgres.failure(error)}); fw.drop_slot({postgres.redacted(self.url)!r}, "
                                  f"{slot!r}) drops it") from None

    def position_fields(self, position: dict) -> dict:
        return {"read_lsn": position["lsn"]}

    def position_snapshots(self, position: dict, parallelism: int) -> list[dict]:
        """One split, the table's changes through ``lsn``, owned by source subtask 0 (the stream reads them as one)."""
        unit = {"table": self.table, "lsn": position["lsn"]}
        return [{SPLITS: {"mode": "split", "units": [unit] if i == 0 else []}} for i in range(parallelism)]

    def read_since_switch(self, spark, root: str, position: dict, scratch: str):
        return None  # the slot has moved past what was read: W is the job's own

    def restore_position(self, root: str, snapshots: list[dict], position: dict, parallelism: int) -> dict:
        """A restored job reads the changes after the savepoint's LSN, from its own copy of the savepoint's slot; of
        a savepoint that read nothing (``is_unread``), the table's snapshot then its changes, from a slot made now
        at that snapshot, as a first start reads them (``record``, its stream reading the snapshot first)."""
        units = [u for s in snapshots for u in s.get(SPLITS, {}).get("units", [])]
        if units != [{"table": self.table, "lsn": position["lsn"]}]:
            raise FullWindowError(f"the savepoint's source state {units!r:.120} is not the changes of {self.table!r} "
                                  f"read through {position['lsn']}")
        if is_unread(position):
            self.record(root, backlog=False)
            return {}
        slots.check_usable(self.url, self.table, position["slot"])
        name = slots.slot_name(root)
        _reached(lambda: slots.copy_slot(self.url, position["slot"], name), self.url, self.table)
        ChangesPosition(root).write({"format": 1, "table": self.table, "slot": name, "lsn": position["lsn"],
                                     "rows": None, "unread": False,
                                     "publication": position.get("publication", position["slot"])})
        return {}

    def same_place(self, position: dict) -> str | None:
        return None if position["table"] == self.table else f"read the changes of table {position['table']!r}"

    @classmethod
    def check_position(cls, doc, where: str, error) -> dict:
        """A slot's LSN read through (``check_changes_position``), or nothing read yet (``is_unread``)."""
        return doc if is_unread(doc) else check_changes_position(doc, where, error)

    @classmethod
    def position_in_words(cls, position: dict) -> str:
        if is_unread(position):
            return f"changes of table {position.get('table')!r} not read yet (a restore makes its slot)"
        return f"changes of table {position.get('table')!r} read through LSN {position.get('lsn')}"

    @classmethod
    def check_position_fields(cls, document: dict, position: dict, where: str, error) -> None:
        if "read_lsn" in document and document["read_lsn"] != position.get("lsn"):
            raise error(f"{where}: field 'read_lsn' is {document['read_lsn']!r:.30}, but its source position says "
                        f"{position.get('lsn')!r:.30}; the savepoint is damaged")


def _reached(call, url: str, table: str):
    """``call()``; a psycopg error (the server down, a refusal) as one line naming the table."""
    try:
        return call()
    except FullWindowError:
        raise
    except Exception as error:
        if not type(error).__module__.startswith("psycopg"):
            raise
        raise FullWindowError(f"the job cannot read the changes of {table!r} at {url}: {postgres.failure(error)}") \
            from None


def drop_slot(url: str, slot: str) -> bool:
    """Drop a job's (or a savepoint's) replication slot and its publication on the server: the server stops
    keeping WAL for it. Whether it was there. Only slots fw-magics names (``fw_...``)."""
    postgres.check_url(url, "drop_slot")
    if not isinstance(slot, str) or not _SLOT.fullmatch(slot):
        raise FullWindowError(f"drop_slot slot {slot!r:.80}; accepted: the name of a slot fw-magics made, "
                              "'fw_...' (a job's repr names it)")
    return _reached(lambda: slots.drop(url, slot), url, slot)
