"""Non-keyed functions with operator state (FLIP-8) that the operator-state tests run (module level:
Spark's workers import them by reference)."""

from __future__ import annotations

import fw_magics as fw

MODES = {"seen": "split", "count": "split", "origins": "union", "rules": "broadcast"}


class Tally(fw.ProcessFunction, fw.CheckpointedFunction):
    """Every kind of operator state, in a way that leaves restored units where the restore put them.

    ``seen`` (list state): one unit per record, its ``v``; ``count`` (list state): a counter whose
    units are partial counts, folded into one only when the subtask has new records; ``origins``
    (union list state): the index of each subtask of the fresh job, added once; ``rules``
    (broadcast state): the same copy everywhere, set once by every subtask of the fresh job.
    Emits (subtask, restored, v, this subtask's count so far) per record.
    """

    schema = "subtask int, restored boolean, v long, count long"

    def initialize_state(self, ctx):
        self.seen = ctx.get_list_state("seen")
        self.count = ctx.get_list_state("count")
        self.origins = ctx.get_union_list_state("origins")
        self.rules = ctx.get_broadcast_state("rules")
        self.restored = ctx.is_restored()
        self.new = 0
        if not self.restored:
            self.origins.add(ctx.subtask_index)
            self.rules["unit"] = "v"

    def process_element(self, record, ctx):
        self.seen.add(record.v)
        self.new += 1
        return (ctx.subtask_index, self.restored, record.v, sum(self.count.get()) + self.new)

    def snapshot_state(self, ctx):
        if self.new:
            self.count.update([sum(self.count.get()) + self.new])


class BufferingSink(fw.ProcessFunction, fw.CheckpointedFunction):
    """Flink's BufferingSink: buffers values and emits them THRESHOLD at a time; the buffer is list state."""

    schema = "flushed array<long>"
    THRESHOLD = 3

    def initialize_state(self, ctx):
        self.state = ctx.get_list_state("buffered")
        self.buffer = self.state.get() if ctx.is_restored() else []

    def process_element(self, record, ctx):
        self.buffer.append(record.v)
        if len(self.buffer) >= self.THRESHOLD:
            yield (self.buffer,)
            self.buffer = []

    def snapshot_state(self, ctx):
        self.state.update(self.buffer)
