"""A change record: a row of a table with what happened to it (change data capture), as Flink's row kinds.

A change stream's records carry the row's columns and four more: ``op`` (what happened: ``insert``,
``update_before``, ``update_after``, ``delete``), ``lsn`` (the position in the database's log of the
commit that made it, an integer that grows with each commit), ``seq`` (its place among the changes of
that commit, from 0) and ``commit_time`` (when it committed: usable as event time). ``lsn`` then ``seq``
is the order the changes were committed in. Pure: no Spark, no database.
"""

from __future__ import annotations

OP, LSN, SEQ, COMMIT_TIME = "op", "lsn", "seq", "commit_time"
#: The columns a change record adds to the row's, in this order, and their Spark types (DDL).
CHANGE_COLUMNS = (OP, LSN, SEQ, COMMIT_TIME)
CHANGE_TYPES = {OP: "string", LSN: "long", SEQ: "int", COMMIT_TIME: "timestamp"}
#: What ``op`` holds: Flink's row kinds (+I, -U, +U, -D).
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "insert", "update_before", "update_after", "delete"
OPS = (INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE)
#: The ops after which the row is in the table (its new values); after the others it is not.
PRESENT = (INSERT, UPDATE_AFTER)


def lsn_text(lsn: int) -> str:
    """An LSN as PostgreSQL writes it ("0/1505B58")."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def lsn_value(text) -> int | None:
    """An LSN written as PostgreSQL does ("0/1505B58") as an integer; None when ``text`` is not one."""
    if not isinstance(text, str):
        return None
    high, slash, low = text.partition("/")
    try:
        value = (int(high, 16) << 32) | int(low, 16) if slash and high and low and len(high) <= 8 and len(low) <= 8 \
            else None
    except ValueError:
        return None
    return value
