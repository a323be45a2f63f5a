"""The functions the streaming tests run (importable by Spark's workers: module level, no closures)."""

from __future__ import annotations

import fw_magics as fw

SCHEMA = "k long, v long, ts timestamp"
GAP_MS = 4_000  # a timer this long after each record


def add(a, b):
    """Running sum of v per key, keeping the latest event time (order-insensitive)."""
    return (a.k, a.v + b.v, max(a.ts, b.ts))


class CountSum(fw.AggregateFunction):
    """Count and sum of v: a JSON accumulator [n, total]."""

    schema = "n long, total long"

    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        return [accumulator[0] + 1, accumulator[1] + value.v]

    def get_result(self, accumulator):
        return tuple(accumulator)


class TypedMean(fw.AggregateFunction):
    """Mean of v with a declared (typed) accumulator."""

    schema = "mean double"
    accumulator_schema = "total long, n long"

    def create_accumulator(self):
        return (0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value.v, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]


class Sessions(fw.KeyedProcessFunction):
    """Counts records and sums v per key (typed value state, JSON list state); a timer GAP_MS
    after each record emits (timer, how many values were seen, the timer's time) and clears the list.
    Each record emits (element, running count, running sum)."""

    schema = "what string, n long, at long"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
        self.total = ctx.get_state(fw.ValueStateDescriptor("total"))
        self.seen = ctx.get_list_state(fw.ListStateDescriptor("seen"))

    def process_element(self, record, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.total.update((self.total.value() or 0) + record.v)
        self.seen.add(record.v)
        ctx.timer_service.register_event_time_timer(ctx.timestamp() + GAP_MS)
        yield ("element", self.count.value(), self.total.value())

    def on_timer(self, timestamp, ctx):
        yield ("timer", len(self.seen.get()), timestamp)
        self.seen.clear()


class FailingCountSum(CountSum):
    """CountSum that fails on key 3 while the file ``flag`` exists (a bug fixed between two runs)."""

    def __init__(self, flag: str):
        self.flag = flag

    def add(self, value, accumulator):
        import os

        if value.k == 3 and os.path.exists(self.flag):
            raise ValueError("injected failure on key 3")
        return super().add(value, accumulator)


class FailingOnceOthersCommitted(FailingCountSum):
    """FailingCountSum whose failure on key 3 waits (up to 120 s) until another subtask of the job in ``job``
    committed its result (a sidecar in its ``results`` folder): which subtasks a failed backlog keeps is then
    the failure's doing, not a race between two tasks on a busy machine."""

    def __init__(self, flag: str, job: str):
        super().__init__(flag)
        self.job = job

    def add(self, value, accumulator):
        import glob
        import os
        import time

        if value.k == 3 and os.path.exists(self.flag):
            deadline = time.monotonic() + 120
            while not glob.glob(os.path.join(self.job, "**", "results", "*", "*.json"), recursive=True) \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
        return super().add(value, accumulator)


class HangingCountSum(CountSum):
    """CountSum whose task does not return on key 3 while the file ``flag`` exists (a stuck Python worker):
    only a cancel of the task (its Python worker killed) ends it. The file ``flag.hanging`` says one hangs."""

    def __init__(self, flag: str):
        self.flag = flag

    def add(self, value, accumulator):
        import os
        import time

        if value.k == 3 and os.path.exists(self.flag):
            with open(self.flag + ".hanging", "w"):
                pass
            time.sleep(3600)
        return super().add(value, accumulator)


class Resets(fw.KeyedProcessFunction):
    """Counts records per key in a value state; a record with v == 0 clears the key's state.
    Each record emits (element, the count after it, 0)."""

    schema = "what string, n long, at long"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))

    def process_element(self, record, ctx):
        if record.v == 0:
            self.count.clear()
            yield ("element", 0, 0)
            return
        self.count.update((self.count.value() or 0) + 1)
        yield ("element", self.count.value(), 0)


class Ledger(fw.KeyedCoProcessFunction):
    """Two inputs on one key: the first's records add v (and set a timer GAP_MS later), the second's
    subtract it; each emits (which input, the count of first-input records, the running total, its
    event time) and a timer emits the same with "timer". Its outputs depend on the order records
    meet: event time, then input, in the backlog; micro-batch by micro-batch after it."""

    schema = "what string, n long, total long, at long"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
        self.total = ctx.get_state(fw.ValueStateDescriptor("total"))

    def process_element1(self, record, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.total.update((self.total.value() or 0) + record.v)
        ctx.timer_service.register_event_time_timer(ctx.timestamp() + GAP_MS)
        yield ("in1", self.count.value(), self.total.value(), ctx.timestamp())

    def process_element2(self, record, ctx):
        self.total.update((self.total.value() or 0) - record.w)
        yield ("in2", self.count.value() or 0, self.total.value(), ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield ("timer", self.count.value() or 0, self.total.value() or 0, timestamp)


class Pair(fw.ProcessJoinFunction):
    """An interval join's pair: the left's v, the right's w, both event times."""

    schema = "v long, w long, left_at long, right_at long"

    def process_element(self, left, right, ctx):
        return (left.v, right.w, ctx.get_left_timestamp(), ctx.get_right_timestamp())
