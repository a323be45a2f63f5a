"""``Visits`` changed: its count widened to long, its latest value gains the one before (``prev``, null in
every restored key), a new running total, and the JSON state ``notes`` gone."""

from __future__ import annotations

import fw_magics as fw

from .before import OUTPUT


class Visits(fw.KeyedProcessFunction):
    schema = OUTPUT

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
        self.last = ctx.get_state(fw.ValueStateDescriptor("last", "v long, prev long"))
        self.total = ctx.get_state(fw.ValueStateDescriptor("total", "long"))

    def process_element(self, record, ctx):
        last = self.last.value()
        self.count.update((self.count.value() or 0) + 1)
        self.total.update((self.total.value() or 0) + record.v)
        self.last.update((record.v, None if last is None else last.v))
        yield (self.count.value(), self.total.value(), None if last is None else last.prev)

    def on_timer(self, timestamp, ctx):
        return ()

