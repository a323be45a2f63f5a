"""Reading keyed state as typed columns (issue 50, item 1) against ``spark.read.parquet`` of the same rows.

``python -m benchmarks --only state_read [--keys 1000000] [--runs R]``. A keyed-state file of N keys (the
per-key core's JSON: a typed long, a record, a list of longs) written by Spark, read by the savepoint
reader's ``keyed_state()`` (JSON decoded to typed columns in Spark tasks) and, as the reference, the
same rows already typed read by ``spark.read.parquet``; each run writes to Spark's ``noop`` sink (every
row produced, nothing kept). The base layering (a join) is not in it: a savepoint here has no base.
"""

from __future__ import annotations

import os
import tempfile

from benchmarks.timing import interleaved_medians

DECLARED = {"count": ("value", "long"), "last": ("value", "v long, at timestamp"), "seen": ("list", "long")}


def _declared(spark) -> dict:
    from fw_magics.api.state import StateKind
    from fw_magics.datastream.stateful import parse_state_type

    return {name: (StateKind(kind), parse_state_type(spark, ddl, name, name)) for name, (kind, ddl) in DECLARED.items()}


def run(keys: int, runs: int) -> dict:
    from pyspark.sql import functions as F

    import fw_magics as fw
    from fw_magics.runtime.streaming.savepoints.reader import SavepointReader

    spark = fw.get_spark()
    folder = tempfile.mkdtemp(prefix="fw-state-read-")
    states, typed = os.path.join(folder, "states"), os.path.join(folder, "typed")
    base = spark.range(keys).withColumnRenamed("id", "k")
    at = F.lit(1_700_000_000_000_000) + F.col("k")
    text = F.to_json(F.struct(F.struct(F.col("k").alias("count"), F.array(F.col("k"), at).alias("last")).alias("v"),
                              F.struct(F.array(F.col("k"), F.col("k") + 1).alias("seen")).alias("l")))
    base.select("k", text.alias("__fw_state")).write.mode("overwrite").parquet(states)
    base.select("k", F.col("k").alias("count"),
                F.struct(F.col("k").alias("v"), F.timestamp_micros(at).alias("at")).alias("last"),
                F.array(F.col("k"), F.col("k") + 1).alias("seen")).write.mode("overwrite").parquet(typed)
    reader = SavepointReader({"kind": "process", "key_names": ["k"], "job": "bench"}, {}, {}, _declared(spark),
                             lambda: spark.read.parquet(states), folder, [], spark)
    medians = interleaved_medians({
        "keyed_state()": lambda: reader.keyed_state().write.format("noop").mode("overwrite").save(),
        "spark.read.parquet": lambda: spark.read.parquet(typed).write.format("noop").mode("overwrite").save(),
    }, runs, warmups=1)
    return {"keys": keys, "medians": medians}


def print_table(result: dict) -> None:
    m = result["medians"]
    ours, reference = m["keyed_state()"], m["spark.read.parquet"]
    print("\n| keys | keyed_state() | spark.read.parquet of the same typed rows | ratio |")
    print("|---|---|---|---|")
    print(f"| {result['keys']:,} | {ours:.2f} s | {reference:.2f} s | {ours / reference:.2f}x |")
