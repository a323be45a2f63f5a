"""The streaming side: Spark's ``transformWithState`` (the Row API) driving the per-key core.

One generic ``StatefulProcessor`` runs every keyed operator. A key's state is one value
state, ``fw_state`` (the core's JSON text), and its event-time timers are mirrored in Spark's
timer store so that Spark calls back when the watermark passes them; the core decides what
fires (every timer of the key at or before the watermark, earliest first). Per key and
micro-batch: one state read, at most one write, the outputs as changelog rows.

The watermark at the switch (option A of the spike): the fresh stream is
``withWatermark(ts, delay).where(ts > timestamp_millis(W))`` (Spark's late rule is ``ts <=
watermark``), the backlog's state arrives as ``initialState`` with only the timers after W (the
backlog engine fired the rest), and the processor reports ``max(W, Spark's watermark)``. The
one difference from a plain stream: a timer registered after the switch for a time at or
before W fires when Spark's own watermark reaches it, not in the next micro-batch.

Time mode is ``EventTime`` when the source has an event-time column (Spark drops late rows
itself), else ``None``. Spark needs the RocksDB state store for ``transformWithState``
(``STATE_STORE`` below); ``start()`` sets it on the session.
"""

from __future__ import annotations

import datetime as _dt
import json

from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor

from ....operators.co_process import BroadcastOperator, side_outputs
from ....operators.spec import INPUT, KeyedOperatorSpec
from ....values.event_time import effective_watermark
from ....values.records import record_type
from .changelog import STATE, TOMBSTONE, ChangelogWriter, changelog_schema, late_fields
from .core import KeyedCore
from .key_frame import normalized_keys
from .state_counts import PartitionCounts

STATE_STORE = ("spark.sql.streaming.stateStore.providerClass",
               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
STATE_VARIABLE = "fw_state"
#: The tag of a broadcast input's rows (a keyed stream connected with ``stream.broadcast()``): input 2.
BROADCAST_INPUT = 2
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)


