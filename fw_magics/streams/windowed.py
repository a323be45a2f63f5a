"""PartitionWindowedStream: the four full-window operations on each partition (FLIP-380).

Non-keyed operations keep the input's partitioning: no shuffle, the same number of
partitions, and output partition ``i`` comes only from input partition ``i``.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..convert import RowWriter
from ..errors import FullWindowError
from ..functions import Order, as_aggregate_function, infer_result_schema
from ..schema import arrow_schema, nullable, parse_schema, require_orderable, resolve_field
from . import workers
from .arrow_calls import map_in_arrow
from .datastream import DataStream
from .layout import partition_keys
from .plan import Step


def writer_for(schema: T.StructType, context: str, declared: T.StructType | None = None) -> RowWriter:
    """A writer of ``schema`` (the nullable output schema Spark is given) that still refuses
    None where ``declared`` (the schema the user wrote) says ``not null``."""
    nulls = None if declared is None else [f.nullable for f in declared.fields]
    return RowWriter(arrow_schema(schema), [f.dataType for f in schema.fields], context, nulls)


def check_callable(fn, what: str) -> None:
    if not callable(fn):
        raise FullWindowError(f"{what} takes a function; got {type(fn).__name__} {fn!r:.60}")


def function_name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def sort_specs(schema: T.StructType, field, order) -> list[tuple[str, Order]]:
    """Resolve one field or a list of fields, with one order or one order per field."""
    fields = list(field) if isinstance(field, (list, tuple)) else [field]
    if not fields:
        raise FullWindowError("sort_partition needs at least one field")
    orders = list(order) if isinstance(order, (list, tuple)) else [order] * len(fields)
    if len(orders) != len(fields):
        raise FullWindowError(f"sort_partition got {len(fields)} fields but {len(orders)} orders")
    specs = []
    for item, direction in zip(fields, orders):
        direction = Order.parse(direction)
        if callable(item):
            raise FullWindowError("a key-selector function must be the only sort field")
        column, dtype = resolve_field(schema, item)
        require_orderable(column, dtype)
        specs.append((column, direction))
    return specs


def sort_columns(specs) -> list[Column]:
    """Spark's order: ascending puts nulls first, descending puts them last."""
    return [F.col(c).asc() if o is Order.ASCENDING else F.col(c).desc() for c, o in specs]


def describe_sort(field, order) -> str:
    if callable(field) and not isinstance(field, (list, tuple)):
        return f"{function_name(field)} {Order.parse(order).value}"
    fields = list(field) if isinstance(field, (list, tuple)) else [field]
    orders = list(order) if isinstance(order, (list, tuple)) else [order] * len(fields)
    return ", ".join(f"{f} {Order.parse(o).value}" for f, o in zip(fields, orders))


def with_key_column(schema: T.StructType) -> T.StructType:
    """The schema plus the binary key column a key selector adds."""
    return T.StructType(nullable(schema).fields + [T.StructField(workers.KEY_COLUMN, T.BinaryType())])


def aggregate_columns(agg) -> list[Column] | None:
    """The Spark aggregate Columns in ``agg``, or None when it is not Columns."""
    if isinstance(agg, Column):
        return [agg]
    if isinstance(agg, (list, tuple)) and agg and all(isinstance(c, Column) for c in agg):
        return list(agg)
    return None


def input_columns(agg, schema: T.StructType, keep=()) -> list[Column] | None:
    """The columns an AggregateFunction declared it reads (plus ``keep``), or None for all."""
    if agg.columns is None:
        return None
    names = [agg.columns] if isinstance(agg.columns, str) else list(agg.columns)
    refs = [resolve_field(schema, name, what=f"{type(agg).__name__}.columns")[0] for name in names]
    return [F.col(c) for c in dict.fromkeys([*keep, *refs])]


def result_schema(agg, schema, spark) -> T.StructType:
    """The result schema as declared (``schema``, ``agg.schema``, or inferred); callers make it nullable."""
    if schema is not None:
        return parse_schema(schema, spark)
    if agg.schema is not None:
        return parse_schema(agg.schema, spark, what=f"{type(agg).__name__}.schema")
    return infer_result_schema(agg)


def analysed(make_frame, what: str):
    """Build and analyse a plan (no job) so a bad column fails now, as one line."""
    try:
        frame = make_frame()
        return frame, frame.schema
    except Exception as error:
        text = str(error).strip()
        first = text.splitlines()[0] if text else type(error).__name__
        raise FullWindowError(f"{what}: {first}") from None


