"""A co-process function over two keyed inputs, and the two built on it: Flink's interval join and a keyed
stream connected with a broadcast stream.

``a.connect(b).key_by(k, k2).process(fn)`` runs an ``fw.KeyedCoProcessFunction``; the interval join
(:class:`IntervalJoinOperator`) and the broadcast input (:class:`BroadcastOperator`) are co-process
functions fw-magics writes around the user's ``ProcessJoinFunction`` or
``KeyedBroadcastProcessFunction``, so all three run as one kind, in every mode. The runtime sees the
two inputs as one stream of tagged rows (``fw_magics.operators.spec``); the per-key core hands each
record to ``process_element1`` or ``2`` by its tag.
"""

from __future__ import annotations

from typing import NamedTuple

from ..api.co_process import (
    BroadcastContext,
    JoinContext,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    ProcessJoinFunction,
)
from ..api.state import ListStateDescriptor
from ..errors import FullWindowError
from ..values.event_time import MIN_WATERMARK, SPAN_MS, within_span
from ..values.records import record_type
from .base import ELEMENT, KeyedKind, Operation, emitted
from .process import ProcessPerKey
from .spec import INPUT, SIDES

#: A late record's kind in the changelog, per side of an interval join that keeps its late records.
LATE_KINDS = {"left": "left_late", "right": "right_late"}


class LateRecord(NamedTuple):
    """What an interval join yields for a late record of a side with a side output (``side``: "left" or
    "right"; ``value``: the record, None for a side without one: counted there, not kept)."""

    side: str
    value: object


def side_outputs(spec) -> tuple:
    """The sides (``"left"``, ``"right"``) whose late records a keyed operator keeps; () for every other."""
    return spec.function.late if isinstance(spec.function, IntervalJoinOperator) else ()


class CoProcessPerKey(ProcessPerKey):
    """A KeyedCoProcessFunction over tagged rows: each record goes to ``process_element1`` or
    ``process_element2`` by its input, as that input's own record."""

    def __init__(self, core):
        super().__init__(core)
        names = core.spec.record.names
        self.tag = names.index(INPUT)
        self.sides = tuple(names.index(side) for side in SIDES)
        self.classes = tuple(record_type(tuple(columns)) for columns in core.spec.inputs)
        self.methods = (self.fn.process_element1, self.fn.process_element2)

    def element(self, record) -> None:
        side = record[self.tag] - 1
        for row in emitted(self.methods[side](self.value(record, side), self.core.context)):
            if type(row) is LateRecord:  # an interval join's late record, for its side output
                self.core.emit(LATE_KINDS[row.side], row.value)
            else:
                self.core.emit(ELEMENT, row)

    def value(self, record, side: int):
        """The record of input ``side`` (0 or 1) a tagged row carries, as that input's record class."""
        value, cls = record[self.sides[side]], self.classes[side]
        if type(value) is not cls:  # a dict or Row (the stream), a record of the struct's class (the backlog)
            value = tuple.__new__(cls, [value[n] for n in cls._fields] if isinstance(value, dict) else value)
        return value


class CoProcess(KeyedKind):
    """Two keyed inputs sharing keyed state and timers; its output is the key, then what the function emits."""

    name = "co_process"
    timed = True
    operations = (
        Operation("co_process", "an fw.KeyedCoProcessFunction instance or class",
                  ("FN: an fw.KeyedCoProcessFunction instance or class", "(a.connect(b).key_by(key, key2).process(FN))"),
                  lambda first, second, key, key2, fn, between: first.connect(second).key_by(key, key2).process(fn),
                  inputs=2),
        Operation("interval_join", "an fw.ProcessJoinFunction instance or class",
                  ("FN: an fw.ProcessJoinFunction instance or class, with --between",
                   "(a.key_by(key).interval_join(b.key_by(key2)).between(LOWER, UPPER).process(FN))"),
                  lambda first, second, key, key2, fn, between:
                  first.key_by(key).interval_join(second.key_by(key2)).between(*between).process(fn),
                  inputs=2, interval=True),
    )

    def emitter(self, spec) -> str:
        return f"co-process function {spec.label!r}"

    def per_key(self, core) -> CoProcessPerKey:
        return CoProcessPerKey(core)

    def declared_states(self, spec) -> dict:
        return dict(spec.states or {})  # what its open() asks for (an interval join's: each side's buffers)




# -- the interval join --------------------------------------------------------------------------------


def check_bound(value, what: str) -> int:
    """An interval bound in milliseconds: an int, or a ``datetime.timedelta``; one line otherwise."""
    import datetime as dt

    if isinstance(value, dt.timedelta):
        ms = value // dt.timedelta(milliseconds=1)
    elif isinstance(value, bool) or not isinstance(value, int):
        raise FullWindowError(f"interval_join {what} bound {value!r:.60}; accepted: milliseconds as an int "
                              "(negative: before the left record) or a datetime.timedelta")
    else:
        ms = value
    if not -SPAN_MS <= ms <= SPAN_MS:
        raise FullWindowError(f"interval_join {what} bound {value!r:.60} reaches beyond Spark's timestamps; "
                              f"{within_span(signed=True)}")
    return ms


