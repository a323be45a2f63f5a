"""PostgreSQL's ``pgoutput`` logical decoding messages (protocol version 1, values as text), decoded into
whole transactions of change records. Pure Python: no Spark, no database.

``pg_logical_slot_peek_binary_changes(slot, upto, NULL, 'proto_version', '1', 'publication_names', p)``
returns one row per message, ``(lsn, xid, data)``; a transaction is ``B`` (begin), the tables' ``R``
(relation: names, types and key flags of its columns, sent before the first change of each table in
each decoding), ``I`` / ``U`` / ``D`` (insert, update, delete) and ``T`` (truncate), then ``C``
(commit: its end LSN, which orders transactions, and its time). Only committed transactions are
decoded, each whole, in commit order (docs: "Logical Streaming Replication Protocol").

Every value comes as its type's text output; the reader's session sets ``TimeZone`` to UTC, so a
``timestamptz`` is written in UTC. :func:`converter` turns that text into what Arrow takes for a Spark type.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ...values.changes import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE

#: PostgreSQL's epoch (commit times count microseconds from it), in microseconds after Unix's.
PG_EPOCH_US = 946_684_800_000_000
#: A value the message leaves out: a TOASTed column an update did not change ('u').
UNCHANGED = object()


class ProtocolError(ValueError):
    """A message this decoder does not know (a newer protocol, or damage): one line."""


@dataclass
class Relation:
    """A table as its ``R`` message describes it: ``identity`` is its replica identity ('d' default, 'f'
    full, 'i' index, 'n' nothing); ``columns`` its column names; ``keys`` those in the replica identity."""

    oid: int
    namespace: str
    name: str
    identity: str
    columns: list[str]
    types: list[int]
    keys: list[str]


@dataclass
class Change:
    """One row's change: ``op`` (``values.changes``), the table, and its values by the table's column order."""

    op: str
    relation: Relation
    values: list


@dataclass
class Transaction:
    """One committed transaction: ``end_lsn`` (the end of its commit record: the slot is advanced to it),
    ``commit_us`` (its commit time, microseconds since 1970), its changes in order, and the tables it
    truncated."""

    end_lsn: int
    commit_us: int
    xid: int | None = None
    changes: list[Change] = field(default_factory=list)
    truncated: list[Relation] = field(default_factory=list)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.at + size > len(self.data):
            raise ProtocolError(f"a pgoutput message ends early ({len(self.data)} bytes)")
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return value

    def string(self) -> str:
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ProtocolError("a pgoutput message's string has no end")
        text = self.data[self.at:end].decode()
        self.at = end + 1
        return text

    def char(self) -> str:
        return chr(self.take("!B"))

    def tuple(self) -> list:
        values = []
        for _ in range(self.take("!H")):
            kind = self.char()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            elif kind in "tb":
                size = self.take("!I")
                values.append(self.data[self.at:self.at + size].decode() if kind == "t" else
                              bytes(self.data[self.at:self.at + size]))
                self.at += size
            else:
                raise ProtocolError(f"a pgoutput tuple holds a value of kind {kind!r}")
        return values


def transactions(messages: Iterable[bytes], relations: dict | None = None) -> Iterator[Transaction]:
    """The committed transactions in ``messages`` (each a message's bytes, in the order decoded).
    ``relations``: the tables by oid as already described (kept up to date here)."""
    relations = {} if relations is None else relations
    current: Transaction | None = None
    for data in messages:
        reader = _Reader(bytes(data))
        kind = reader.char()
        if kind == "B":
            reader.take("!Q")  # the commit record's own LSN; the commit message gives its end
            commit = reader.take("!q")
            current = Transaction(end_lsn=0, commit_us=commit + PG_EPOCH_US, xid=reader.take("!I"))
        elif kind == "C":
            if current is None:
                raise ProtocolError("a pgoutput commit without its begin")
            reader.take("!B")
            reader.take("!Q")
            current.end_lsn = reader.take("!Q")
            current.commit_us = reader.take("!q") + PG_EPOCH_US
            yield current
            current = None
        elif kind == "R":
            oid, namespace, name, identity = reader.take("!I"), reader.string(), reader.string(), reader.char()
            columns, types, keys = [], [], []
            for _ in range(reader.take("!H")):
                flags, column, type_oid = reader.take("!B"), reader.string(), reader.take("!I")
                reader.take("!i")
                columns.append(column)
                types.append(type_oid)
                if flags & 1:
                    keys.append(column)
            relations[oid] = Relation(oid, namespace, name, identity, columns, types, keys)
        elif kind in "IUD":
            if current is None:
                raise ProtocolError(f"a pgoutput change ({kind}) outside a transaction")
            current.changes.extend(_changes(kind, reader, relations))
        elif kind == "T":
            count = reader.take("!I")
            reader.take("!B")
            current.truncated.extend(relations[reader.take("!I")] for _ in range(count))
        elif kind in "OYM":  # an origin, a type's name, a logical message: nothing for a table's rows
            continue
        else:
            raise ProtocolError(f"a pgoutput message of kind {kind!r}")


def _changes(kind: str, reader: _Reader, relations: dict) -> list[Change]:
    oid = reader.take("!I")
    relation = relations.get(oid)
    if relation is None:
        raise ProtocolError(f"a pgoutput change of table oid {oid} before its description")
    marker = reader.char()
    if kind == "I":
        return [Change(INSERT, relation, reader.tuple())]
    old = None
    if marker in "KO":  # the old row (O: replica identity full) or its key (K)
        old = reader.tuple()
        if kind == "U":
            marker = reader.char()
    if kind == "D":
        return [Change(DELETE, relation, old or [None] * len(relation.columns))]
    new = reader.tuple()
    if old is not None:
        new = [was if now is UNCHANGED else now for was, now in zip(old, new)]
        return [Change(UPDATE_BEFORE, relation, old), Change(UPDATE_AFTER, relation, new)]
    return [Change(UPDATE_AFTER, relation, new)]


# -- text to values ------------------------------------------------------------------------------------


def _timestamp(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)  # zone-less: read as UTC


def _boolean(text: str) -> bool:
    return text == "t"


#: Spark type name -> how its PostgreSQL text output becomes a value.
CONVERTERS = {
    "long": int, "integer": int, "short": int, "double": float, "float": float, "string": str,
    "boolean": _boolean, "decimal": decimal.Decimal, "date": dt.date.fromisoformat,
    "timestamp": _timestamp, "timestamp_ntz": lambda text: dt.datetime.fromisoformat(text).replace(tzinfo=None),
}


def converter(spark_type_name: str):
    """How the text of a column read as ``spark_type_name`` becomes a value (None stays None)."""
    convert = CONVERTERS[spark_type_name]
    return lambda text: None if text is None else convert(text)
