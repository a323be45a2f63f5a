"""The keyed reduce's two sides around its shuffle: combine each partition's records per key, then fold.

A ``ReduceFunction`` is associative (Flink's contract, as Spark's ``reduceByKey`` assumes), so a key's
records can be folded where they are, before the shuffle: each partition sends one partial record per key
(the fold of that key's records in the partition, in their order) instead of every record, tagged with its
partition and the position of its first record. After the shuffle Spark sorts each partition's partials by
key, partition and position, and one Python call per partition (``fold_runs``) folds each key's run in that
order, so a key's result is the fold of its records in the order of the input partitions and, within one, in
their order there: associativity is needed, commutativity is not. The run of a key is found by Python's
``==``, which is why only keys whose Python equality is Spark's are combined (``shuffle_for``).

Where combining saves little (most keys of a partition's first ``SAMPLE`` records seen once), the partition
stops combining and sends its remaining records as they came, Arrow to Arrow, each its own partial (Spark's
partial aggregation skips itself the same way); ``LIMIT`` bounds the partials a partition holds at once (at
the limit they are sent and combining starts again).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...values.convert import RowWriter
from ...values.records import batch_records, record_type
from . import workers

#: The records a partition combines before it judges whether combining pays.
SAMPLE = 16_384
#: Combining stops when the sample's partials are more than this share of its records.
WORTH = 0.5
#: The partials a partition holds at most; at the limit they are sent and combining goes on.
LIMIT = 100_000


class Budget(NamedTuple):
    """When a partition stops combining (``sample``, ``worth``) and how many partials it holds (``limit``):
    read on the driver where the plan is made, so a test can make them small."""

    sample: int
    worth: float
    limit: int


class Shuffle(enum.Enum):
    """What a keyed reduce sends over its shuffle: decided once, where the reduce is planned."""

    PARTIALS = "each partition's records combined per key"
    RECORDS = "every record (a key Python's == cannot be trusted to group as Spark groups it)"


#: Key types whose Python values are equal exactly when Spark's are. Not floats (-0.0 == 0.0 and NaN != NaN
#: in Python), strings with a collation other than binary, nor nested values: a key that Python split but Spark
#: grouped would have two partials of one partition, their records interleaved, folded out of order.
_EXACT = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType, T.BinaryType, T.DateType,
          T.TimestampType, T.TimestampNTZType, T.DecimalType)


def shuffle_for(key_types: Sequence | None) -> Shuffle:
    """PARTIALS when every key column's type groups in Python as in Spark; ``None``: a key-selector's key
    (its encoded bytes)."""
    if key_types is None or all(isinstance(t, _EXACT) or t == T.StringType() for t in key_types):
        return Shuffle.PARTIALS
    return Shuffle.RECORDS


def key_positions(frame, key_columns: Sequence[str]):
    """``frame`` and the positions of its key columns: a top-level column where it is, a nested field (or a
    name Spark needs quoted) appended after the record's columns."""
    names = frame.columns
    positions, extra = [], []
    for reference in key_columns:
        if reference in names:
            positions.append(names.index(reference))
        else:
            positions.append(len(names) + len(extra))
            extra.append(F.col(reference).alias(f"__fw_key{len(extra)}"))
    return (frame.select("*", *extra) if extra else frame), positions


def combine(fn: Callable, writer: RowWriter, keys: Sequence[int], schema: pa.Schema, budget: Budget,
            batches) -> Iterator[pa.RecordBatch]:
    """Map side: each key's records of this partition folded, in their order; yields partial records, then
    their key as it came in (the input's columns at ``keys``), their partition and first record's position."""
    pid = workers.partition_id()
    width = len(writer.names)
    cls = record_type(tuple(writer.names))
    as_record = workers.record_builder(cls, writer)
    one = len(keys) == 1
    folded: dict = {}  # key -> the fold of its records so far
    first: dict = {}  # key -> the position of its first record
    seen = 0
    combining = True

    def sent():
        values = list(folded)
        key_columns = [values] if one else [list(column) for column in zip(*values)]
        arrays = [pa.array(column, type=schema.field(width + i).type) for i, column in enumerate(key_columns)]
        batch = pa.RecordBatch.from_arrays(
            list(writer.batch(list(folded.values())).columns) + arrays
            + [pa.array([pid] * len(values), type=pa.int32()), pa.array(list(first.values()), type=pa.int64())],
            schema=schema)
        folded.clear()
        first.clear()
        return batch

    with workers.relaxed_gc():
        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            if not combining:
                yield _as_partials(batch, width, keys, schema, pid, seen)
                seen += n
                continue
            columns = [batch.column(i).to_pylist() for i in keys]
            records = batch_records(batch.select(range(width)) if batch.num_columns > width else batch)
            for position, key, record in zip(itertools.count(seen), columns[0] if one else zip(*columns), records):
                current = folded.get(key)
                if current is None:
                    folded[key] = record
                    first[key] = position
                else:
                    current = fn(current, record)
                    folded[key] = current if type(current) is cls else as_record(current)
            seen += n
            if len(folded) > budget.worth * seen and seen >= budget.sample:  # little to combine: send as they come
                combining = False
            if not combining or len(folded) >= budget.limit:
                yield sent()
    if folded:
        yield sent()


def _as_partials(batch: pa.RecordBatch, width: int, keys: Sequence[int], schema: pa.Schema, pid: int,
                 first: int) -> pa.RecordBatch:
    """Records as they came, each its own partial: Arrow to Arrow, no Python per record."""
    n = batch.num_rows
    columns = [batch.column(i) for i in range(width)] + [batch.column(i) for i in keys]
    columns = [column if column.type.equals(field.type) else column.cast(field.type)
               for column, field in zip(columns, schema)]
    return pa.RecordBatch.from_arrays(
        columns + [pa.array([pid] * n, type=pa.int32()), pa.array(range(first, first + n), type=pa.int64())],
        schema=schema)


def fold_runs(fn: Callable, writer: RowWriter, keys: int, batches) -> Iterator[pa.RecordBatch]:
    """Reduce side, once per partition: its partials arrive sorted by key, partition and position (Spark sorted
    them), so each key's partials are one run, folded in that order; yields the finished keys' results, a
    batch per input batch (no applyInArrow call, Arrow message or pyarrow call per key)."""
    width = len(writer.names)
    cls = record_type(tuple(writer.names))
    as_record = workers.record_builder(cls, writer)
    one = keys == 1
    key = current = _NO_KEY
    with workers.relaxed_gc():
        for batch in batches:
            if not batch.num_rows:
                continue
            done = []
            columns = [batch.column(width + i).to_pylist() for i in range(keys)]
            records = batch_records(batch.select(range(width)))
            for value, record in zip(columns[0] if one else zip(*columns), records):
                if value == key:
                    current = fn(current, record)
                    if type(current) is not cls:  # the function made a new value (not one of its two records)
                        current = as_record(current)
                else:
                    if current is not _NO_KEY:
                        done.append(current)
                    key, current = value, record
            if done:
                yield writer.batch(done)
    if current is not _NO_KEY:
        yield writer.batch([current])


#: No key seen yet: equal to no key value (a key may be None).
_NO_KEY = object()
