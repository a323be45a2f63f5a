"""The per-key core: one Python implementation of every keyed operator kind, reduce to co-process.

The backlog's batch engine and Spark's ``transformWithState`` both drive this code, which is
what makes the modes agree: it applies a key's records to the key's state, keeps the key's
event-time timers, fires them in timestamp order and collects the outputs. A driver calls, for
one key at a time::

    core.begin(key, state_text, watermark)     # the key's state as JSON text (None: empty)
    core.element(record, event_time_ms)        # each record, in event-time order
    core.fire(watermark)                       # timers at or before it, earliest first
    result = core.end()                        # new state text, outputs, timer changes

A key's state is one JSON document (``{"v": {value states}, "l": {list states}, "t": [timers]}``),
never pickled; :mod:`codecs` says how typed values are written into it. What differs by kind is
the kind's part (``spec.kind.per_key(core)``, ``fw_magics.operators``): reduce and aggregate emit
one output per key per ``begin``/``end`` (their running result after the run: an upsert
changelog); a process function emits whatever ``process_element`` and ``on_timer`` return. The
context, timer service and state handles a function sees implement the user API's types
(``fw_magics.api.context``, ``fw_magics.api.state``).

Pure Python (pyarrow for typed values), no Spark session: tested against a reference model.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from ....api import context as api_context
from ....api import state as api_state
from ....api.co_process import ReadOnlyBroadcastState
from ....api.state import ListStateDescriptor, StateKind, ValueStateDescriptor
from ....errors import FullWindowError
from ....operators.co_process import BroadcastOperator
from ....operators.spec import KeyedOperatorSpec, codec_for
from ....values.event_time import MIN_WATERMARK
from .timers import TimerQueue, check_time


@dataclass
class KeyResult:
    """What one ``begin``/``end`` of a key produced."""

    state: str | None  # the key's new state as JSON text; None: the key has no state left
    changed: bool  # whether ``state`` differs from the text given to ``begin``
    outputs: list  # (kind, key, value): kind "element" or "timer"; value as the function returned it
    timers_added: list = field(default_factory=list)  # timers to register with an outside timer service
    timers_removed: list = field(default_factory=list)  # timers it held that are gone (fired or deleted)
    records: int = 0
    timers_fired: int = 0
    doc: dict | None = None  # ``state`` as the document it was written from (each value in its stored form)


class KeyedCore:
    """Runs one keyed operator (a ``KeyedOperatorSpec``) for one key at a time."""

    def __init__(self, spec: KeyedOperatorSpec, subtask: int = 0):
        self.spec = spec
        self.subtask = subtask
        self.key: tuple | None = None
        self.watermark = MIN_WATERMARK
        self.timestamp: int | None = None
        self.values: dict = {}
        self.lists: dict = {}
        self.pending: dict = {}  # list name -> (codec, values added with add_later, not encoded yet)
        self.timers = TimerQueue()
        self._outputs: list = []
        self.context = Context(self)
        self.runtime_context = RuntimeContext(self)  # what a function's open() is given
        self.operator = spec.kind.per_key(self)  # the kind's part: what it does with a record, a timer, a key's end

    # -- one key -----------------------------------------------------------------------------

    def begin(self, key: tuple, state: str | None, watermark: int = MIN_WATERMARK) -> None:
        self.key, self.watermark, self.timestamp = tuple(key), watermark, None
        self._loaded = state
        doc = json.loads(state) if state else {}
        self.values = doc.get("v", {})
        self.lists = doc.get("l", {})
        self.pending = {}
        self.timers = TimerQueue(doc.get("t", ()))
        self._timers_before = set(self.timers.times())
        self._outputs = []
        self._records = self._fired = 0
        self.operator.begin()

    def element(self, record, event_time: int | None = None) -> None:
        """Apply one record of the current key (``event_time``: epoch ms, None without event time)."""
        self.timestamp = event_time
        self._records += 1
        self.operator.element(record)

    def fire(self, watermark: int) -> None:
        """Fire the current key's timers at or before ``watermark``, earliest first (new ones too)."""
        self.watermark = max(self.watermark, watermark)
        while (due := self.timers.pop_due(watermark)) is not None:
            self.timestamp = due
            self._fired += 1
            self.operator.timer(due)

    def settle(self, name: str | None = None) -> None:
        """Encode the values added to list state ``name`` (without: every list) with ``add_later``, one batch each."""
        for list_name in [name] if name is not None else list(self.pending):
            codec, values = self.pending.pop(list_name, (None, None))
            if values:
                self.lists.setdefault(list_name, []).extend(codec.encode_all(values))

    def end(self) -> KeyResult:
        self.operator.end()
        self.settle()
        doc = {}
        if self.values:
            doc["v"] = self.values
        if self.lists:
            doc["l"] = self.lists
        times = self.timers.times()
        if times:
            doc["t"] = times
        text = json.dumps(doc, separators=(",", ":"), allow_nan=False) if doc else None
        after = set(times)
        return KeyResult(
            state=text, doc=doc or None, changed=text != self._loaded, outputs=self._outputs,
            timers_added=sorted(after - self._timers_before), timers_removed=sorted(self._timers_before - after),
            records=self._records, timers_fired=self._fired,
        )

    def take_outputs(self) -> list:
        """The outputs so far, handed over (a long run need not hold them all)."""
        out, self._outputs = self._outputs, []
        return out

    # -- used by the operators and the state handles -----------------------------------------------

    def emit(self, kind: str, value) -> None:
        self._outputs.append((kind, self.key, value))

    def current_key(self):
        return self.key[0] if len(self.key) == 1 else self.key

    def register_timer(self, timestamp) -> None:
        if self.spec.event_time is None:
            raise FullWindowError(
                "event-time timers need an event-time column: read the data with "
                "fw.from_files(..., event_time='<timestamp column>')"
            )
        self.timers.register(check_time(timestamp))

    def delete_timer(self, timestamp) -> None:
        self.timers.delete(check_time(timestamp))

    def require_key(self, what: str) -> None:
        if self.key is None:
            raise FullWindowError(f"{what} was used outside process_element and on_timer; there is no current key")


