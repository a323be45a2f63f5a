"""Flink's two-input keyed functions: ``KeyedCoProcessFunction``, the interval join, and a keyed stream
connected with a broadcast stream (``KeyedBroadcastProcessFunction``, at the end of this module).

Defining one needs no Spark. ``a.connect(b).key_by("customer", "customer").process(fn)`` runs a
``KeyedCoProcessFunction`` over two keyed inputs that share their keyed state and timers::

    class Enrich(fw.KeyedCoProcessFunction):
        schema = "amount double, tier string"            # what it emits, after the key column(s)

        def open(self, ctx):
            self.tier = ctx.get_state(fw.ValueStateDescriptor("tier", "string"))

        def process_element1(self, order, ctx):           # a record of the first input (orders)
            yield (order.amount, self.tier.value())

        def process_element2(self, customer, ctx):        # a record of the second (customer updates)
            self.tier.update(customer.tier)

``a.key_by("k").interval_join(b.key_by("k")).between(lower_ms, upper_ms).process(fn)`` is Flink's
interval join: each record ``l`` of ``a`` meets each record ``r`` of ``b`` with the same key and
``l.ts + lower <= r.ts <= l.ts + upper``; ``fn`` is a ``ProcessJoinFunction`` (or any
``fn(left, right)``) returning the rows to emit. :class:`IntervalJoinOperator` implements it as a
co-process function with two list states, cleaned up by event-time timers as Flink's
``IntervalJoinOperator`` does, so it runs in every mode as any co-process function does.

How the runtime sees two inputs: one stream of tagged rows, the key column(s), ``INPUT`` (1 or 2),
``TIME`` (the record's event time, when the inputs have one) and one column per input (``SIDES``)
holding the record as a struct (the other input's is null). The per-key core
(``fw_magics.runtime.streaming.keyed.core``) hands each record to ``process_element1`` or ``2`` by its tag.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import FullWindowError
from ..values.event_time import MIN_WATERMARK
from .keyed_process import INPUT, SIDES, TIME, ListStateDescriptor, emitted

__all__ = ["INPUT", "SIDES", "TIME", "BroadcastOperator", "IntervalJoinOperator", "KeyedBroadcastProcessFunction",
           "KeyedCoProcessFunction", "ProcessJoinFunction"]


class KeyedCoProcessFunction:
    """A function of two connected keyed streams (Flink's KeyedCoProcessFunction).

    Override ``process_element1`` and ``process_element2`` (records of the first and second
    input), and ``open``, ``on_timer``, ``close`` as needed; both inputs' records of a key see
    the same keyed state and timers, as in ``fw.KeyedProcessFunction`` (its docstring lists the
    context). Set ``schema`` (a DDL string of the output columns after the key) on the class or
    pass it to ``process(fn, schema=...)``.
    """

    schema: str | None = None

    def open(self, ctx) -> None:
        """Called once per parallel instance before any record: declare the state here."""

    def process_element1(self, value, ctx):
        raise NotImplementedError

    def process_element2(self, value, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None

    def close(self) -> None:
        """Called once per parallel instance after its last record."""


class ProcessJoinFunction:
    """What an interval join does with each joined pair (Flink's ProcessJoinFunction).

    ``process_element(left, right, ctx)`` returns or yields the rows to emit (after the key);
    ``ctx.get_left_timestamp()``, ``ctx.get_right_timestamp()`` and ``ctx.timestamp()`` (the
    greater of the two) are the pair's event times in epoch milliseconds.
    """

    schema: str | None = None

    def process_element(self, left, right, ctx):
        raise NotImplementedError


class JoinContext:
    """``ctx`` of ``ProcessJoinFunction.process_element``."""

    __slots__ = ("_left", "_right", "_key")

    def __init__(self, left: int, right: int, key):
        self._left, self._right, self._key = left, right, key

    def get_left_timestamp(self) -> int:
        return self._left

    def get_right_timestamp(self) -> int:
        return self._right

    def timestamp(self) -> int:
        return max(self._left, self._right)

    def get_current_key(self):
        return self._key


def check_bound(value, what: str) -> int:
    """An interval bound in milliseconds: an int, or a ``datetime.timedelta``; one line otherwise."""
    import datetime as dt

    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(milliseconds=1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FullWindowError(f"interval_join {what} bound {value!r:.60}; accepted: milliseconds as an int "
                              "(negative: before the left record) or a datetime.timedelta")
    return value


class IntervalJoinOperator(KeyedCoProcessFunction):
    """Flink's ``IntervalJoinOperator`` as a co-process function (see the module docstring).

    Each side's records wait in a list state (typed as the input's records: ``left_type``,
    ``right_type``, DDL) beside a JSON list of their event times; a new record is joined with the
    other side's records in its interval (only those are decoded), then kept until the watermark
    passes the last time a record of the other side could still meet it (a timer at that time
    removes it, without decoding the rest). A record before the watermark is late: dropped, as
    Flink drops it.
    """

    def __init__(self, lower: int, upper: int, join, left_type: str, right_type: str):
        self.lower, self.upper, self.join = lower, upper, join
        self.left_type, self.right_type = left_type, right_type
        self.call = join.process_element if isinstance(join, ProcessJoinFunction) else (
            lambda left, right, ctx: join(left, right))

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
        if watermark != MIN_WATERMARK and ts < watermark:
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


class KeyedBroadcastProcessFunction:
    """A keyed stream connected with a broadcast stream (Flink's ``KeyedBroadcastProcessFunction``)::

        class Limits(fw.KeyedBroadcastProcessFunction):
            schema = "amount double, over boolean"

            def process_broadcast_element(self, rule, ctx):      # every subtask gets every rule
                ctx.get_broadcast_state("limits")[rule.name] = rule.limit

            def process_element(self, order, ctx):               # the keyed input: reads the rules
                limit = ctx.get_broadcast_state("limits").get("default")
                return (order.amount, limit is not None and order.amount > limit)

        orders.key_by("customer").connect(rules.broadcast()).process(Limits())

    ``process_broadcast_element(value, ctx)`` sees no key: it changes the broadcast state
    (``ctx.get_broadcast_state(name)``, a dict of JSON keys and values, FLIP-8's ``BroadcastState``)
    the same way in every subtask, and emits nothing. ``process_element(value, ctx)`` reads it
    (read-only there, as in Flink) beside the key's own state (``open``'s descriptors) and timers.
    Also a ``fw.CheckpointedFunction``, it may keep further operator state.
    """

    schema: str | None = None

    def open(self, ctx) -> None:
        """Called once per parallel instance before any record: declare the keyed state here."""

    def process_element(self, value, ctx):
        raise NotImplementedError

    def process_broadcast_element(self, value, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None

    def close(self) -> None:
        """Called once per parallel instance after its last record."""


class ReadOnlyBroadcastState(Mapping):
    """A broadcast state as ``process_element`` sees it: read, never changed (Flink's rule, which keeps
    every subtask's copy equal)."""

    def __init__(self, state):
        self._state = state

    def __getitem__(self, key):
        return self._state[key]

    def __iter__(self):
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def _refuse(self, *args, **kwargs):
        raise FullWindowError(
            f"broadcast state {self._state.name!r} is read-only in process_element (every subtask's copy must stay "
            "the same); change it in process_broadcast_element")

    __setitem__ = __delitem__ = update = pop = clear = setdefault = _refuse

    def __repr__(self) -> str:
        return f"ReadOnly{self._state!r}"


class BroadcastContext:
    """``ctx`` of ``process_broadcast_element``: the broadcast states to change, no key."""

    __slots__ = ("_store", "_timestamp", "_watermark")

    def __init__(self, store, timestamp: int | None, watermark: int):
        self._store, self._timestamp, self._watermark = store, timestamp, watermark

    def get_broadcast_state(self, name: str):
        """The broadcast state called ``name`` (a dict; created empty the first time)."""
        return self._store.get_broadcast_state(name)

    def timestamp(self) -> int | None:
        """The broadcast record's event time (epoch ms), None without event time."""
        return self._timestamp

    def current_watermark(self) -> int:
        return self._watermark

    def get_current_key(self):
        raise FullWindowError("process_broadcast_element has no current key: a broadcast record goes to every "
                              "subtask, not to a key")


class BroadcastOperator(KeyedCoProcessFunction):
    """A ``KeyedBroadcastProcessFunction`` run as fw-magics runs two inputs: the keyed input's records go to
    its ``process_element`` as a co-process function's first input; the broadcast input's records never
    reach a key (the runtime hands each to ``broadcast``, in every state partition). Its operator state
    (the broadcast states, and the function's own if it is also a ``CheckpointedFunction``) is kept per
    state partition (``fw_magics.runtime.streaming.keyed.operator_state``)."""

    def __init__(self, fn: KeyedBroadcastProcessFunction):
        self.fn = fn
        self.schema = fn.schema
        self.store = None

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
