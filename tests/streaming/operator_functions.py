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


KEYED_MODES = {"seen": "split", "origins": "union", "rules": "broadcast"}


class KeyedTally(fw.KeyedProcessFunction, fw.CheckpointedFunction):
    """Operator state inside a keyed operator, beside a keyed counter: ``seen`` (list state) gets one
    ``[k, v]`` unit per record, ``origins`` (union list state) the subtask index once, ``rules`` (broadcast
    state) one entry, both only on a fresh start, so restored units stay where the restore put them.
    Emits (subtask, restored, the key's count so far) per record."""

    schema = "subtask int, restored boolean, n long"

    def initialize_state(self, ctx):
        self.seen = ctx.get_list_state("seen")
        self.origins = ctx.get_union_list_state("origins")
        self.rules = ctx.get_broadcast_state("rules")
        self.restored = ctx.is_restored()
        self.subtask = ctx.subtask_index
        if not self.restored:
            self.origins.add(ctx.subtask_index)
            self.rules["unit"] = "k, v"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))

    def process_element(self, record, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        self.seen.add([record.k, record.v])
        return (self.subtask, self.restored, n)

    def snapshot_state(self, ctx):
        pass  # every change is made in the states themselves


class Handshake(fw.KeyedCoProcessFunction, fw.CheckpointedFunction):
    """Two inputs, one operator state: ``seen`` (list state) gets ``[input, k, v]`` per record of either input."""

    schema = "side int"

    def initialize_state(self, ctx):
        self.seen = ctx.get_list_state("seen")

    def process_element1(self, record, ctx):
        self.seen.add([1, record.k, record.v])
        return (1,)

    def process_element2(self, record, ctx):
        self.seen.add([2, record.key, record.w])
        return (2,)

    def snapshot_state(self, ctx):
        pass


RULES = "name string, limit long"


class Limits(fw.KeyedBroadcastProcessFunction):
    """Rules ``(name, limit)`` broadcast to every subtask (a null limit removes the rule); each keyed record
    emits (its v, the limit of rule "max" or null, whether v is over it) and counts its key."""

    schema = "v long, limit long, over boolean, n long"

    def open(self, ctx):
        self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))

    def process_broadcast_element(self, rule, ctx):
        limits = ctx.get_broadcast_state("limits")
        if rule.limit is None:
            limits.pop(rule.name, None)
        else:
            limits[rule.name] = rule.limit

    def process_element(self, record, ctx):
        limit = ctx.get_broadcast_state("limits").get("max")
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        return (record.v, limit, limit is not None and record.v > limit, n)