# -- the context a function sees --------------------------------------------------------------------


class TimerService(api_context.TimerService):
    """``ctx.timer_service``: event-time timers of the current key (also callable, as PyFlink's method)."""

    __slots__ = ("_core",)

    def __init__(self, core: KeyedCore):
        self._core = core

    def __call__(self) -> TimerService:
        return self

    def register_event_time_timer(self, timestamp: int) -> None:
        self._core.register_timer(timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._core.delete_timer(timestamp)

    def current_watermark(self) -> int:
        return self._core.watermark

    def current_processing_time(self) -> int:
        return int(time.time() * 1000)

    def register_processing_time_timer(self, timestamp: int) -> None:
        raise FullWindowError(
            "processing-time timers are not supported: their firing would differ between the backlog and "
            "the stream; register an event-time timer (ctx.timer_service.register_event_time_timer)"
        )

    delete_processing_time_timer = register_processing_time_timer


class Context(api_context.Context):
    """``ctx`` of ``process_element`` and ``on_timer``."""

    __slots__ = ("_core", "timer_service")

    def __init__(self, core: KeyedCore):
        self._core = core
        self.timer_service = TimerService(core)

    def timestamp(self) -> int | None:
        """The record's event time (epoch ms); in ``on_timer``, the timer's time."""
        return self._core.timestamp

    def get_current_key(self):
        return self._core.current_key()

    def get_broadcast_state(self, name: str):
        """A broadcast input's state called ``name``, read-only (a ``KeyedBroadcastProcessFunction``'s)."""
        operator = self._core.spec.function
        if not isinstance(operator, BroadcastOperator):
            raise FullWindowError("get_broadcast_state in process_element is for a KeyedBroadcastProcessFunction "
                                  "(a keyed stream connected with stream.broadcast()); operator state of a "
                                  "CheckpointedFunction is got in initialize_state")
        return ReadOnlyBroadcastState(operator.store.get_broadcast_state(name))


class RuntimeContext(api_context.RuntimeContext):
    """``ctx`` of ``open()``: state handles bound to whichever key is current."""

    def __init__(self, core: KeyedCore):
        self._core = core

    def _lookup(self, descriptor, kind: StateKind):
        kind.check_descriptor(descriptor)
        declared = (self._core.spec.states or {}).get(descriptor.name)
        if declared is None or declared[0] != kind or declared[1].ddl != descriptor.type:
            raise FullWindowError(
                f"{kind} state {descriptor.name!r} of type {descriptor.type!r} was not declared when the operator "
                "was defined; open() must ask for the same state every time"
            )
        return codec_for(declared[1], f"{kind} state {descriptor.name!r}")

    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState:
        return ValueState(self._core, descriptor.name, self._lookup(descriptor, StateKind.VALUE))

    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState:
        return ListState(self._core, descriptor.name, self._lookup(descriptor, StateKind.LIST))

    def get_index_of_this_subtask(self) -> int:
        return self._core.subtask


class ValueState(api_state.ValueState):
    """One value per key (Flink's ValueState): ``value()`` is None until ``update``."""

    __slots__ = ("_core", "_name", "_codec")

    def __init__(self, core: KeyedCore, name: str, codec):
        self._core, self._name, self._codec = core, name, codec

    def value(self):
        self._core.require_key(f"value state {self._name!r}")
        stored = self._core.values.get(self._name)
        return None if stored is None else self._codec.decode(stored)

    def update(self, value) -> None:
        self._core.require_key(f"value state {self._name!r}")
        if value is None:
            self._core.values.pop(self._name, None)
        else:
            self._core.values[self._name] = self._codec.encode(value)

    def clear(self) -> None:
        self._core.require_key(f"value state {self._name!r}")
        self._core.values.pop(self._name, None)


class ListState(api_state.ListState):
    """A list of values per key (Flink's ListState): ``get()`` is [] until something is added."""

    __slots__ = ("_core", "_name", "_codec")

    def __init__(self, core: KeyedCore, name: str, codec):
        self._core, self._name, self._codec = core, name, codec

    def get(self) -> list:
        return [self._codec.decode(v) for v in self._stored()]

    def add(self, value) -> None:
        self._stored()
        self._check_element(value)
        self._core.lists.setdefault(self._name, []).append(self._codec.encode(value))

    def add_all(self, values) -> None:
        values = self._elements(values)
        if values:
            self._core.lists.setdefault(self._name, []).extend(values)

    def update(self, values) -> None:
        values = self._elements(values)
        if values:
            self._core.lists[self._name] = values
        else:
            self._core.lists.pop(self._name, None)

    def clear(self) -> None:
        self._stored()
        self._core.lists.pop(self._name, None)

    def _stored(self) -> list:
        """The list's stored (encoded) values, those added with ``add_later`` encoded first."""
        self._core.require_key(f"list state {self._name!r}")
        self._core.settle(self._name)
        return self._core.lists.get(self._name, [])

    # -- for fw-magics' own operators (the interval join), not Flink's ListState API ----------------

    def add_later(self, value) -> None:
        """``add(value)``, its check and encoding done with the others added so, in one batch, when the
        list is next read or the key ends: for values already of the list's type (an input's records),
        where a bad one is fw-magics' error, not a user's line."""
        self._core.require_key(f"list state {self._name!r}")
        self._check_element(value)
        self._core.pending.setdefault(self._name, (self._codec, []))[1].append(value)

    def values_at(self, positions) -> list:
        """The values at ``positions`` (decoded; the others are not)."""
        stored = self._stored()
        return [self._codec.decode(stored[i]) for i in positions]

    def keep_only(self, positions) -> None:
        """Keep the values at ``positions``, in their order, without decoding or checking them again."""
        stored = self._stored()
        kept = [stored[i] for i in positions]
        if kept:
            self._core.lists[self._name] = kept
        else:
            self._core.lists.pop(self._name, None)

    def _elements(self, values) -> list:
        self._stored()  # what add_later added comes first
        if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
            raise FullWindowError(
                f"list state {self._name!r} takes a list of values here; got {type(values).__name__} {values!r:.60}"
            )
        values = list(values)
        for value in values:
            self._check_element(value)
        return self._codec.encode_all(values) if values else []

    def _check_element(self, value) -> None:
        if value is None:
            raise FullWindowError(f"list state {self._name!r} cannot hold None (Flink's ListState refuses it too)")