class IntervalJoinOperator(KeyedCoProcessFunction):
    """Flink's ``IntervalJoinOperator`` as a co-process function (``fw_magics.api.co_process``'s docstring).

    Each side's records wait in a list state (typed as the input's records: ``left_type``,
    ``right_type``, DDL) beside a JSON list of their event times; a new record is joined with the
    other side's records in its interval (only those are decoded), then kept until the watermark
    passes the last time a record of the other side could still meet it (a timer at that time
    removes it, without decoding the rest). A record before the watermark is late: dropped, as
    Flink drops it. ``late`` (Flink's ``sideOutputLeftLateData``, ``sideOutputRightLateData``): the sides
    whose late records go to a side output; with one, the operator alone judges lateness (the runtime lets
    every record reach it) by the rule of every fw-magics operator, at or before the watermark, and yields
    each late record as a ``LateRecord`` (a side without a side output: its value None, counted).
    """

    def __init__(self, lower: int, upper: int, join, left_type: str, right_type: str, late: tuple = ()):
        self.lower, self.upper, self.join = lower, upper, join
        self.left_type, self.right_type = left_type, right_type
        self.late = tuple(late)
        self.call = join.process_element if isinstance(join, ProcessJoinFunction) else (
            lambda left, right, ctx: join(left, right))

    def content_parts(self) -> tuple:
        """What its output depends on besides its class (the content fingerprint): the interval and the
        user's join function."""
        return (self.lower, self.upper, self.join) + ((self.late,) if self.late else ())

    def descriptors(self) -> list:
        """The states it keeps: each side's records and their event times (JSON ints), in step."""
        return [ListStateDescriptor("left", self.left_type), ListStateDescriptor("right", self.right_type),
                ListStateDescriptor("left_times"), ListStateDescriptor("right_times")]

    def open(self, ctx) -> None:
        left, right, left_times, right_times = (ctx.get_list_state(d) for d in self.descriptors())
        self.sides = {"left": (left, left_times), "right": (right, right_times)}

    def _side(self, value, ctx, ours: str, theirs: str, low: int, high: int):
        ts = ctx.timestamp()
        if ts is None:
            raise FullWindowError("an interval join needs event times: read both inputs with event_time='<column>'")
        watermark = ctx.timer_service.current_watermark()
        if watermark != MIN_WATERMARK and (ts <= watermark if self.late else ts < watermark):
            if self.late:  # a side output: the record (or, for a side without one, its count) is kept
                yield LateRecord(ours, value if ours in self.late else None)
            return  # late: Flink's IntervalJoinOperator drops it
        records, times = self.sides[ours]
        records.add_later(value)  # an input's record: checked and encoded with the key's others, in one batch
        times.add(ts)
        other_records, other_times = self.sides[theirs]
        their_times = other_times.get()
        meet = [i for i, t in enumerate(their_times) if ts + low <= t <= ts + high]
        key = ctx.get_current_key()
        for i, other in zip(meet, other_records.values_at(meet)):
            if ours == "left":
                result = self.call(value, other, JoinContext(ts, their_times[i], key))
            else:
                result = self.call(other, value, JoinContext(their_times[i], ts, key))
            yield from emitted(result)
        ctx.timer_service.register_event_time_timer(ts + high if high > 0 else ts)

    def process_element1(self, value, ctx):
        return self._side(value, ctx, "left", "right", self.lower, self.upper)

    def process_element2(self, value, ctx):
        return self._side(value, ctx, "right", "left", -self.upper, -self.lower)

    def on_timer(self, timestamp: int, ctx):
        """Drop each side's records that no record of the other side can still meet."""
        for side, reach in (("left", self.upper), ("right", -self.lower)):
            records, times = self.sides[side]
            stored = times.get()
            keep = [i for i, t in enumerate(stored) if (t + reach if reach > 0 else t) > timestamp]
            if len(keep) < len(stored):
                records.keep_only(keep)
                times.keep_only(keep)


# -- a keyed stream connected with a broadcast stream -------------------------------------------------


class BroadcastOperator(KeyedCoProcessFunction):
    """A ``KeyedBroadcastProcessFunction`` run as fw-magics runs two inputs: the keyed input's records go to
    its ``process_element`` as a co-process function's first input; the broadcast input's records never
    reach a key (the runtime hands each to ``broadcast``, in every state partition). Its operator state
    (the broadcast states, and the function's own if it is also a ``CheckpointedFunction``) is kept per
    state partition (``fw_magics.runtime.streaming.keyed.operator_state``)."""

    #: The mode of an operator state it keeps without ``initialize_state`` asking for it: the broadcast states
    #: ``process_broadcast_element`` makes by name (``fw.write_savepoint``'s ``operator_state`` takes any name so).
    undeclared_state_mode = "broadcast"

    def __init__(self, fn: KeyedBroadcastProcessFunction):
        self.fn = fn
        self.schema = fn.schema
        self.store = None

    def content_parts(self) -> tuple:
        """What its output depends on besides its class (the content fingerprint): the user's function."""
        return (self.fn,)

    def initialize_state(self, ctx) -> None:
        self.store = ctx.operator_state_store
        if callable(getattr(self.fn, "initialize_state", None)):
            self.fn.initialize_state(ctx)

    def snapshot_state(self, ctx) -> None:
        if callable(getattr(self.fn, "snapshot_state", None)):
            self.fn.snapshot_state(ctx)

    def open(self, ctx) -> None:
        self.fn.open(ctx)

    def process_element1(self, value, ctx):
        return self.fn.process_element(value, ctx)

    def broadcast(self, value, timestamp: int | None, watermark: int) -> None:
        """One broadcast record, in this subtask; what it returned must be nothing."""
        out = list(emitted(self.fn.process_broadcast_element(value, BroadcastContext(self.store, timestamp,
                                                                                     watermark))))
        if out:
            raise FullWindowError(
                f"{type(self.fn).__name__}.process_broadcast_element returned {out[0]!r:.60}; accepted: nothing (it "
                "changes the broadcast state; process_element emits)")

    def on_timer(self, timestamp: int, ctx):
        return self.fn.on_timer(timestamp, ctx)

    def close(self) -> None:
        self.fn.close()
