"""``Visits`` changed incompatibly: its count declared as a string (another type), refused."""

from __future__ import annotations

import fw_magics as fw

from .before import OUTPUT


class Visits(fw.KeyedProcessFunction):
    schema = OUTPUT

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "string"))
        self.last = ctx.get_state(fw.ValueStateDescriptor("last", "v long"))
        self.notes = ctx.get_state(fw.ValueStateDescriptor("notes"))

    def process_element(self, record, ctx):
        yield (0, 0, None)

    def on_timer(self, timestamp, ctx):
        return ()
