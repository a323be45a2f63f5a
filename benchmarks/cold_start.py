"""A fresh process to its first result: the embedded Spark against the warm Spark shared by kernels.

``python -m benchmarks --only cold [--runs R]``. Each run launches a fresh Python process that
imports fw-magics, gets its Spark and sorts 1,000 rows (``against_flink.SPARK_COLD``: what a kernel
does on its first cell), timed from the launch to its printed result. Three ways, in turns:

* **embedded**: ``get_spark()`` starts a Spark inside the process (the default);
* **shared, cold**: ``FW_SPARK_SHARED=1`` with no server running (it is started, then stopped after
  the run, untimed): the first kernel of the day;
* **shared, warm**: ``FW_SPARK_SHARED=1`` with the server running: a kernel restart.

Then a real Jupyter kernel (``jupyter_client``), restarted as JupyterLab's Kernel > Restart does,
timed to the same cell's result in the new kernel: embedded, and shared.

The hand-written PySpark way is the embedded one without fw-magics' class archive
(``FW_JVM_ARCHIVE=off``): a plain ``SparkSession.builder.getOrCreate()`` pays the same start.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from benchmarks.against_flink import SPARK_COLD, first_result_s
from benchmarks.timing import print_runs_table

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
        times["Kernel > Restart to its first result, embedded"] = kernel_restarts(base, runs)
        times["Kernel > Restart to its first result, shared"] = kernel_restarts(sharing, runs)
    finally:
        shared.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)
    return times


def kernel_restarts(env: dict, runs: int) -> list[float]:
    """Seconds from Kernel > Restart (a graceful restart, as JupyterLab's) to the first result of the
    cold-start cell in the new kernel, ``runs`` times in one kernel's life (the first run untimed)."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)

        def first_result() -> None:
            reply = client.execute_interactive(SPARK_COLD, timeout=600, output_hook=lambda msg: None)
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"the cold-start cell failed: {reply['content'].get('evalue')}")

        first_result()
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            manager.restart_kernel(now=False)
            client.wait_for_ready(timeout=120)
            first_result()
            times.append(time.perf_counter() - started)
        return times
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def print_table(times: dict[str, list[float]]) -> None:
    print_runs_table(times, "embedded", "to the first result")
