"""Following a job's streaming query: each committed micro-batch into the job log, then its end.

Polled (``recentProgress``, ``isActive``) from a daemon thread rather than heard through a
``StreamingQueryListener``: under Spark Connect a client listener keeps a non-daemon thread
that blocks the interpreter's exit for as long as the listener is registered, and removing it
can hang (pyspark joins that thread while holding the lock it needs to deliver a pending
event). A poll makes no Spark call once the follower is stopped.

A follower is handed the query, the job's ``JobLog`` (each micro-batch is a ``micro_batch``
event), ``measure(progress, info)``, which adds what the job itself measures of a micro-batch to its
event (its keys held, its source's lag), and two callbacks: ``on_batch(info)`` after each batch is recorded, ``on_end(query, error)``
when the query ends by itself (``error``: its exception, or None for ``availableNow``), or when its
running micro-batch has stalled (``error``: a ``stall.Stalled``; the query still runs, and the job
stops it before it starts it again). The job's ``StallGuard`` says when that is.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
import warnings

from ....errors import error_summary
from ....recovery import events
from ....values.event_time import MIN_WATERMARK, effective_watermark
from .stall import StallGuard

PROGRESS_POLL_S = 0.2  # how often a running job reads its query's progress
BACKLOG_POLL_S = 1.0  # ... while its backlog runs (a warm-up query has nothing to record; only a failure)


def ran(progress) -> bool:
    """Whether a progress report is of a micro-batch that ran: a trigger that found nothing new reports
    (every 10 s, Spark's ``noDataProgressEventInterval``) the *next* batch's id, with no ``addBatch``."""
    return "addBatch" in (getattr(progress, "durationMs", None) or {})


def held(progress) -> bool:
    """Whether a micro-batch ran while its source was held (the warm-up during the backlog)."""
    sources = getattr(progress, "sources", None) or []
    return bool(sources) and held_offset(sources[0].endOffset)


def held_offset(end_offset: str | None) -> bool:
    """Whether a first source's end offset (JSON text) is a held one (see ``held``)."""
    try:
        return bool(json.loads(end_offset or "{}").get("held"))
    except (ValueError, AttributeError):
        return False


def watermark_ms(progress) -> int | None:
    """Spark's watermark of a progress report, in epoch ms (None when there is none yet)."""
    value = _epoch_ms((getattr(progress, "eventTime", None) or {}).get("watermark"))
    return value if value is not None and value > 0 else None


def _epoch_ms(text) -> int | None:
    """An ISO 8601 time Spark reports ("2024-01-01T00:00:00.000Z") in epoch ms; None if there is none."""
    if not text or not isinstance(text, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)


def _rate(value) -> float | None:
    """A rate Spark reports (rows per second; NaN when it has none) as a finite float, or None."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0 else None


def batch_info(progress, event_time: str | None, switch_watermark: int | None) -> dict:
    """What the log and the ``micro_batch`` hooks say of one committed micro-batch."""
    operators = progress.stateOperators or []
    watermark = None
    if event_time is not None:
        effective = effective_watermark(switch_watermark, watermark_ms(progress))
        watermark = None if effective == MIN_WATERMARK else effective
    spark_late = sum(op.numRowsDroppedByWatermark for op in operators)
    observed = _observed(progress)
    return {
        "batch": progress.batchId, "input_rows": progress.numInputRows,
        "state_rows_updated": sum(op.numRowsUpdated for op in operators), "watermark": watermark,
        "dropped_by_watermark": spark_late,
        "duration_ms": (progress.durationMs or {}).get("triggerExecution"),
        "late": spark_late + observed.get("late", 0), "undated": observed.get("undated", 0),
        "started": _epoch_ms(getattr(progress, "timestamp", None)),
        "input_rows_per_second": _rate(getattr(progress, "inputRowsPerSecond", None)),
        "processed_rows_per_second": _rate(getattr(progress, "processedRowsPerSecond", None)),
    }


def late_failure(info: dict, on_late: str):
    """The error that stops a job with ``on_late="fail"`` when a micro-batch dropped records, or None."""
    from ....errors import FullWindowError

    late, undated = info.get("late") or 0, info.get("undated") or 0
    if on_late != "fail" or not (late or undated):
        return None
    return FullWindowError(f"micro-batch {info['batch']} had {late} late record(s) (event time at or before the "
                           f"watermark) and {undated} without an event time: on_late='fail' stops the job; "
                           "on_late='drop' (the default) counts and drops them")


def _observed(progress) -> dict:
    """The counts the query observed before dropping records (``query.OBSERVED``), as ints."""
    from ..keyed.query import OBSERVED

    row = (getattr(progress, "observedMetrics", None) or {}).get(OBSERVED)
    if row is None:
        return {}
    values = row.asDict() if hasattr(row, "asDict") else dict(row)
    if set(values) == {"values", "schema"}:  # Spark Connect: Row(values=[...], schema={"fields": [...]})
        names = [field["name"] for field in values["schema"]["fields"]]
        values = dict(zip(names, values["values"]))
    return {k: int(v or 0) for k, v in values.items()}


class Follower:
    """Follows ``query`` from a daemon thread (see the module docstring)."""

    def __init__(self, query, log, job_name: str, event_time: str | None, switch_watermark: int | None,
                 recorded, on_batch, on_end, interval: float = PROGRESS_POLL_S, guard: StallGuard | None = None,
                 measure=None):
        self.query, self.log, self.job_name = query, log, job_name
        self.measure = measure
        self.guard = guard
        self.event_time, self.switch_watermark = event_time, switch_watermark
        self.recorded = set(recorded)
        self.on_batch, self.on_end = on_batch, on_end
        self.interval = interval
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"fw-stream-progress {job_name}", daemon=True)

    def start(self) -> Follower:
        self._thread.start()
        return self

    def pace(self, interval: float) -> None:
        """Poll every ``interval`` seconds from now on (the backlog's slower pace ends at the switch)."""
        self.interval = interval
        self._wake.set()

    def stop(self) -> None:
        """Follow no more: no Spark call after this returns but the one in flight."""
        self._stopped = True
        self._wake.set()

    def sync(self):
        """Record every micro-batch the query has reported and not been recorded yet; the id of the last
        it reported (None: none yet)."""
        last = None
        for progress in self.query.recentProgress:
            self._record(progress)
            last = progress.batchId
        return last

    def _record(self, progress) -> None:
        if not ran(progress) or held(progress):  # idle, or a warm-up batch (its source held): not the job's
            return
        with self._lock:
            if progress.batchId in self.recorded or self._stopped:
                return
            self.recorded.add(progress.batchId)
        info = batch_info(progress, self.event_time, self.switch_watermark)
        if self.measure is not None:
            info.update(self.measure(progress, info))
        if self.guard is not None:
            self.guard.completed(info["duration_ms"])
        self.log.emit(events.micro_batch(**info))
        self.on_batch(info)

    def _run(self) -> None:
        query = self.query
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stopped:
                return
            try:
                last = self.sync()
                if query.isActive:
                    if (exception := self._stall(query, last)) is None:
                        continue
                else:
                    exception = query.exception()
            except Exception as error:  # the session went away under us: say so once, then stop following
                if not self._stopped:
                    warnings.warn(f"job {self.job_name!r}: stopped following its query ({error_summary(error)}); "
                                  "process_all_available() still reads its progress", stacklevel=1)
                return
            if not self._stopped:
                self.on_end(query, exception)
            return

    def _stall(self, query, last):
        """The ``Stalled`` error when the query's running micro-batch has stalled, else None."""
        if self.guard is None:
            return None
        busy = self.guard.observe(bool(query.status.get("isTriggerActive")), last)
        if busy is None:
            return None
        return self.guard.stalled(busy, max(self.recorded, default=-1) + 1)


def wait_in_thread(wait) -> None:
    """Run the blocking ``wait()`` (a Py4J or gRPC call) in a helper thread, so that Kernel > Interrupt
    stops this thread's wait at once, in Python, not inside the call (no Py4J frames)."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run():
        try:
            wait()
        except BaseException as error:
            failure.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name="fw-stream-wait", daemon=True).start()
    while not done.wait(0.2):
        pass
    if failure:
        raise failure[0]
