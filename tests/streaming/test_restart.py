"""Stopping, failing and starting again with the same job directory (Spark runs, one process)."""

from __future__ import annotations

import os
import threading
import time

import pytest

import fw_magics as fw
from fw_magics.failover import FixedDelayRestart
from fw_magics.failover.start_retries import LIMIT
from fw_magics.runtime.streaming.driver.stall import Stalled, StallGuard
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from tests.streaming import functions
from tests.streaming.files import TRIGGER, HoldBatch, expected_latest, latest_rows, model

pytestmark = [pytest.mark.spark]

BACKLOG = [[(k, v, v) for k in range(6) for v in range(3)], [(k, 10, 10) for k in range(6)]]
FRESH = [[(0, 5, 20), (7, 1, 21)], [(0, 1, 30), (3, 2, 31)]]


def source(area, name="src"):
    return fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts", watermark_delay="1 second")


def kinds(events, kind):
    return [e for e in events if e["type"] == kind]


def failing(area, tmp_path, on: bool = True, files=BACKLOG, after_others_of: str | None = None):
    """The backlog ``files`` written, and a keyed CountSum failing on key 3 while the returned flag file exists
    (``after_others_of``: a job's name; the failure waits for another of its subtasks to commit)."""
    flag = tmp_path / "fail"
    if on:
        flag.write_text("on")
    for f in files:
        area.write(f)
    fn = functions.FailingCountSum(str(flag)) if after_others_of is None else \
        functions.FailingOnceOthersCommitted(str(flag), os.path.join(area.jobs, after_others_of))
    return flag, source(area).key_by("k").aggregate(fn)


@pytest.mark.core
def test_stop_then_start_again_continues_without_loss_or_duplicates(area):
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="counts", trigger=TRIGGER)
    job.process_all_available()
    area.write(FRESH[0])
    job.process_all_available()
    job.stop()
    assert job.phase == "stopped"
    area.write(FRESH[1])  # lands while the job is stopped
    again = op.start(job_dir=area.jobs, job_name="counts", trigger=TRIGGER)
    try:
        assert again.phase == "stream"  # no second backlog: it had switched
        again.process_all_available()
        assert latest_rows(again) == expected_latest(model("aggregate", 1000, BACKLOG, FRESH), "aggregate")
        events = again.events()
        assert [e["run"] for e in kinds(events, "stream_started")] == [1, 2]
        assert len(kinds(events, "switch")) == 1 and len(kinds(events, "subtask_finished")) == 2
        batches = [e["batch"] for e in kinds(events, "micro_batch")]
        assert batches == sorted(set(batches))  # each micro-batch recorded once, in order
    finally:
        again.stop()


def test_a_first_micro_batch_is_watched_after_a_backlog_and_a_savepoint_reads_a_restarted_query_s_checkpoint(area):
    """Two things a CI run's restart after a stall needed (classic: the test's sink holds a micro-batch in this
    process). A mixed job's first micro-batch is watched by the stall guard, the backlog's time its reference
    (a restored job's, the saved job's longest; one started again, its log's); and a savepoint while a query started again runs its first micro-batch (nothing reported yet) is of the
    last committed one, read from the query's checkpoint: the same as one taken before the stop."""
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    first, again = HoldBatch(0), None
    job = op.start(job_dir=area.jobs, job_name="held", trigger=TRIGGER, sink=first)
    try:
        assert first.reached.wait(120)
        assert not job.recorded and job.stall.limit_s() is not None
        first.released.set()
        job.process_all_available()
        area.write(FRESH[0])
        job.process_all_available()
        before = load_savepoint(job.savepoint())
        job.stop()
        # the savepoint records the job's longest; a job restored from it watches its first micro-batch with it
        assert before.document["longest_ms"] == round(job.stall.longest_s * 1000) > 0
        restored = op.start(job_dir=area.jobs, job_name="held-restored", trigger=TRIGGER, from_savepoint=before.path)
        restored.stop()
        assert restored.stall.longest_s == job.stall.longest_s
        area.write(FRESH[1])
        hold = HoldBatch(before.document["batch"] + 1)
        again = op.start(job_dir=area.jobs, job_name="held", trigger=TRIGGER, sink=hold)
        assert again.stall.limit_s() is not None  # started again: the longest micro-batch its log holds
        assert hold.reached.wait(120)
        during = load_savepoint(again.savepoint())
        hold.released.set()
        again.process_all_available()
    finally:
        first.released.set()
        for each in (job, again):
            if each is not None:
                each.stop()
    # the manifest lists the file listed since, unread (read_files says so); the restarted job has no longest yet
    unlike = {"files", "created", "longest_ms"}
    assert {k: v for k, v in during.document.items() if k not in unlike} == \
        {k: v for k, v in before.document.items() if k not in unlike}  # its batch, files read, W, ...

    def read(savepoint):
        return sorted(u["file"] for s in savepoint.operator_state["files(src)"] for u in s["splits"]["units"]
                      if u["read"])
    assert read(during) == read(before)
    assert sorted(during.keyed_table().to_pylist(), key=repr) == sorted(before.keyed_table().to_pylist(), key=repr)
    assert latest_rows(again) == expected_latest(model("aggregate", 1000, BACKLOG, FRESH), "aggregate")


