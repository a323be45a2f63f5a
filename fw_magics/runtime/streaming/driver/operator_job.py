"""OperatorJob: a non-keyed operator with operator state over a source (FLIP-8), as a streaming job.

``fw.from_files(...).process(fn).start(parallelism=p)`` (or ``fw.from_table(...)``) runs here. It is a
:class:`StreamingJob` (the same job log, phases, changelog, restarts and savepoint files) in mode ``stream`` with
three differences: the stream is the source's ``operator_stream``, reading from the first file or
row (no backlog phase: what is present at the first start is its first micro-batch), each row
tagged with the source subtask that read it; the query is :mod:`operator_query`'s
``transformWithState`` keyed by that subtask, whose state is the function's operator state; and
its state kind is ``savepoints.OPERATOR`` (what a savepoint takes and a restore lays out).
"""

from __future__ import annotations

from ....errors import FullWindowError
from ....spark.actions import run_action
from .. import savepoints
from ..keyed.changelog import BATCH, KIND, SEQ
from ..operator.query import SEQ_BITS, initial_state_frame, operator_query_frame
from ..savepoints.restored import restored_operator_state
from .job import StreamingJob


class OperatorJob(StreamingJob):
    """A running (or finished) non-keyed operator job; ``OperatorStream.start()`` makes one.

    ``changelog()`` lists what the function emitted (with the subtask and micro-batch);
    ``savepoint()`` writes the operator state and the source's positions.
    """

    state_kind = savepoints.OPERATOR

    def _query_frame(self, warm: bool = False):  # never warm: a stream-mode job has no backlog
        restored = restored_operator_state(self.storage)
        initial = initial_state_frame(self.spark, restored, self.parallelism)
        stream = self.source.operator_stream(self.spark, self.root, self.plan.max_files, self.parallelism)
        return operator_query_frame(stream, self.spec, self.output, self.parallelism, initial)

    def changelog(self):
        """What the function emitted, as pandas: its columns, then ``subtask`` and ``batch``, in the order
        emitted (micro-batch by micro-batch, subtask by subtask)."""
        from pyspark.sql import functions as F

        frame = self.changelog_frame()
        frame = frame.withColumn("subtask", F.shiftright(F.col(SEQ), SEQ_BITS).cast("int"))
        pdf = run_action(frame.orderBy(BATCH, SEQ).toPandas, self.spark)
        return pdf.drop(columns=[SEQ, KIND]).rename(columns={BATCH: "batch"}).reset_index(drop=True)

    def latest(self):
        raise FullWindowError(f"job {self.job_name!r} runs a non-keyed operator: its output has no key, so no "
                              "latest row per key; use job.changelog() (every row emitted)")
