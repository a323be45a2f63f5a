"""Keyed state at scale (issue 33): mixed mode, a savepoint and a restore as the number of keys grows.

For each number of keys, over a backlog of ``records`` rows (k, v, ts) in ``files`` Parquet files,
a keyed count-and-sum (an AggregateFunction with a typed accumulator) is timed:

* **backlog**: fw-magics' mixed mode from ``start()`` to the last backlog subtask committed,
  against the same count and sum as a plain Spark batch ``groupBy().agg()`` (JVM, no Python), as
  a plain Spark batch ``groupBy().applyInPandas()`` of the same per-key Python function, and as
  ``applyInPandasWithState`` (a Structured Streaming query, ``availableNow``, over the same
  files: Spark's own per-key Python state), each to a noop sink, in turns (``timing``);
* **switch**: from the last backlog subtask committed to ``process_all_available()`` returning
  (the state handed over, the query caught up);
* **first fresh result**: one small file landing to the micro-batch that processed it;
* **savepoint**: ``job.savepoint()`` (incremental: the backlog's files shared as its base, the
  store's keys and each key's latest row since written by Spark's tasks), against writing every
  key's state row (the base's and the store's, one Parquet file) with ``DataFrame.write.parquet``;
* **restore to first result**: ``start(from_savepoint=..., parallelism=p + 1)`` with one small
  unread file waiting, to ``process_all_available()`` returning;
* **read as a table** (issue 50): ``fw.read_savepoint(path).keyed_state()`` (every key's state as typed
  columns, its base's and the store's) to a noop sink, against ``spark.read.parquet`` of the same typed
  rows (written once by the reader beforehand), in turns.

Above ``references_up_to`` keys (default ``REFERENCES_UP_TO``) the backlog's references are not run
(hours on 2 cores); the fw-magics rows are.

A sampler thread records, every 0.2 s, the RSS of this (driver) Python process, of the largest
Python worker (``pyspark.daemon`` and its forks; also its private memory, ``RssAnon``: RSS counts the
pages of the state files a worker memory-maps, which are the page cache's, shared) and of the JVM,
and the JVM's used heap; each
phase reports its peaks.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

from benchmarks.backlog import SCHEMA, first_batch_after, operators, write_files
from benchmarks.timing import interleaved_medians

SMALL_FILE = 1_000
#: Above this many keys the references are not run: on 2 cores Spark's applyInPandas took 725 s and
#: applyInPandasWithState 468 s at 1,000,000 keys (2026-11-27), and both grow with the keys.
REFERENCES_UP_TO = 1_000_000


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A process's resident memory in KiB: ``VmRSS`` (all of it, the pages of files it maps included)
    or ``RssAnon`` (its private memory: what it holds, not the page cache it looks at)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Sampler:
    """Peak memory per phase: driver Python, largest Python worker, JVM RSS and JVM used heap (MiB)."""

    def __init__(self, spark, interval: float = 0.2):
        self.spark, self.interval = spark, interval
        self.phase, self.peaks = None, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="fw-bench-sampler")
        try:
            self._runtime = spark._jvm.java.lang.Runtime.getRuntime()
        except Exception:  # Spark Connect: no JVM in this process
            self._runtime = None

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def mark(self, phase: str | None) -> None:
        self.phase = phase
        if phase is not None:
            self.peaks.setdefault(phase, {"driver": 0, "worker": 0, "worker_private": 0, "jvm": 0, "heap": 0})

    def _sample(self) -> dict:
        me = os.getpid()
        worker = private = jvm = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            line = _cmdline(pid)
            if "pyspark.daemon" in line or "pyspark/daemon" in line or "pyspark.worker" in line:
                worker = max(worker, _rss_kib(int(pid)))
                private = max(private, _rss_kib(int(pid), "RssAnon"))
            elif line.startswith("/") and "java" in line.split(" ")[0] and "SparkSubmit" in line:
                jvm = max(jvm, _rss_kib(int(pid)))
        heap = 0
        if self._runtime is not None:
            try:
                heap = (self._runtime.totalMemory() - self._runtime.freeMemory()) >> 10
            except Exception:
                heap = 0
        return {"driver": _rss_kib(me), "worker": worker, "worker_private": private, "jvm": jvm, "heap": heap}

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            phase = self.phase
            if phase is None:
                continue
            sample = self._sample()
            peaks = self.peaks[phase]
            for k, v in sample.items():
                peaks[k] = max(peaks[k], v >> 10)


def _references(spark, source: str, checkpoints: str):
    """Spark's own ways of the same per-key count and sum over the backlog, each to a noop sink."""
    import pandas as pd
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count_sum(pdf: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"k": [pdf["k"].iloc[0]], "n": [len(pdf)], "total": [int(pdf["v"].sum())]})

    def with_state(key, pdfs, state):
        n, total = state.get if state.exists else (0, 0)
        for pdf in pdfs:
            n, total = n + len(pdf), total + int(pdf["v"].sum())
        state.update((n, total))
        yield pd.DataFrame({"k": [key[0]], "n": [n], "total": [total]})

    def frame():
        return spark.read.schema(SCHEMA).parquet(source)

    def jvm():
        frame().groupBy("k").agg(F.count("v"), F.sum("v")).write.format("noop").mode("overwrite").save()

    def pandas():
        frame().groupBy("k").applyInPandas(count_sum, "k long, n long, total long") \
            .write.format("noop").mode("overwrite").save()

    count = {"n": 0}

    def stateful():
        count["n"] += 1
        stream = spark.readStream.schema(SCHEMA).parquet(source).groupBy("k").applyInPandasWithState(
            with_state, "k long, n long, total long", "n long, total long", "Update", GroupStateTimeout.NoTimeout)
        query = (stream.writeStream.format("noop").outputMode("update").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(checkpoints, f"state-{count['n']}")).start())
        query.awaitTermination()

    return {"Spark groupBy().agg()": jvm, "Spark groupBy().applyInPandas()": pandas,
            "Spark applyInPandasWithState (availableNow)": stateful}