def _micros(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return (value - _EPOCH) // _US


class OutputRow(dict):
    """A changelog row as the Row API's output converter wants it (it calls ``asDict``)."""

    __slots__ = ()

    def asDict(self, recursive: bool = False) -> dict:  # noqa: N802 (PySpark's name)
        return self


class KeyedProcessor(StatefulProcessor):
    """The one StatefulProcessor of fw-magics: the per-key core on Spark's keyed state and timers."""

    def __init__(self, spec: KeyedOperatorSpec, output, switch_watermark: int | None, seed=None, operator=None,
                 counts: str | None = None):
        self.spec = spec
        self.counts_folder = counts  # where each task writes the keys its partition gained and lost (state_counts)
        self.counts = None
        self.output = output
        self.switch_watermark = switch_watermark
        self.seed = seed  # a PartitionSeed: keys' handed-over state read on their first fresh record
        self.operator = operator  # a PartitionOperatorState: the function's operator state (CheckpointedFunction)
        self.broadcast = isinstance(spec.function, BroadcastOperator)  # its second input is broadcast
        self.core = None

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_VARIABLE, "state string")
        if self.operator is not None:
            self.operator_variable = self.operator.declare(handle)
        self.seq = 0

    def _ready(self, key) -> KeyedCore:
        if self.core is None:  # in the task, not on the driver's pre-init call
            from pyspark import TaskContext

            context = TaskContext.get()
            self.partition = context.partitionId() if context is not None else 0
            if self.operator is not None:  # initialize_state comes before open(), as in Flink
                self.operator.open(self.handle, self.operator_variable, self.spec.function, self.partition, key)
            self.core = KeyedCore(self.spec, subtask=self.partition)
            if self.counts_folder is not None:
                self.counts = PartitionCounts(self.counts_folder)
            if self.seed is not None:
                self.seed.open(self.partition)
            self.writer = ChangelogWriter(self.spec, self.output, late=True)
            names = tuple(self.spec.record.names)
            self.record_class = record_type(names)
            self.time_index = names.index(self.spec.event_time) if self.spec.event_time is not None else None
            self.input_index = names.index(INPUT) if self.spec.inputs else None
            self.sequence = [names.index(c) for c in self.spec.sequence]
        return self.core

    def _watermark(self, timer_values) -> int:
        spark = timer_values.getCurrentWatermarkInMs() if self.spec.event_time is not None else None
        return effective_watermark(self.switch_watermark, spark)

    def _load(self, key):
        """The key's state text: the store's, else (a key the stream has not written yet) the backlog's."""
        self.key = key
        stored = self.state.get()
        if stored is not None:
            self.loaded = stored[0]
        else:
            self.loaded = self.seed.state(key) if self.seed is not None else None
        return self.loaded

    def _finish(self, expiring: int | None = None):
        result = self.core.end()
        state = result.state
        if state is None and self.loaded is not None and self.seed is not None and self.seed.holds(self.key):
            state = TOMBSTONE  # cleared: the store must say so, or the backlog's state would come back
        if self.counts is not None:
            self.counts.note(self.loaded, state)
        if state != self.loaded:
            if state is None:
                self.state.clear()
            else:
                self.state.update((state,))
        for t in result.timers_added:
            self.handle.registerTimer(t)
        for t in result.timers_removed:
            if t != expiring:  # Spark deletes the timer it is calling back for
                self.handle.deleteTimer(t)
        if not result.outputs:
            return
        batch = self.writer.outputs(result.outputs, self.seq)
        self.seq += batch.num_rows
        for row in batch.to_pylist():
            yield OutputRow(row)

    def handleInitialState(self, key, initialState, timerValues) -> None:  # noqa: N802,N803 (PySpark's names)
        text = initialState[STATE]
        self.state.update((text,))
        for t in json.loads(text).get("t", ()):
            self.handle.registerTimer(t)

    def handleInputRows(self, key, rows, timerValues):  # noqa: N802,N803
        core = self._ready(key)
        cls, index = self.record_class, self.time_index
        records = [tuple.__new__(cls, row) for row in rows]
        if self.input_index is not None:  # two inputs: a carrier row (input 0) only moved its input's watermark
            records = [r for r in records if r[self.input_index]]
            if self.broadcast and records:  # a broadcast record's copy for this partition: not the key's
                records = self._broadcast(records, self._watermark(timerValues))
            if not records:
                return
        if self.sequence:  # the source's order (a table's changes: commit order), not the event time's
            records.sort(key=lambda r: tuple(r[i] for i in self.sequence))
        elif index is not None:  # event-time order within the batch (stable), then (two inputs) the input's
            tag = self.input_index
            records.sort(key=(lambda r: _micros(r[index])) if tag is None else (lambda r: (_micros(r[index]), r[tag])))
        core.begin(key, self._load(key), self._watermark(timerValues))
        for record in records:
            core.element(record, None if index is None else _micros(record[index]) // 1000)
        yield from self._finish()

    def _broadcast(self, records: list, watermark: int) -> list:
        """Apply the broadcast input's records (tag 2) to the partition's broadcast state, in one order every
        partition shares (event time, then the record's values); return the keyed input's."""
        tag, index = self.input_index, self.time_index
        broadcast = [r for r in records if r[tag] == BROADCAST_INPUT]
        if not broadcast:
            return records
        operator = self.core.operator
        values = [(None if index is None else _micros(r[index]) // 1000, operator.value(r, 1)) for r in broadcast]
        values.sort(key=lambda tv: (tv[0] is not None, tv[0] or 0, repr(tuple(tv[1]))))
        for timestamp, value in values:
            self.spec.function.broadcast(value, timestamp, watermark)
        return [r for r in records if r[tag] != BROADCAST_INPUT]

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):  # noqa: N802,N803 (called by keyword)
        core = self._ready(key)
        watermark = self._watermark(timerValues)
        core.begin(key, self._load(key), watermark)
        core.fire(watermark)
        yield from self._finish(expiredTimerInfo.getExpiryTimeInMs())

    def close(self) -> None:
        if self.operator is not None:  # snapshot_state before close(), as a Flink task's last checkpoint
            self.operator.close(self.handle, self.operator_variable)
        if self.core is not None and self.spec.timed:
            self.spec.function.close()
        if self.core is not None and self.seed is not None:
            self.seed.close(self.partition)
        if self.counts is not None:
            self.counts.write(self.partition)


#: The name of the metrics a query observes before it drops records (``progress.observedMetrics``).
OBSERVED = "fw_dropped"


def keyed_query_frame(stream, spec: KeyedOperatorSpec, output, delay_ms: int | None, switch_watermark: int | None,
                      initial=None, seed=None, operator=None, counts: str | None = None):
    """The streaming DataFrame of changelog rows: watermark, late filter, transformWithState.

    Records without an event time, and (mixed mode) those at or before W, are dropped here and
    counted first (``OBSERVED``: ``undated``, ``late``); Spark drops the records late for its own
    watermark itself and counts them (``numRowsDroppedByWatermark``). An interval join with a side output
    (``side_outputs``) judges lateness itself: every dated record reaches it (the event time's column loses
    its watermark mark, which is what Spark's late filter looks for; W's filter is not applied) and the late
    ones come out as changelog rows of their own (``changelog.late_fields``). ``counts``: the folder where
    each task writes the keys its partition gained and lost (``state_counts``), or None."""
    late_output = side_outputs(spec)
    if spec.event_time is not None:
        ts = F.col(spec.event_time)
        w = F.timestamp_millis(F.lit(switch_watermark)) if switch_watermark is not None and not late_output else None
        late = ts <= w if w is not None else F.lit(False)
        if spec.inputs:  # two inputs: a carrier row (input 0, connected_source) is no record
            late = late & (F.col(INPUT) != 0)
        stream = stream.observe(OBSERVED, F.count_if(ts.isNull()).alias("undated"), F.count_if(late).alias("late"))
        if delay_ms is not None:  # None: the stream carries its watermarks (two inputs: one each, ConnectedSource)
            stream = stream.withWatermark(spec.event_time, f"{delay_ms} milliseconds")
        stream = stream.where(ts.isNotNull())
        if late_output:
            stream = stream.withMetadata(spec.event_time, {})
        if w is not None:
            stream = stream.where(ts > w)
    grouped = normalized_keys(stream, spec.key_names).groupBy(*[F.col(k) for k in spec.key_names])
    return grouped.transformWithState(
        KeyedProcessor(spec, output, switch_watermark, seed, operator, counts),
        changelog_schema(output, late_fields(spec)), "Append",
        "EventTime" if spec.event_time is not None else "None",
        initialState=None if initial is None else initial.groupBy(*[F.col(k) for k in spec.key_names]),
    )
