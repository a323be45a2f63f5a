"""OperatorJob: a non-keyed operator with operator state over a file source (FLIP-8), as a streaming job.

``fw.from_files(...).process(fn).start(parallelism=p)`` runs here. It is a :class:`StreamingJob`
(the same lock, event log, phases, changelog, restarts and savepoint files) in mode ``stream``
with two differences: the stream is fw-magics' own file source reading every file from the
first (no backlog phase: the files present at the first start are its first micro-batch),
each row tagged with the source subtask that read it; and the query is
:mod:`operator_query`'s ``transformWithState`` keyed by that subtask, whose state is the
function's operator state. ``savepoint()`` and ``start(from_savepoint=..., parallelism=N)``
are :mod:`operator_savepoint`'s.
"""

from __future__ import annotations

from ..errors import FullWindowError
from .changelog import BATCH, KIND, SEQ
from .job import StreamingJob
from .operator_query import SEQ_BITS, initial_state_frame, operator_query_frame


class OperatorJob(StreamingJob):
    """A running (or finished) non-keyed operator job; ``OperatorStream.start()`` makes one.

    ``changelog()`` lists what the function emitted (with the subtask and micro-batch);
    ``savepoint()`` writes the operator state and the source's positions.
    """

    def _query_frame(self, warm: bool = False):  # never warm: a stream-mode job has no backlog
        from .operator_savepoint import restored_operator_state

        self.source.record_nothing_read(self.root)
        initial = initial_state_frame(self.spark, restored_operator_state(self.storage), self.parallelism)
        stream = self.source.operator_stream(self.spark, self.root, self.max_files, self.parallelism)
        return operator_query_frame(stream, self.spec, self.output, self.parallelism, initial)

    def _prepare_restore(self, savepoint) -> dict:
        from .operator_savepoint import prepare_operator_restore

        return prepare_operator_restore(savepoint, self.storage, self.graph.operators[0].name,
                                        self.stateful.step.name, self.parallelism)

    def savepoint(self) -> str:
        """Write a savepoint after the last committed micro-batch (the job keeps running); returns its path.

        ``start(..., from_savepoint=path, parallelism=N)`` under a new job name restores it at any N >= 1.
        """
        from .operator_savepoint import take_operator_savepoint

        return take_operator_savepoint(self)

    def changelog(self):
        """What the function emitted, as pandas: its columns, then ``subtask`` and ``batch``, in the order
        emitted (micro-batch by micro-batch, subtask by subtask)."""
        from pyspark.sql import functions as F

        frame = self.changelog_frame()
        frame = frame.withColumn("subtask", F.shiftright(F.col(SEQ), SEQ_BITS).cast("int"))
        pdf = frame.orderBy(BATCH, SEQ).toPandas()
        return pdf.drop(columns=[SEQ, KIND]).rename(columns={BATCH: "batch"}).reset_index(drop=True)

    def latest(self):
        raise FullWindowError(f"job {self.job_name!r} runs a non-keyed operator: its output has no key, so no "
                              "latest row per key; use job.changelog() (every row emitted)")