def _one_size(spark, scratch: str, keys: int, records: int, files: int, parallelism: int, runs: int,
              sampler: Sampler, references_up_to: int) -> dict:
    import fw_magics as fw

    source = os.path.join(scratch, f"src-{keys}")
    jobs = os.path.join(scratch, "jobs")
    write_files(source, records, keys, files)
    stateful = operators(fw.from_files(source, "parquet", SCHEMA, event_time="ts"))["aggregate"]
    count = {"n": 0}

    def mixed_backlog():
        """A mixed job to the end of its backlog (then stopped): what the references are timed against."""
        count["n"] += 1
        job = stateful.start(job_dir=jobs, job_name=f"backlog-{keys}-{count['n']}", trigger="100 milliseconds",
                             parallelism=parallelism)
        try:
            job.process_all_available()
        finally:
            job.stop()

    medians = {}
    if keys <= references_up_to:
        variants = {"fw-magics mixed (to the stream)": mixed_backlog,
                    **_references(spark, source, os.path.join(scratch, f"checkpoints-{keys}"))}
        sampler.mark(f"backlog {keys}")
        medians = interleaved_medians(variants, runs, warmups=0)

    result = {"keys": keys, "records": records, "medians": medians}
    sampler.mark(f"switch {keys}")
    started = time.perf_counter()
    job = stateful.start(job_dir=jobs, job_name=f"mixed-{keys}", trigger="100 milliseconds", parallelism=parallelism)
    try:
        job.process_all_available()
        ready = time.perf_counter()
        events = job.events()
        committed = max(e["time"] for e in events if e["type"] == "subtask_finished")
        began = min(e["time"] for e in events if e["type"] == "stream_started")
        result["backlog_s"] = committed - began
        result["switch_s"] = ready - started - result["backlog_s"]
        result["first_fresh_s"] = first_batch_after(
            job, lambda: write_files(source, SMALL_FILE, keys, 1, first=files + 10))
        sampler.mark(f"savepoint {keys}")
        started = time.perf_counter()
        path = job.savepoint()
        result["savepoint_s"] = time.perf_counter() - started
    finally:
        job.stop()
    sampler.mark(None)
    keyed = _whole_state(path, os.path.join(scratch, f"whole-state-{keys}.parquet"))
    target = os.path.join(scratch, f"plain-write-{keys}")

    def plain_write():
        spark.read.parquet(keyed).write.mode("overwrite").parquet(target)

    plain_write()  # warm
    result["plain_write_s"] = interleaved_medians({"w": plain_write}, 1)["w"]
    write_files(source, SMALL_FILE, keys, 1, first=files + 11)  # unread: the restored job's first fresh file
    sampler.mark(f"restore {keys}")
    started = time.perf_counter()
    restored = stateful.start(job_dir=jobs, job_name=f"restored-{keys}", trigger="100 milliseconds",
                              from_savepoint=path, parallelism=parallelism + 1)
    try:
        restored.process_all_available()
        result["restore_s"] = time.perf_counter() - started
        result["restored_rows"] = sum(e.get("input_rows", 0) for e in restored.events() if e["type"] == "micro_batch")
    finally:
        restored.stop()
        sampler.mark(None)
    result["read_s"], result["parquet_read_s"] = _read_as_table(spark, path, os.path.join(scratch, f"typed-{keys}"),
                                                                 runs, sampler, keys)
    shutil.rmtree(source, ignore_errors=True)
    return result


