"""A stalled micro-batch: one that has run far longer than the job's micro-batches take.

Spark gives a micro-batch no deadline. A task that never returns (a Python worker blocked on its
socket, a user function waiting for ever) holds its query, and ``process_all_available()`` with
it, for good: a no-data micro-batch of a two-input job was seen to wait ten minutes on one of its
two state partitions while the other had finished in a second. As Flink fails a checkpoint that
does not complete in time and restarts the job from the last one, a job's follower cancels such a
micro-batch and the job goes on through its restart strategy, from its checkpoint (the changelog
sink is idempotent per micro-batch: nothing is lost or written twice).

The rule (``StallGuard``): a micro-batch is stalled once its trigger has been active without a
break for longer than ``FLOOR_S`` seconds and ``FACTOR`` times the longest micro-batch this job
has completed since it was started, or than its backlog took (a mixed job's first micro-batch reads
what came after the backlog, and seeds the state the backlog built), or, restored from a savepoint,
the saved job's longest (recorded in the savepoint), or, started again from its job directory, the
longest its earlier runs logged. Until one of these is known nothing counts as stalled (the first
micro-batch of a fresh job in stream mode may read a large input); each stall doubles the limit, so
a micro-batch that was only slow runs to its end on a later attempt. Pure logic: no Spark here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: A micro-batch is never called stalled before it has run this many seconds ...
FLOOR_S = 60.0
#: ... nor before this many times the longest micro-batch the job has completed. (30 was too long: CI's
#: kill test waits 300 s for a driver whose first micro-batch after the switch took over 10 s.)
FACTOR = 10


class Stalled(RuntimeError):
    """A micro-batch made no progress within the guard's limit (restartable, as a failed one is)."""


class StallGuard:
    """Watches one job's micro-batches (one guard per job: its history and limit outlive a restart).
    ``clock``: seconds, monotonic, read at each look (a test gives its own, to stall a micro-batch at will
    whatever the machine's speed)."""

    def __init__(self, floor_s: float = FLOOR_S, factor: float = FACTOR, clock: Callable[[], float] = time.monotonic):
        self.floor_s, self.factor, self.clock = floor_s, factor, clock
        self.longest_s: float | None = None  # the longest micro-batch (or backlog) completed so far
        self.stalls = 0
        self._busy_since: float | None = None
        self._batch = None

    def limit_s(self) -> float | None:
        """Seconds a micro-batch may run before it is stalled; None while none has completed."""
        if self.longest_s is None:
            return None
        return max(self.floor_s, self.factor * self.longest_s) * 2 ** self.stalls

    def completed(self, duration_ms) -> None:
        """A micro-batch (or the job's backlog) completed in ``duration_ms`` (None when Spark did not say)."""
        if duration_ms is not None:
            self.longest_s = max(self.longest_s or 0.0, duration_ms / 1000)

    def observe(self, active: bool, last_batch, now: float | None = None) -> float | None:
        """One look at the query: whether its trigger is ``active``, the id of the last micro-batch it
        reported (``last_batch``), the time (``now``, seconds; the guard's clock when None). Returns how long
        the running micro-batch has gone without a break once that is over the limit, else None."""
        now = self.clock() if now is None else now
        if not active or last_batch != self._batch:
            self._busy_since = now if active else None
            self._batch = last_batch
            return None
        if self._busy_since is None:
            self._busy_since = now
        limit, busy = self.limit_s(), now - self._busy_since
        return busy if limit is not None and busy > limit else None

    def stalled(self, busy_s: float, batch) -> Stalled:
        """The error of a stalled micro-batch (the limit doubles for the next one)."""
        error = Stalled(f"micro-batch {batch} made no progress for {busy_s:.0f} s (the job's longest took "
                        f"{self.longest_s:.1f} s): cancelled, to run again from the checkpoint")
        self.stalls += 1
        self._busy_since = None
        return error
