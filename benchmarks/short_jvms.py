"""What the test suite's JVMs pay: a fresh process's whole short job, Java's defaults against C1 only, and against
C1 only with the serial collector (what every test target of the Makefile starts its JVMs with, ``TEST_JVMS``).

``python -m benchmarks --only jvm [--runs R]``. Each run launches a fresh Python process that imports
fw-magics, starts its embedded Spark and runs a small keyed job in mixed mode to its end: a backlog
of 3 Parquet files (300 records), the switch, one fresh file read by a micro-batch, stop (what a
tutorial, a kill test's driver or a kernel test does, at the same size). Timed from the launch to
the job's result, two ways in turns:

* **default**: the JVM compiles hot code with C1, then C2 (tiered compilation);
* **C1 only**: ``SPARK_SUBMIT_OPTS=-XX:TieredStopAtLevel=1`` (spark-submit reads the variable; no other
  setting changes);
* **C1 only, serial GC**: ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``, as every test target starts its JVMs.

A process this short never earns back C2's compile time; on 2 cores C2's threads take the tests' CPU. G1's
threads cost little in a job this short; over a test file's minutes they cost more (docs/benchmarks.md,
"Test JVMs").
"""

from __future__ import annotations

import os
import sys

from benchmarks.against_flink import first_result_s
from benchmarks.timing import print_runs_table

C1_ONLY = "-XX:TieredStopAtLevel=1"
SERIAL_GC = "-XX:+UseSerialGC"

SHORT_JOB = """
import tempfile, fw_magics as fw
from fw_magics.teaching import land_file
spark = fw.get_spark({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
folder, jobs = tempfile.mkdtemp(), tempfile.mkdtemp()
schema = "k long, v long, ts timestamp"
def rows(start):
    import datetime
    base = datetime.datetime(2024, 1, 1)
    return [(i % 10, i, base + datetime.timedelta(seconds=i)) for i in range(start, start + 100)]
def land(n):
    import pandas as pd
    land_file(folder, f"part-{n}.parquet", pd.DataFrame(rows(100 * n), columns=["k", "v", "ts"]))
for n in range(3):
    land(n)
class CountSum(fw.AggregateFunction):
    schema = "n long, s long"
    def create_accumulator(self):
        return [0, 0]
    def add(self, record, acc):
        return [acc[0] + 1, acc[1] + record.v]
    def get_result(self, acc):
        return tuple(acc)
stream = fw.from_files(folder, "parquet", schema, event_time="ts")
job = stream.key_by("k").aggregate(CountSum()).start(job_dir=jobs, job_name="short", trigger="200 milliseconds")
job.process_all_available()
land(3)
job.process_all_available()
total = int(job.latest()["n"].sum())
job.stop()
print("rows", total, flush=True)
"""


def run(runs: int = 3) -> dict[str, list[float]]:
    base = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "FW_SPARK_MASTER", "FW_SPARK_SHARED")}
    def opts(flags: str) -> dict[str, str]:
        return {**base, "SPARK_SUBMIT_OPTS": f"{flags} {base.get('SPARK_SUBMIT_OPTS', '')}".strip()}

    command = [sys.executable, "-c", SHORT_JOB]
    ways = {"default (C1 then C2)": base, "C1 only": opts(C1_ONLY), "C1 only, serial GC": opts(f"{C1_ONLY} {SERIAL_GC}")}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):
        for name, env in ways.items():
            times[name].append(first_result_s(command, env=env))
    return times


def print_table(times: dict[str, list[float]]) -> None:
    print_runs_table(times, "default (C1 then C2)", "a fresh process's short mixed job, launch to result")
