"""A non-keyed operator on Spark: its subtasks are the keys of ``transformWithState`` (FLIP-8).

docs/architecture.md's "subtask = partition", made checkpointable: the fw_files source tags every row
with ``__fw_subtask``, the source subtask that read it (the owner of its file), and the rows
are grouped by it, so each operator subtask is one key of Spark's state store. Its value
state ``fw_operator`` holds the subtask's operator state as a JSON snapshot, which Spark
checkpoints with every micro-batch and which a savepoint reads back with the state data
source (``spark.read.format("statestore")``), one row per subtask.

Every subtask is also given an ``initialState`` row: ``null`` on a fresh job (so each subtask
initializes in the first micro-batch, records or not, as every Flink subtask does at start)
and its redistributed snapshot on a restore (so each new subtask, even one with no units,
starts restored). ``handleInputRows`` then runs :func:`operator_core.run_subtask` over the
subtask's rows in the order the source read them (``__fw_pos``). Which Spark task runs a
subtask is Spark's choice (its hash of the subtask number): the subtask is the key, not the task.
"""

from __future__ import annotations

import json

from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ....connectors.base import SUBTASK
from ....operators.spec import OperatorSpec
from ....values.convert import RowWriter
from ....values.records import record_type
from ..keyed.changelog import KIND, SEQ, STATE, changelog_schema
from ..keyed.query import OutputRow
from .core import run_subtask

OPERATOR_VARIABLE = "fw_operator"
ELEMENT = "element"
#: A changelog row's ``__fw_seq`` is ``subtask << SEQ_BITS | its place among the subtask's outputs``:
#: ordering by (batch, seq) lists a micro-batch's rows subtask by subtask, each in emission order.
SEQ_BITS = 40


def initial_state_schema() -> T.StructType:
    return T.StructType([T.StructField(SUBTASK, T.IntegerType()), T.StructField(STATE, T.StringType())])


def initial_state_frame(spark, snapshots: list[dict] | None, parallelism: int):
    """One row per subtask: its snapshot's JSON (a restore) or null (a fresh job)."""
    rows = [(i, None if snapshots is None else json.dumps(snapshots[i])) for i in range(parallelism)]
    return spark.createDataFrame(rows, initial_state_schema())


def batch_id() -> int:
    """The micro-batch this task runs for (Spark's local property), the snapshot's checkpoint id."""
    from pyspark import TaskContext

    context = TaskContext.get()
    value = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    return int(value) if value is not None and str(value).isdigit() else 0


class OperatorProcessor(StatefulProcessor):
    """The StatefulProcessor of a non-keyed operator: one key per subtask, its operator state as JSON."""

    def __init__(self, spec: OperatorSpec, output: T.StructType, parallelism: int):
        self.spec = spec
        self.output = output
        self.parallelism = parallelism
        self.writer = None

    def init(self, handle) -> None:
        self.state = handle.getValueState(OPERATOR_VARIABLE, "state string")

    def _ready(self):
        if self.writer is None:  # in the task, not on the driver
            result = self.spec.result
            self.writer = RowWriter(result.arrow_schema, list(result.spark_types),
                                    f"process function {self.spec.label!r}")
            self.record_class = record_type(tuple(self.spec.record.names))
            self.width = len(self.spec.record.names)
        return self.writer

    def _stored(self):
        stored = self.state.get()
        return None if stored is None else stored[0]

    def handleInitialState(self, key, initialState, timerValues) -> None:  # noqa: N802,N803 (PySpark's names)
        subtask = int(key[0])
        text, _ = run_subtask(self.spec, subtask, self.parallelism, initialState[STATE], (), batch_id())
        self.state.update((text,))

    def handleInputRows(self, key, rows, timerValues):  # noqa: N802,N803
        writer = self._ready()
        subtask = int(key[0])
        cls, width = self.record_class, self.width
        ordered = sorted(rows, key=lambda row: row[width + 1])  # __fw_pos (after __fw_subtask): read order
        records = [tuple.__new__(cls, tuple(row)[:width]) for row in ordered]
        text, outputs = run_subtask(self.spec, subtask, self.parallelism, self._stored(), records, batch_id())
        self.state.update((text,))
        if not outputs:
            return
        batch = writer.batch(outputs)
        first = subtask << SEQ_BITS
        for seq, values in enumerate(batch.to_pylist()):
            yield OutputRow(values, **{KIND: ELEMENT, SEQ: first + seq})

    def close(self) -> None:
        pass


def operator_query_frame(stream, spec: OperatorSpec, output: T.StructType, parallelism: int, initial):
    """The streaming DataFrame of the operator's changelog rows (its outputs, kind, seq)."""
    by_subtask = stream.groupBy(F.col(SUBTASK))
    return by_subtask.transformWithState(
        OperatorProcessor(spec, output, parallelism), changelog_schema(output), "Append", "None",
        initialState=initial.groupBy(F.col(SUBTASK)),
    )


__all__ = ["OPERATOR_VARIABLE", "OperatorProcessor", "initial_state_frame", "operator_query_frame"]
