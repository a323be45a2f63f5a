"""FLIP-327 with two inputs: an interval join of orders with customer updates over two backlogs (``--only two``).

``records`` orders (k, v, ts) in ``files`` Parquet files, one hour of event time each, and ``updates``
customer updates (k, v, ts) over the same hours in as many files, ``keys`` keys; each order is joined
with its customer's updates of the hour before it (``between(-3,600,000 ms, 0)``). In turns
(``timing.interleaved_medians``):

* ``mixed``: fw-magics' mixed mode, until ``process_all_available()`` returns after the switch (both
  backlogs as one sorted batch, each key's records of both inputs in event-time order, then the stream);
* ``batch``: the backlogs only (the same per-key engine: the fair "batch" for 1.15x);
* ``stream``: stream mode, both backlogs in the first micro-batch (``availableNow``);
* ``stream, 1 file per trigger``: the same with ``maxFilesPerTrigger=1`` on each input, as rate-limited
  deployments run it; with ``quick`` over the first ``quick`` files of each input, scaled to all;
* ``pyspark by hand``: Spark's own batch join, ``orders.join(updates, k = k and ts within the hour)``,
  written to the ``noop`` sink (a JVM join: no Python per record, and no stream to go on in);
* ``naive python``: both inputs read with pyarrow, the updates of each key in a sorted list, each
  order's hour found by bisection (a dict and ``bisect``: no Spark).

Every variant's pair count is checked against the naive one before anything is timed.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from benchmarks.backlog import SCHEMA, _Runner, write_files
from benchmarks.timing import interleaved_medians

VARIANTS = ("mixed", "batch", "stream", "stream, 1 file per trigger", "pyspark by hand", "naive python")
HOUR_MS = 3_600_000


def joined(orders_dir: str, updates_dir: str, max_files=None):
    import fw_magics as fw

    class Pair(fw.ProcessJoinFunction):
        schema = "v long, w long"

        def process_element(self, order, update, ctx):
            return (order.v, update.v)

    orders = fw.from_files(orders_dir, "parquet", SCHEMA, event_time="ts")
    updates = fw.from_files(updates_dir, "parquet", SCHEMA, event_time="ts")
    return orders.key_by("k").interval_join(updates.key_by("k")).between(-HOUR_MS, 0).process(Pair())


def naive(orders_dir: str, updates_dir: str) -> int:
    """Pairs of the interval join in plain Python (pyarrow to read, a dict of sorted lists, bisect)."""
    import bisect

    import pyarrow.parquet as pq

    by_key: dict = {}
    updates = pq.read_table(updates_dir, columns=["k", "ts"])
    for k, ts in zip(updates.column("k").to_pylist(), updates.column("ts").cast("int64").to_pylist()):
        by_key.setdefault(k, []).append(ts)
    for times in by_key.values():
        times.sort()
    pairs = 0
    orders = pq.read_table(orders_dir, columns=["k", "ts"])
    for k, ts in zip(orders.column("k").to_pylist(), orders.column("ts").cast("int64").to_pylist()):
        times = by_key.get(k)
        if times:
            pairs += bisect.bisect_right(times, ts) - bisect.bisect_left(times, ts - HOUR_MS * 1000)
    return pairs


def by_hand(spark, orders_dir: str, updates_dir: str):
    from pyspark.sql import functions as F

    def frame():
        o = spark.read.schema(SCHEMA).parquet(orders_dir).alias("o")
        u = spark.read.schema(SCHEMA).parquet(updates_dir).alias("u")
        return o.join(u, (F.col("o.k") == F.col("u.k")) & (F.col("u.ts") <= F.col("o.ts"))
                      & (F.col("u.ts") >= F.col("o.ts") - F.expr("INTERVAL 1 HOUR")))
    return frame


def run(records: int = 2_000_000, updates: int = 100_000, keys: int = 10_000, files: int = 20, runs: int = 3,
        quick: int | None = None, spark=None) -> dict:
    import fw_magics as fw

    spark = spark or fw.get_spark()
    scratch = tempfile.mkdtemp(prefix="fw-bench-two-")
    try:
        orders_dir, updates_dir = os.path.join(scratch, "orders"), os.path.join(scratch, "updates")
        write_files(orders_dir, records, keys, files)
        write_files(updates_dir, updates, keys, files, seed=8)
        limited = (orders_dir, updates_dir)
        if quick is not None and quick < files:
            limited = tuple(os.path.join(scratch, f"first-{name}") for name in ("orders", "updates"))
            for source, target in zip((orders_dir, updates_dir), limited):
                os.makedirs(target)
                for name in sorted(n for n in os.listdir(source) if n.endswith(".parquet"))[:quick]:
                    shutil.copy2(os.path.join(source, name), target)
        expected = naive(orders_dir, updates_dir)
        hand = by_hand(spark, orders_dir, updates_dir)
        assert hand().count() == expected, "the hand-written join disagrees with the naive one"
        runner = _Runner(os.path.join(scratch, "jobs"))
        stateful = joined(orders_dir, updates_dir)
        check = stateful.start(job_dir=runner.jobs, job_name="check", mode="batch")
        try:
            got = len(check.process_all_available().changelog())
        finally:
            check.stop()
        assert got == expected, f"fw-magics' interval join found {got} pairs, the naive one {expected}"
        variants = {
            "mixed": runner.job(stateful, "mixed", mode="mixed", trigger="100 milliseconds"),
            "batch": runner.job(stateful, "batch", mode="batch"),
            "stream": runner.job(stateful, "stream", mode="stream", trigger="available_now"),
            "stream, 1 file per trigger": runner.job(joined(*limited), "limited", mode="stream",
                                                     trigger="available_now", max_files_per_trigger=1),
            "pyspark by hand": lambda: hand().write.format("noop").mode("overwrite").save(),
            "naive python": lambda: naive(orders_dir, updates_dir),
        }
        medians = interleaved_medians(variants, runs, warmups=1)
        note = ""
        used = len(os.listdir(limited[0]))
        if limited[0] != orders_dir:
            measured = medians["stream, 1 file per trigger"]
            medians["stream, 1 file per trigger"] = measured / used * files
            note = (f"1 file per trigger: measured over the first {used} of {files} files of each input "
                    f"({measured:.1f} s), scaled to {files}")
        mixed = medians["mixed"]
        return {"case": f"interval join, {records:,} orders with {updates:,} updates, {keys:,} keys",
                "pairs": expected, "medians": medians, "note": note,
                "limited_over_mixed": medians["stream, 1 file per trigger"] / mixed,
                "mixed_over_batch": mixed / medians["batch"], "stream_over_mixed": medians["stream"] / mixed}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
