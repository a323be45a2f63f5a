"""execute() with recovery against the same pipeline written straight to Parquet.

The pipeline has three job vertices: the input sorted in each partition, a keyed Spark
aggregate, and a keyed Python reduce. Measured in one run on the embedded Spark:

* a clean ``execute()`` (results committed per subtask, events logged) versus plain
  PySpark computing the same and writing Parquet, and versus plain PySpark writing each
  job vertex's result as Parquet for the next to read (what a blocking edge costs when
  written by hand, without per-subtask commits, checksums or events). Plain PySpark picks
  the best record per bucket with a JVM ``max_by`` where the stream runs a Python
  ``reduce``; so the same two references are also timed with fw-magics' own operators:
  the very stream as one Spark job to Parquet (the operators' cost, no recovery), and its
  job vertices staged through Parquet by hand (execute()'s materialization without
  commits, checksums or events): execute() over that is the recovery tax itself;
* a resume after the driver died during the last job vertex, versus that vertex's share
  of a clean run;
* the time the driver spent writing and flushing events, as a share of the job.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time


def _pipeline(fw, F, df):
    ds = fw.from_dataframe(df, name="bench")
    sorted_ = ds.full_window_partition().sort_partition("price")
    per_key = sorted_.key_by("key").full_window_partition().aggregate(
        [F.sum("price").alias("revenue"), F.count("*").alias("n"), F.first("bucket").alias("bucket")])

    def larger(a, b):
        return a if a.revenue >= b.revenue else b

    return per_key.key_by("bucket").full_window_partition().reduce(larger)


def _per_key(F, sorted_):
    return sorted_.groupBy("key").agg(
        F.sum("price").alias("revenue"), F.count("*").alias("n"), F.first("bucket").alias("bucket"))


def _best(F, per_key):
    best = per_key.groupBy("bucket").agg(F.max_by(F.struct("key", "revenue", "n", "bucket"), "revenue").alias("b"))
    return best.select("b.*")


def _plain(F, df, path):
    _best(F, _per_key(F, df.sortWithinPartitions("price"))).write.mode("overwrite").parquet(path)


def _staged(F, df, path):
    """Plain PySpark materializing each job vertex's result as Parquet, read by the next."""
    spark = df.sparkSession
    df.sortWithinPartitions("price").write.mode("overwrite").parquet(f"{path}/v0")
    _per_key(F, spark.read.parquet(f"{path}/v0")).write.mode("overwrite").parquet(f"{path}/v1")
    _best(F, spark.read.parquet(f"{path}/v1")).write.mode("overwrite").parquet(f"{path}/v2")


def _same_stream(stream, path):
    """The very stream execute() runs, as one Spark job straight to Parquet: no results
    materialized, nothing committed, no events (the operators' own cost)."""
    stream.to_dataframe().write.mode("overwrite").parquet(path)


def _same_vertices_staged(fw, F, df, path):
    """The stream's three job vertices built with fw-magics' operators, each written to
    Parquet by Spark and read back by the next: execute()'s materialization by hand,
    without per-subtask commits, checksums or events."""
    spark = df.sparkSession
    sorted_ = fw.from_dataframe(df, name="bench").full_window_partition().sort_partition("price")
    sorted_.to_dataframe().write.mode("overwrite").parquet(f"{path}/v0")
    v0 = fw.from_dataframe(spark.read.parquet(f"{path}/v0"), name="v0")
    per_key = v0.key_by("key").full_window_partition().aggregate(
        [F.sum("price").alias("revenue"), F.count("*").alias("n"), F.first("bucket").alias("bucket")])
    per_key.to_dataframe().write.mode("overwrite").parquet(f"{path}/v1")
    v1 = fw.from_dataframe(spark.read.parquet(f"{path}/v1"), name="v1")

    def larger(a, b):
        return a if a.revenue >= b.revenue else b

    v1.key_by("bucket").full_window_partition().reduce(larger).to_dataframe().write.mode("overwrite").parquet(
        f"{path}/v2")


