"""Classic Spark or Spark Connect: the one place fw-magics tells the two apart.

``flavour_of(spark)`` looks at a session once and returns the object that owns what differs
between the two kinds; code elsewhere asks that object and never tests the session's module:

* ``connect``: whether the session is a Spark Connect client (no SparkContext, no RDD);
* ``cores(spark)``: the cores Spark runs tasks on (``defaultParallelism``), None when it does not say;
* ``runs_here(spark)``: whether Spark's executors are this machine's processes (a ``local`` master);
* ``tag`` / ``untag`` / ``cancel``: the Spark jobs started by this thread carry a tag of their own
  (a SparkContext job tag with interrupt-on-cancel on classic, ``spark.addTag`` under Connect),
  and ``cancel`` stops them and says how many it stopped (jobs, or operations under Connect:
  ``unit``);
* ``sets_state_partitions``: whether a streaming query's state partitions are the session's
  ``spark.sql.shuffle.partitions`` at its start (classic, and a Connect server this process started:
  ``InProcessConnect``; a remote server's may be its own default);
* ``progress(spark, report)``: a context manager calling ``report(done, total)`` with Spark's task
  progress while its block runs (a status-tracker poll on classic, the server's progress handler
  under Connect; ``fw_magics.spark.progress``).

``interruption(error, spark)`` tells an error that is not the job's own apart: its Spark jobs
were cancelled from outside (PySpark's SIGINT handler cancels every job of the session), or the
session went away under it -- a kernel restart or shutdown terminates the kernel's child
processes, Spark's JVM among them, before the Python process exits, so the job's Spark call
fails with whatever a dying JVM answers. When the error's text does not say, the session is asked
(one tiny job): if it no longer answers, the error was the session's end. A job records such an
end as an interruption, not a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid

_GROUP = "spark.jobGroup.id"
_INTERRUPT = "spark.job.interruptOnCancel"
POLL_SECONDS = 0.25  # how often classic progress is polled
SETTLE_SECONDS = 5.0  # how long the last poll after a job waits for its last tasks to be counted
# How often Connect's server is asked to report while a view follows. The server reports only at
# its wake-ups, and a report after the operation's last response is dropped: a vertex whose tasks
# all complete between two wake-ups and the end is never counted. It sends only when something
# changed, so a short interval costs little.
CONNECT_REPORT_SECONDS = 0.05
_CONNECT_INTERVAL = "spark.connect.progress.reportInterval"


class Flavour:
    """What fw-magics does differently on one kind of session (see the module docstring)."""

    name = "?"
    connect = False
    unit = "job"  # what a cancel counts
    #: a streaming query's state partitions are the session's spark.sql.shuffle.partitions at its start
    #: (so a handover's files, one per partition, are the stream's; under Connect they need not be)
    sets_state_partitions = True

    def cores(self, spark) -> int | None:
        raise NotImplementedError

    def runs_here(self, spark) -> bool:
        raise NotImplementedError

    def tag(self, spark, tag: str) -> dict:
        """Tag this thread's Spark jobs; returns what ``untag`` and ``cancel`` need."""
        raise NotImplementedError

    def untag(self, spark, tag: str, saved: dict) -> None:
        raise NotImplementedError

    def cancel(self, spark, tag: str, saved: dict) -> int:
        """Cancel the tagged Spark work; how many jobs (operations) that stopped."""
        raise NotImplementedError

    def progress(self, spark, report):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.name} Spark>"


class Classic(Flavour):
    name = "classic"

    def cores(self, spark) -> int | None:
        return int(spark.sparkContext.defaultParallelism)

    def runs_here(self, spark) -> bool:
        return spark.sparkContext.master.startswith("local")

    def tag(self, spark, tag: str) -> dict:
        context = spark.sparkContext
        context.addJobTag(tag)
        saved = {"group": context.getLocalProperty(_GROUP),  # None: no group, as most notebooks run
                 "known": set(context.statusTracker().getActiveJobsIds()),  # not this tag's
                 "interrupt": context.getLocalProperty(_INTERRUPT)}
        context.setLocalProperty(_INTERRUPT, "true")
        return saved

    def untag(self, spark, tag: str, saved: dict) -> None:
        context = spark.sparkContext
        context.removeJobTag(tag)
        context.setLocalProperty(_INTERRUPT, saved["interrupt"])

    def cancel(self, spark, tag: str, saved: dict) -> int:
        context = spark.sparkContext
        tracker = context.statusTracker()
        running = set(tracker.getActiveJobsIds()) - saved["known"]
        if running:
            running &= set(tracker.getJobIdsForGroup(saved["group"]))
        context.cancelJobsWithTag(tag)
        return len(running)

    def progress(self, spark, report):
        return classic_poller(spark, report)


class Connect(Flavour):
    name = "Spark Connect"
    connect = True
    unit = "operation"
    sets_state_partitions = False

    def cores(self, spark) -> int | None:
        try:
            value = spark.conf.get("spark.default.parallelism", None)
        except Exception:  # a server that refuses to say
            return None
        return int(value) if value is not None and str(value).strip().isdigit() else None

    def runs_here(self, spark) -> bool:
        return False  # the server may run anywhere: its executors are not this process

    def tag(self, spark, tag: str) -> dict:
        spark.addTag(tag)
        return {}

    def untag(self, spark, tag: str, saved: dict) -> None:
        spark.removeTag(tag)

    def cancel(self, spark, tag: str, saved: dict) -> int:
        return len(set(spark.interruptTag(tag) or ()))

    def progress(self, spark, report):
        return connect_handler(spark, report)


