"""The changelog's rows as Arrow: the same writers check every output in every mode.

A changelog row is the operator's output columns (a reduce's record; otherwise the key
column(s) then the result columns) plus ``__fw_kind`` ("element" or "timer": what emitted it)
and ``__fw_seq`` (its place among the outputs of its task, which orders a key's rows within a
micro-batch). The backlog engine's results add ``__fw_row`` ("out" or "state") and
``__fw_state`` (a key's state as JSON text): one file per subtask holds both the outputs emitted
during the backlog and the state the stream starts from; where the function's declared states allow,
their typed columns follow (``typed_states``: set in the state rows, null in the others). The job's
changelog on disk adds the batch it came from (-1 for the backlog).

An interval join with a side output (``side_output_left_late_data()``) adds, after the sequence, each
input's record as a struct (``__fw_in1``, ``__fw_in2``, the tagged row's): a late record's row has the
key, kind ``left_late`` or ``right_late`` and its record there, the result columns null. It is written
with the micro-batch's other rows, under the same commit marker; ``changelog_frame`` leaves it out.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as T

from ....operators.co_process import LATE_KINDS, side_outputs
from ....operators.spec import SIDES, KeyedOperatorSpec
from ....values.convert import RowWriter
from .typed_states import TypedStates

KIND, SEQ, ROW, STATE, BATCH = "__fw_kind", "__fw_seq", "__fw_row", "__fw_state", "__fw_batch"
OUT, STATE_ROW = "out", "state"
#: A key's state once the stream cleared it, where an older layer had some: the newer layer's word wins.
TOMBSTONE = "{}"
BACKLOG_BATCH = -1
RESTORED_BATCH = -2  # a restored job's changelog opens with the savepoint's latest row of each key


def changelog_schema(output: T.StructType, late: tuple = ()) -> T.StructType:
    """What the streaming operator emits: the output columns, then kind and sequence (then ``late``: an
    interval join's side output, ``late_fields``)."""
    return T.StructType(list(output.fields) + [T.StructField(KIND, T.StringType()), T.StructField(SEQ, T.LongType())]
                        + list(late))


def late_fields(spec: KeyedOperatorSpec) -> tuple:
    """The struct columns of an interval join's late records (each input's, as the tagged row holds it), or ()
    for an operator without a side output."""
    if not side_outputs(spec):
        return ()
    types = dict(zip(spec.record.names, spec.record.spark_types))
    return tuple(T.StructField(side, types[side]) for side in SIDES)


def backlog_schema(output: T.StructType) -> T.StructType:
    """What each backlog subtask commits: changelog rows and state rows in one file."""
    return T.StructType(list(changelog_schema(output).fields)
                        + [T.StructField(ROW, T.StringType()), T.StructField(STATE, T.StringType())])


class ChangelogWriter:
    """Turns the core's outputs, ``(kind, key, value)``, and keys' states into Arrow rows."""

    def __init__(self, spec: KeyedOperatorSpec, output: T.StructType, late: bool = False):
        from ....values.schema import arrow_schema

        self.spec = spec
        self.records = spec.kind.emits_records  # its outputs are whole records (a reduce's), key columns among them
        key, result = spec.key, spec.output
        self.key_writer = RowWriter(key.arrow_schema, list(key.spark_types), "the key")
        self.result_writer = RowWriter(result.arrow_schema, list(result.spark_types), spec.kind.emitter(spec))
        self.changelog = arrow_schema(changelog_schema(output))
        self.late = None  # the streaming operator's writer of an interval join with a side output: LateRows
        if late and late_fields(spec):
            self.late = LateRows(self, arrow_schema(changelog_schema(output, late_fields(spec))), late_fields(spec))
        self.typed = TypedStates.of(spec.kind.declared_states(spec))  # None: states read from their JSON only
        self.backlog = arrow_schema(backlog_schema(output))
        if self.typed is not None:
            self.backlog = pa.schema(list(self.backlog) + self.typed.fields)
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
        if self.late is not None:
            return self.late.outputs(outputs, first_seq)
        n = len(outputs)
        columns = self._columns(outputs) + [pa.array([kind for kind, _, _ in outputs], pa.string()),
                                            pa.array(range(first_seq, first_seq + n), pa.int64())]
        return pa.RecordBatch.from_arrays(columns, schema=self.changelog)

    def backlog_outputs(self, outputs, first_seq: int) -> pa.RecordBatch:
        batch = self.outputs(outputs, first_seq)
        n = batch.num_rows
        columns = list(batch.columns) + [pa.array([OUT] * n, pa.string()), pa.nulls(n, pa.string())]
        if self.typed is not None:
            columns += self.typed.nulls(n)
        return pa.RecordBatch.from_arrays(columns, schema=self.backlog)

    def backlog_states(self, states) -> pa.RecordBatch:
        """State rows: ``states`` is a list of (key, state JSON text, the state's document); of the output
        columns only the key columns are set; the typed states (``typed_states``) where the function has them."""
        n = len(states)
        keys = self.key_writer.batch([key for key, _, _ in states]).columns
        columns = [pa.nulls(n, self.backlog.field(i).type) for i in range(self.width)]
        for position, column in zip(self.key_positions, keys):
            columns[position] = column
        columns += [pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()), pa.array([STATE_ROW] * n, pa.string()),
                    pa.array([text for _, text, _ in states], pa.string())]
        if self.typed is not None:
            columns += self.typed.arrays([doc for _, _, doc in states])
        return pa.RecordBatch.from_arrays(columns, schema=self.backlog)


class LateRows:
    """An interval join's changelog rows with its late records (the module docstring): the writer's rows
    with the struct columns null, then the late records' rows."""

    def __init__(self, writer: ChangelogWriter, schema: pa.Schema, fields: tuple):
        from ....values.convert import RowWriter
        from ....values.schema import arrow_schema

        self.writer, self.schema = writer, schema
        self.kinds = dict(zip(LATE_KINDS.values(), SIDES))  # left_late -> the first input's struct column
        self.records = {f.name: RowWriter(arrow_schema(T.StructType([f])), [f.dataType], "a late record")
                        for f in fields}

    def outputs(self, outputs, first_seq: int) -> pa.RecordBatch:
        kept = [o for o in outputs if o[0] not in self.kinds]
        late = [o for o in outputs if o[0] in self.kinds]
        writer, n = self.writer, len(kept)
        columns = writer._columns(kept) + [pa.array([kind for kind, _, _ in kept], pa.string()),
                                           pa.array(range(first_seq, first_seq + n), pa.int64())]
        columns += [pa.nulls(n, self.schema.field(name).type) for name in self.records]
        rows = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        if not late:
            return rows
        m = len(late)
        keyed = [pa.nulls(m, writer.changelog.field(i).type) for i in range(writer.width)]
        for position, column in zip(writer.key_positions, writer.key_writer.batch([k for _, k, _ in late]).columns):
            keyed[position] = column
        keyed += [pa.array([kind for kind, _, _ in late], pa.string()),
                  pa.array(range(first_seq + n, first_seq + n + m), pa.int64())]
        for name, record_writer in self.records.items():
            keyed.append(record_writer.batch([(value if self.kinds[kind] == name else None,)
                                              for kind, _, value in late]).column(0))
        return pa.Table.from_batches([rows, pa.RecordBatch.from_arrays(keyed, schema=self.schema)]) \
            .combine_chunks().to_batches()[0]
