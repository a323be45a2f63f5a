"""A fresh process to its first result: the embedded Spark against the warm Spark shared by kernels.

``python -m benchmarks --only cold [--runs R]``. Each run launches a fresh Python process that
imports fw-magics, gets its Spark and sorts 1,000 rows (``against_flink.SPARK_COLD``: what a kernel
does on its first cell), timed from the launch to its printed result. Three ways, in turns:

* **embedded**: ``get_spark()`` starts a Spark inside the process (the default);
* **shared, cold**: ``FW_SPARK_SHARED=1`` with no server running (it is started, then stopped after
  the run, untimed): the first kernel of the day;
* **shared, warm**: ``FW_SPARK_SHARED=1`` with the server running: a kernel restart.

The hand-written PySpark way is the embedded one without fw-magics' class archive
(``FW_JVM_ARCHIVE=off``): a plain ``SparkSession.builder.getOrCreate()`` pays the same start.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile

from benchmarks.against_flink import SPARK_COLD, first_result_s

PLAIN = """
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[*]").getOrCreate()
df = spark.range(0, 1000, 1, 1).select("id", (F.rand(seed=7) * 100).alias("price"))
rows = df.sortWithinPartitions("price").collect()
print("rows", len(rows), flush=True)
"""


def run(runs: int = 3) -> dict[str, list[float]]:
    from fw_magics.spark import shared

    folder = tempfile.mkdtemp(prefix="fw-bench-shared-")
    base = {k: v for k, v in os.environ.items() if k not in (shared.ENV, "SPARK_REMOTE", "FW_SPARK_MASTER")}
    sharing = {**base, shared.ENV: "1", shared.DIR_ENV: folder, shared.IDLE_ENV: "600"}
    times: dict[str, list[float]] = {"embedded": [], "plain PySpark": [], "shared, cold": [], "shared, warm": []}
    command = [sys.executable, "-c", SPARK_COLD]
    try:
        for _ in range(runs):
            times["embedded"].append(first_result_s(command, env=base))
            times["plain PySpark"].append(first_result_s([sys.executable, "-c", PLAIN], env=base))
            shared.stop(folder)
            times["shared, cold"].append(first_result_s(command, env=sharing))
            times["shared, warm"].append(first_result_s(command, env=sharing))
    finally:
        shared.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
    return times


def print_table(times: dict[str, list[float]]) -> None:
    embedded = statistics.median(times["embedded"])
    print("\n| fresh process to its first result | median | runs | against embedded |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} s | {', '.join(f'{v:.2f}' for v in values)} | {median / embedded:.2f}x |")
