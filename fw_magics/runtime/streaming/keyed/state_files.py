"""Keyed state moved the way Spark moves data: written and re-partitioned by the executors.

No process holds every key. A savepoint's keyed state (over its base) and latest rows are each
written by one Spark task as a Parquet file (``write_parquet``: the driver only renames it and reads
its digest). A restore re-partitions the savepoint's keyed-state file to the new parallelism with
one Spark job (``partition_states``): hash-partitioned on the key exactly as the stream's state partitions,
sorted by key, each partition committed by its task as a backlog-shaped Arrow file with the
runtime's machinery (atomic, checksummed: ``results/restored/``), which the lazy handover
(``seed``) then searches without loading, over the savepoint's base, as it searches a backlog's
files. ``handover_layers`` and ``handed_over`` read whichever files the handover names back as rows,
for Spark (a savepoint's merge, timers' keys).
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import uuid

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....datastream.physical.arrow_calls import map_in_arrow
from ....spark.actions import run_action
from ....values.schema import arrow_schema
from ...batch.result_files import META_SCHEMA, read_results, write_partition
from .backlog import backlog_outputs, initial_state
from .changelog import KIND, ROW, SEQ, STATE, STATE_ROW, backlog_schema
from .seed import merged_state, read_handover

#: The job vertex a restored job's re-partitioned state is committed under (``results/restored/``).
RESTORED_VERTEX = "restored"
#: Spark writes timestamps as INT96 by default; a savepoint's keys keep their type (microseconds, UTC).
_TIMESTAMPS = ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")


def write_parquet(frame, path: str) -> None:
    """``frame`` written by one Spark task as the Parquet file ``path`` (nothing passes through the driver)."""
    spark = frame.sparkSession
    scratch = f"{path}.parts-{uuid.uuid4().hex}"
    before = spark.conf.get(_TIMESTAMPS[0])
    spark.conf.set(*_TIMESTAMPS)
    try:
        run_action(lambda: frame.repartition(1).write.mode("overwrite").parquet(scratch), spark)
    finally:
        spark.conf.set(_TIMESTAMPS[0], before)
    parts = glob.glob(os.path.join(scratch, "part-*.parquet"))
    if len(parts) != 1:
        raise RuntimeError(f"Spark wrote {len(parts)} Parquet files into {scratch}, not one")
    os.replace(parts[0], path)
    shutil.rmtree(scratch, ignore_errors=True)


def _commit(root: str, schema, batches):
    yield from write_partition(root, RESTORED_VERTEX, 1, None, schema, batches)


def partition_states(states, key_names, output: T.StructType, parallelism: int, root: str) -> list[dict]:
    """``states`` (the key columns, ``__fw_state``) re-partitioned by key into ``parallelism`` files,
    each sorted by key and shaped as a backlog's (state rows), committed under ``results/restored/``;
    their records (path, size, sha256), in partition order; none for no state (Spark runs no task)."""
    names = list(key_names)
    keys = [F.col(f"`{n}`") for n in names]
    shape = backlog_schema(output)
    columns = [F.col(f"`{f.name}`") if f.name in names else F.lit(None).cast(f.dataType).alias(f.name)
               for f in shape.fields if f.name not in (KIND, SEQ, ROW, STATE)]
    shaped = states.select(*columns, F.lit(None).cast("string").alias(KIND), F.lit(None).cast("long").alias(SEQ),
                           F.lit(STATE_ROW).alias(ROW), F.col(STATE))
    ordered = shaped.repartition(parallelism, *keys).sortWithinPartitions(*keys)
    task = functools.partial(_commit, root, arrow_schema(shape))
    rows = run_action(lambda: map_in_arrow(ordered, task, META_SCHEMA).collect(), states.sparkSession)
    found = {row["subtask"]: {"path": row["path"], "size": row["size"], "sha256": row["sha256"]} for row in rows}
    missing = [i for i in range(parallelism) if i not in found]
    if missing and found:
        raise RuntimeError(f"re-partitioning the state committed no file for partitions {missing}")
    return [found[i] for i in range(parallelism)] if found else []


def saved_states(spark, path: str, output: T.StructType, key_names):
    """A savepoint's keyed state file as a DataFrame: the key columns (the job's types), ``__fw_state``."""
    schema = T.StructType([output[k] for k in key_names] + [T.StructField(STATE, T.StringType())])
    return spark.read.schema(schema).parquet(path)


def _rows(spark, root: str, files, output: T.StructType):
    return read_results(spark, root, [path for path, _ in files], backlog_schema(output))


def handover_layers(spark, root: str, output: T.StructType, key_names):
    """(the base's state rows, the over layer's or None): key columns, ``__fw_state`` (the over
    layer's tombstones kept), of the files the job's handover names."""
    handed = read_handover(root)
    base = initial_state(_rows(spark, root, handed.base, output), key_names)
    over = initial_state(_rows(spark, root, handed.over, output), key_names) if handed.over else None
    return base, over


def handed_over(spark, root: str, output: T.StructType, key_names):
    """The state rows of the files the job's handover names (key columns, ``__fw_state``): the over
    layer's keys (tombstones dropped), then the base's others."""
    base, over = handover_layers(spark, root, output, key_names)
    return base if over is None else merged_state(over, base, key_names)


def handed_over_outputs(spark, root: str, output: T.StructType):
    """The changelog rows the handover's base files hold (a backlog's outputs; none in re-partitioned
    state), with the changelog's columns."""
    return backlog_outputs(_rows(spark, root, read_handover(root).base, output))
