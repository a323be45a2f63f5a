"""The changelog's rows as Arrow: the same writers check every output in every mode.

A changelog row is the operator's output columns (a reduce's record; otherwise the key
column(s) then the result columns) plus ``__fw_kind`` ("element" or "timer": what emitted it)
and ``__fw_seq`` (its place among the outputs of its task, which orders a key's rows within a
micro-batch). The backlog engine's results add ``__fw_row`` ("out" or "state") and
``__fw_state`` (a key's state as JSON text): one file per subtask holds both the outputs emitted
during the backlog and the state the stream starts from. The job's changelog on disk adds the
batch it came from (-1 for the backlog).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from ....operators.spec import KeyedOperatorSpec
from ....values.convert import RowWriter

KIND, SEQ, ROW, STATE, BATCH = "__fw_kind", "__fw_seq", "__fw_row", "__fw_state", "__fw_batch"
OUT, STATE_ROW = "out", "state"
#: A key's state once the stream cleared it, where an older layer had some: the newer layer's word wins.
TOMBSTONE = "{}"
BACKLOG_BATCH = -1
RESTORED_BATCH = -2  # a restored job's changelog opens with the savepoint's latest row of each key


def changelog_schema(output: T.StructType) -> T.StructType:
    """What the streaming operator emits: the output columns, then kind and sequence."""
    return T.StructType(list(output.fields) + [T.StructField(KIND, T.StringType()), T.StructField(SEQ, T.LongType())])


def backlog_schema(output: T.StructType) -> T.StructType:
    """What each backlog subtask commits: changelog rows and state rows in one file."""
    return T.StructType(list(changelog_schema(output).fields)
                        + [T.StructField(ROW, T.StringType()), T.StructField(STATE, T.StringType())])


class ChangelogWriter:
    """Turns the core's outputs, ``(kind, key, value)``, and keys' states into Arrow rows."""

    def __init__(self, spec: KeyedOperatorSpec, output: T.StructType):
        from ....values.schema import arrow_schema

        self.spec = spec
        self.records = spec.kind.emits_records  # its outputs are whole records (a reduce's), key columns among them
        key, result = spec.key, spec.output
        self.key_writer = RowWriter(key.arrow_schema, list(key.spark_types), "the key")
        self.result_writer = RowWriter(result.arrow_schema, list(result.spark_types), spec.kind.emitter(spec))
        self.changelog = arrow_schema(changelog_schema(output))
        self.backlog = arrow_schema(backlog_schema(output))
        names = list(output.names)
        self.key_positions = [names.index(n) for n in key.names]
        self.width = len(names)

    def _columns(self, outputs) -> list[pa.Array]:
        values = self.result_writer.batch([value for _, _, value in outputs]).columns
        if self.records:
            return list(values)
        keys = self.key_writer.batch([key for _, key, _ in outputs]).columns
        return list(keys) + list(values)

    def outputs(self, outputs, first_seq: int) -> pa.RecordBatch:
        """Changelog rows (the streaming operator's output)."""
        n = len(outputs)
        columns = self._columns(outputs) + [pa.array([kind for kind, _, _ in outputs], pa.string()),
                                            pa.array(range(first_seq, first_seq + n), pa.int64())]
        return pa.RecordBatch.from_arrays(columns, schema=self.changelog)

    def backlog_outputs(self, outputs, first_seq: int) -> pa.RecordBatch:
        batch = self.outputs(outputs, first_seq)
        n = batch.num_rows
        columns = list(batch.columns) + [pa.array([OUT] * n, pa.string()), pa.nulls(n, pa.string())]
        return pa.RecordBatch.from_arrays(columns, schema=self.backlog)

    def backlog_states(self, states) -> pa.RecordBatch:
        """State rows: ``states`` is a list of (key, state JSON text); only the key columns are set."""
        n = len(states)
        keys = self.key_writer.batch([key for key, _ in states]).columns
        columns = [pa.nulls(n, self.backlog.field(i).type) for i in range(self.width)]
        for position, column in zip(self.key_positions, keys):
            columns[position] = column
        columns += [pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()), pa.array([STATE_ROW] * n, pa.string()),
                    pa.array([text for _, text in states], pa.string())]
        return pa.RecordBatch.from_arrays(columns, schema=self.backlog)
