"""FLIP-327's benchmark on Spark: a keyed reduce and a keyed aggregate over a backlog of files.

A backlog of ``records`` rows with ``keys`` keys in ``files`` Parquet files, then ``fresh``
files landing after the switch. Each operator runs in turns (``timing.interleaved_medians``):

* ``mixed``: fw-magics' mixed mode; timed until ``process_all_available()`` returns after the
  switch (the backlog committed, its state handed over, the stream's query running and caught up:
  it warmed up during the backlog);
* ``batch``: fw-magics' batch mode, the backlog only (fw-magics' own batch engine, the same
  Python function per record as mixed: the fair "batch" for 1.15x);
* ``stream``: fw-magics' stream mode (Structured Streaming with transformWithState from the
  first file), every backlog file in one micro-batch;
* ``stream, 1 file per trigger``: the same with ``maxFilesPerTrigger=1``, as rate-limited
  deployments run it. It is slow; with ``quick`` it runs over the first ``quick`` files only
  and its time is scaled to all files (``per file x files``, said in the note);
* the hand-written references: Spark's batch ``groupBy().agg(sum)`` and the same as plain
  Structured Streaming (``availableNow``, every file in one micro-batch, a noop sink): a JVM
  aggregate, no Python per record, so far faster than any per-key Python state; and the operator's
  own result written by hand as a Spark batch with a vectorized Python function per key,
  ``groupBy("k").applyInPandas`` (issue 52: mixed within 1.0x of it at 10,000,000 records).

Then, once per operator, in a mixed job after its switch: the time from one small fresh file
(``SMALL_FILE`` records) landing to the micro-batch that processed it (the latency of the
stream), and from ``fresh`` files as big as the backlog's landing at once to all of them
processed (a burst, which measures the per-record throughput of Spark's per-key Python state).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import threading
import time

from benchmarks.timing import interleaved_medians

SCHEMA = "k long, v long, ts timestamp"
SMALL_FILE = 1_000  # records in the one fresh file whose latency is timed
PANDAS = "Spark batch groupBy().applyInPandas"


def write_files(directory: str, records: int, keys: int, files: int, first: int = 0, seed: int = 327) -> None:
    """``files`` Parquet files of ``records`` rows in all (k, v, ts), ts rising file by file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed + first)
    per = records // files
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc).timestamp()
    for i in range(first, first + files):
        micros = ((start + i * 3600 + np.sort(rng.integers(0, 3600, per))) * 1_000_000).astype("int64")
        table = pa.table({"k": pa.array(rng.integers(0, keys, per), pa.int64()),
                          "v": pa.array(rng.integers(0, 100, per), pa.int64()),
                          "ts": pa.array(micros, pa.timestamp("us", tz="UTC"))})
        hidden = os.path.join(directory, f".part-{i:05d}.tmp")
        pq.write_table(table, hidden)
        stamp = 1_700_000_000 + i  # discovery order = write order
        os.utime(hidden, (stamp, stamp))
        os.replace(hidden, os.path.join(directory, f"part-{i:05d}.parquet"))


def operators(stream):
    """{name: stateful stream}: the keyed reduce and the keyed aggregate (defined here: shipped by value)."""
    import fw_magics as fw

    def add(a, b):
        return (a.k, a.v + b.v, max(a.ts, b.ts))

    class CountSum(fw.AggregateFunction):
        schema = "n long, total long"
        accumulator_schema = "n long, total long"

        def create_accumulator(self):
            return (0, 0)

        def add(self, value, accumulator):
            return (accumulator[0] + 1, accumulator[1] + value.v)

        def get_result(self, accumulator):
            return accumulator

        def merge(self, a, b):
            return (a[0] + b[0], a[1] + b[1])

    keyed = stream.key_by("k")
    return {"reduce": keyed.reduce(add), "aggregate": keyed.aggregate(CountSum())}


class _Runner:
    """Starts each variant under a fresh job name in one scratch job directory."""

    def __init__(self, jobs: str):
        self.jobs, self.count = jobs, 0

    def name(self, label: str) -> str:
        self.count += 1
        return f"{label}-{self.count}"

    def job(self, stateful, label: str, **options):
        def go():
            job = stateful.start(job_dir=self.jobs, job_name=self.name(label), **options)
            try:
                job.process_all_available()
                assert job.phase in ("stream", "stopped", "finished"), job.phase
            finally:
                job.stop()
        return go


def _by_pandas(spark, source: str, label: str):
    """The operator's result per key by hand as a Spark batch: ``groupBy("k").applyInPandas`` with pandas'
    vectorized sum (and max of ``ts`` for the reduce; count for the aggregate)."""
    import pandas as pd

    if label == "reduce":
        def per_key(frame: pd.DataFrame) -> pd.DataFrame:
            return pd.DataFrame({"k": [frame["k"].iloc[0]], "v": [frame["v"].sum()], "ts": [frame["ts"].max()]})
        schema = SCHEMA
    else:
        def per_key(frame: pd.DataFrame) -> pd.DataFrame:
            return pd.DataFrame({"k": [frame["k"].iloc[0]], "n": [len(frame)], "total": [frame["v"].sum()]})
        schema = "k long, n long, total long"

    def go():
        (spark.read.schema(SCHEMA).parquet(source).groupBy("k").applyInPandas(per_key, schema)
         .write.format("noop").mode("overwrite").save())
    return go


