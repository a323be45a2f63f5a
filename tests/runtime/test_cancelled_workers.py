"""A cancelled action leaves no Python worker running, even one Spark's own kill misses.

Spark kills a cancelled task's Python worker only if the task has not completed when its
monitor thread looks; a task killed while it is still feeding its worker input completes at
once, and the worker would run on (``fw_magics.spark.cancel_marks``). Here the function sleeps
before it reads a record, with two million records waiting in Spark's default Arrow batches
of 10,000 records: exactly that case, on purpose (with fw-magics' 100,000-record batches the
JVM is more often caught writing a batch, and Spark's monitor wins). Without the cancel marks
both workers outlive the cancel by the whole two minutes.
"""

from __future__ import annotations

import threading
import time

import pytest

import fw_magics as fw
from fw_magics.errors import Interrupted
from fw_magics.spark.actions import Scope, run_action
from tests.kernels import still_running

pytestmark = [pytest.mark.spark, pytest.mark.core, pytest.mark.timeout(300)]


def test_a_worker_still_being_fed_input_when_its_task_is_cancelled_ends_itself(spark, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    folder = str(pids)

    def sleepy(records):  # sleeps before reading anything, while Spark writes it input
        import os
        import time

        open(os.path.join(folder, str(os.getpid())), "w").close()
        time.sleep(120)
        yield from records

    frame = spark.range(0, 2_000_000, 1, 2).selectExpr("id", "id % 7 AS k")
    stream = fw.from_dataframe(frame, name="numbers").full_window_partition().map_partition(sleepy)
    scope, raised = Scope(), []

    def run():
        try:
            with scope:
                # no spark=: a thread of its own finds the default session (it has no active one)
                run_action(lambda: stream.to_dataframe().count())
        except BaseException as error:
            raised.append(error)

    batch = "spark.sql.execution.arrow.maxRecordsPerBatch"
    saved = spark.conf.get(batch)
    spark.conf.set(batch, "10000")
    thread = threading.Thread(target=run)
    try:
        thread.start()
        _wait_for_workers(pids, 2)
        time.sleep(0.5)
        assert scope.cancel() >= 1
        thread.join(30)
    finally:
        spark.conf.set(batch, saved)
    assert not thread.is_alive() and len(raised) == 1 and isinstance(raised[0], Interrupted), raised
    assert still_running(pids, within=10) == [], "a worker of the cancelled task still runs"


def _wait_for_workers(pids, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list(pids.iterdir())) < count:
        assert time.monotonic() < deadline, f"the function never started in {count} workers"
        time.sleep(0.1)
