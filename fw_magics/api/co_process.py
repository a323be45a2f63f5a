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
``fn(left, right)``) returning the rows to emit; ``fw_magics.operators.co_process.IntervalJoinOperator``
runs it as a co-process function (with two list states, cleaned up by event-time timers as Flink's
``IntervalJoinOperator`` does), so it runs in every mode as any co-process function does; a
``KeyedBroadcastProcessFunction`` runs as one too (``BroadcastOperator`` there). How the runtime
sees two inputs (one stream of tagged rows) is ``fw_magics.operators.spec``'s.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping

from ..errors import FullWindowError
from .function import Function

__all__ = ["BroadcastContext", "JoinContext", "KeyedBroadcastProcessFunction", "KeyedCoProcessFunction",
           "ProcessJoinFunction", "ReadOnlyBroadcastState"]


class KeyedCoProcessFunction(Function):
    """A function of two connected keyed streams (Flink's KeyedCoProcessFunction).

    Override ``process_element1`` and ``process_element2`` (records of the first and second
    input), and ``open``, ``on_timer``, ``close`` as needed; both inputs' records of a key see
    the same keyed state and timers, as in ``fw.KeyedProcessFunction`` (its docstring lists the
    context). Set ``schema`` (a DDL string of the output columns after the key) on the class or
    pass it to ``process(fn, schema=...)``.
    """

    schema: str | None = None
    may_keep_operator_state = True

    @abc.abstractmethod
    def process_element1(self, record, ctx):
        raise NotImplementedError

    @abc.abstractmethod
    def process_element2(self, record, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None


class ProcessJoinFunction(Function):
    """What an interval join does with each joined pair (Flink's ProcessJoinFunction).

    ``process_element(left, right, ctx)`` returns or yields the rows to emit (after the key);
    ``ctx.get_left_timestamp()``, ``ctx.get_right_timestamp()`` and ``ctx.timestamp()`` (the
    greater of the two) are the pair's event times in epoch milliseconds.
    """

    schema: str | None = None

    @abc.abstractmethod
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


# -- a keyed stream connected with a broadcast stream -------------------------------------------------


class KeyedBroadcastProcessFunction(Function):
    """A keyed stream connected with a broadcast stream (Flink's ``KeyedBroadcastProcessFunction``)::

        class Limits(fw.KeyedBroadcastProcessFunction):
            schema = "amount double, over boolean"

            def process_broadcast_element(self, rule, ctx):      # every subtask gets every rule
                ctx.get_broadcast_state("limits")[rule.name] = rule.limit

            def process_element(self, order, ctx):               # the keyed input: reads the rules
                limit = ctx.get_broadcast_state("limits").get("default")
                return (order.amount, limit is not None and order.amount > limit)

        orders.key_by("customer").connect(rules.broadcast()).process(Limits())

    ``process_broadcast_element(record, ctx)`` sees no key: it changes the broadcast state
    (``ctx.get_broadcast_state(name)``, a dict of JSON keys and values, FLIP-8's ``BroadcastState``)
    the same way in every subtask, and emits nothing. ``process_element(record, ctx)`` reads it
    (read-only there, as in Flink) beside the key's own state (``open``'s descriptors) and timers.
    Also a ``fw.CheckpointedFunction``, it may keep further operator state.
    """

    schema: str | None = None
    may_keep_operator_state = True

    @abc.abstractmethod
    def process_element(self, record, ctx):
        raise NotImplementedError

    @abc.abstractmethod
    def process_broadcast_element(self, record, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None


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
