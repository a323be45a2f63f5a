"""StreamingJob: one keyed job over a source with a backlog, in mixed, stream or batch mode.

``start()`` (``start.py``) opens the job's log, decides its ``Plan`` and the phase it continues in;
the job is a facade over the parts that do the work, plus its phase machine. A driver thread runs
what is left: the backlog (``backlog_run``), the switch, and the streaming query (``launch``; with
the ``HELD`` handover it starts while the backlog runs, its fresh source held until the handover),
which a ``follower`` follows. Everything is an event in the ``JobLog`` it shares with ``execute()``
and goes to the hooks (``stream_phase``, ``backlog_progress``, ``micro_batch``) for the widgets.
``start()`` returns at once; ``process_all_available()`` waits.

What a failure does (the job's restart strategy, its failure recorded once) and the waiting through
both are ``failures.py``'s half of the class, as what a job shows is ``results.py``'s.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

from .... import hooks
from ....connectors.files.reading import new_skips
from ....errors import FullWindowError
from ....failover import StartRetries
from ....graph import JobGraph
from ....recovery import events
from ....spark.actions import Scope
from .. import savepoints
from ..keyed.changelog import BACKLOG_BATCH
from .failures import Failures
from .follower import BACKLOG_POLL_S, PROGRESS_POLL_S, Follower, late_failure
from .launch import keyed_job_frame, launch
from .measure import Measure
from .phases import ENDED, Mode, can_change
from .results import JobResults
from .sink import deliver
from .stall import StallGuard


class StreamingJob(JobResults, Failures):
    """A running (or finished) keyed streaming job; ``start()`` makes one.

    ``phase``: "backlog", "switching", "stream", "finished", "stopped" or "failed"; ``watermark``: W
    (None before the backlog ran, or without event time); ``query``: Spark's StreamingQuery once
    started; ``plan``: what was decided at start (mode, trigger, parallelism, handover).
    """

    state_kind = savepoints.KEYED
    # what its work hands to its Failures half: a failure of the driver thread, one the job itself
    # decides (on_late="fail"), the query's end (the follower's callback)
    _recover: Callable[..., bool]
    _fail: Callable[..., None]
    _terminated: Callable[..., None]

    def __init__(self, stateful, source, log, plan, graph: JobGraph):
        self.stateful, self.spec, self.source = stateful, stateful.spec, source
        self.log, self.plan, self.graph = log, plan, graph
        self.root, self.job_name, self.storage, self.store = log.root, log.job_name, log.storage, log.store
        self.spark = stateful.spark
        self.output = stateful.schema
        self.vertex = next(v.name for v in graph.job_vertices() if stateful.step.name in v.operators)
        self.watermark: int | None = None
        self.backlog = None  # a backlog_run.Backlog when the mode has one
        self.restored_from: str | None = None  # the savepoint a restored job started from
        self.recorded: set[int] = set()  # micro-batches recorded in the log
        self.skips_noted: set[str] = set()  # source files whose skipping is in the log
        self.query = None
        self.follower: Follower | None = None
        self._phase: str | None = None
        self._error: BaseException | None = None
        self._interrupted: str | None = None  # why its work was cancelled from outside, if it was
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = self._ended = False
        self._ender: int | None = None  # the thread recording the job's end
        self._restarting = threading.RLock()  # one restart at a time; stop() and a failure wait for one in flight
        self._woken = threading.Event()  # set by stop() and a failure: a restart's backoff ends at once
        self._warm = False  # whether the query was started warm (held during the backlog)
        self._lost = None  # the query whose failure the restart strategy did not allow to restart
        self.restarts = 0
        self.start_retries = StartRetries()
        self.stall = StallGuard()  # when a micro-batch has run so long that it is cancelled and run again
        self._scope = Scope()  # the driver thread's Spark actions: a stop cancels them, and any it would start
        self.state_counts = None  # a keyed.state_counts.StateCounts: the keys each state partition holds (start())

    @property
    def phase(self) -> str | None:
        return self._phase

    # -- the phase machine -------------------------------------------------------------------------

    def run(self, phase: str) -> None:
        """Continue in ``phase`` (``start()`` says which): at once if the job has finished, else in a thread."""
        if phase == "finished":  # a batch job that has finished: nothing left to run
            self._phase, self._ended = "finished", True
            self.log.close()
            return
        self._set_phase(phase)
        self._thread = threading.Thread(target=self._drive, name=f"fw-stream {self.job_name}", daemon=True)
        self._thread.start()

    def _set_phase(self, phase: str, **detail) -> None:
        with self._cond:
            old = self._phase
            if old == phase or (old is not None and not can_change(self.plan.mode, old, phase)):
                return
            self._phase = phase
            self._cond.notify_all()
        self.log.emit(events.phase_changed(phase, **detail))
        hooks.trigger("stream_phase", self, phase, detail)
        if self.follower is not None and phase != "backlog":
            self.follower.pace(PROGRESS_POLL_S)

    def _drive(self) -> None:
        """Run what is left of the job; after a failure, again from where it got to while the restart
        strategy allows."""
        while True:
            try:
                self._drive_once()
                return
            except BaseException as error:
                if self._stopping or not self._recover(error) or self._stopping:
                    return

    def _drive_once(self) -> None:
        with self._scope:  # every Spark action of the backlog, cancelled by stop() (actions.Scope)
            if self._phase == "backlog":
                self._run_backlog()
                if self._stopping or self._ended:  # stopped, or the warm query failed
                    return
                if self.plan.mode is Mode.BATCH:
                    deliver(self.plan.sink, self.backlog_outputs(), BACKLOG_BATCH)
                    self.log.end(events.job_finished())
                    self._end("finished")
                    return
                self._switch()
            if self._phase == "switching":
                deliver(self.plan.sink, self.backlog_outputs(), BACKLOG_BATCH)  # again after a restart: idempotent
            if self.backlog is not None and self.backlog.complete:
                self.plan.handover.hand_over(self.storage, self.backlog.handed(self.plan.flavour))
            if not self._stopping:
                if self.query is None:
                    self._start_query()
                if self._phase == "switching" and self.plan.handover.warm:
                    self._set_phase("stream")  # the state is the backlog's files: nothing to checkpoint first

    def _run_backlog(self) -> None:
        self.watermark = self.backlog.watermark()
        warm = None
        if self.query is None and self.plan.handover.warm and not self.plan.trigger.available_now:
            # held until the handover (availableNow would end held); after a restart it may be running
            warm = threading.Thread(target=self._warm_up, name=f"fw-stream-warm-up {self.job_name}", daemon=True)
            warm.start()
        began = time.monotonic()
        try:
            self.backlog.run(self.watermark)
        finally:
            if warm is not None:
                warm.join()
        # the first micro-batch reads less than the backlog did: the stall guard watches it from here on
        self.stall.completed((time.monotonic() - began) * 1000)
        self._note_skips()

    def _warm_up(self) -> None:
        """Start the held query while the backlog runs; a failure here is left to the start at the switch."""
        with contextlib.suppress(Exception):
            self._start_query(warm=True)
        if self._stopping or self._ended:  # stopped or failed meanwhile: leave nothing running
            self._halt()

    def _switch(self) -> None:
        per_partition = self.backlog.state_rows_per_partition(self.plan.flavour)
        if self.state_counts is not None:
            self.state_counts.switched(per_partition)
        self.log.emit(events.switch(self.watermark, state_writes=self.backlog.state_writes,
                                    state_rows_per_partition=per_partition, **self.backlog.counts()))
        self._set_phase("switching", watermark=self.watermark)
        self.log.flush()

    def _query_frame(self, warm: bool = False):
        """The streaming DataFrame of changelog rows the query writes (``warm``: started during the backlog)."""
        return keyed_job_frame(self, warm)

    def _start_query(self, warm: bool = False) -> None:
        query = launch(self, self._query_frame(warm))
        self._warm = warm
        switch_w = self.watermark if self.plan.handover.continues else None
        follower = Follower(query, self.log, self.job_name, self.spec.event_time, switch_w, self.recorded,
                            self._batch_committed, self._terminated,
                            BACKLOG_POLL_S if self._phase == "backlog" else PROGRESS_POLL_S, self.stall,
                            Measure(self))
        with self._cond:
            self.query, self.follower = query, follower
            self._cond.notify_all()
        follower.start()

    def _batch_committed(self, info: dict) -> None:
        self.recorded.add(info["batch"])
        self.start_retries.started()
        self._note_skips()
        hooks.trigger("micro_batch", self, info)
        if self._phase == "switching":
            self._set_phase("stream")
        if (late := late_failure(info, self.source.on_late)) is not None:
            self._fail(late)

    def _note_skips(self) -> None:
        """Record the files the readers skipped (on_bad_file="skip") since the last look."""
        for doc in new_skips(self.root, self.skips_noted):
            self.log.emit(events.file_skipped(doc["file"], doc["reason"]))

    def _halt(self, backlog: bool = False) -> None:
        """Stop the query, and (``backlog``) cancel the driver thread's Spark actions (the backlog's) and
        any it would start next."""
        for stop in filter(None, (self.query and self.query.stop, backlog and self._scope.cancel)):
            with contextlib.suppress(Exception):  # already stopped, or the session is gone
                stop()

    # -- stopping and ending --------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the job (its query, or the backlog's Spark job) and release it; start() again continues it."""
        if self._ended:
            self._wait_ended()
            return
        self._stopping = True
        self._woken.set()
        with self._restarting:  # a restart in flight has started its query (stopped here) or given up
            self._halt(backlog=True)
        if self._thread is not None:
            self._thread.join()
        self._halt()  # a thread started it while we were stopping
        if self.follower is not None:
            self.follower.sync()
        self._end("stopped")

    def _end(self, phase: str, **detail) -> None:
        """Record the last phase, release everything, and only then show the phase: whoever waits
        for the end (``process_all_available``) can start the job again at once."""
        with self._cond:
            if self._ended:
                self._wait_ended()
                return
            self._ended, self._ender = True, threading.get_ident()
        try:
            if self.follower is not None:
                self.follower.stop()
            self.log.emit(events.phase_changed(phase, **detail))
            self.log.close(failure=self._error)
        finally:
            with self._cond:
                self._phase = phase
                self._cond.notify_all()
        hooks.trigger("stream_phase", self, phase, detail)

    def _wait_ended(self) -> None:
        """Return once the job's last phase is shown: a thread that saw the job end second (its query's
        follower, a waiter, ``stop()``) never returns while the first is still recording the end."""
        with self._cond:
            if self._ender != threading.get_ident():
                self._cond.wait_for(lambda: self._phase in ENDED)

    def savepoint(self) -> str:
        """Write a savepoint after the last committed micro-batch (the job keeps running); returns its path.

        ``start(..., from_savepoint=path, parallelism=N)`` under a new job name restores it at any N >= 1.
        """
        return savepoints.take(self)

    def state(self, batch: int | None = None):
        """The job's state at its latest committed micro-batch, or at ``batch`` (an earlier one still kept: Spark
        keeps the last ``spark.sql.streaming.minBatchesToRetain``), as tables (the job keeps running; nothing is
        written): the reader ``fw.read_savepoint`` returns, over what a savepoint taken then would hold."""
        from ..savepoints.reader import state_of

        return state_of(self, batch)

    def state_changes(self, from_batch: int, to_batch: int):
        """The keys whose state changed from micro-batch ``from_batch`` to ``to_batch`` (both still kept, see
        ``state``): a DataFrame of the key columns, ``before`` and ``after`` (structs of ``state()``'s columns; null
        before: added, null after: removed) and ``change``."""
        from ..savepoints.changes import changes
        from ..savepoints.reader import state_of

        if type(from_batch) is int and type(to_batch) is int and from_batch > to_batch:
            raise FullWindowError(f"job.state_changes({from_batch}, {to_batch}); accepted: from_batch <= to_batch")
        return changes(state_of(self, from_batch), state_of(self, to_batch))

    def __enter__(self) -> StreamingJob:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

