"""KeyedStream: full windows per key, over a hash exchange on the key (FLIP-380, keyed)."""

from __future__ import annotations

import functools

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..api.functions import Order, as_aggregate_function
from ..errors import FullWindowError
from ..values.schema import arrow_schema, nullable, parse_schema, resolve_field, resolve_path
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
from .physical import combine, workers
from .physical.arrow_calls import apply_in_arrow, map_in_arrow


class KeyedStream:
    """Records partitioned by key; ``full_window_partition()`` gives one window per key.

    The key is one or more column names ("a.b" for nested fields; matched as Spark matches
    them, ignoring case unless ``spark.sql.caseSensitive``) or a function of the record.
    Records move over a hash exchange into as many partitions as the input has: a count
    fw-magics made, or one the input's plan fixes (``df.repartition(3)``), else
    ``spark.sql.shuffle.partitions``.
    """

    def __init__(self, stream: Stream, key):
        self.stream = stream  # the input
        schema = stream.schema
        if callable(key) and not isinstance(key, (str, list, tuple)):
            self.selector = key
            self.columns = [workers.KEY_COLUMN]
            self.names: list[str] = []
            self.label = function_name(key)
        else:
            keys = list(key) if isinstance(key, (list, tuple)) else [key]
            if not keys or not all(isinstance(k, str) for k in keys):
                raise FullWindowError(
                    f"key_by takes column name(s) or a key-selector function; got {key!r:.60}"
                )
            self.selector = None
            rule = stream.case_sensitive
            paths = [resolve_path(schema, k, what="key", case_sensitive=rule) for k in keys]
            resolved = [resolve_field(schema, k, what="key", case_sensitive=rule) for k in keys]
            self.columns = [column for column, _ in resolved]
            self.names = [path[-1] for path, _ in paths]  # the columns' own names, as Spark's groupBy gives them
            self.key_fields = [T.StructField(n, dtype) for n, (_, dtype) in zip(self.names, resolved)]
            self.label = ", ".join(".".join(path) for path, _ in paths)
        planned = stream.planned_partitions()
        if planned is not None:
            self.parallelism = planned
        else:
            self.parallelism = int(stream.spark.conf.get("spark.sql.shuffle.partitions"))

    def full_window_partition(self) -> KeyedPartitionWindowedStream:
        self.stream.require_bounded("key_by(...).full_window_partition()")
        return KeyedPartitionWindowedStream(self)

    # -- running operators on a stream (fw_magics.datastream.stateful) --------------------------------

    def reduce(self, fn):
        """Flink's running keyed reduce: ``fn(accumulated, record)`` per record; emits the reduced record.

        Returns a StatefulStream; ``start()`` runs it (mixed, stream or batch mode).
        """
        from . import stateful

        return stateful.reduce(self, fn)

    def aggregate(self, agg, schema=None):
        """Flink's running keyed aggregate with an ``fw.AggregateFunction``; emits the key, then ``get_result``."""
        from . import stateful

        return stateful.aggregate(self, agg, schema)

    def process(self, fn, schema=None):
        """Run an ``fw.KeyedProcessFunction`` per key (keyed state, event-time timers); emits the key, then its rows."""
        from . import stateful

        return stateful.process(self, fn, schema)

    def mirror(self):
        """A table's mirror: over a table's change records (``fw.from_table(..., changes=True)``) keyed by its
        primary key, one row per key, the row as the table has it now (a delete removes the key), in every
        mode: ``job.latest()`` is the table's content. Its changelog holds each key's row after each
        micro-batch, and ``kind`` "removed" where a delete took it away."""
        from . import stateful

        return stateful.mirror(self)

    def connect(self, broadcast):
        """Connect with a broadcast stream (``other.broadcast()``): ``.process(fn)`` runs an
        ``fw.KeyedBroadcastProcessFunction`` (docs/state.md, a broadcast input)."""
        from .connected import BroadcastConnectedStream

        return BroadcastConnectedStream(self, broadcast)

    def interval_join(self, other):
        """Flink's interval join with ``other`` (a keyed stream): ``.between(lower_ms, upper_ms).process(join)``."""
        from .connected import IntervalJoin

        return IntervalJoin(self, other)

    def with_key(self, frame):
        """``frame`` with the key column a key-selector function computes (as is for columns)."""
        if self.selector is None:
            return frame
        return map_in_arrow(
            frame, functools.partial(workers.add_key_column, self.selector), with_key_column(self.stream.schema)
        )

    def placed(self, frame, after_grouping: bool = False):
        """``frame`` hash-partitioned on the key into the keyed stream's parallelism.

        After a groupBy on the key, Spark would drop a repartition on the same columns when
        the groupBy's own exchange has as many partitions, leaving that exchange free for
        adaptive execution to coalesce. Hashing ``struct(key...)`` instead is the same hash
        (Spark's murmur3 folds a struct's fields in order, as it folds several columns), so
        rows land where ``repartition(n, key...)`` puts them, and the count is kept.
        """
        columns = [F.col(c) for c in self.columns]
        if after_grouping:
            columns = [F.struct(*columns)]
        return frame.repartition(self.parallelism, *columns)

    def exchanged(self, frame):
        """``frame`` with its key, hash-partitioned on the key."""
        return self.placed(self.with_key(frame))

    @property
    def helper_columns(self) -> tuple[str, ...]:
        return (workers.KEY_COLUMN,) if self.selector is not None else ()


