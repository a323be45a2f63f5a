"""A running reduce: ``key_by(...).reduce(fn)`` on a stream (Flink's keyed ``reduce``)."""

from __future__ import annotations

from ..api.state import StateKind
from ..errors import FullWindowError
from ..values.records import Record, record_type
from .base import KeyedKind, Operation
from .running import Running


class ReducePerKey(Running):
    """Flink's running reduce: the first record, then ``fn(accumulated, record)``; emits the record."""

    def __init__(self, core):
        spec = core.spec
        super().__init__(core, spec.record, f"reduce function {spec.label!r}")
        self.fn = spec.function
        self.cls = record_type(spec.record.names)
        self.width = len(spec.record.names)

    def element(self, record) -> None:
        self.touched = True
        current = self.current
        if current is None:
            self.current = record
            return
        value = self.fn(current, record)
        self.current = value if type(value) is self.cls else self._as_record(value)

    def _as_record(self, value) -> Record:
        if isinstance(value, (tuple, list)) and len(value) == self.width:
            return self.cls(value)  # tuple's own constructor, reached directly (values/records.py)
        if isinstance(value, dict) and set(value) == set(self.cls._fields):
            return self.cls([value[n] for n in self.cls._fields])
        raise FullWindowError(
            f"reduce function {self.core.spec.label!r} returned {type(value).__name__} {value!r:.60}; expected a "
            f"record, tuple or dict with the input's {self.width} columns: {', '.join(self.cls._fields)}"
        )

    def result(self):
        return self.current


class Reduce(KeyedKind):
    """``fn(a, b)`` folds a key's records; its output is the reduced record (the key columns among its own)."""

    name = "reduce"
    emits_records = True
    operations = (Operation("reduce", "FN(a, b) -> record",
                            ("FN(a, b) -> record: a running reduce, its result a whole record",),
                            lambda first, second, key, key2, fn, between: first.key_by(key).reduce(fn), lambdas=True),)

    def emitter(self, spec) -> str:
        return f"reduce function {spec.label!r}"

    def per_key(self, core) -> ReducePerKey:
        return ReducePerKey(core)

    def declared_states(self, spec) -> dict:
        return {Running.STATE: (StateKind.VALUE, spec.record)}  # the reduced record


