"""PartitionWindowedStream: the four full-window operations on each partition (FLIP-380).

Non-keyed operations keep the input's partitioning: no shuffle, the same number of
partitions, and output partition ``i`` comes only from input partition ``i``.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..api.functions import Order, as_aggregate_function
from ..values.schema import nullable, parse_schema
from .arguments import (
    aggregate_columns,
    analysed,
    check_batches,
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
from .lineage import Step, Stream
from .physical import workers
from .physical.arrow_calls import map_in_arrow
from .physical.layout import partition_keys


class PartitionWindowedStream:
    """All records of each partition as one full window (non-keyed).

    Each operation is a ``transform(frame, partitions)`` of the input DataFrame (kept on
    its Step), so the runtime can apply it to a materialized input as well.
    """

    def __init__(self, stream: Stream):
        self._in = stream

    def _derive(self, kind: str, label: str, transform, schema, sorter: bool = False, identity=None,
                unplaced=None) -> Stream:
        """``identity``: what the output depends on besides the graph (fingerprinted by execute()).

        ``unplaced``: a cheaper transform giving the same records in the same order but not
        in their partitions, for the reads that do not see partitions (``to_dataframe()``).
        """
        parent = self._in
        step = Step(
            name=f"{kind}({label})" if label else kind, kind=kind, parallelism=parent.step.parallelism,
            parent=parent.step, output_only_after_end_of_stream=True, internal_sorter_supported=sorter,
            transform=transform, detail={"identity": identity or {}},
        )
        placed = lambda: transform(parent.placed_dataframe(), parent.num_partitions)  # noqa: E731
        if unplaced is None:
            return parent.derive(placed, step, schema, partitions=parent.known_partitions)
        return parent.derive(lambda: unplaced(parent.placed_dataframe(), parent.num_partitions), step, schema,
                             partitions=parent.known_partitions, placed=placed)

    def map_partition(self, fn, schema=None, batches: bool = False) -> Stream:
        """Call ``fn(records)`` once per partition; it yields tuples, dicts or records.

        ``batches=True``: ``fn`` receives the partition's ``pyarrow.RecordBatch``es instead
        (lazily, one at a time) and yields ``RecordBatch``es or ``Table``s of the schema.
        """
        check_callable(fn, "map_partition")
        spark = self._in.spark
        declared = parse_schema(schema, spark) if schema is not None else None
        out = nullable(declared if declared is not None else self._in.schema)
        writer = writer_for(out, f"map_partition function {function_name(fn)!r}", declared)
        worker = workers.map_partition_batches if check_batches(batches) else workers.map_partition
        op = functools.partial(worker, fn, writer, (), ())
        identity = {"function": fn, "declared": declared, **({"batches": True} if batches else {})}
        return self._derive("map_partition", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out,
                            identity=identity)

    def sort_partition(self, field, order=Order.ASCENDING) -> Stream:
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
            columns = sort_columns(sort_specs(self._in.schema, field, order, self._in.case_sensitive))

            def transform(frame, n):
                return frame.sortWithinPartitions(*columns)

        return self._derive("sort_partition", label, transform, self._in.schema, sorter=True,
                            identity={"sort": (field, order)})

    def aggregate(self, agg, schema=None) -> Stream:
        """One record per partition: an fw.AggregateFunction's result, or Spark aggregate Columns."""
        columns = aggregate_columns(agg)
        if columns is not None:
            return self._aggregate_columns(columns)
        agg = as_aggregate_function(agg)
        declared = result_schema(agg, schema, self._in.spark)
        out = nullable(declared)
        writer = writer_for(out, f"{type(agg).__name__}.get_result", declared)
        op = functools.partial(workers.aggregate, agg, writer, (), ())
        used = input_columns(agg, self._in.schema, case_sensitive=self._in.case_sensitive)

        def transform(frame, n):
            return map_in_arrow(frame if used is None else frame.select(*used), op, out)

        return self._derive("aggregate", type(agg).__name__, transform, out,
                            identity={"aggregate": agg, "declared": declared})

    def _aggregate_columns(self, columns: list[Column]) -> Stream:
        pid = F.spark_partition_id().alias(workers.PID_COLUMN)
        present = F.lit(True).alias("__fw_present")
        _, schema = analysed(lambda: self._in.to_dataframe().groupBy(pid).agg(*columns, present), "aggregate")
        names = [f.name for f in schema.fields[1:-1]]
        out = T.StructType(schema.fields[1:-1])
        selected = [F.col("`" + name.replace("`", "``") + "`") for name in names]

        def in_one_partition(frame, n: int):
            # Partition i's aggregate tagged with i, every partition's row in ONE partition,
            # in partition order: Spark's own groupBy(spark_partition_id()) (one exchange, as
            # by hand), and a partition with no records gets the aggregate of nothing (count 0,
            # sum null), as Spark's agg does. The defaults are Spark's own aggregate of no rows
            # (a limit(0) is optimized to an empty relation) exploded to the n partition ids;
            # coalesce(1) brings both together without an exchange, so choosing the real row
            # over the default (max_by on the flag) needs none either.
            grouped = frame.groupBy(pid).agg(*columns, present)
            ids = F.sequence(F.lit(0), F.lit(n - 1)) if n else F.array().cast("array<int>")
            defaults = frame.limit(0).agg(*columns, F.lit(False).alias("__fw_present")).select(
                F.explode(ids).alias(workers.PID_COLUMN), "*")
            values = F.struct(*selected)
            best = (grouped.unionByName(defaults).coalesce(1)
                    .groupBy(workers.PID_COLUMN).agg(F.max_by(values, F.col("__fw_present")).alias("__fw_row")))
            return best.select(workers.PID_COLUMN, *[F.col("__fw_row")[name].alias(name) for name in names]) \
                .sortWithinPartitions(workers.PID_COLUMN)

        def transform(frame, partitions):
            # Placed: partition i's row moved to output partition i (one tiny repartition of
            # n rows). What execute(), collect_partitions() and later per-partition operations read.
            n = partitions()
            key = F.element_at(F.lit(list(partition_keys(n))), F.col(workers.PID_COLUMN) + 1)
            return in_one_partition(frame, n).repartition(n, key).select(*selected)

        def unplaced(frame, partitions):
            # The same rows in the same order, left in one partition: what to_dataframe(),
            # collect() and to_pandas() read, where placement is not seen.
            return in_one_partition(frame, partitions()).select(*selected)

        return self._derive("aggregate", ", ".join(names), transform, out, identity={"aggregate": columns},
                            unplaced=unplaced)

    def reduce(self, fn) -> Stream:
        """Fold each partition with ``fn(a, b)``, the first record as the seed; empty -> nothing."""
        check_callable(fn, "reduce")
        out = nullable(self._in.schema)
        writer = writer_for(out, f"reduce function {function_name(fn)!r}")
        op = functools.partial(workers.reduce, fn, writer, (), ())
        return self._derive("reduce", function_name(fn), lambda frame, n: map_in_arrow(frame, op, out), out,
                            identity={"function": fn})
