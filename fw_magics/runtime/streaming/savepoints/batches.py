"""Which committed micro-batches of a running job can still be read (``job.state(batch=N)``), and where its
sources stood after each.

A micro-batch ``N`` can be read while two things are kept: Spark's state store at ``N`` (its state data
source's ``batchId``; Spark keeps the versions of the last ``spark.sql.streaming.minBatchesToRetain``
batches, 100 by default, and cleans older ones up) and the query's own report of ``N`` (its sources' end
offsets: the position a savepoint after ``N`` records; a query keeps its last
``spark.sql.streaming.numRecentProgressUpdates`` reports, 100 by default, of this run of the query). The
changelog (our own, one folder per batch) and the handed-over files are kept for the job's life. So the
batches kept are those this query reported as run (a warm-up batch while the backlog ran held no record
and is not one), no older than the retention window behind the last one.
"""

from __future__ import annotations

from ....errors import FullWindowError
from ....recovery.paths import CHECKPOINT
from ..driver.follower import held, held_offset, ran

#: Spark's setting of how many recent batches' state versions (and offset and commit logs) it keeps.
RETAIN = "spark.sql.streaming.minBatchesToRetain"
RETAIN_DEFAULT = 100


def retained(spark) -> int:
    """How many recent micro-batches Spark keeps the state of (``minBatchesToRetain``)."""
    try:
        return max(1, int(spark.conf.get(RETAIN, str(RETAIN_DEFAULT))))
    except (TypeError, ValueError):
        return RETAIN_DEFAULT


def kept(job) -> dict:
    """Each committed micro-batch still readable -> its report's sources' end offsets (JSON text), oldest first."""
    reports = {p.batchId: [s.endOffset for s in p.sources] for p in (job.query.recentProgress or [])
               if p.sources and ran(p) and not held(p)}
    if not reports:
        return {}
    oldest = max(reports) - retained(job.spark) + 1
    return {batch: reports[batch] for batch in sorted(reports) if batch >= oldest}


def in_words(batches) -> str:
    """Batch ids as runs: ``3 to 7, 9``; ``none`` for none."""
    runs = []
    for batch in sorted(batches):
        if runs and runs[-1][1] == batch - 1:
            runs[-1][1] = batch
        else:
            runs.append([batch, batch])
    return ", ".join(str(a) if a == b else f"{a} to {b}" for a, b in runs) or "none"


def ends_at(job, batch) -> list:
    """The sources' end offsets after micro-batch ``batch`` (JSON text each); one line naming the batches kept
    when it is not an integer or no longer kept."""
    if type(batch) is not int:
        raise FullWindowError(f"job.state(batch={batch!r:.40}); accepted: a committed micro-batch id, an integer")
    found = kept(job)
    if batch not in found:
        raise FullWindowError(f"job {job.job_name!r} keeps the state of micro-batches {in_words(found)} "
                              f"(Spark keeps the last {RETAIN} = {retained(job.spark)} of this run of its query); "
                              f"batch {batch} is not among them")
    return found[batch]


def last_in_checkpoint(storage) -> tuple[int, list] | None:
    """(the last micro-batch the query's checkpoint committed, its sources' end offsets as JSON text), from
    Spark's commit and offset logs: what a query started again from its checkpoint knows before its first
    micro-batch reports (a job restarted after a failure or a stall, its first micro-batch still running).
    None when it committed none, or its last was a warm-up (its source held)."""
    commits = [int(name) for name in storage.listdir_inside(f"{CHECKPOINT}/commits") if name.isdigit()]
    if not commits:
        return None
    batch = max(commits)
    with storage.open_inside(f"{CHECKPOINT}/offsets/{batch}") as f:
        lines = f.read().decode("utf-8").splitlines()
    # a version line ("v1"), the batch's metadata (JSON), then each source's offset in the query's order ("-": none)
    ends = ["null" if line == "-" else line for line in lines[2:]]
    if not ends or held_offset(ends[0]):
        return None
    return batch, ends
