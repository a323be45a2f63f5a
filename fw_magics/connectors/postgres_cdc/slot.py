"""A job's replication slot on the server, through psycopg (no Spark here): checks of the server, the role
and the table; the slot created at the snapshot's exact point; its changes peeked, then advanced; dropped.

The slot and its publication are named after the job (``slot_name``). At the first start, a replication
connection opens a REPEATABLE READ transaction whose first command creates the slot (``CREATE_REPLICATION_SLOT
... (SNAPSHOT 'use')``): the transaction's snapshot is the slot's consistent point, so the rows it reads are
exactly the table before every change the slot gives (nothing lost or read twice). Changes are read with
``pg_logical_slot_peek_binary_changes`` (pgoutput, protocol 1), which leaves the slot where it is; it is
advanced (``pg_replication_slot_advance``) only after the job committed what it read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time

from ...errors import FullWindowError
from ...values.changes import lsn_text, lsn_value
from ..postgres import client as postgres

#: How long a reader waits for the slot another process of the job still holds (a retried task's twin).
IN_USE_WAIT = 30.0
#: SQLSTATEs: object in use (the slot is active in another process), undefined object (no such slot).
IN_USE, UNDEFINED = "55006", "42704"


def slot_name(root: str) -> str:
    """The job's slot (and publication) name: ``fw_`` + the job's name as letters, digits and underscores,
    + a short hash of its folder (two job folders may hold jobs of one name), at most 63 characters."""
    folder = os.path.abspath(root)
    slug = re.sub(r"[^a-z0-9_]+", "_", os.path.basename(folder).lower()).strip("_")[:40] or "job"
    return f"fw_{slug}_{hashlib.sha1(folder.encode()).hexdigest()[:10]}"


def savepoint_slot_name(*seeds) -> str:
    """The name of a slot a savepoint keeps (a copy of the job's, or one made at ``fw.write_savepoint``'s write),
    from which a restore reads on (its publication, where it has its own, has the name too): ``fw_sp_`` + a hash
    of ``seeds`` (the job's folder and LSN, the table) and the time."""
    return f"fw_sp_{hashlib.sha1(':'.join(map(str, (*seeds, time.time_ns()))).encode()).hexdigest()[:20]}"


def _sql():
    from psycopg import sql

    return sql


def connect(url: str):
    conn = postgres.connect(url)
    conn.autocommit = True
    conn.execute("SET TIME ZONE 'UTC'")
    return conn


def check_server(url: str, table: str) -> list[str]:
    """The table's primary key columns; one line when the server does not decode its log (``wal_level``), the
    role may not read a slot (no REPLICATION right), or the table has no primary key."""
    with connect(url) as conn:
        level = conn.execute("SELECT current_setting('wal_level')").fetchone()[0]
        if level != "logical":
            raise FullWindowError(
                f"from_table(changes=True) of {table!r}: the server's wal_level is {level!r}, so it writes no "
                "changes a slot can read; set wal_level = logical in postgresql.conf (or ALTER SYSTEM SET "
                "wal_level = logical) and restart the server")
        role, may = conn.execute("SELECT current_user, rolreplication OR rolsuper FROM pg_roles "
                                 "WHERE rolname = current_user").fetchone()
        if not may:
            raise FullWindowError(
                f"from_table(changes=True) of {table!r}: the role {role!r} has no REPLICATION right, which a "
                f"replication slot needs; ALTER ROLE {role} REPLICATION (as a superuser), or connect as a role "
                "that has it")
        keys = [name for (name,) in conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
            "a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY a.attnum",
            (table,)).fetchall()]
    if not keys:
        raise FullWindowError(
            f"from_table(changes=True): table {table!r} has no primary key, so an update or a delete cannot say "
            f"which row it changed; add one (ALTER TABLE {table} ADD PRIMARY KEY (...))")
    return keys


def create(url: str, table: str, slot: str, read_snapshot) -> tuple[int, object]:
    """Drop the job's slot and publication if they are there (a job started afresh), create the publication
    of ``table``, then the slot: ``read_snapshot(copy, lsn, now)`` reads the table in the slot's snapshot
    (``with copy(query) as blocks``: a ``COPY ... TO STDOUT``; ``lsn``: the slot's consistent point; ``now``:
    the snapshot's time). Returns (the consistent point, what ``read_snapshot`` returned). A failure leaves
    neither the slot nor the publication (dropped once the replication connection is closed, where the server
    can still be reached)."""
    sql = _sql()
    drop(url, slot)
    try:
        with connect(url) as conn:
            conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(sql.Identifier(slot),
                                                                               postgres.table_identifier(table)))
        with postgres.psycopg().connect(url, connect_timeout=postgres.CONNECT_TIMEOUT_S, replication="database",
                                        autocommit=True) as rep:
            rep.execute("BEGIN ISOLATION LEVEL REPEATABLE READ", prepare=False)
            row = rep.execute(f"CREATE_REPLICATION_SLOT {slot} LOGICAL pgoutput (SNAPSHOT 'use')",
                              prepare=False).fetchone()
            rep.execute("SET LOCAL TIME ZONE 'UTC'", prepare=False)
            now = rep.execute("SELECT clock_timestamp()", prepare=False).fetchone()[0]

            @contextlib.contextmanager
            def copy(query):
                with rep.cursor() as cursor, cursor.copy(query) as stream:
                    yield stream

            lsn = lsn_value(row[1])
            read = read_snapshot(copy, lsn, now)
            rep.execute("COMMIT", prepare=False)
    except BaseException:
        with contextlib.suppress(Exception):  # the server gone: the error below says so
            drop(url, slot)
        raise
    return lsn, read


