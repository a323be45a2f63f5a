"""The functions the savepoint reader's tests run (importable by Spark's workers: module level)."""

from __future__ import annotations

import fw_magics as fw

SCHEMA = "k long, g string, v long, ts timestamp"
GAP_MS = 86_400_000  # a day: no timer fires in a test, each stays pending


class Tally(fw.KeyedProcessFunction):
    """Per key: a typed value state (count), a record state (the latest v and its time), a JSON value state
    (the greatest v), a typed list state (every v), a timer a day after each record."""

    schema = "n long"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
        self.last = ctx.get_state(fw.ValueStateDescriptor("last", "v long, at timestamp"))
        self.notes = ctx.get_state(fw.ValueStateDescriptor("notes"))
        self.seen = ctx.get_list_state(fw.ListStateDescriptor("seen", "long"))

    def process_element(self, record, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.last.update((record.v, record.ts))
        self.notes.update({"max": max(record.v, (self.notes.value() or {"max": record.v})["max"])})
        self.seen.add(record.v)
        ctx.timer_service.register_event_time_timer(ctx.timestamp() + GAP_MS)
        yield (self.count.value(),)

    def on_timer(self, timestamp, ctx):
        yield (-1,)