class InProcessConnect(Connect):
    """A Spark Connect server this process started (``SPARK_REMOTE=local[N]``), with settings that
    let a streaming query's state partitions follow the session's ``spark.sql.shuffle.partitions``.

    Every process such a server starts inherits PySpark's ``PYSPARK_REMOTE_INIT_CONF_*`` variables,
    and its ``foreachBatch`` worker sets their ``spark.sql.*`` settings again on the session while the
    query starts, after fw-magics set the job's parallelism: ``get_spark()`` keeps SQL settings out of
    them. A remote server's environment cannot be seen from here, so ``Connect`` assumes nothing."""

    sets_state_partitions = True


CLASSIC, CONNECT, IN_PROCESS_CONNECT = Classic(), Connect(), InProcessConnect()

#: What an error says when its Spark work was cancelled, or the session went away, rather than failed.
_INTERRUPTED = (
    ("SPARK_JOB_CANCELLED", "its Spark jobs were cancelled (Kernel > Interrupt, or the kernel shutting down)"),
    ("cancellation of all jobs", "its Spark jobs were cancelled (Kernel > Interrupt, or the kernel shutting down)"),
    ("SparkContext was shut down", "the Spark session was stopped"),
    ("OPERATION_CANCELED", "its Spark operations were interrupted"),
    ("Py4JNetworkError", "the Spark session's JVM went away (a kernel restart or shutdown)"),
    ("Answer from Java side is empty", "the Spark session's JVM went away (a kernel restart or shutdown)"),
    ("ConnectionRefusedError", "the Spark session went away (a kernel restart or shutdown)"),
)


_GONE = "the Spark session went away under it (a kernel restart or shutdown stops Spark's JVM first)"


def interruption(error: BaseException, spark=None) -> str | None:
    """Why ``error`` is an interruption of the work, not its failure (see the module docstring), or None."""
    if isinstance(error, KeyboardInterrupt):
        return "the process was interrupted (Kernel > Interrupt, or the kernel shutting down)"
    if isinstance(error, ConnectionRefusedError):
        return _GONE
    text = f"{type(error).__name__}: {error}"
    why = next((why for mark, why in _INTERRUPTED if mark in text), None)
    if why is None and spark is not None and not answers(spark):
        why = _GONE
    return why


def answers(spark) -> bool:
    """Whether the session still runs a Spark job (a one-row count), classic or Connect alike."""
    try:
        spark.range(1).count()
        return True
    except Exception:
        return False


def flavour_of(spark) -> Flavour:
    """The flavour of ``spark``, a classic SparkSession or a Spark Connect client session."""
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        return CLASSIC
    return IN_PROCESS_CONNECT if _in_process_server_keeps_partitions() else CONNECT


def _in_process_server_keeps_partitions() -> bool:
    """Whether the Connect server is this process's and its inherited settings leave the state
    partitions alone (``InProcessConnect``)."""
    if os.environ.get("SPARK_LOCAL_REMOTE") != "1":
        return False
    for i in range(int(os.environ.get("PYSPARK_REMOTE_INIT_CONF_LEN", "0") or 0)):
        try:
            inherited = json.loads(os.environ.get(f"PYSPARK_REMOTE_INIT_CONF_{i}", "{}"))
        except ValueError:
            return False
        if not isinstance(inherited, dict) or "spark.sql.shuffle.partitions" in inherited:
            return False
    return True


def is_connect(spark) -> bool:
    return flavour_of(spark).connect


@contextlib.contextmanager
def tagged(spark, tag: str):
    """This thread's Spark jobs carry ``tag`` while the block runs (``flavour.cancel`` reaches them)."""
    flavour = flavour_of(spark)
    saved = flavour.tag(spark, tag)
    try:
        yield saved
    finally:
        try:
            flavour.untag(spark, tag, saved)
        except Exception:  # the session is gone: nothing carries the tag any more
            pass


# -- task progress, each flavour's way -------------------------------------------------------------

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

    previous = _set_conf(spark, _CONNECT_INTERVAL, f"{int(CONNECT_REPORT_SECONDS * 1000)}ms")
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
        done, total = sum(s.numCompletedTasks for s in stages.values()), sum(s.numTasks for s in stages.values())
        reporter.report(done, total)
        return done, total

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
    ended = False
    try:
        yield
        ended = True
    finally:
        stop.set()
        thread.join()
        context.setLocalProperty(_GROUP, previous)
        # The end state, however short the job was. The tracker learns of tasks from Spark's listener bus,
        # which runs behind the job on a busy machine: after a job that ended well, poll until its last
        # tasks are counted (a few seconds at most); after a failure or a cancel, once.
        deadline = time.monotonic() + (SETTLE_SECONDS if ended else 0)
        while (counts := poll())[0] < counts[1] and time.monotonic() < deadline:
            time.sleep(0.05)
