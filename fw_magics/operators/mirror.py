"""A table's mirror: ``key_by(<primary key>).mirror()`` over a table's change records (``values.changes``)."""

from __future__ import annotations

from ..values.changes import OP, PRESENT
from ..values.records import record_type
from .base import REMOVED, KeyedKind
from .running import Running


class MirrorPerKey(Running):
    """A key's row as the table has it now: an insert or an update's new row sets it, a delete (or the old
    row of an update that moved it to another key) removes it. After each run of the key its row is
    emitted, or, when it is gone, the last row it had as a ``REMOVED`` output."""

    def __init__(self, core):
        spec = core.spec
        super().__init__(core, spec.result, "the mirror's row")
        names = spec.result.names
        self.cls = record_type(names)
        self.take = [spec.record.names.index(n) for n in names]
        self.op = spec.record.names.index(OP)
        self.gone = None

    def element(self, record) -> None:
        self.touched = True
        row = tuple.__new__(self.cls, [record[i] for i in self.take])
        if record[self.op] in PRESENT:
            self.current = row
        else:
            self.current, self.gone = None, row

    def end(self) -> None:
        if self.touched and self.current is None:
            self.core.values.pop(self.STATE, None)
            self.core.emit(REMOVED, self.gone)
            return
        super().end()

    def result(self):
        return self.current


class Mirror(KeyedKind):
    """The table's rows by key; its output is the row itself (the key columns among its own)."""

    name = "mirror"
    emits_records = True

    def output(self, spec):
        return spec.result  # the row's columns, without the change's

    def emitter(self, spec) -> str:
        return "the mirror"

    def per_key(self, core) -> MirrorPerKey:
        return MirrorPerKey(core)
