"""A running job follows its query by itself: fresh micro-batches reach the hooks live, without
``process_all_available()``, and once the job stops nothing of it is left running (no thread that
would hold the interpreter's exit, as a Spark Connect client listener does)."""

from __future__ import annotations

import threading
import time

import pytest

import fw_magics as fw
from fw_magics import hooks
from tests.streaming import functions
from tests.streaming.files import TRIGGER, operator

pytestmark = [pytest.mark.spark]


def _leftovers() -> list[str]:
    names = ("fw-stream-progress", "_query_event_handler")
    return [t.name for t in threading.enumerate() if any(n in t.name for n in names)]


@pytest.mark.core
@pytest.mark.extended  # make test-extended (CI): a job followed live until fresh files land
def test_a_fresh_file_reaches_the_hooks_live_and_a_stopped_job_leaves_no_thread(area):
    area.write([(1, 1, 1), (2, 5, 2)], "f")
    stream = fw.from_files(area.source("f"), "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay="0 milliseconds")
    job = operator("reduce", stream).start(job_dir=area.jobs, job_name="f", trigger=TRIGGER)
    heard = threading.Event()
    handle = hooks.register("micro_batch", lambda j, info: heard.set() if j is job and info["input_rows"] else None)
    try:
        job.process_all_available()
        assert job.phase == "stream"
        heard.clear()
        area.write([(1, 2, 10), (3, 7, 11)], "f")
        assert heard.wait(120), "a fresh file's micro-batch did not reach the hooks"  # no process_all_available
    finally:
        handle.unregister()
        job.stop()
    deadline = time.monotonic() + 10
    while _leftovers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _leftovers() == []


@pytest.mark.core
def test_an_idle_trigger_s_report_is_not_taken_for_the_micro_batch_that_then_runs(area, spark):
    """Spark reports an idle trigger (every noDataProgressEventInterval, 10 s by default: a learner
    reading between two cells) with the *next* batch's id; that batch, when a file lands, is the one
    the job records, with its rows."""
    area.write([(1, 1, 1), (2, 5, 2)], "idle")
    stream = fw.from_files(area.source("idle"), "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay="0 milliseconds")
    interval = "spark.sql.streaming.noDataProgressEventInterval"
    before = spark.conf.get(interval)
    spark.conf.set(interval, "100ms")  # read by each query at its start
    try:
        job = operator("reduce", stream).start(job_dir=area.jobs, job_name="idle", trigger=TRIGGER)
        try:
            job.process_all_available()
        finally:
            spark.conf.set(interval, before)
        time.sleep(1.5)  # idle reports, each naming the batch that has not run yet
        area.write([(1, 2, 10), (3, 7, 11), (4, 1, 12)], "idle")
        job.process_all_available()
        batches = [e for e in job.events() if e["type"] == "micro_batch"]
    finally:
        job.stop()
    assert sum(e["input_rows"] for e in batches) == 3, batches
    assert len({e["batch"] for e in batches}) == len(batches)
