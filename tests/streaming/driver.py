"""A driver process for the kill tests: python -m tests.streaming.driver SOURCE JOBS POINT.

It runs a keyed count-and-sum (order-insensitive: a lost record lowers a sum, a duplicate raises a
count) over SOURCE in mixed mode with one file per micro-batch, and kills itself with SIGKILL at
POINT: "backlog" (inside a backlog task of subtask 1), "switch" (in the sink of the first
micro-batch after the switch, before its commit: the query warmed up during the backlog, so
this is the first batch its held source let through), "stream" (in the sink of micro-batch 2). The test finishes the job in its own process.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import fw_magics as fw

from . import functions


class KillingCountSum(functions.CountSum):
    """CountSum whose add() kills the driver from inside backlog subtask 1."""

    def __init__(self, driver_pid: int):
        self.driver_pid = driver_pid

    def add(self, value, accumulator):
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.partitionId() == 1:
            os.kill(self.driver_pid, signal.SIGKILL)
            os._exit(1)  # this worker too: nothing may hold the test's pipes open
        return super().add(value, accumulator)


def killing_sink(batch_to_kill: int | None):
    """A sink that kills the driver in micro-batch ``batch_to_kill`` (None: the first micro-batch it gets)."""
    def sink(df, batch_id):
        if batch_id == batch_to_kill or (batch_to_kill is None and batch_id >= 0):
            os.kill(os.getpid(), signal.SIGKILL)  # classic: foreachBatch runs in the driver process
    return sink


def main() -> None:
    source, jobs, point = sys.argv[1:4]
    fw.get_spark({"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"})
    agg = KillingCountSum(os.getpid()) if point == "backlog" else functions.CountSum()
    stream = fw.from_files(source, "parquet", functions.SCHEMA, event_time="ts", watermark_delay="1 second")
    # the graph names the aggregate by its class: the same graph for KillingCountSum and CountSum
    agg.__class__.__name__ = "CountSum"
    op = stream.key_by("k").aggregate(agg)
    sink = {"switch": killing_sink(None), "stream": killing_sink(2)}.get(point)
    job = op.start(job_dir=jobs, job_name="counts", sink=sink, max_files_per_trigger=1, trigger="100 milliseconds")
    job.process_all_available()
    time.sleep(120)  # the kill comes first
    raise SystemExit("no kill happened")


if __name__ == "__main__":
    main()