class PartitionWindowedStream:
    """All records of each partition as one full window (non-keyed).

    Each operation is a ``transform(frame, partitions)`` of the input DataFrame (kept on
    its Step), so the runtime can apply it to a materialized input as well.
    """

    def __init__(self, stream: DataStream):
        self._in = stream

    def _derive(self, kind: str, label: str, transform, schema, sorter: bool = False) -> DataStream:
        parent = self._in
        step = Step(
            name=f"{kind}({label})" if label else kind, kind=kind, parallelism=parent._step.parallelism,
            parent=parent._step, output_only_after_end_of_stream=True, internal_sorter_supported=sorter,
            transform=transform,
        )
        out = parent._derive(lambda: transform(parent.to_dataframe(), parent.num_partitions), step, schema)
        out._partitions = parent._partitions
        return out

    def map_partition(self, fn, schema=None) -> DataStream:
        """Call ``fn(records)`` once per partition; it yields tuples, dicts or records."""
        check_callable(fn, "map_partition")
        spark = self._in._spark
        declared = parse_schema(schema, spark) if schema is not None else None
        out = nullable(declared if declared is not None else self._in.schema)
        writer = writer_for(out, f"map_partition function {function_name(fn)!r}", declared)
        op = functools.partial(workers.map_partition, fn, writer, (), ())
        return self._derive("map_partition", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out)

    def sort_partition(self, field, order=Order.ASCENDING) -> DataStream:
        """Sort each partition in the JVM (Spark's external sorter; spills, never collects).

        ``field``: a 0-based position, a column name ("a.b" for nested), a list of those
        (with one order or a list of orders), or a key-selector function of the record.
        Ascending puts nulls first, descending last. The sort is not stable.
        """
        label = describe_sort(field, order)
        if callable(field) and not isinstance(field, (list, tuple)):
            direction = Order.parse(order)
            with_key = with_key_column(self._in.schema)
            add_key = functools.partial(workers.add_key_column, field)

            def transform(frame, n):
                keyed = map_in_arrow(frame, add_key, with_key)
                return keyed.sortWithinPartitions(*sort_columns([(workers.KEY_COLUMN, direction)])).drop(workers.KEY_COLUMN)
        else:
            columns = sort_columns(sort_specs(self._in.schema, field, order))

            def transform(frame, n):
                return frame.sortWithinPartitions(*columns)

        return self._derive("sort_partition", label, transform, self._in.schema, sorter=True)

    def aggregate(self, agg, schema=None) -> DataStream:
        """One record per partition: an fw.AggregateFunction's result, or Spark aggregate Columns."""
        columns = aggregate_columns(agg)
        if columns is not None:
            return self._aggregate_columns(columns)
        agg = as_aggregate_function(agg)
        declared = result_schema(agg, schema, self._in._spark)
        out = nullable(declared)
        writer = writer_for(out, f"{type(agg).__name__}.get_result", declared)
        op = functools.partial(workers.aggregate, agg, writer, (), ())
        used = input_columns(agg, self._in.schema)

        def transform(frame, n):
            return map_in_arrow(frame if used is None else frame.select(*used), op, out)

        return self._derive("aggregate", type(agg).__name__, transform, out)

    def _aggregate_columns(self, columns: list[Column]) -> DataStream:
        pid = F.spark_partition_id().alias(workers.PID_COLUMN)
        present = F.lit(True).alias("__fw_present")
        _, schema = analysed(lambda: self._in.to_dataframe().groupBy(pid).agg(*columns, present), "aggregate")
        names = [f.name for f in schema.fields[1:-1]]
        out = T.StructType(schema.fields[1:-1])
        spark = self._in._spark

        def transform(frame, partitions):
            # Partition i's aggregate goes back to output partition i. A partition with no
            # records gets the aggregate of nothing (count 0, sum null), as Spark's agg does:
            # one default row per partition joins the aggregates, and each target partition
            # keeps the real row when there is one. The defaults are built in the JVM: Spark's
            # own aggregate of no rows (a limit(0) is optimized to an empty relation),
            # crossed with the n partition ids.
            n = partitions()
            grouped = frame.groupBy(pid).agg(*columns, present)
            ids = spark.range(0, n, 1, 1).select(F.col("id").cast("int").alias(workers.PID_COLUMN))
            defaults = ids.crossJoin(frame.limit(0).agg(*columns, F.lit(False).alias("__fw_present")))
            key = F.element_at(F.lit(list(partition_keys(n))), F.col(workers.PID_COLUMN) + 1)
            values = F.struct(*[F.col("`" + name.replace("`", "``") + "`") for name in names])
            placed = grouped.unionByName(defaults).repartition(n, key)
            best = placed.groupBy(key).agg(F.max_by(values, F.col("__fw_present")).alias("__fw_row"))
            return best.select(*[F.col("__fw_row")[name].alias(name) for name in names])

        return self._derive("aggregate", ", ".join(names), transform, out)

    def reduce(self, fn) -> DataStream:
        """Fold each partition with ``fn(a, b)``, the first record as the seed; empty -> nothing."""
        check_callable(fn, "reduce")
        out = nullable(self._in.schema)
        writer = writer_for(out, f"reduce function {function_name(fn)!r}")
        op = functools.partial(workers.reduce, fn, writer, (), ())
        return self._derive("reduce", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out)