class _EventClock:
    """Accumulates the driver's time inside JobEventStore.write_event and flush."""

    def __init__(self):
        from fw_magics.recovery.event_store import JobEventStore

        self.cls, self.spent = JobEventStore, 0.0
        self.originals = {name: getattr(JobEventStore, name) for name in ("write_event", "flush")}
        for name, original in self.originals.items():
            setattr(JobEventStore, name, self._timed(original))

    def _timed(self, original):
        def timed(store, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original(store, *args, **kwargs)
            finally:
                self.spent += time.perf_counter() - started

        return timed

    def close(self):
        for name, original in self.originals.items():
            setattr(self.cls, name, original)


def _truncate_to_before_last_vertex(job_path: str, last: str) -> None:
    """Leave the job as a driver killed while ``last`` ran would: no events or results of it."""
    from fw_magics.recovery.event_store import JobEventStore, encode

    store = JobEventStore(f"{job_path}/events")
    events = store.read_events()
    keep = []
    for event in events:
        if event.get("vertex") == last and event["type"] == "subtask_finished" or event["type"] == "job_finished":
            break
        keep.append(event)
    shutil.rmtree(f"{job_path}/events")
    shutil.rmtree(f"{job_path}/results/{last}", ignore_errors=True)
    import os

    os.makedirs(f"{job_path}/events")
    with open(f"{job_path}/events/events.0", "wb") as f:
        f.write(b"".join(encode(e) for e in keep))


def _hash_rate() -> float:
    """This machine's SHA-256 rate in bytes per CPU second (64 MiB, best of 3)."""
    import hashlib
    import os

    data = os.urandom(64 << 20)
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        hashlib.sha256(data).digest()
        best = min(best, time.process_time() - started)
    return len(data) / max(best, 1e-9)


def _breakdown(ui, clock, fw, F, df, stream, work: str) -> list[str]:
    """Where one more clean execute() spends its time, next to one more hand-staged run.

    Spark's stages and Python workers from the UI REST API (as ``--only fullwindow``
    prints them); the bytes each job vertex committed and the tasks' time writing them
    (the sidecars' ``duration``: computing the partition and writing it, hash included);
    the SHA-256 share estimated from those bytes at this machine's rate; the driver's
    time writing events; and the rest of the driver's time (planning, fingerprints,
    commits and checks between the Spark jobs).
    """
    import json
    import os

    lines = []
    clock.spent = 0.0
    ours = ui.measure(lambda: fw.execute(stream, job_dir=work, job_name="breakdown"))
    staged = ui.measure(lambda: _staged(F, df, f"{work}/staged-breakdown"))
    lines.append(f"execute(): {ours.line()}")
    lines.append(f"hand-staged through Parquet: {staged.line()}")
    rate = _hash_rate()
    total_bytes = 0
    for vertex in sorted(os.listdir(f"{work}/breakdown/results")):
        metas = []
        folder = f"{work}/breakdown/results/{vertex}"
        for name in os.listdir(folder):
            if name.endswith(".json"):
                with open(f"{folder}/{name}") as f:
                    metas.append(json.load(f))
        size = sum(m["size"] for m in metas)
        total_bytes += size
        lines.append(f"  {vertex}: {len(metas)} subtasks committed {sum(m['records'] for m in metas):,} records, "
                     f"{size / 2**20:.1f} MiB; tasks' time computing and writing {sum(m['duration'] for m in metas):.2f} s "
                     f"(SHA-256 of it ~{size / rate:.3f} s CPU)")
    lines.append(f"  SHA-256 of every committed byte: ~{total_bytes / rate:.3f} s CPU at {rate / 2**20:.0f} MiB/s; "
                 f"driver writing events {clock.spent:.3f} s; driver outside Spark jobs {ours.driver_s:.2f} s "
                 f"(hand-staged {staged.driver_s:.2f} s)")
    return lines


def run(rows: int = 5_000_000, partitions: int = 4, runs: int = 3, spark=None) -> list[dict]:
    from pyspark.sql import functions as F

    import fw_magics as fw
    from fw_magics import hooks

    spark = spark or fw.get_spark()
    df = spark.range(0, rows, 1, partitions).select(
        "id", (F.col("id") % 1000).alias("key"), (F.col("id") % 1000 % 7).alias("bucket"),
        (F.rand(seed=3) * 100).alias("price")).cache()
    df.count()
    stream = _pipeline(fw, F, df)
    work = tempfile.mkdtemp(prefix="fw-bench-")
    starts: dict[str, float] = {}
    timing = hooks.register("vertex_started",
                            lambda vertex, subtasks, attempt: starts.__setitem__(vertex.name, time.perf_counter()))
    clock = _EventClock()
    try:
        plain, staged, ours, shares, event_shares, resumes = [], [], [], [], [], []
        same, same_staged = [], []
        for i in range(runs + 1):  # the first round warms up
            started = time.perf_counter()
            _plain(F, df, f"{work}/plain-{i}")
            plain.append(time.perf_counter() - started)
            started = time.perf_counter()
            _staged(F, df, f"{work}/staged-{i}")
            staged.append(time.perf_counter() - started)
            started = time.perf_counter()
            _same_stream(stream, f"{work}/same-{i}")
            same.append(time.perf_counter() - started)
            started = time.perf_counter()
            _same_vertices_staged(fw, F, df, f"{work}/same-staged-{i}")
            same_staged.append(time.perf_counter() - started)

            clock.spent = 0.0
            started = time.perf_counter()
            fw.execute(stream, job_dir=work, job_name=f"run{i}")
            total = time.perf_counter() - started
            ours.append(total)
            event_shares.append(clock.spent / total)
            shares.append(time.perf_counter() - starts["v2"])  # the last vertex to the end

            _truncate_to_before_last_vertex(f"{work}/run{i}", "v2")
            started = time.perf_counter()
            result = fw.execute(stream, job_dir=work, job_name=f"run{i}")
            resumes.append(time.perf_counter() - started)
            assert {op for op, _ in result.ran} == {stream.job_graph().chains()[-1][-1]}
        plain, staged, ours, shares, event_shares, resumes, same, same_staged = (
            x[1:] for x in (plain, staged, ours, shares, event_shares, resumes, same, same_staged))
        from benchmarks.breakdown import SparkUI

        ui = SparkUI.attach(spark)
        breakdown = _breakdown(ui, clock, fw, F, df, stream, work) if ui is not None else []
    finally:
        clock.close()
        timing.unregister()  # only its own hook: a graph view's keep following
        shutil.rmtree(work, ignore_errors=True)
        df.unpersist()
    med = statistics.median
    return [{
        "rows": rows, "runs": runs, "plain": med(plain), "staged": med(staged), "execute": med(ours),
        "same_stream": med(same), "same_staged": med(same_staged),
        "last_vertex_share": med(shares), "resume": med(resumes), "events_share": med(event_shares),
        "breakdown": breakdown,
    }]
