"""PartitionWindowedStream: the four full-window operations on each partition (FLIP-380).

Non-keyed operations keep the input's partitioning: no shuffle, the same number of
partitions, and output partition ``i`` comes only from input partition ``i``.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..functions import Order, as_aggregate_function
from ..schema import nullable, parse_schema
from . import workers
from .arguments import (
    aggregate_columns,
    analysed,
    check_callable,
    describe_sort,
    function_name,
    input_columns,
    result_schema,
    sort_columns,
    sort_specs,
    with_key_column,
    writer_for,
)
from .arrow_calls import map_in_arrow
from .datastream import DataStream
from .layout import partition_keys
from .lineage import Step


class PartitionWindowedStream:
    """All records of each partition as one full window (non-keyed).

    Each operation is a ``transform(frame, partitions)`` of the input DataFrame (kept on
    its Step), so the runtime can apply it to a materialized input as well.
    """

    def __init__(self, stream: DataStream):
        self._in = stream

    def _derive(self, kind: str, label: str, transform, schema, sorter: bool = False, identity=None) -> DataStream:
        """``identity``: what the output depends on besides the graph (fingerprinted by execute())."""
        parent = self._in
        step = Step(
            name=f"{kind}({label})" if label else kind, kind=kind, parallelism=parent.step.parallelism,
            parent=parent.step, output_only_after_end_of_stream=True, internal_sorter_supported=sorter,
            transform=transform, detail={"identity": identity or {}},
        )
        return parent.derive(lambda: transform(parent.to_dataframe(), parent.num_partitions), step, schema,
                             partitions=parent.known_partitions)

    def map_partition(self, fn, schema=None) -> DataStream:
        """Call ``fn(records)`` once per partition; it yields tuples, dicts or records."""
        check_callable(fn, "map_partition")
        spark = self._in.spark
        declared = parse_schema(schema, spark) if schema is not None else None
        out = nullable(declared if declared is not None else self._in.schema)
        writer = writer_for(out, f"map_partition function {function_name(fn)!r}", declared)
        op = functools.partial(workers.map_partition, fn, writer, (), ())
        return self._derive("map_partition", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out,
                            identity={"function": fn, "declared": declared})

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

        return self._derive("sort_partition", label, transform, self._in.schema, sorter=True,
                            identity={"sort": (field, order)})

    def aggregate(self, agg, schema=None) -> DataStream:
        """One record per partition: an fw.AggregateFunction's result, or Spark aggregate Columns."""
        columns = aggregate_columns(agg)
        if columns is not None:
            return self._aggregate_columns(columns)
        agg = as_aggregate_function(agg)
        declared = result_schema(agg, schema, self._in.spark)
        out = nullable(declared)
        writer = writer_for(out, f"{type(agg).__name__}.get_result", declared)
        op = functools.partial(workers.aggregate, agg, writer, (), ())
        used = input_columns(agg, self._in.schema)

        def transform(frame, n):
            return map_in_arrow(frame if used is None else frame.select(*used), op, out)

        return self._derive("aggregate", type(agg).__name__, transform, out,
                            identity={"aggregate": agg, "declared": declared})

    def _aggregate_columns(self, columns: list[Column]) -> DataStream:
        pid = F.spark_partition_id().alias(workers.PID_COLUMN)
        present = F.lit(True).alias("__fw_present")
        _, schema = analysed(lambda: self._in.to_dataframe().groupBy(pid).agg(*columns, present), "aggregate")
        names = [f.name for f in schema.fields[1:-1]]
        out = T.StructType(schema.fields[1:-1])
        spark = self._in.spark

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

        return self._derive("aggregate", ", ".join(names), transform, out, identity={"aggregate": columns})

    def reduce(self, fn) -> DataStream:
        """Fold each partition with ``fn(a, b)``, the first record as the seed; empty -> nothing."""
        check_callable(fn, "reduce")
        out = nullable(self._in.schema)
        writer = writer_for(out, f"reduce function {function_name(fn)!r}")
        op = functools.partial(workers.reduce, fn, writer, (), ())
        return self._derive("reduce", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out,
                            identity={"function": fn})
