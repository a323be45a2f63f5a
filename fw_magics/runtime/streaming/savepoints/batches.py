"""Which committed micro-batches of a job can still be read (``job.state(batch=N)``), and where its sources
stood after each.

A micro-batch ``N`` can be read while two things are kept: Spark's state store at ``N`` (its state data
source's ``batchId``) and the query's logs of ``N`` in its checkpoint: the commit log (``N`` ran to its end)
and the offset log (its sources' end offsets: the position a savepoint after ``N`` records). Spark keeps both
for the last ``spark.sql.streaming.minBatchesToRetain`` batches (100 by default) of the query, across its runs
(a job stopped and started again, resumed after a kernel restart or a failure continues the same checkpoint),
and cleans older ones up. The changelog (our own, one folder per batch) and the handed-over files are kept for
the job's life. So the batches kept are those the checkpoint logs as committed (a warm-up batch while the
backlog ran held no record and is not one), no older than the retention window behind the last one.
"""

from __future__ import annotations

from ....errors import FullWindowError
from ....recovery.paths import CHECKPOINT
from ..driver.follower import held_offset

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
    """Each committed micro-batch still readable -> its sources' end offsets (JSON text each), oldest first."""
    found = {batch: ends for batch, ends in ((b, _offsets(job.storage, b)) for b in _commits(job.storage))
             if ends and not held_offset(ends[0])}
    if not found:
        return {}
    oldest = max(found) - retained(job.spark) + 1
    return {batch: found[batch] for batch in sorted(found) if batch >= oldest}


def _commits(storage) -> list[int]:
    """The micro-batches the query's commit log holds, in order."""
    return sorted(int(name) for name in storage.listdir_inside(f"{CHECKPOINT}/commits") if name.isdigit())


def _offsets(storage, batch: int) -> list | None:
    """Micro-batch ``batch``'s sources' end offsets (JSON text each; "null": none) from the offset log, None when
    Spark cleaned it up. The file: a version line ("v1"), the batch's metadata (JSON), then each source's offset
    in the query's order ("-": none)."""
    try:
        with storage.open_inside(f"{CHECKPOINT}/offsets/{batch}") as f:
            lines = f.read().decode("utf-8").splitlines()
    except FileNotFoundError:
        return None
    return ["null" if line == "-" else line for line in lines[2:]] or None


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
                              f"(Spark keeps the last {RETAIN} = {retained(job.spark)} of its query's); "
                              f"batch {batch} is not among them")
    return found[batch]


def last_in_checkpoint(storage) -> tuple[int, list] | None:
    """(the last micro-batch the query's checkpoint committed, its sources' end offsets as JSON text), from
    Spark's commit and offset logs: what a query started again from its checkpoint knows before its first
    micro-batch reports (a job restarted after a failure or a stall, its first micro-batch still running).
    None when it committed none, or its last was a warm-up (its source held)."""
    commits = _commits(storage)
    ends = _offsets(storage, commits[-1]) if commits else None
    if not ends or held_offset(ends[0]):
        return None
    return commits[-1], ends
