"""A running aggregate: ``key_by(...).aggregate(agg)`` on a stream, an ``fw.AggregateFunction`` per key."""

from __future__ import annotations

from ..api.state import StateKind
from .base import KeyedKind, Operation
from .running import Running


class AggregatePerKey(Running):
    """Flink's running aggregate: ``add`` per record, ``get_result`` after each run of the key."""

    def __init__(self, core):
        spec = core.spec
        super().__init__(core, spec.accumulator, f"accumulator of {type(spec.function).__name__}")
        self.agg = spec.function

    def element(self, record) -> None:
        if not self.touched and self.current is None:
            self.current = self.agg.create_accumulator()
        self.touched = True
        self.current = self.agg.add(record, self.current)

    def result(self):
        return self.agg.get_result(self.current)


class Aggregate(KeyedKind):
    """Each key's accumulator as keyed state; its output is the key, then ``get_result``'s columns."""

    name = "aggregate"
    operations = (Operation("aggregate", "an fw.AggregateFunction instance or class",
                            ("FN: an fw.AggregateFunction instance or class (a running aggregate)",),
                            lambda first, second, key, key2, fn, between: first.key_by(key).aggregate(fn)),)

    def emitter(self, spec) -> str:
        return f"{spec.label}.get_result"

    def per_key(self, core) -> AggregatePerKey:
        return AggregatePerKey(core)

    def declared_states(self, spec) -> dict:
        return {Running.STATE: (StateKind.VALUE, spec.accumulator)}  # the accumulator (None: JSON)


