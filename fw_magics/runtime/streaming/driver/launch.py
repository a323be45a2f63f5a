"""Starting a job's streaming query: a keyed job's frame, its changelog sink, checkpoint, trigger and state partitions.

``spark.sql.shuffle.partitions`` fixes the state partitions of a fresh checkpoint (Spark keeps the
checkpoint's on a restart): it is set to the job's parallelism around ``start()`` and put back, one
query start at a time (two jobs started back to back start their queries from their own threads, and
each took the other's setting: a job at parallelism 1 ran 3 state partitions). Where
the flavour says the stream's partitions are the handover's files, a setting changed while the query
started (``fw_magics.spark.flavour.InProcessConnect``) stops it with one line rather than seed it wrong.

A process killed while Spark wrote a checkpoint log entry leaves its temporary file
(``offsets/.0.<uuid>.tmp`` and its ``.crc``) beside the entries; Spark never reads it, but
``transformWithState`` refuses to start on a checkpoint whose ``offsets`` folder is not empty at
batch 0 ("should be empty on batch 0"), so a job killed during its first micro-batch could never
restart. Such leftovers are removed before the query starts (the job's lock is held: no other
writer).
"""

from __future__ import annotations

import re
import threading
import uuid

from ....errors import SparkUnavailableError
from ....operators.co_process import side_outputs
from ....recovery.paths import CHECKPOINT, STATE_COUNTS
from ..keyed.operator_state import PartitionOperatorState
from ..keyed.query import keyed_query_frame
from ..savepoints.restored import restored_operator_state
from .sink import ChangelogSink

PARTITIONS = "spark.sql.shuffle.partitions"
#: Held while a query starts with the job's partitions set on the session (jobs start from their own threads).
_SETTING = threading.Lock()


#: The checkpoint's logs whose torn writes are removed (``.<entry>.<uuid>.tmp`` and ``..<entry>.<uuid>.tmp.crc``).
_LOGS = ("offsets", "commits")
_TORN = re.compile(r"\.\.?[^/]*\.tmp(\.crc)?")


def remove_torn_writes(storage) -> list[str]:
    """Remove the temporary files a killed writer left in the checkpoint's logs; their names."""
    removed = []
    for log in _LOGS:
        folder = f"{CHECKPOINT}/{log}"
        for name in storage.listdir_inside(folder):
            if _TORN.fullmatch(name):
                storage.remove(storage.path(folder, name))
                removed.append(f"{log}/{name}")
    return removed


def launch(job, frame):
    """Start ``frame`` (the job's changelog rows, a streaming DataFrame) as ``job``'s query; returns it."""
    plan = job.plan
    remove_torn_writes(job.storage)
    late = bool(side_outputs(job.spec))  # an interval join's late records are among the rows
    sink = ChangelogSink(job.root, job.output.names, plan.sink, plan.handover.hold(job.storage), late)
    writer = plan.trigger.apply(frame.writeStream.foreachBatch(sink)
                                .option("checkpointLocation", job.storage.path(CHECKPOINT))
                                .queryName(f"fw-{job.job_name}-{uuid.uuid4().hex[:8]}"))
    spark = job.spark
    wanted = str(plan.parallelism)
    with _SETTING:  # the setting is the session's: two jobs starting at once must not take each other's
        before = spark.conf.get(PARTITIONS)
        spark.conf.set(PARTITIONS, wanted)
        try:
            query = writer.start()
            got = spark.conf.get(PARTITIONS)
        finally:
            spark.conf.set(PARTITIONS, before)
    if got != wanted and plan.flavour.sets_state_partitions:
        # set again while the query started (fw_magics.spark.flavour.InProcessConnect): its state
        # partitions are not the handover's files, and a worker would search only its own
        query.stop()
        raise SparkUnavailableError(
            f"the session's {PARTITIONS} became {got} while job {job.job_name!r}'s query started (it needs "
            f"{wanted}): something sets it again on every query start (a Spark Connect server's "
            "PYSPARK_REMOTE_INIT_CONF_* naming it?); remove that setting")
    return query


def keyed_job_frame(job, warm: bool = False):
    """A keyed job's query (``warm``: started during the backlog): after a backlog or a restore, over the
    fresh input, from the state its handover gives (``handover``), with W; else Spark's file stream
    from the first file."""
    plan, source, spark = job.plan, job.source, job.spark
    operator = None
    if job.spec.checkpointed:  # the function's operator state, one store per state partition
        operator = PartitionOperatorState(job.spec.key.spark_types, plan.parallelism,
                                          restored_operator_state(job.storage))
    counts = job.storage.path(STATE_COUNTS) if job.storage.local else None  # the tasks write it (state_counts)
    if not plan.handover.continues:
        return keyed_query_frame(source.stream(spark, job.root, plan.max_files, plan.parallelism), job.spec,
                                 job.output, source.delay_ms, None, operator=operator, counts=counts)
    initial, seed = plan.handover.query_state(job, warm)
    stream = source.fresh_stream(spark, job.root, plan.max_files, plan.parallelism, plan.handover.hold(job.storage))
    return keyed_query_frame(stream, job.spec, job.output, source.delay_ms, job.watermark, initial, seed, operator,
                             counts)
