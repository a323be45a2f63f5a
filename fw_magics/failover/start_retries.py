"""Starts that missed Spark's window for its Python worker: started again outside the restart strategy.

Spark's driver-side Python workers (a Python source's reader, its planner) get a fixed 10 s to connect back
(``PythonWorkerFactory.createSimpleWorker``, not configurable; ``errors.WORKER_START_MISSED``). On a busy
machine a start can miss it, and then nothing has run. As Spark retries a task whose worker failed, the job
starts again at once, up to ``LIMIT`` times in a row, and leaves its restart strategy's attempts to real
failures (a CI run had a stalled micro-batch's restart use the strategy's one attempt, then the restarted
query missed the window). Pure Python, no Spark.
"""

from __future__ import annotations

from ..errors import worker_start_missed

#: Starts in a row that missed the window and are started again; the next one is a failure.
LIMIT = 3


class StartRetries:
    """One job's count of starts in a row that missed the window (``in_row``)."""

    def __init__(self, limit: int = LIMIT):
        self.limit, self.in_row = limit, 0

    def absorbs(self, error: BaseException) -> bool:
        """Whether ``error`` is a start that missed the window and is started again (counted), not a failure."""
        if not worker_start_missed(error) or self.in_row >= self.limit:
            return False
        self.in_row += 1
        return True

    def started(self) -> None:
        """The job's work ran (a micro-batch committed): the next miss is the first in a row."""
        self.in_row = 0