def _read_as_table(spark, savepoint: str, typed: str, runs: int, sampler: Sampler, keys: int) -> tuple[float, float]:
    """The savepoint's keyed state read as typed columns (``keyed_state()``, to a noop sink) and the same rows
    from Parquet (written once by the reader), medians in turns."""
    import fw_magics as fw

    reader = fw.read_savepoint(savepoint)
    reader.keyed_state().write.mode("overwrite").parquet(typed)
    sampler.mark(f"read {keys}")
    medians = interleaved_medians({
        "keyed_state()": lambda: reader.keyed_state().write.format("noop").mode("overwrite").save(),
        "spark.read.parquet": lambda: spark.read.parquet(typed).write.format("noop").mode("overwrite").save(),
    }, runs, warmups=1)
    sampler.mark(None)
    shutil.rmtree(typed, ignore_errors=True)
    return medians["keyed_state()"], medians["spark.read.parquet"]


def _whole_state(savepoint: str, target: str) -> str:
    """Every key's state row of the savepoint (its base's state rows; the keys the stream wrote are a
    handful) as one Parquet file: what the plain ``write.parquet`` reference writes."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from fw_magics.runtime.streaming.savepoints.files import load_savepoint

    saved = load_savepoint(savepoint)
    columns = list(saved.document["key_names"]) + ["__fw_state"]
    with pq.ParquetWriter(target, pq.read_schema(saved.keyed_path)) as writer:
        for path, _ in saved.base:
            with pa.ipc.open_stream(pa.OSFile(path)) as reader:
                for batch in reader:
                    table = pa.Table.from_batches([batch])
                    table = table.filter(pc.equal(table.column("__fw_row"), "state")).select(columns)
                    if table.num_rows:
                        writer.write_table(table.cast(writer.schema))
        writer.write_table(pq.read_table(saved.keyed_path))
    return target


def run(sizes, records: int, files: int = 20, runs: int = 1, parallelism: int = 2, spark=None,
        references_up_to: int = REFERENCES_UP_TO) -> list[dict]:
    """One result per number of keys (see the module docstring); ``records`` at least twice the keys."""
    import fw_magics as fw

    spark = spark or fw.get_spark()
    scratch = tempfile.mkdtemp(prefix="fw-bench-keys-")
    results = []
    try:
        with Sampler(spark) as sampler:
            for keys in sizes:
                results.append(_one_size(spark, scratch, keys, max(records, 2 * keys), files, parallelism, runs,
                                         sampler, references_up_to))
                for phase in ("backlog", "switch", "savepoint", "restore", "read"):
                    results[-1][f"peak_{phase}"] = sampler.peaks.get(f"{phase} {keys}")
                print(f"{keys:,} keys done: {results[-1]}", flush=True)  # kept should a larger size fail
        return results
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def print_table(results) -> None:
    references = [name for name in max((r["medians"] for r in results), key=len) if not name.startswith("fw-magics")]
    print("\n| " + " | ".join(["keys", "records", "fw-magics backlog", *references, "backlog / applyInPandas"]) + " |")
    print("|---" * (4 + len(references)) + "|")
    for r in results:
        m = r["medians"]
        pandas = m.get("Spark groupBy().applyInPandas()")
        cells = [f"{m[name]:.2f} s" if name in m else "not run" for name in references]
        ratio = f"{r['backlog_s'] / pandas:.2f}x" if pandas else ""
        print("| " + " | ".join([f"{r['keys']:,}", f"{r['records']:,}", f"{r['backlog_s']:.2f} s", *cells, ratio]) + " |")
    print("\n| keys | switch | first fresh result | savepoint | DataFrame.write.parquet of its rows | savepoint / "
          "write | restore to first result | restore / savepoint |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['keys']:,} | {r['switch_s']:.2f} s | {r['first_fresh_s']:.2f} s | {r['savepoint_s']:.2f} s | "
              f"{r['plain_write_s']:.2f} s | {r['savepoint_s'] / r['plain_write_s']:.2f}x | {r['restore_s']:.2f} s | "
              f"{r['restore_s'] / r['savepoint_s']:.2f}x |")
    print("\n| keys | savepoint read as a table, keyed_state() | spark.read.parquet of the same typed rows | ratio |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['keys']:,} | {r['read_s']:.2f} s | {r['parquet_read_s']:.2f} s | "
              f"{r['read_s'] / r['parquet_read_s']:.2f}x |")
    print("\npeak memory (MiB): driver Python / largest Python worker (its private memory: RssAnon, without the "
          "pages of the state files it maps) / JVM RSS / JVM used heap")
    print("\n| keys | backlog (all variants) | switch and first result | savepoint | restore | read as a table |")
    print("|---|---|---|---|---|---|")
    for r in results:
        cells = []
        for phase in ("backlog", "switch", "savepoint", "restore", "read"):
            p = r.get(f"peak_{phase}")
            cells.append("not sampled" if not p else
                         f"{p['driver']} / {p['worker']} ({p['worker_private']}) / {p['jvm']} / {p['heap']}")
        print(f"| {r['keys']:,} | " + " | ".join(cells) + " |")
