"""Code that runs inside Spark's Python workers, one call per partition or per key.

Every function here receives Arrow record batches from Spark (``mapInArrow`` or
``applyInArrow``) and yields Arrow record batches back; records are built lazily one
batch at a time, so memory is bounded by a batch, not by the partition.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from ...errors import FullWindowError
from ...values.convert import RowWriter
from ...values.keycodec import encode_key
from ...values.records import batch_records, batches_records, record_type

KEY_COLUMN = "__fw_key"
PID_COLUMN = "__fw_pid"
SEQ_COLUMN = "__fw_seq"


def partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


#: Python's cyclic GC runs a generation-0 pass every 700 container allocations, and the
#: survivors of those passes (the chunk of output rows being collected, the batch's values)
#: bring on full passes over the worker's whole heap (pyspark, pyarrow, pandas): about a
#: fifth of the per-record path's time, where a hand-written loop over Arrow columns
#: allocates no containers at all. While a per-record operator runs, the threshold is
#: raised to this; cycles are still collected, and the old threshold comes back after.
GC_THRESHOLD = 10_000


@contextlib.contextmanager
def relaxed_gc():
    """The generation-0 GC threshold raised while inside (see GC_THRESHOLD)."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GC_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _drop(batches, columns: Sequence[str]):
    """The batches without helper columns (the key column of a key selector)."""
    if not columns:
        yield from batches
        return
    for batch in batches:
        keep = [i for i, name in enumerate(batch.schema.names) if name not in columns]
        yield batch.select(keep)


# -- non-keyed and keyed operators -------------------------------------------------


def map_partition(fn: Callable, writer: RowWriter, drop: Sequence[str], key_values: tuple, batches) -> Iterator[pa.RecordBatch]:
    """Call ``fn`` once on all records of the partition (or key), feeding it lazily."""
    result = fn(batches_records(_drop(batches, drop)))
    if result is None:
        return
    if isinstance(result, (str, bytes, dict)) or not hasattr(result, "__iter__"):
        raise FullWindowError(
            f"{writer.context} returned {type(result).__name__} {result!r:.60}; it must yield records "
            "(or return a list of them): tuples, dicts or records"
        )
    with relaxed_gc():
        yield from writer.batches(result)


def map_partition_batches(fn: Callable, writer: RowWriter, drop: Sequence[str], key_values: tuple,
                          batches) -> Iterator[pa.RecordBatch]:
    """Call ``fn`` once on the partition's (or key's) Arrow batches; it yields batches or tables."""
    result = fn(_drop(batches, drop))
    if result is None:
        return
    if isinstance(result, (pa.RecordBatch, pa.Table)):
        result = (result,)
    elif isinstance(result, (str, bytes, dict)) or not hasattr(result, "__iter__"):
        raise FullWindowError(
            f"{writer.context} returned {type(result).__name__} {result!r:.60}; with batches=True it must "
            "yield pyarrow.RecordBatch or pyarrow.Table objects (or return one, or a list of them)"
        )
    for item in result:
        yield from writer.conform(item)


def aggregate(agg, writer: RowWriter, drop: Sequence[str], key_values: tuple, batches) -> Iterator[pa.RecordBatch]:
    """One record: ``get_result`` of the accumulator over every record (or batch)."""
    accumulator = agg.create_accumulator()
    add_batch = getattr(agg, "add_batch", None)
    if add_batch is not None:
        for batch in _drop(batches, drop):
            if batch.num_rows:
                accumulator = add_batch(batch, accumulator)
    else:
        add = agg.add
        with relaxed_gc():
            for record in batches_records(_drop(batches, drop)):
                accumulator = add(record, accumulator)
    result = agg.get_result(accumulator)
    if key_values:
        result = tuple(key_values) + _as_values(result, len(writer.names) - len(key_values))
    yield writer.batch([result])


def reduce(fn: Callable, writer: RowWriter, drop: Sequence[str], key_values: tuple, batches) -> Iterator[pa.RecordBatch]:
    """Fold the records pairwise, the first record as the seed; nothing for no records."""
    return fold_records(fn, writer, batches_records(_drop(batches, drop)))


