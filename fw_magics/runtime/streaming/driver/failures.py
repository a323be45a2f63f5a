"""What a failure does to a streaming job, and waiting for the job through its failures and restarts.

A failure goes to the job's restart strategy (``plan.restart``, the one ``execute()`` takes): while it
allows, the job goes on after its backoff where it got to, as Flink restarts a job from its last
checkpoint: the backlog runs the subtasks that did not commit, the query starts again from its
checkpoint (the changelog sink is idempotent per micro-batch), each failure and restart in the log
(``region_failed`` / ``region_restarted`` of the operator's vertex). Spark restarts neither: a
task failure is retried (``local[*,F]``), but a query whose driver-side Python worker did not start
in time (a busy machine) just ends. Such a query ran nothing: the job starts it again at once, a few
times in a row (``failover.StartRetries``; ``query_retried`` in the log), outside the restart strategy.
An interruption (a cancel, the session gone) and fw-magics'
own verdicts (a damaged job directory, ``on_late="fail"``) are not restarted. The first failure that
is not restarted is the job's: it is recorded once, and ``process_all_available()`` raises it once the
job has ended, as a fresh one-line error chained to it.

``Failures`` is that half of ``StreamingJob`` (``job.py``), as ``JobResults`` is its reading half. It
shares the job's state, which ``StreamingJob.__init__`` makes; what it reads of the job's own and the
job's methods it calls are declared at the top of the class.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Callable

from ....errors import FwMagicsError, Interrupted, error_summary, raised_again
from ....failover import StartRetries, checked_backoff, restartable
from ....recovery import events
from ....spark.flavour import interruption
from .follower import wait_in_thread
from .phases import ENDED
from .stall import Stalled

#: Why a job whose query ended by itself (not availableNow, not stopped by the job) stops.
STOPPED_OUTSIDE = "its query was stopped from outside the job (the Spark session stopping, or the query's own stop())"


class Failures:
    """The failing and waiting half of a ``StreamingJob`` (see the module docstring)."""

    # -- what it shares with the job (made by StreamingJob.__init__) ---------------------------------
    _cond: threading.Condition  # guards the phase; notified at each change
    _stopping: bool  # stop() was called
    _ended: bool  # the job's end is being, or was, recorded
    _error: BaseException | None  # the error that failed the job
    _shown: BaseException | None = None  # ``exception``: the one-line error it is shown as
    _interrupted: str | None  # why its work was cancelled from outside, if it was
    _restarting: threading.RLock  # one restart at a time; stop() and a failure wait for one in flight
    _woken: threading.Event  # set by stop() and a failure: a restart's backoff ends at once
    _lost: object  # the query whose failure the restart strategy did not allow to restart
    _warm: bool  # whether the query was started warm (held during the backlog)
    restarts: int
    start_retries: StartRetries  # the query's starts in a row that missed Spark's window for its Python worker
    # -- and the job's own steps it takes ------------------------------------------------------------
    _start_query: Callable[..., None]  # (warm=False): the query and its follower
    _halt: Callable[..., None]  # (backlog=False): stop the query (and cancel the backlog's actions)
    _end: Callable[..., None]  # (phase, **detail): record the last phase and release everything

    @property
    def exception(self) -> BaseException | None:
        """The error that failed the job, if it failed: fw-magics' own one-line error as it was raised, any
        other as the one-line ``JobFailedError`` that ``process_all_available()`` raises, what Spark raised
        chained to it (``__cause__``); in a notebook its user's frames show, as a ``%%fullwindow`` cell's do."""
        error = self._error
        if error is None or isinstance(error, FwMagicsError):
            return error
        if self._shown is None or self._shown.__cause__ is not error:
            self._shown = raised_again(error, f"job {self.job_name!r} failed")
            self._shown.__cause__ = error
        return self._shown

    # -- a failure and the restart strategy ------------------------------------------------------------

    def _terminated(self, query, exception) -> None:
        """The follower saw the query end (``exception``: why, if it failed): a restart, the job's failure, or
        (availableNow) its end."""
        if self._gone():  # stopped, failed or ended: the job halted its query itself
            return
        if exception:
            self._recover(exception, query)
        elif not self.plan.trigger.available_now:  # a query of the job never ends by itself: it was stopped
            self._fail(Interrupted(STOPPED_OUTSIDE), why=STOPPED_OUTSIDE)
        else:  # availableNow: everything there was is processed
            self.follower.sync()
            self._end("stopped")

    def _recover(self, error: BaseException, query=None) -> bool:
        """Restart after ``error`` (``_restarted``), else fail the job; whether it was restarted."""
        try:
            if self._restarted(error, query):
                return True
        except Exception as failure:  # the restart itself failed (a backoff refused, a query that did not start)
            error = failure
        if not self._stopping:
            self._fail(error)
        return False

    def _restarted(self, error: BaseException, query=None) -> bool:
        """Whether the job goes on after ``error`` (see the module docstring): the failure and the restart
        in the log, the backoff waited, then the failed ``query`` (None: the driver thread's work) started
        again from its checkpoint. True also when that query was restarted already (its follower and a
        waiter both saw it end) and when the job was stopped meanwhile; False leaves the failure to the caller.
        A failure of the restart itself is raised, and that query is not tried again."""
        if not restartable(error) or (not isinstance(error, Stalled) and interruption(error, self.spark) is not None):
            return False  # (a stall is the guard's own verdict: the session, which its task may hold, is not asked)
        with self._restarting:
            if query is not None and query is not self.query:
                return True
            if query is not None and query is self._lost:
                return False  # decided already (its follower and a waiter both saw it end)
            try:
                return self._restart(error, query)
            except BaseException:
                self._lost = query
                raise

    def _gone(self) -> bool:
        """Whether the job has been stopped, has failed or has ended: nothing may start any more."""
        return self._stopping or self._ended or self._error is not None or self._interrupted is not None

    def _restart(self, error: BaseException, query) -> bool:
        """``_restarted``'s work, under its lock."""
        if self._gone():
            return self._stopping
        if query is not None and self.start_retries.absorbs(error):
            self.log.emit(events.query_retried(error_summary(error), self.start_retries.in_row))
            return self._start_again(query) or self._stopping
        restart, attempt = self.plan.restart, self.restarts + 1
        restart.notify_failure()
        failed = [] if query is not None or self.phase != "backlog" else [
            f"{self.vertex}[{i}]" for i in range(self.backlog.parallelism) if i not in self.backlog.finished]
        self.log.emit(events.region_failed(self.vertex, failed, error_summary(error), attempt))
        if not restart.can_restart():
            self._lost = query
            return False
        backoff = checked_backoff(restart, error)
        if attempt == 1:  # said once, in the cell that is running (a job's restarts are in its events too)
            print(f"fw-magics: job {self.job_name!r} failed ({error_summary(error)}); its restart strategy restarts it "
                  f"from where it got to in {backoff:.3g} s (job.restarts counts the restarts)", file=sys.stderr,
                  flush=True)
        self._woken.wait(backoff)
        if not self._start_again(query, attempt):
            return self._stopping
        self.log.emit(events.region_restarted(self.vertex, failed, attempt))
        return True

    def _start_again(self, query, attempt: int | None = None) -> bool:
        """Start the ended ``query`` (None: the driver thread's work, which goes on by itself) again from its
        checkpoint; ``attempt``: the restart strategy's restart this is. False if the job was stopped or failed
        meanwhile."""
        if query is not None:
            if self.follower is not None:
                with contextlib.suppress(Exception):
                    self.follower.sync()  # the micro-batches it committed since the last poll
                self.follower.stop()
            with contextlib.suppress(Exception):
                query.stop()  # ended already; stopped so nothing of it is left
        if self._gone():  # stopped during the backoff, or failed by what those batches said
            return False
        if attempt is not None:
            self.restarts = attempt
        if query is not None:
            # self.query stays the ended one until the new one replaces it: the driver thread
            # starts a query only where there is none
            self._start_query(self._warm and self.phase == "backlog")
        return True

    def _fail(self, error: BaseException, why: str | None = None) -> None:
        """The job failed; or (``interruption``, or ``why`` given) its Spark work was cancelled from outside
        or its session went away under it: then it stops, recorded as interrupted, as execute() records a cancel."""
        why = why or (None if self._stopping else interruption(error, self.spark))
        with self._cond:
            if self._ended or self._error is not None or self._interrupted is not None:
                return  # the first failure is the job's: a second one never replaces it
            self._error, self._interrupted = (error, None) if why is None else (None, f"interrupted: {why}")
        self._woken.set()  # a restart waiting out its backoff gives up at once
        with self._restarting:  # a restart in flight has started its query (halted here) or given up
            self._halt(backlog=True)  # the backlog too, when its warm query failed
        if why is None:
            self.log.failed(error)
            self._end("failed", cause=error_summary(error))
        else:
            self.log.cancelled(self._interrupted)
            self._end("stopped", cause=self._interrupted)

    # -- waiting -----------------------------------------------------------------------------------------

    def _reads_fresh(self) -> bool:
        """Whether the query reads fresh data: started, and not held (a held job is in "stream" once handed over)."""
        if self.query is None or self.phase == "backlog":
            return False
        return not (self.plan.handover.warm and self.phase == "switching")

    def process_all_available(self, timeout: float | None = None) -> Failures:
        """Return once every file present now is processed (and committed); a failure is raised, one line.
        Kernel > Interrupt stops the wait, not the job: one line says so (``stop()`` stops it)."""
        try:
            with self._cond:
                ready = self._cond.wait_for(lambda: self._reads_fresh() or self.phase in ENDED, timeout)
            if not ready:
                raise TimeoutError(f"job {self.job_name!r} did not reach its stream within {timeout} s")
            self._raise_failure()
            while (query := self.query) is not None and self.phase not in ENDED:
                try:
                    if self.plan.trigger.available_now:
                        wait_in_thread(query.awaitTermination)
                    for _ in range(0 if self.plan.trigger.available_now else self.plan.settle):
                        wait_in_thread(query.processAllAvailable)
                except Exception as error:
                    # decided (and a restart run) in a helper thread: Kernel > Interrupt stops this wait only
                    wait_in_thread(functools.partial(self._terminated, query, error))
                    self._raise_failure()
                    if self.query is query:  # stopped meanwhile
                        break
                    continue  # restarted: wait for the new query
                with self._restarting:  # a restart in flight (of a stalled micro-batch: it stopped the query) ends first
                    pass
                self._raise_failure()
                if self.query is not query and not self._stopping:
                    continue  # restarted: wait for the new query
                self.follower.sync()
                if self.plan.trigger.available_now:
                    self._end("stopped")
                break
        except Interrupted:
            raise  # the job's own interruption, raised by _raise_failure
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: stopped waiting; job {self.job_name!r} keeps running in phase "
                              f"{self.phase} (job.stop() stops it)") from None
        self._raise_failure()
        if not self._ended:
            self.log.flush()
        return self

    def _raise_failure(self) -> None:
        """Raise the job's failure as a fresh one-line error chained to it (a later call shows only its own
        frames), once the job has ended (a failure another thread is recording is waited for)."""
        if self._error is None and self._interrupted is None:
            return
        with self._cond:
            self._cond.wait_for(lambda: self.phase in ENDED, 60)
        if self._interrupted is not None:
            raise Interrupted(f"job {self.job_name!r} was {self._interrupted}; start() continues it")
        raise raised_again(self._error, f"job {self.job_name!r} failed") from self._error
