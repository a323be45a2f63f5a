"""Spark's task progress for the job vertex running now, for whoever watches a run.

Under Spark Connect it comes from ``spark.registerProgressHandler``: the server reports every
``spark.connect.progress.reportInterval`` (2 s by default, so a vertex shorter than that was
often never reported on; set to the classic poll's 0.25 s while a view follows a vertex, and put
back after); a stage counts once a task of it has finished; a block that returns completes the
count of the stages reported, which the server's last report may not. On a
classic session the vertex's Spark jobs run in a job group of their own and a daemon
thread polls the status tracker for it (tasks of the stages started so far, so the total
grows as later stages start). Nothing is registered and no thread starts unless a
vertex_progress hook is registered (a graph view following runs).
"""

from __future__ import annotations

import contextlib
import threading
import uuid

from .. import hooks

POLL_SECONDS = 0.25
_GROUP = "spark.jobGroup.id"
_CONNECT_INTERVAL = "spark.connect.progress.reportInterval"


@contextlib.contextmanager
def reporting(spark, vertex_name: str):
    """Report ``hooks.vertex_progress(vertex_name, done, total)`` while the block runs."""
    if not hooks.registered("vertex_progress"):
        yield
        return
    from .flavour import flavour_of

    with flavour_of(spark).progress(spark, lambda done, total: hooks.vertex_progress(vertex_name, done, total)):
        yield


class _Reporter:
    """Passes a (done, total) on when it changed and there is something to count."""

    def __init__(self, report):
        self.forward, self.last = report, None

    def report(self, done: int, total: int) -> None:
        if total > 0 and (done, total) != self.last:
            self.last = (done, total)
            self.forward(done, total)


@contextlib.contextmanager
def connect_handler(spark, report):
    """Under Spark Connect: ``report(done, total)`` from the server's progress handler."""
    reporter = _Reporter(report)

    def handler(stages=None, inflight_tasks=0, operation_id=None, done=False):
        # The server lists stages adaptive execution skipped too; they never complete a task.
        started = {s.stage_id: s for s in stages or () if s.num_completed_tasks > 0}.values()
        reporter.report(sum(s.num_completed_tasks for s in started), sum(s.num_tasks for s in started))

    previous = _set_conf(spark, _CONNECT_INTERVAL, f"{int(POLL_SECONDS * 1000)}ms")
    spark.registerProgressHandler(handler)
    try:
        yield
    finally:
        spark.removeProgressHandler(handler)
        if previous is not _REFUSED:
            _set_conf(spark, _CONNECT_INTERVAL, previous)
    if reporter.last:
        # The block returned, so every stage reported as started has run all of its tasks; the
        # server's last report, sent when it chooses, can predate the last of them (seen: 2 of 3).
        reporter.report(reporter.last[1], reporter.last[1])


_REFUSED = object()


def _set_conf(spark, key: str, value: str | None):
    """Set (None: unset) a session conf; its value before, or ``_REFUSED`` if the server refused."""
    try:
        before = spark.conf.get(key, None)
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
        return before
    except Exception:  # a server that will not change it reports at its own pace: progress is only a hint
        return _REFUSED


@contextlib.contextmanager
def classic_poller(spark, report):
    """On classic Spark: ``report(done, total)`` from a status-tracker poll of the block's job group."""
    context = spark.sparkContext
    tracker = context.statusTracker()
    group = f"fw-magics progress {uuid.uuid4().hex[:12]}"
    reporter = _Reporter(report)
    stop = threading.Event()

    def poll():
        # Stages that have started: a stage adaptive execution already ran as a job of its
        # own shows up again in the next job as a stage that is skipped, never started.
        stages = {}
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for stage in (info.stageIds if info else ()):
                s = tracker.getStageInfo(stage)
                if s is not None and s.numActiveTasks + s.numCompletedTasks + s.numFailedTasks > 0:
                    stages[stage] = s
        reporter.report(sum(s.numCompletedTasks for s in stages.values()), sum(s.numTasks for s in stages.values()))

    def run():
        while not stop.wait(POLL_SECONDS):
            try:
                poll()
            except Exception:  # the session went away under us: progress is only a hint
                return

    previous = context.getLocalProperty(_GROUP)
    context.setLocalProperty(_GROUP, group)
    thread = threading.Thread(target=run, name="fw-magics progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        context.setLocalProperty(_GROUP, previous)
        poll()  # the end state, however short the job was