def drop(url: str, slot: str) -> bool:
    """Drop the slot and its publication, where they are; whether the slot was there."""
    sql = _sql()
    with connect(url) as conn:
        there = conn.execute("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()[0]
        if there:
            _in_use_retry(lambda: conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,)))
        conn.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(sql.Identifier(slot)))
    return bool(there)


def copy_slot(url: str, source: str, target: str) -> None:
    """``target``: a copy of the slot ``source`` (where it is, what it keeps). It reads through the publication
    ``source`` reads through: one made now would not be in the catalog its older changes are decoded with."""
    drop(url, target)
    with connect(url) as conn:
        conn.execute("SELECT pg_copy_logical_replication_slot(%s, %s)", (source, target))


def status(url: str, slot: str) -> dict | None:
    """The slot as the server has it (``confirmed`` LSN, ``wal_status``), or None when it is not there."""
    with connect(url) as conn:
        row = conn.execute("SELECT confirmed_flush_lsn::text, wal_status FROM pg_replication_slots "
                           "WHERE slot_name = %s", (slot,)).fetchone()
    return None if row is None else {"confirmed": lsn_value(row[0]), "wal_status": row[1]}


def gone(table: str, slot: str, why: str) -> FullWindowError:
    return FullWindowError(
        f"the replication slot {slot!r} of table {table!r} {why}: the changes it kept are lost; start(..., "
        "reset=True) reads the table anew (a new snapshot, a new slot)")


def check_usable(url: str, table: str, slot: str) -> None:
    """One line when the job's slot is no longer on the server, or the server invalidated it (its WAL removed)."""
    try:
        found = status(url, slot)
    except Exception as error:  # the server is down, refused, gone
        raise FullWindowError(f"the job cannot read the changes of {table!r} at {url}: {postgres.failure(error)}") \
            from None
    if found is None:
        raise gone(table, slot, "is not on the server (dropped, or the server was replaced)")
    if found["wal_status"] == "lost":
        raise gone(table, slot, "was invalidated by the server (max_slot_wal_keep_size removed its WAL)")


def _in_use_retry(call):
    """``call()``, again while the slot is active in another process (a task of the job retried meanwhile)."""
    deadline = time.monotonic() + IN_USE_WAIT
    while True:
        try:
            return call()
        except Exception as error:
            if getattr(error, "sqlstate", None) != IN_USE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


#: The slot's changes up to an LSN (pgoutput, protocol 1, the job's publication), left in the slot.
PEEK = ("pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, 'proto_version', '1', "
        "'publication_names', %s)")


def last_commit(conn, slot: str, publication: str, table: str) -> int | None:
    """The end LSN of the last transaction the slot can give now (its commit flushed to the log), or None."""
    flush = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()[0]
    query = f"SELECT max(lsn)::text FROM {PEEK} WHERE get_byte(data, 0) = 67"  # 'C': a commit
    row = _guarded(lambda: conn.execute(query, (slot, flush, publication)).fetchone(), table, slot)
    return lsn_value(row[0])


def messages(conn, slot: str, publication: str, upto: int, table: str) -> list[bytes]:
    """The slot's pgoutput messages (from where it was advanced to) through the transaction ending at ``upto``."""
    query = f"SELECT data FROM {PEEK}"
    return _guarded(lambda: [row[0] for row in conn.execute(query, (slot, lsn_text(upto), publication))], table, slot)


def advance(conn, slot: str, lsn: int, table: str) -> None:
    """Move the slot to ``lsn`` (the end of a committed micro-batch's last transaction), never back."""
    def move():
        found = conn.execute("SELECT confirmed_flush_lsn < %s::pg_lsn FROM pg_replication_slots WHERE slot_name = %s",
                             (lsn_text(lsn), slot)).fetchone()
        if found is None:
            raise gone(table, slot, "is not on the server (dropped, or the server was replaced)")
        if found[0]:
            conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (slot, lsn_text(lsn)))

    _in_use_retry(move)


def _guarded(call, table: str, slot: str):
    try:
        return _in_use_retry(call)
    except Exception as error:
        if getattr(error, "sqlstate", None) == UNDEFINED and "replication slot" in str(error):
            raise gone(table, slot, "is not on the server (dropped, or the server was replaced)") from None
        if getattr(error, "sqlstate", None) == UNDEFINED and "publication" in str(error):
            raise FullWindowError(
                f"the publication the changes of table {table!r} are read through is not on the server: the job "
                "this one was restored from was started afresh or its slot dropped (fw.drop_slot drops its "
                "publication too); start(..., reset=True) reads the table anew") from None
        if "can no longer get changes" in str(error) or "has been invalidated" in str(error):
            raise gone(table, slot, "was invalidated by the server (max_slot_wal_keep_size removed its WAL)") \
                from None
        raise
