"""One StreamingQueryListener per Spark session, added once and never removed; jobs subscribe to it.

Why not one listener per job, removed when the job ends: under Spark Connect, pyspark's client
listener bus (``StreamingQueryListenerBus.remove``) joins its event thread while holding the lock
that thread needs to deliver an event. A query that reports progress or termination while its job
stops its listener hangs the driver for good (seen in CI: ``stop()`` after a restore under
``SPARK_REMOTE``). With one listener that stays, a job's subscription ends in plain Python and no
Spark call is made at stop. Classic Spark gets the same arrangement: one listener, one code path.

A subscriber is called from Spark's listener thread; an exception in it is logged and does not
reach the other subscribers or Spark.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

_lock = threading.Lock()
_buses: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # SparkSession -> _Bus


@dataclass(eq=False)
class Subscription:
    """One job's interest in the session's query events; ``close()`` ends it (idempotent)."""

    on_progress: Callable
    on_terminated: Callable
    _bus: _Bus | None = None

    def close(self) -> None:
        if self._bus is not None:
            self._bus.remove(self)
            self._bus = None


class _Bus:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Subscription] = []

    def add(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers.append(subscription)
        subscription._bus = self

    def remove(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscribers:
                self._subscribers.remove(subscription)

    def post(self, callback: str, event) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for subscription in subscribers:
            try:
                getattr(subscription, callback)(event)
            except Exception:  # one job's handler must not starve the others, nor Spark's bus
                log.exception("fw-magics: a streaming job's %s handler failed", callback)


def subscribe(spark, on_progress: Callable, on_terminated: Callable) -> Subscription:
    """Call ``on_progress(event)`` and ``on_terminated(event)`` for every query of ``spark``."""
    subscription = Subscription(on_progress, on_terminated)
    with _lock:
        bus = _buses.get(spark)
        if bus is None:
            bus = _Bus()
            spark.streams.addListener(_listener_class()(bus))
            _buses[spark] = bus
    bus.add(subscription)
    return subscription


def _listener_class():
    from pyspark.sql.streaming import StreamingQueryListener  # late: importing fw_magics starts no Spark

    class SessionListener(StreamingQueryListener):
        def __init__(self, bus: _Bus) -> None:
            self.bus = bus

        def onQueryStarted(self, event):  # noqa: N802 (PySpark's names)
            pass

        def onQueryProgress(self, event):  # noqa: N802
            self.bus.post("on_progress", event)

        def onQueryIdle(self, event):  # noqa: N802
            pass

        def onQueryTerminated(self, event):  # noqa: N802
            self.bus.post("on_terminated", event)

    return SessionListener