def test_another_mode_or_graph_is_refused_in_one_line(area):
    area.write(BACKLOG[0])
    op = source(area).key_by("k").reduce(functions.add)
    op.start(job_dir=area.jobs, job_name="j", mode="batch").process_all_available()
    with pytest.raises(fw.ResumeError, match="was started in mode 'batch', not 'mixed'") as info:
        op.start(job_dir=area.jobs, job_name="j", mode="mixed")
    assert "\n" not in str(info.value)
    with pytest.raises(fw.ResumeError, match=r"different graph \(operator 'reduce\(add\)' removed") as info:
        source(area).key_by("k").aggregate(functions.CountSum()).start(job_dir=area.jobs, job_name="j", mode="batch")
    assert "\n" not in str(info.value)
    finished = op.start(job_dir=area.jobs, job_name="j", mode="batch")  # a finished batch job: nothing runs
    assert finished.phase == "finished" and len(kinds(finished.events(), "stream_started")) == 2
    assert latest_rows(finished) == expected_latest(model("reduce", 0, [BACKLOG[0]], []), "reduce")


def test_a_failure_during_the_backlog_keeps_the_finished_subtasks(area, tmp_path):
    # the failure waits for the other subtask's commit: under load it was seen to end the first attempt before
    # that commit, so the restart strategy's second attempt committed it (attempt 2, not 1)
    flag, op = failing(area, tmp_path, after_others_of="flaky")
    job = op.start(job_dir=area.jobs, job_name="flaky", mode="batch")
    with pytest.raises(Exception, match="injected failure on key 3"):
        job.process_all_available()
    assert job.phase == "failed" and "injected failure" in kinds(job.events(), "job_failed")[0]["cause"]
    (kept,) = {e["subtask"] for e in kinds(job.events(), "subtask_finished")}  # of 2, the one without key 3
    flag.unlink()  # the bug is fixed
    again = op.start(job_dir=area.jobs, job_name="flaky", mode="batch").process_all_available()
    attempts = {e["subtask"]: e["attempt"] for e in kinds(again.events(), "subtask_finished")}
    assert attempts == {kept: 1, 1 - kept: 2}  # the committed subtask was kept, only the other ran again
    assert again.phase == "finished"
    assert latest_rows(again) == expected_latest(model("aggregate", 1000, BACKLOG, []), "aggregate")


def test_a_folder_where_a_backlog_result_goes_is_refused_in_one_line(area):
    import os

    area.write(BACKLOG[0])
    op = source(area).key_by("k").reduce(functions.add)
    vertex = next(v.name for v in op.job_graph().job_vertices() if op.step.name in v.operators)
    planted = os.path.join(area.jobs, "folder", "results", vertex, "1.arrow")
    os.makedirs(planted)
    job = op.start(job_dir=area.jobs, job_name="folder", mode="batch")
    with pytest.raises(fw.JobStorageError, match=f"results/{vertex}/1.arrow is a folder where subtask 1's result "
                                                 "goes; remove it") as info:
        job.process_all_available()
    assert "\n" not in str(info.value) and job.phase == "failed"
    os.rmdir(planted)  # as the line says
    again = op.start(job_dir=area.jobs, job_name="folder", mode="batch").process_all_available()
    assert again.phase == "finished"
    assert latest_rows(again) == expected_latest(model("reduce", 0, [BACKLOG[0]], []), "reduce")


class Healing(FixedDelayRestart):
    """The default strategy's one restart, after 0.1 s; told of the failure, it removes ``flag`` (the
    failing function's switch): a transient failure, such as a Python worker that did not start in time."""

    def __init__(self, flag):
        super().__init__(attempts=1, delay=0.1)
        self.flag = flag

    def notify_failure(self) -> bool:
        self.flag.unlink(missing_ok=True)
        return super().notify_failure()