def _references(spark, source: str, checkpoints: str):
    from pyspark.sql import functions as F

    def batch():
        (spark.read.schema(SCHEMA).parquet(source).groupBy("k").agg(F.sum("v"))
         .write.format("noop").mode("overwrite").save())

    state = {"n": 0}

    def stream():
        state["n"] += 1
        frame = spark.readStream.schema(SCHEMA).parquet(source).groupBy("k").agg(F.sum("v"))
        query = (frame.writeStream.format("noop").outputMode("update").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(checkpoints, f"ref-{state['n']}")).start())
        query.awaitTermination()

    return batch, stream


def _fresh_results(stateful, runner: _Runner, source: str, first_file: int, fresh: int, records_per_file: int,
                   keys: int) -> tuple[float, float]:
    """After the switch, in one mixed job: seconds from one small fresh file landing to the micro-batch that
    processed it (the stream's latency), then from ``fresh`` files as big as the backlog's landing at once
    to all of them processed (a burst: the stream's per-record throughput)."""
    job = stateful.start(job_dir=runner.jobs, job_name=runner.name("fresh"), trigger="100 milliseconds")
    try:
        job.process_all_available()
        small = first_batch_after(job, lambda: write_files(source, SMALL_FILE, keys, 1, first=first_file))
        landed = time.perf_counter()
        write_files(source, records_per_file * fresh, keys, fresh, first=first_file + 1)
        job.process_all_available()
        return small, time.perf_counter() - landed
    finally:
        job.stop()


def first_batch_after(job, land) -> float:
    """Seconds from ``land()`` starting to the first micro-batch with input rows ending."""
    from fw_magics import hooks

    seen = threading.Event()
    handle = hooks.register("micro_batch", lambda j, info: seen.set() if j is job and info["input_rows"] else None)
    try:
        landed = time.perf_counter()
        land()
        if not seen.wait(600):
            raise TimeoutError("no fresh result within 600 s")
        return time.perf_counter() - landed
    finally:
        handle.unregister()


def run(records: int = 2_000_000, keys: int = 10_000, files: int = 20, fresh: int = 3, runs: int = 3,
        quick: int | None = None, spark=None, ratio_only: bool = False, only: str = "") -> list[dict]:
    """One result per operator: medians of every variant (seconds), ratios, and the fresh-result time.

    ``ratio_only``: time mixed, batch and ``applyInPandas`` only, no fresh results (FLIP-327's own size,
    10,000,000 records, in minutes instead of hours: the stream variants are what take long). ``only``: the
    operators whose name contains it ("reduce", "aggregate")."""
    import fw_magics as fw

    spark = spark or fw.get_spark()
    scratch = tempfile.mkdtemp(prefix="fw-bench-backlog-")
    try:
        source = os.path.join(scratch, "backlog")
        write_files(source, records, keys, files)
        limited_source, limited_files = source, files
        if quick is not None and quick < files:
            limited_source, limited_files = os.path.join(scratch, "first-files"), quick
            os.makedirs(limited_source)
            for name in sorted(n for n in os.listdir(source) if n.endswith(".parquet"))[:quick]:
                shutil.copy2(os.path.join(source, name), limited_source)
        runner = _Runner(os.path.join(scratch, "jobs"))
        ref_batch, ref_stream = _references(spark, source, os.path.join(scratch, "checkpoints"))
        results = []
        for label, stateful in operators(fw.from_files(source, "parquet", SCHEMA, event_time="ts")).items():
            if only not in label:
                continue
            limited = operators(fw.from_files(limited_source, "parquet", SCHEMA, event_time="ts"))[label]
            variants = {
                "mixed": runner.job(stateful, "mixed", mode="mixed", trigger="100 milliseconds"),
                "batch": runner.job(stateful, "batch", mode="batch"),
                "stream": runner.job(stateful, "stream", mode="stream", trigger="available_now"),
                "stream, 1 file per trigger": runner.job(limited, "limited", mode="stream", trigger="available_now",
                                                         max_files_per_trigger=1),
                "Spark batch groupBy().agg(sum)": ref_batch,
                "Spark Structured Streaming groupBy().agg(sum)": ref_stream,
                PANDAS: _by_pandas(spark, source, label),
            }
            if ratio_only:
                variants = {name: variants[name] for name in ("mixed", "batch", PANDAS)}
            medians = interleaved_medians(variants, runs, warmups=1)
            mixed = medians["mixed"]
            ratios = {"mixed_over_batch": mixed / medians["batch"], "mixed_over_pandas": mixed / medians[PANDAS]}
            if ratio_only:
                results.append({"case": f"keyed {label}", "medians": medians, **ratios})
                continue
            note = ""
            if limited_files != files:
                measured = medians["stream, 1 file per trigger"]
                medians["stream, 1 file per trigger"] = measured / limited_files * files
                note = (f"1 file per trigger: measured over the first {limited_files} of {files} files "
                        f"({measured:.1f} s), scaled to {files}")
            fresh_s, burst_s = _fresh_results(stateful, runner, source, files + 1000 * (len(results) + 1), fresh,
                                              records // files, keys)
            results.append({
                "case": f"keyed {label}", "medians": medians, "fresh_result_s": fresh_s, "fresh_burst_s": burst_s,
                "note": note,
                "limited_over_mixed": medians["stream, 1 file per trigger"] / mixed,
                "stream_over_mixed": medians["stream"] / mixed, **ratios,
            })
            shutil.rmtree(os.path.join(source), ignore_errors=True)  # the fresh files changed the backlog
            write_files(source, records, keys, files)
        return results
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