def fold_records(fn: Callable, writer: RowWriter, records) -> Iterator[pa.RecordBatch]:
    """``records`` folded pairwise, the first as the seed, as one batch; nothing for no records."""
    cls = record_type(tuple(writer.names))
    as_record = record_builder(cls, writer)
    records = iter(records)
    current = next(records, None)
    with relaxed_gc():
        for record in records:
            current = fn(current, record)
            if type(current) is not cls:  # the function made a new value (not one of its two records)
                current = as_record(current)
    if current is not None:
        yield writer.batch([current])


def record_builder(cls, writer: RowWriter):
    width = len(writer.names)

    def as_record(value):
        if type(value) is cls:
            return value
        if isinstance(value, (tuple, list)) and len(value) == width:
            return cls(value)  # tuple's own constructor, reached directly (values/records.py)
        return cls(writer.normalize(value))

    return as_record


def _as_values(result, width: int) -> tuple:
    if isinstance(result, dict):
        return tuple(result.values())
    if isinstance(result, (tuple, list)):
        return tuple(result)
    if width == 1:
        return (result,)
    raise FullWindowError(
        f"aggregate's get_result returned {type(result).__name__} {result!r:.60}; "
        f"expected a tuple of {width} values"
    )


def grouped(op: Callable, with_key: bool, names: Sequence[str] | None = None):
    """Adapt ``op(key_values, batches)`` to ``applyInArrow``'s iterator form (type hints required).

    ``names``: the real column names, when the columns came in under stand-ins.
    """

    def per_key(key: tuple[pa.Scalar, ...], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        values = tuple(k.as_py() for k in key) if with_key else ()
        return op(values, batches if names is None else _renamed(names, batches))

    return per_key


def with_names(names: Sequence[str], fn: Callable, batches) -> Iterator[pa.RecordBatch]:
    """Call ``fn`` (a mapInArrow function) on ``batches`` under their real column names."""
    return fn(_renamed(names, batches))


def _renamed(names: Sequence[str], batches) -> Iterator[pa.RecordBatch]:
    schema = None
    for batch in batches:
        if schema is None:
            schema = pa.schema([field.with_name(name) for field, name in zip(batch.schema, names)])
        yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)


# -- helper columns ------------------------------------------------------------------


def add_key_column(selector: Callable, batches) -> Iterator[pa.RecordBatch]:
    """Append the order-preserving encoding of ``selector(record)`` as a binary column."""
    for batch in batches:
        keys = [encode_key(selector(record)) for record in batch_records(batch)]
        yield pa.RecordBatch.from_arrays(
            list(batch.columns) + [pa.array(keys, type=pa.binary())],
            names=batch.schema.names + [KEY_COLUMN],
        )


def tag_partition(marker_schema: pa.Schema, batches) -> Iterator[pa.RecordBatch]:
    """Tag each row with its partition and position; one marker row (seq -1) per partition."""
    pid = partition_id()
    seq = 0
    schema = marker_schema
    for batch in batches:
        n = batch.num_rows
        if n:
            tagged = pa.RecordBatch.from_arrays(
                list(batch.columns)
                + [pa.array([pid] * n, type=pa.int32()), pa.array(range(seq, seq + n), type=pa.int64())],
                names=batch.schema.names + [PID_COLUMN, SEQ_COLUMN],
            )
            schema = tagged.schema  # the marker must match (Spark's time zone in timestamp types)
            yield tagged
            seq += n
    marker = [pa.nulls(1, type=field.type) for field in list(schema)[:-2]]
    yield pa.RecordBatch.from_arrays(
        marker + [pa.array([pid], type=pa.int32()), pa.array([-1], type=pa.int64())], schema=schema
    )


def count_partition(batches) -> Iterator[pa.RecordBatch]:
    """One row per partition, empty or not: its id (to learn the partition count)."""
    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array([partition_id()], type=pa.int32())], names=["p"])


def emit_chunk(chunks: list[bytes], batches) -> Iterator[pa.RecordBatch]:
    """Source: partition i emits the i-th chunk of local records (Arrow IPC bytes)."""
    for batch in batches:
        for index in batch.column(0).to_pylist():
            with pa.ipc.open_stream(chunks[index]) as reader:
                yield from reader