@pytest.mark.core
def test_a_failed_micro_batch_restarts_the_query_from_its_checkpoint_with_nothing_lost_or_twice(area, tmp_path, capsys):
    """Spark ends a query on a failure a task retry does not absorb (a driver-side Python worker that did
    not connect back in time ended a CI run): the job's restart strategy starts it again from its
    checkpoint, and the micro-batch that failed runs once more, applied once."""
    flag, op = failing(area, tmp_path, on=False)
    job = op.start(job_dir=area.jobs, job_name="healed", trigger=TRIGGER, restart=Healing(flag))
    try:
        job.process_all_available()
        area.write(FRESH[0])
        job.process_all_available()
        flag.write_text("on")  # key 3's next record fails, in the stream
        area.write(FRESH[1])
        job.process_all_available()
        assert job.phase == "stream" and job.restarts == 1 and not flag.exists() and "1 restart)" in repr(job)
        assert latest_rows(job) == expected_latest(model("aggregate", 1000, BACKLOG, FRESH), "aggregate")
        events = job.events()
        (failed,) = kinds(events, "region_failed")
        assert "injected failure on key 3" in failed["cause"] and failed["vertices"] == []
        assert len(kinds(events, "region_restarted")) == 1 and not kinds(events, "job_failed")
        # the cell running says so once, with the reason (issue 47, item 9: minutes passed in silence)
        (said,) = [line for line in capsys.readouterr().err.splitlines() if "restart strategy restarts it" in line]
        assert said.startswith("fw-magics: job 'healed' failed (") and "injected failure on key 3" in said
        batches = [e["batch"] for e in kinds(events, "micro_batch")]
        assert batches == sorted(set(batches))  # the batch that failed recorded once, after its re-run
        changelog = job.changelog()
        assert not changelog.duplicated().any()
    finally:
        job.stop()


#: Spark's own line when a query's driver-side Python worker missed its 10 s to connect back (a CI run's).
MISSED = RuntimeError("[STREAM_FAILED] Query [id = 7bc4, runId = 85af] terminated with exception: Python worker "
                      "failed to connect back. SQLSTATE: XXKST\n=== Streaming Query ===\nCurrent State: INITIALIZING")


def test_a_query_whose_python_worker_missed_its_start_is_started_again_outside_the_restart_strategy(area):
    """Spark's driver-side Python worker gets a fixed 10 s to connect back: on a busy machine a query's start
    misses it, and nothing ran (a stalled micro-batch's restart, then such a start, ended a CI run). The job
    starts the query again at once, LIMIT times in a row, nothing lost or twice and its restart strategy
    untouched; a micro-batch committed starts the count again; one more in a row goes to the strategy (here:
    none left, the job fails).
    Spark's failure is injected where the job's follower reports a query's end; the queries are real."""
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="missed", trigger=TRIGGER, restart=FixedDelayRestart(attempts=0))
    try:
        job.process_all_available()
        for _ in range(LIMIT):
            query = job.query
            job._terminated(query, MISSED)
            assert job.query is not query and not query.isActive and job.phase == "stream"
        area.write(FRESH[0])
        job.process_all_available()  # a micro-batch committed: the next missed start is the first in a row
        assert job.restarts == 0 and job.start_retries.in_row == 0 and "restart" not in repr(job)
        assert latest_rows(job) == expected_latest(model("aggregate", 1000, BACKLOG, FRESH[:1]), "aggregate")
        for _ in range(LIMIT + 1):
            job._terminated(job.query, MISSED)
        assert job.phase == "failed" and job.restarts == 0
        with pytest.raises(fw.JobFailedError, match="Python worker failed to connect back"):
            job.process_all_available()
        events = job.events()
        assert [e["attempt"] for e in kinds(events, "query_retried")] == [1, 2, 3, 1, 2, 3]
        (failed,) = kinds(events, "region_failed")
        assert "connect back" in failed["cause"] and len(kinds(events, "job_failed")) == 1
    finally:
        job.stop()


@pytest.mark.core
def test_a_failed_backlog_restarts_only_its_subtasks_that_did_not_commit(area, tmp_path):
    flag, op = failing(area, tmp_path, after_others_of="healed-backlog")
    job = op.start(job_dir=area.jobs, job_name="healed-backlog", mode="batch", restart=Healing(flag)).process_all_available()
    assert job.phase == "finished" and job.restarts == 1
    events = job.events()
    attempts = {e["subtask"]: e["attempt"] for e in kinds(events, "subtask_finished")}
    (kept,) = [s for s, a in attempts.items() if a == 1]  # of 2, the one without key 3
    assert attempts == {kept: 1, 1 - kept: 2}
    (failed,) = kinds(events, "region_failed")
    assert failed["vertices"] == [f"{job.vertex}[{1 - kept}]"] and "injected failure" in failed["cause"]
    assert latest_rows(job) == expected_latest(model("aggregate", 1000, BACKLOG, []), "aggregate")


