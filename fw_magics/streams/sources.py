"""Where streams come from: a Spark DataFrame, a pandas DataFrame, or Python records."""

from __future__ import annotations

import functools

import pyarrow as pa
from pyspark.sql import DataFrame

from ..convert import RowWriter
from ..errors import FullWindowError
from ..fingerprint import rows_digest
from ..schema import arrow_schema, parse_schema
from ..session import get_spark
from . import workers
from .datastream import DataStream
from .lineage import Step


def from_dataframe(df, name: str | None = None) -> DataStream:
    """A DataStream over a PySpark DataFrame; its partitions are the subtasks."""
    if not isinstance(df, DataFrame):
        raise FullWindowError(
            f"from_dataframe takes a PySpark DataFrame (classic or Spark Connect); got {type(df).__name__}"
        )
    step = Step(
        name=_name(name, "dataframe"), kind="source", parallelism=None,
        detail={"streaming": bool(df.isStreaming), "source": "dataframe", "identity": {"dataframe": df}},
        transform=lambda _, n: df,
    )
    return DataStream(df, df.sparkSession, step, df.schema)


def from_records(records, schema, partitions: int = 4, name: str | None = None) -> DataStream:
    """A DataStream of Python records (tuples, dicts or records) split into ``partitions``.

    Partition ``i`` holds the ``i``-th contiguous chunk of the records, in order. Every
    record is checked against ``schema`` (a DDL string or StructType) before any job runs.
    """
    _check_partitions(partitions)
    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise FullWindowError(f"from_records takes an iterable of records (tuples, dicts or records); "
                              f"got {type(records).__name__} {records!r:.60}")
    spark = get_spark()
    struct = parse_schema(schema, spark)
    writer = RowWriter(arrow_schema(struct), [f.dataType for f in struct.fields], "from_records")
    rows = list(records)
    table = pa.Table.from_batches([writer.batch(rows)]) if rows else arrow_schema(struct).empty_table()
    return _from_table(spark, table, struct, partitions, _name(name, "records"), "records")


def from_pandas(pdf, partitions: int = 4, name: str | None = None) -> DataStream:
    """A DataStream of a pandas DataFrame's rows, split into ``partitions`` contiguous chunks."""
    import pandas as pd
    from pyspark.sql.pandas.types import from_arrow_schema

    _check_partitions(partitions)
    if not isinstance(pdf, pd.DataFrame):
        raise FullWindowError(f"from_pandas takes a pandas DataFrame; got {type(pdf).__name__}")
    spark = get_spark()
    try:
        table = pa.Table.from_pandas(pdf, preserve_index=False)
        struct = from_arrow_schema(table.schema, prefer_timestamp_ntz=False)
        table = table.cast(arrow_schema(struct))
    except (TypeError, ValueError, pa.ArrowException) as error:
        raise FullWindowError(f"from_pandas cannot convert this DataFrame: {str(error).splitlines()[0]}") from None
    return _from_table(spark, table, struct, partitions, _name(name, "pandas"), "pandas")


def _from_table(spark, table: pa.Table, struct, partitions: int, name: str, source: str) -> DataStream:
    bounds = [len(table) * i // partitions for i in range(partitions + 1)]
    chunks = [_ipc(table.slice(bounds[i], bounds[i + 1] - bounds[i])) for i in range(partitions)]
    frame = spark.range(0, partitions, 1, partitions).mapInArrow(
        functools.partial(workers.emit_chunk, chunks), struct
    )
    step = Step(
        name=name, kind="source", parallelism=partitions,
        detail={"source": source, "rows": len(table), "identity": {"rows": rows_digest(chunks)}},
        transform=lambda _, n: frame,
    )
    return DataStream(frame, spark, step, struct)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _check_partitions(partitions) -> None:
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise FullWindowError(f"partitions must be a positive integer; got {partitions!r}")


def _name(name, default: str) -> str:
    if name is None:
        return default
    if not isinstance(name, str) or not name.strip():
        raise FullWindowError(f"name must be a non-empty string; got {name!r}")
    return name
