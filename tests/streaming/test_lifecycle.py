"""A streaming job keeps the promises execute() keeps (issue 29): one job log for both kinds of job.

A restart with changed code is refused in one line (reset=True starts afresh); the job is in the
per-user index (so %fw_recover finds it from any kernel); Kernel > Interrupt stops a wait, not the
job, in one line; a failure raised again is a fresh error, not the first one with more frames.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
import traceback

import pytest

import fw_magics as fw
from fw_magics.recovery import index
from fw_magics.recovery.jobs import find_jobs
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model

pytestmark = [pytest.mark.spark]

BACKLOG = [[(k, v, v) for k in range(4) for v in range(3)], [(k, 10, 10) for k in range(4)]]


def source(area):
    return fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts")


def adder(bonus: int):
    """A reduce named ``add`` whose code depends on ``bonus`` (its closure): the same graph, other content."""
    def add(a, b):
        return (a.k, a.v + b.v + bonus, max(a.ts, b.ts))
    return add


@pytest.mark.core
def test_a_restart_with_changed_code_is_refused_in_one_line_and_reset_starts_afresh(area):
    for f in BACKLOG:
        area.write(f)
    first = source(area).key_by("k").reduce(adder(0))
    first.start(job_dir=area.jobs, job_name="sums", mode="batch").process_all_available()
    kept = os.path.join(area.jobs, "sums", "savepoints", "savepoint-000001")
    os.makedirs(kept)  # a savepoint: reset never removes one
    changed = source(area).key_by("k").reduce(adder(1))
    assert changed.job_graph().fingerprint() == first.job_graph().fingerprint()  # only the code differs
    with pytest.raises(fw.ResumeError) as refused:
        changed.start(job_dir=area.jobs, job_name="sums", mode="batch")
    message = str(refused.value)
    assert "changed since it was recorded (the function of 'reduce(add)')" in message
    assert "another job_name, or with reset=True" in message and "\n" not in message
    again = first.start(job_dir=area.jobs, job_name="sums", mode="batch")  # the same code: nothing to run
    assert again.phase == "finished"
    afresh = changed.start(job_dir=area.jobs, job_name="sums", mode="batch", reset=True).process_all_available()
    assert afresh.phase == "finished" and os.path.isdir(kept)
    assert [e["type"] for e in afresh.events()].count("stream_started") == 1  # a new log, not a resumed one
    # each key: 0 + 1 + 2 + 10 = 13, and the bonus of 1 for each of its 3 reduce calls
    assert {k[0]: row[1] for k, row in latest_rows(afresh).items()} == {k: 13 + 3 for k in range(4)}
    with pytest.raises(fw.FullWindowError, match="reset 'yes'; accepted: False, or True"):
        changed.start(job_dir=area.jobs, job_name="sums", mode="batch", reset="yes")
    # execute()'s words: resume="never" is reset=True, resume="require" refuses a job that never ran
    never = first.start(job_dir=area.jobs, job_name="sums", mode="batch", resume="never").process_all_available()
    assert [e["type"] for e in never.events()].count("stream_started") == 1 and os.path.isdir(kept)
    assert {k[0]: row[1] for k, row in latest_rows(never).items()} == {k: 13 for k in range(4)}
    with pytest.raises(fw.ResumeError, match=r"^nothing to resume for job 'none' in .*: no event log; run with "
                                             r"resume='auto' to start it$"):
        first.start(job_dir=area.jobs, job_name="none", mode="batch", resume="require")


def test_without_a_job_name_or_dir_a_streaming_job_is_named_and_placed_as_execute_names_and_places_its(
        area, monkeypatch):
    """execute()'s rule: $FW_JOB_DIR, and a slug of what the job does with 8 hex digits of the stream's own
    graph, so the same stream finds its job again, whatever parallelism start() is given."""
    for f in BACKLOG:
        area.write(f)
    monkeypatch.setenv("FW_JOB_DIR", area.jobs)
    op = source(area).key_by("k").reduce(functions.add)
    job = op.start(mode="batch").process_all_available()
    assert job.job_name.endswith(f"-reduce-add-{op.job_graph().fingerprint()[:8]}")
    assert job.root == os.path.join(area.jobs, job.job_name) and job.phase == "finished"
    assert op.start(mode="batch").phase == "finished"  # found again: nothing left to run
    with pytest.raises(fw.ResumeError, match=f"job {job.job_name!r} runs at parallelism {job.parallelism};"):
        op.start(mode="batch", parallelism=job.parallelism + 1)


def test_a_streaming_job_and_its_savepoint_are_in_the_index_a_fresh_kernel_reads(area, tmp_path):
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="indexed", trigger=TRIGGER)
    try:
        job.process_all_available()
        job.savepoint()
    finally:
        job.stop()
    index._here.clear()  # a fresh kernel: only the per-user index remembers
    found = find_jobs(str(tmp_path / "elsewhere"))  # not the folder it ran in
    (listed,) = [j for j in found.jobs if j.root == os.path.join(area.jobs, "indexed")]
    assert listed.status == "stopped" and listed.streaming
    assert listed.label().startswith("indexed: stopped, streaming job in mode mixed, phase stopped")
    assert "1 savepoint (latest savepoint-000001)" in listed.label()


def test_kernel_interrupt_during_a_wait_stops_the_wait_in_one_line_and_the_job_runs_on(area):
    """SIGINT while process_all_available() waits (what Kernel > Interrupt sends): one line, no Py4J
    frames, and the job keeps running, as the line says."""
    slow = threading.Event()

    def sink(df, batch_id):  # classic: foreachBatch runs in this process; the first fresh batch is slow
        if batch_id >= 1 and not slow.is_set():
            slow.set()
            time.sleep(4)

    area.write(BACKLOG[0])
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="waited", trigger=TRIGGER, sink=sink)
    try:
        job.process_all_available()
        area.write(BACKLOG[1])
        threading.Timer(1.0, lambda: slow.wait(30) and os.kill(os.getpid(), signal.SIGINT)).start()
        with pytest.raises(fw.Interrupted) as stopped:
            job.process_all_available()
        message = str(stopped.value)
        assert message == ("interrupted: stopped waiting; job 'waited' keeps running in phase stream "
                           "(job.stop() stops it)")
        shown = "".join(traceback.format_exception(stopped.value))
        assert "py4j" not in shown and "pyspark" not in shown
        assert job.phase == "stream" and job.query.isActive  # what the line says
        job.process_all_available()  # waiting again finishes the batch it was waiting for
        assert latest_rows(job) == expected_latest(model("aggregate", 0, BACKLOG[:1], BACKLOG[1:]), "aggregate")
    finally:
        job.stop()


def test_whoever_sees_the_end_second_returns_only_once_the_last_phase_is_shown(area):
    """Two threads ending a job at once (a stop and the query's own end, a waiter and the follower):
    the second returns after the first has recorded the end, never in phase "stream" (a CI run saw an
    availableNow job's wait return in "stream" while its follower was recording the end)."""
    area.write(BACKLOG[0])
    job = source(area).key_by("k").aggregate(functions.CountSum()).start(job_dir=area.jobs, job_name="twice",
                                                                        trigger=TRIGGER)
    job.process_all_available()
    closing, close = threading.Event(), job.log.close

    def slow_close(**kwargs):
        closing.set()
        time.sleep(1.5)
        close(**kwargs)

    job.log.close = slow_close
    first = threading.Thread(target=job.stop)
    first.start()
    try:
        assert closing.wait(60)
        job.stop()
        assert job.phase == "stopped"
    finally:
        first.join()
    phases = [e["phase"] for e in job.events() if e["type"] == "phase_changed"]
    assert phases[-1] == "stopped" and phases.count("stopped") == 1  # ended once


def test_a_failed_job_raised_again_is_a_fresh_one_line_error_with_only_its_own_frames(area, tmp_path):
    flag = tmp_path / "fail"
    flag.write_text("on")
    for f in BACKLOG:
        area.write(f)
    job = source(area).key_by("k").aggregate(functions.FailingCountSum(str(flag))).start(
        job_dir=area.jobs, job_name="failing", mode="batch")
    raised = []
    for _ in range(2):
        with pytest.raises(fw.JobFailedError) as failed:
            job.process_all_available()
        raised.append(failed.value)
    first, second = raised
    assert first is not second and first.__cause__ is second.__cause__ is job.exception.__cause__
    assert str(job.exception) == str(first)  # job.exception: the one line, what Spark raised chained to it
    assert str(first) == str(second) and "injected failure on key 3" in str(first) and "\n" not in str(first)
    assert len(traceback.extract_tb(second.__traceback__)) == len(traceback.extract_tb(first.__traceback__))
    assert job.phase == "failed"


def _planted_link(path):
    os.remove(path)
    os.symlink("/dev/zero", path)


def _planted_fifo(path):
    os.remove(path)
    os.mkfifo(path)


def _planted_huge(path):
    with open(path, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB of nothing: refused by its size, never read


def _planted_value(path):
    with open(path, "w") as f:
        f.write('{"watermark": "soon"}' if path.endswith("watermark.json") else '{"format": 1, "files": 7}')


@pytest.mark.parametrize("planted", [_planted_link, _planted_fifo, _planted_huge, _planted_value],
                         ids=["link to /dev/zero", "FIFO", "3 GiB", "wrong value"])
@pytest.mark.parametrize("name", ["source/manifest.json", "backlog/watermark.json"])
def test_a_restart_refuses_a_planted_job_file_in_one_line_at_once(area, name, planted):
    """The job directory's own files follow the event log's rules: no link, a regular file, bounded, checked."""
    import shutil

    if not os.path.exists(os.path.join(area.base, "recorded")):
        for f in BACKLOG:
            area.write(f)
        source(area).key_by("k").reduce(functions.add).start(job_dir=os.path.join(area.base, "recorded"),
                                                            job_name="j", mode="batch").process_all_available()
    shutil.copytree(os.path.join(area.base, "recorded", "j"), os.path.join(area.jobs, "j"))
    planted(os.path.join(area.jobs, "j", name))
    started = time.monotonic()
    with pytest.raises(fw.JobStorageError) as refused:
        source(area).key_by("k").reduce(functions.add).start(job_dir=area.jobs, job_name="j", mode="batch")
    assert time.monotonic() - started < 5 and "\n" not in str(refused.value)
    assert name in str(refused.value), str(refused.value)


def test_a_parallelism_far_above_the_machine_gets_a_word_and_stop_returns_at_once(area):
    """32,768 is refused; 600 on 2 cores (each state partition a backlog subtask) runs with a warning,
    and stop() returns within seconds, with nothing committed after it returned."""
    import glob

    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").reduce(functions.add)
    with pytest.raises(fw.FullWindowError, match=r"parallelism 32768; accepted: None \(the job's\) or an integer "
                                                 r"from 1 to 1024") as refused:
        op.start(job_dir=area.jobs, job_name="huge", parallelism=2**15)
    assert "\n" not in str(refused.value) and not os.path.exists(os.path.join(area.jobs, "huge"))
    cores = fw.get_spark().sparkContext.defaultParallelism if not os.environ.get("SPARK_REMOTE") else None
    with pytest.warns(UserWarning, match=r"parallelism 600 is \d+x the \d+ cores Spark runs on") if cores and \
            600 > 8 * cores else contextlib.nullcontext():
        job = op.start(job_dir=area.jobs, job_name="wide", mode="batch", parallelism=600)
    time.sleep(3)  # the backlog's 600 subtasks are running
    started = time.monotonic()
    job.stop()
    assert time.monotonic() - started < 10 and job.phase == "stopped"
    sidecars = os.path.join(area.jobs, "wide", "results", "*", "*.json")
    committed = len(glob.glob(sidecars))
    time.sleep(2)
    assert len(glob.glob(sidecars)) == committed < 600  # nothing committed after stop() returned


def _ended_as(job) -> tuple[str, str | None]:
    """The job's status as %fw_recover lists it, and the cause of its last word."""
    (listed,) = [j for j in find_jobs(job.root.rsplit(os.sep, 1)[0], elsewhere=False).jobs if j.name == job.job_name]
    cause = next((e.get("cause") for e in reversed(job.events()) if e["type"] == "job_cancelled"), None)
    return listed.status, cause


def test_a_query_stopped_from_outside_the_job_is_an_interruption_not_a_clean_stop(area):
    """A job's query never ends by itself (but for availableNow): stopped from outside (the Spark
    session stopping under a kernel restart, spark.streams), the job is recorded as cancelled, with why."""
    area.write(BACKLOG[0])
    job = source(area).key_by("k").aggregate(functions.CountSum()).start(job_dir=area.jobs, job_name="outside",
                                                                        trigger=TRIGGER)
    try:
        job.process_all_available()
        job.query.stop()
        with job._cond:
            assert job._cond.wait_for(lambda: job.phase == "stopped", 30), job.phase
    finally:
        job.stop()
    status, cause = _ended_as(job)
    assert status == "cancelled" and cause == "interrupted: its query was stopped from outside the job " \
                                              "(the Spark session stopping, or the query's own stop())"
    with pytest.raises(fw.Interrupted, match="job 'outside' was interrupted: its query was stopped from outside"):
        job.process_all_available()


def test_an_interruption_during_the_backlog_is_recorded_even_when_its_warm_query_ends_first(area):
    """Kernel > Interrupt (or a kernel restart) cancels the backlog's Spark jobs; the job halts its warm
    query and records the cancel. The warm query's follower sees that query end meanwhile: it must not
    record a clean stop first (a CI run listed such a job as "stopped", not "cancelled")."""
    if os.environ.get("SPARK_REMOTE"):
        pytest.skip("SparkContext.cancelAllJobs is classic Spark's (Connect: interruptAll, tested elsewhere)")
    from tests.streaming.driver import SlowCountSum

    area.write([(k, v, v) for k in range(8) for v in range(30)])  # 30 records a subtask: 6 s of backlog
    job = source(area).key_by("k").aggregate(SlowCountSum()).start(job_dir=area.jobs, job_name="cancelled")
    cancelled = job.log.cancelled

    def slow_cancelled(cause):  # the follower's poll (1 s in the backlog) comes first
        time.sleep(2.5)
        return cancelled(cause)

    job.log.cancelled = slow_cancelled
    try:
        deadline = time.monotonic() + 60
        while job.query is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert job.phase == "backlog" and job.query is not None and job.query.isActive  # the warm query
        time.sleep(1)
        fw.get_spark().sparkContext.cancelAllJobs()
        with job._cond:
            assert job._cond.wait_for(lambda: job.phase in ("stopped", "failed"), 60), job.phase
    finally:
        job.stop()
    status, cause = _ended_as(job)
    assert (job.phase, status) == ("stopped", "cancelled") and cause.startswith("interrupted: its Spark jobs were "
                                                                                "cancelled"), (status, cause)
