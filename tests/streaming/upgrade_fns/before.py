"""``Visits`` as the savepoint's job ran it: a count (int), the latest value (a record of one field), and a
JSON state that the next version no longer declares."""

from __future__ import annotations

import fw_magics as fw

SCHEMA = "k long, v long, ts timestamp"
OUTPUT = "n long, total long, prev long"


class Visits(fw.KeyedProcessFunction):
    schema = OUTPUT

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "int"))
        self.last = ctx.get_state(fw.ValueStateDescriptor("last", "v long"))
        self.notes = ctx.get_state(fw.ValueStateDescriptor("notes"))

    def process_element(self, record, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.last.update((record.v,))
        self.notes.update({"v": record.v})
        yield (self.count.value(), 0, None)

    def on_timer(self, timestamp, ctx):
        return ()