class KeyedPartitionWindowedStream:
    """The four full-window operations, applied once per key.

    Each operation is a ``transform(frame, partitions)`` that includes the hash exchange,
    kept on its Step so the runtime can apply it to a materialized input.
    """

    def __init__(self, keyed: KeyedStream):
        self._keyed = keyed
        self._in = keyed.stream

    def _derive(self, kind: str, label: str, transform, schema, sorter: bool = True, identity=None) -> Stream:
        """``identity``: what the output depends on besides the graph (fingerprinted by execute())."""
        keyed, parent = self._keyed, self._in
        key = keyed.selector if keyed.selector is not None else tuple(keyed.columns)
        step = Step(
            name=f"{kind}({label})" if label else kind, kind=kind, parallelism=keyed.parallelism,
            parent=parent.step, keyed_by=tuple(keyed.names) or (keyed.label,),
            output_only_after_end_of_stream=True, internal_sorter_supported=sorter, transform=transform,
            detail={"identity": {"key": key, **(identity or {})}},
        )
        return parent.derive(lambda: transform(parent.to_dataframe(), parent.num_partitions), step, schema,
                             partitions=keyed.parallelism)

    def _per_key(self, op, out_schema, with_key: bool = False):
        keyed = self._keyed

        def transform(frame, n):
            return apply_in_arrow(keyed.exchanged(frame), keyed.columns, op, with_key, out_schema)

        return transform

    def map_partition(self, fn, schema=None, batches: bool = False) -> Stream:
        """Call ``fn(records)`` once per key with that key's records (``batches=True``: with
        that key's ``pyarrow.RecordBatch``es; it yields batches or tables)."""
        check_callable(fn, "map_partition")
        declared = parse_schema(schema, self._in.spark) if schema is not None else None
        out = nullable(declared if declared is not None else self._in.schema)
        writer = writer_for(out, f"map_partition function {function_name(fn)!r}", declared)
        worker = workers.map_partition_batches if check_batches(batches) else workers.map_partition
        op = functools.partial(worker, fn, writer, self._keyed.helper_columns)
        identity = {"function": fn, "declared": declared, **({"batches": True} if batches else {})}
        return self._derive("map_partition", function_name(fn), self._per_key(op, out), out, identity=identity)

    def sort_partition(self, field, order=Order.ASCENDING) -> Stream:
        """Each key's records as one contiguous group, sorted within it by ``field``."""
        keyed = self._keyed
        key_order = [F.col(c).asc() for c in keyed.columns]
        if callable(field) and not isinstance(field, (list, tuple)):
            if keyed.selector is not None:
                raise FullWindowError(
                    "sort_partition by a key-selector function on a stream keyed by a function is not "
                    "supported; key by column names, or sort by a column"
                )
            direction = Order.parse(order)
            add_key = functools.partial(workers.add_key_column, field)
            with_key = with_key_column(self._in.schema)

            def transform(frame, n):
                frame = map_in_arrow(keyed.exchanged(frame), add_key, with_key)
                frame = frame.sortWithinPartitions(*key_order, *sort_columns([(workers.KEY_COLUMN, direction)]))
                return frame.drop(workers.KEY_COLUMN)
        else:
            columns = sort_columns(sort_specs(self._in.schema, field, order, self._in.case_sensitive))

            def transform(frame, n):
                return keyed.exchanged(frame).sortWithinPartitions(*key_order, *columns).drop(*keyed.helper_columns)

        return self._derive("sort_partition", describe_sort(field, order), transform, self._in.schema,
                            identity={"sort": (field, order)})

    def aggregate(self, agg, schema=None) -> Stream:
        """One record per key: the key columns, then the aggregate's result."""
        keyed = self._keyed
        columns = aggregate_columns(agg)
        if columns is not None:
            def transform(frame, n):
                # Spark's own groupBy combines each partition before its exchange; only the
                # (small) result moves again, to the partition of its key.
                groups = keyed.with_key(frame).groupBy(*[F.col(c) for c in keyed.columns])
                return keyed.placed(groups.agg(*columns), after_grouping=True).drop(*keyed.helper_columns)

            _, out = analysed(lambda: transform(self._in.to_dataframe(), None), "aggregate")
            label = ", ".join(out.names[len(keyed.names):])
            return self._derive("aggregate", label, transform, out, identity={"aggregate": columns})
        agg = as_aggregate_function(agg)
        result = result_schema(agg, schema, self._in.spark)
        key_fields = keyed.key_fields if keyed.selector is None else []
        out = nullable(T.StructType(key_fields + result.fields))
        declared = T.StructType(out.fields[:len(key_fields)] + result.fields)  # keys come from the data
        writer = writer_for(out, f"{type(agg).__name__}.get_result", declared)
        op = functools.partial(workers.aggregate, agg, writer, keyed.helper_columns)
        per_key = self._per_key(op, out, with_key=keyed.selector is None)
        used = None if keyed.selector is not None else input_columns(agg, self._in.schema, keep=keyed.columns,
                                                                      case_sensitive=self._in.case_sensitive)

        def transform(frame, n):
            return per_key(frame if used is None else frame.select(*used), n)

        return self._derive("aggregate", type(agg).__name__, transform, out,
                            identity={"aggregate": agg, "declared": declared})

    def reduce(self, fn) -> Stream:
        """Fold each key's records with ``fn(a, b)``; one record per key."""
        check_callable(fn, "reduce")
        out = nullable(self._in.schema)
        writer = writer_for(out, f"reduce function {function_name(fn)!r}")
        keyed = self._keyed
        key_types = None if keyed.selector is not None else [f.dataType for f in keyed.key_fields]
        if combine.shuffle_for(key_types) is combine.Shuffle.RECORDS:
            op = functools.partial(workers.reduce, fn, writer, keyed.helper_columns)
            return self._derive("reduce", function_name(fn), self._per_key(op, out), out, identity={"function": fn})

        def transform(frame, n):
            # each partition combines its records per key before the shuffle (physical/combine.py), so a
            # key's records cross it once per partition; the partials carry the key as it came in
            frame, positions = combine.key_positions(keyed.with_key(frame), keyed.columns)
            helpers = [f"__fw_key{i}" for i in range(len(positions))]
            schema = T.StructType(out.fields + [T.StructField(h, frame.schema.fields[p].dataType)
                                                for h, p in zip(helpers, positions)] + [
                T.StructField(workers.PID_COLUMN, T.IntegerType()), T.StructField(workers.SEQ_COLUMN, T.LongType())])
            side = functools.partial(combine.combine, fn, writer, positions, arrow_schema(schema),
                                     combine.Budget(combine.SAMPLE, combine.WORTH, combine.LIMIT))
            partials = map_in_arrow(frame, side, schema)
            # after the shuffle Spark sorts each partition's partials by key, partition and position, and one
            # Python call per partition folds each key's run (not one applyInArrow call per key)
            keys = [F.col(h) for h in helpers]
            placed = partials.repartition(keyed.parallelism, *keys).sortWithinPartitions(
                *keys, workers.PID_COLUMN, workers.SEQ_COLUMN)
            return map_in_arrow(placed, functools.partial(combine.fold_runs, fn, writer, len(helpers)), out)

        return self._derive("reduce", function_name(fn), transform, out, identity={"function": fn})
