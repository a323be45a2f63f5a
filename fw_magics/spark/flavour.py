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
* ``progress(spark, report)``: a context manager calling ``report(done, total)`` with Spark's task
  progress while its block runs (a status-tracker poll on classic, the server's progress handler
  under Connect; ``fw_magics.spark.progress``).
"""

from __future__ import annotations

import contextlib

_GROUP = "spark.jobGroup.id"
_INTERRUPT = "spark.job.interruptOnCancel"


class Flavour:
    """What fw-magics does differently on one kind of session (see the module docstring)."""

    name = "?"
    connect = False
    unit = "job"  # what a cancel counts

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
        from .progress import classic_poller

        return classic_poller(spark, report)


class Connect(Flavour):
    name = "Spark Connect"
    connect = True
    unit = "operation"

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
        from .progress import connect_handler

        return connect_handler(spark, report)


CLASSIC, CONNECT = Classic(), Connect()


def flavour_of(spark) -> Flavour:
    """The flavour of ``spark``, a classic SparkSession or a Spark Connect client session."""
    return CONNECT if type(spark).__module__.startswith("pyspark.sql.connect") else CLASSIC


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