def test_no_restart_left_fails_the_job_at_its_first_failure_and_a_bad_strategy_is_one_line(area, tmp_path):
    flag, op = failing(area, tmp_path, on=False, files=BACKLOG[:1])
    with pytest.raises(fw.FullWindowError, match="restart='twice' .* is not a restart strategy") as info:
        op.start(job_dir=area.jobs, job_name="never", restart="twice")
    assert "\n" not in str(info.value) and not os.path.exists(os.path.join(area.jobs, "never"))
    job = op.start(job_dir=area.jobs, job_name="never", trigger=TRIGGER, restart=FixedDelayRestart(attempts=0))
    try:
        job.process_all_available()
        flag.write_text("on")
        area.write(FRESH[1])  # key 3 fails in the stream: seen by the waiter below and by the job's follower
        with pytest.raises(fw.JobFailedError, match="injected failure on key 3"):
            job.process_all_available()
    finally:
        job.stop()
    events = job.events()
    assert job.phase == "failed" and job.restarts == 0 and len(kinds(events, "job_failed")) == 1
    assert len(kinds(events, "region_failed")) == 1 and not kinds(events, "region_restarted")
    # job.exception is the one line the wait raised, Spark's error chained to it; a notebook shows the user's
    # frames of the worker's traceback and that line, as a %%fullwindow cell does (issue 47, item 9)
    from IPython.core.interactiveshell import InteractiveShell

    error = job.exception
    assert isinstance(error, fw.JobFailedError) and "\n" not in str(error)
    assert str(error).startswith("job 'never' failed: ") and "injected failure on key 3" in str(error)
    assert "injected failure on key 3" in str(error.__cause__) and job.exception is error
    InteractiveShell.instance()
    shown = error._render_traceback_()
    assert shown[-1] == f"JobFailedError: {error}" and '    raise ValueError("injected failure on key 3")' in shown
    assert any(line.startswith('  File "') and "functions.py" in line and "in add" in line for line in shown)
    assert not [line for line in shown if "fw_magics" in line or "pyspark" in line or "py4j" in line], shown


def test_a_stop_during_the_backoff_ends_the_job_stopped_with_no_query_left(area, tmp_path):
    """A restart waiting out its backoff gives up at once when the job is stopped: no query starts
    after the stop, and the job continues from its checkpoint at the next start()."""
    import time

    flag, op = failing(area, tmp_path, on=False, files=BACKLOG[:1])
    job = op.start(job_dir=area.jobs, job_name="patient", trigger=TRIGGER,
                   restart=FixedDelayRestart(attempts=1, delay=600))
    job.process_all_available()
    flag.write_text("on")
    area.write(FRESH[1])
    deadline = time.monotonic() + 120
    while not kinds(job.events(), "region_failed") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert kinds(job.events(), "region_failed")  # the follower saw the failure and waits 600 s
    started = time.monotonic()
    job.stop()
    assert time.monotonic() - started < 60 and job.phase == "stopped" and job.restarts == 0
    assert not kinds(job.events(), "region_restarted")
    assert not [q for q in job.spark.streams.active if q.name and q.name.startswith("fw-patient-")]
    flag.unlink()
    again = op.start(job_dir=area.jobs, job_name="patient", trigger=TRIGGER)
    try:
        again.process_all_available()  # the failed micro-batch runs again from the checkpoint
        assert latest_rows(again) == expected_latest(model("aggregate", 1000, [BACKLOG[0]], [FRESH[1]]), "aggregate")
    finally:
        again.stop()


class StallClock:
    """The stall guard's clock, moved by the test: it stands still until a task of ``HangingCountSum`` hangs
    (its ``flag.hanging`` file), then moves a minute every 0.2 s until the guard has called the micro-batch
    stalled, then stands still again. Only the hanging micro-batch is ever stalled, and its run again never is,
    however long a micro-batch takes on the machine (a cluster's take seconds)."""

    def __init__(self, guard, flag):
        self.now, self.guard, self.hanging = 0.0, guard, f"{flag}.hanging"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __call__(self) -> float:
        return self.now

    def _run(self) -> None:
        while not self._done.wait(0.2) and self.guard.stalls == 0:
            if os.path.exists(self.hanging):
                self.now += 60.0

    def __enter__(self) -> StallClock:
        self.guard.clock = self
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


