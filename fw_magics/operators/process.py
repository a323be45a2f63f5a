"""A keyed process function: ``key_by(...).process(fn)``, an ``fw.KeyedProcessFunction`` with keyed state and
event-time timers."""

from __future__ import annotations

from .base import ELEMENT, TIMER, KeyedKind, Operation, emitted


class ProcessPerKey:
    """A user's KeyedProcessFunction in the per-key core: opened once, its outputs as it emits them."""

    def __init__(self, core):
        self.core = core
        self.fn = core.spec.function
        self.fn.open(core.runtime_context)

    def begin(self) -> None:
        pass

    def element(self, record) -> None:
        for value in emitted(self.fn.process_element(record, self.core.context)):
            self.core.emit(ELEMENT, value)

    def timer(self, timestamp: int) -> None:
        for value in emitted(self.fn.on_timer(timestamp, self.core.context)):
            self.core.emit(TIMER, value)

    def end(self) -> None:
        pass


class Process(KeyedKind):
    """Keyed state and event-time timers; its output is the key, then whatever the function emits."""

    name = "process"
    timed = True
    operations = (Operation("process", "an fw.KeyedProcessFunction instance or class",
                            ("FN: an fw.KeyedProcessFunction instance or class (state and timers)",),
                            lambda first, second, key, key2, fn, between: first.key_by(key).process(fn)),)

    def emitter(self, spec) -> str:
        return f"process function {spec.label!r}"

    def per_key(self, core) -> ProcessPerKey:
        return ProcessPerKey(core)

    def declared_states(self, spec) -> dict:
        return dict(spec.states or {})  # what its open() asks for


