"""Flink's KeyedProcessFunction for fw-magics streams (its state's descriptors are :mod:`.state`'s).

Defining one needs no Spark; the streaming runtime (``fw_magics.runtime.streaming``) runs it, one key
at a time, with the same Python code in every mode (the backlog's batch engine and Spark's
``transformWithState`` alike)::

    class Alerts(fw.KeyedProcessFunction):
        schema = "readings long, last double"            # what it emits, after the key column(s)

        def open(self, ctx):
            self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
            self.temps = ctx.get_list_state(fw.ListStateDescriptor("temps"))   # JSON values

        def process_element(self, record, ctx):
            self.count.update((self.count.value() or 0) + 1)
            self.temps.add(record.temp)
            ctx.timer_service.register_event_time_timer(ctx.timestamp() + 60_000)

        def on_timer(self, timestamp, ctx):
            yield (self.count.value(), self.temps.get()[-1])

    fw.from_files(...).key_by("sensor").process(Alerts()).start()

What the runtime hands the function:

* ``open(ctx)``: ``ctx.get_state(ValueStateDescriptor(...))`` and
  ``ctx.get_list_state(ListStateDescriptor(...))`` give state handles bound to the current key
  (Flink's ``ValueState.value()/update()/clear()``, ``ListState.get()/add()/add_all()/update()/
  clear()``). A handle's values are copies: change the state with ``update``/``add``, as with
  Flink's RocksDB backend.
* ``process_element(record, ctx)`` for each record of the key, in event-time order;
  ``on_timer(timestamp, ctx)`` for each event-time timer the watermark passes, in timestamp
  order. Both may return (or yield) output rows: tuples, dicts, records or one plain value,
  matching ``schema``; each output is emitted after the key column(s).
* ``ctx.timestamp()`` (the record's event time in epoch milliseconds, the timer's time in
  ``on_timer``), ``ctx.get_current_key()`` (one value, or a tuple for several key columns),
  ``ctx.timer_service.register_event_time_timer(ms)``, ``.delete_event_time_timer(ms)`` and
  ``.current_watermark()`` (``MIN_WATERMARK`` while there is none).

State values are never pickled (:mod:`.state` says how they are kept). The types of ``ctx`` and
``ctx.timer_service`` are :mod:`.context`'s; the runtime's per-key core implements them.
"""

from __future__ import annotations

import abc

from .function import Function


class KeyedProcessFunction(Function):
    """A function of a keyed stream with keyed state and event-time timers (Flink's KeyedProcessFunction).

    Override ``process_element`` (required), and ``open``, ``on_timer``, ``close`` as needed;
    set ``schema`` (a DDL string of the output columns, after the key) on the class or pass it
    to ``KeyedStream.process(fn, schema=...)``. See the module docstring for the context.
    """

    schema: str | None = None
    may_keep_operator_state = True

    @abc.abstractmethod
    def process_element(self, record, ctx):
        raise NotImplementedError

    def on_timer(self, timestamp: int, ctx):
        """Called when the watermark passes an event-time timer of the current key."""
        return None