@pytest.mark.core
@pytest.mark.extended  # 45 s: make test-extended (CI), and under Spark Connect
def test_a_stalled_micro_batch_is_cancelled_and_run_again_from_its_checkpoint_with_nothing_lost_or_twice(
        area, tmp_path):
    """A micro-batch whose task never returns (a Python worker stuck on key 3) held its query, and
    process_all_available(), for ever: the job's stall guard cancels it once it has run far longer than
    the job's micro-batches take, and the restart strategy runs it again from the checkpoint, once."""
    flag = tmp_path / "hang"
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.HangingCountSum(str(flag)))
    job = op.start(job_dir=area.jobs, job_name="stalled", trigger=TRIGGER, restart=Healing(flag))
    try:
        job.process_all_available()
        area.write(FRESH[0])
        job.process_all_available()  # one micro-batch completed: the guard has the job's longest
        flag.write_text("on")  # key 3's next record does not return
        area.write(FRESH[1])
        waited = time.monotonic()
        with StallClock(job.stall, flag):
            job.process_all_available()
        waited = time.monotonic() - waited
        assert job.phase == "stream" and job.restarts == 1 and not flag.exists() and job.stall.stalls == 1
        assert waited < 120, waited
        assert latest_rows(job) == expected_latest(model("aggregate", 1000, BACKLOG, FRESH), "aggregate")
        events = job.events()
        (failed,) = kinds(events, "region_failed")
        assert "made no progress for" in failed["cause"] and "cancelled, to run again" in failed["cause"]
        assert len(kinds(events, "region_restarted")) == 1 and not kinds(events, "job_failed")
        batches = [e["batch"] for e in kinds(events, "micro_batch")]
        assert batches == sorted(set(batches))  # the stalled batch recorded once, after its re-run
        assert not job.changelog().duplicated().any()
    finally:
        job.stop()


@pytest.mark.extended  # 30 s: make test-extended (CI)
def test_a_stalled_available_now_job_runs_its_micro_batch_again_and_then_ends(area, tmp_path):
    """As above, with availableNow (the trigger of the two-input job a CI run saw waiting): the waiter of the
    query the guard stopped waits for the restarted one, which ends the job once all is processed."""
    flag = tmp_path / "hang"
    flag.write_text("on")
    for f in FRESH:  # no key 3 in the first file: micro-batch 0 completes; micro-batch 1 meets key 3
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.HangingCountSum(str(flag)))
    job = op.start(job_dir=area.jobs, job_name="stalled-now", mode="stream", trigger="available_now",
                   max_files_per_trigger=1, restart=Healing(flag))
    with StallClock(job.stall, flag):
        job.process_all_available()
    assert job.phase == "stopped" and job.restarts == 1 and job.stall.stalls == 1
    assert latest_rows(job) == expected_latest(model("aggregate", 1000, [], FRESH), "aggregate")
    events = job.events()
    batches = [e["batch"] for e in kinds(events, "micro_batch")]
    assert batches[:2] == [0, 1] and batches == sorted(set(batches))  # then a no-data batch (the watermark moved)
    assert "micro-batch 1 made no progress" in kinds(events, "region_failed")[0]["cause"]


def test_the_stall_guard_waits_for_a_first_micro_batch_then_doubles_its_limit_at_each_stall():
    guard = StallGuard(floor_s=60, factor=30)
    assert guard.limit_s() is None and guard.observe(True, None, 0.0) is None
    assert guard.observe(True, None, 10_000.0) is None  # no micro-batch completed: the first may take long
    guard.completed(1_000)
    guard.completed(None)
    assert guard.limit_s() == 60  # the floor: 30 x 1 s is less
    guard.completed(4_000)
    assert guard.limit_s() == 120  # 30 x the longest, 4 s
    assert guard.observe(True, 7, 0.0) is None  # a new micro-batch: timed from here
    assert guard.observe(True, 7, 120.0) is None
    assert guard.observe(False, 7, 121.0) is None  # a break (its trigger ended): timed afresh
    assert guard.observe(True, 7, 122.0) is None
    assert guard.observe(True, 8, 300.0) is None  # another micro-batch reported: timed afresh
    assert guard.observe(True, 8, 420.5) == pytest.approx(120.5)
    error = guard.stalled(120.5, 9)
    assert isinstance(error, Stalled) and str(error) == (
        "micro-batch 9 made no progress for 120 s (the job's longest took 4.0 s): cancelled, to run again from "
        "the checkpoint")
    assert guard.limit_s() == 240 and guard.observe(True, 8, 430.0) is None  # doubled; timed afresh
    assert guard.observe(True, 8, 669.0) is None and guard.observe(True, 8, 671.0) == pytest.approx(241.0)
