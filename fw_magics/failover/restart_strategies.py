"""Restart strategies: how often a job may restart, and after how long (Flink's semantics).

Each strategy is told of every failure with ``notify_failure()``, answers ``can_restart()``
(asking never counts as an attempt) and gives the wait before the restart in seconds as
``backoff``. They follow Flink's ``FixedDelayRestartBackoffTimeStrategy``,
``FailureRateRestartBackoffTimeStrategy`` and ``ExponentialDelayRestartBackoffTimeStrategy``
(Flink 1.20), and default to Flink 1.20's ``restart-strategy.*`` options as documented in
"Task Failure Recovery" (docs/ops/state/task_failure_recovery):

* fixed-delay: ``attempts`` 1, ``delay`` 1 s;
* failure-rate: ``max-failures-per-interval`` 1, ``failure-rate-interval`` 1 min, ``delay`` 1 s;
* exponential-delay: ``initial-backoff`` 1 s, ``max-backoff`` 1 min, ``backoff-multiplier``
  1.5, ``reset-backoff-threshold`` 1 h, ``jitter-factor`` 0.1,
  ``attempts-before-reset-backoff`` infinite.

``clock`` is a zero-argument callable returning seconds (``time.monotonic`` by default), so
tests can drive time by hand.
"""

from __future__ import annotations

import math
import random as _random
import time
from collections import deque
from typing import Protocol

from ..errors import FullWindowError, FwMagicsError, raised_in_worker


class RestartBackoffTimeStrategy(Protocol):
    """Whether and when a failed job restarts (Flink's ``RestartBackoffTimeStrategy``).

    The runtime calls ``notify_failure()`` on every failure, then restarts after ``backoff``
    seconds if ``can_restart()``, else fails the job. (Not runtime-checkable: ``isinstance``
    would read ``backoff``, which some strategies refuse before a failure.)
    """

    def notify_failure(self) -> bool:
        """Record a failure; False when it is merged into a restart already pending."""
        ...

    def can_restart(self) -> bool:
        """Whether another restart is allowed (asking never counts as an attempt)."""
        ...

    @property
    def backoff(self) -> float:
        """Seconds to wait before the restart."""
        ...


def _number(name: str, value, minimum: float = 0.0, strict: bool = False) -> float:
    """``value`` as a float, or a one-line error naming the setting and what is accepted."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < minimum or (strict and value == minimum):
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise FullWindowError(f"{name} {value!r}; accepted: a number {bound}")
    return float(value)


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FullWindowError(f"{name} {value!r}; accepted: an integer >= {minimum}")
    return value


class FixedDelayRestart:
    """At most ``attempts`` restarts, each after ``delay`` seconds.

    As Flink's ``FixedDelayRestartBackoffTimeStrategy``: every failure counts, and a restart
    is allowed while the failures so far do not exceed ``attempts``. ``attempts=0`` never
    restarts.
    """

    def __init__(self, attempts: int = 1, delay: float = 1.0):
        self.attempts = _count("attempts", attempts, 0)
        self.delay = _number("delay", delay)
        self.failures = 0

    def notify_failure(self) -> bool:
        """Record a failure; it is always a new attempt (True)."""
        self.failures += 1
        return True

    def can_restart(self) -> bool:
        return self.failures <= self.attempts

    @property
    def backoff(self) -> float:
        """Seconds to wait before restarting."""
        return self.delay

    def __repr__(self) -> str:
        return f"FixedDelayRestart(attempts={self.attempts}, delay={self.delay:g})"


class FailureRateRestart:
    """Restart while at most ``max_failures_per_interval`` failures fall within ``interval`` seconds.

    As Flink's ``FailureRateRestartBackoffTimeStrategy``: the timestamps of the last
    ``max_failures_per_interval + 1`` failures are kept; once there are that many, a restart
    is allowed only if the oldest of them is more than ``interval`` seconds old.
    """

    def __init__(self, max_failures_per_interval: int = 1, interval: float = 60.0, delay: float = 1.0,
                 clock=time.monotonic):
        self.max_failures_per_interval = _count("max_failures_per_interval", max_failures_per_interval, 1)
        self.interval = _number("interval", interval, strict=True)
        self.delay = _number("delay", delay)
        self.clock = clock
        self._failures: deque[float] = deque()

    def _full(self) -> bool:
        return len(self._failures) > self.max_failures_per_interval

    def notify_failure(self) -> bool:
        """Record a failure at the clock's time; it is always a new attempt (True)."""
        if self._full():
            self._failures.popleft()
        self._failures.append(self.clock())
        return True

    def can_restart(self) -> bool:
        return not self._full() or self.clock() - self._failures[0] > self.interval

    @property
    def backoff(self) -> float:
        """Seconds to wait before restarting."""
        return self.delay

    def __repr__(self) -> str:
        return (f"FailureRateRestart(max_failures_per_interval={self.max_failures_per_interval}, "
                f"interval={self.interval:g}, delay={self.delay:g})")


class ExponentialDelayRestart:
    """A backoff that grows by ``multiplier`` with every attempt, up to ``max_backoff``.

    As Flink 1.20's ``ExponentialDelayRestartBackoffTimeStrategy`` (FLIP-364):

    * attempt ``n`` (from 0) waits ``initial_backoff * multiplier**n`` seconds, moved by a
      random jitter of up to ``jitter_factor`` of itself either way, and kept within
      ``[initial_backoff, max_backoff]``;
    * failures that arrive before the pending restart has happened are merged into that
      attempt (``notify_failure`` returns False for them);
    * a failure at least ``reset_backoff_threshold`` seconds after the last restart started
      the job again begins afresh at attempt 0;
    * ``can_restart`` is True while the attempts since that reset do not exceed
      ``attempts_before_reset`` (``None``: no limit);
    * ``backoff`` is the time left until the scheduled restart.

    ``random`` supplies the jitter (anything with ``uniform(a, b)``, e.g. a seeded
    ``random.Random``).
    """

    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 60.0, multiplier: float = 1.5,
                 reset_backoff_threshold: float = 3600.0, jitter_factor: float = 0.1,
                 attempts_before_reset: int | None = None, clock=time.monotonic, random=None):
        self.initial_backoff = _number("initial_backoff", initial_backoff, strict=True)
        self.max_backoff = _number("max_backoff", max_backoff, strict=True)
        if self.max_backoff < self.initial_backoff:
            raise FullWindowError(f"max_backoff {max_backoff!r}; accepted: a number >= initial_backoff "
                                  f"({initial_backoff!r})")
        self.multiplier = _number("multiplier", multiplier, minimum=1.0, strict=True)
        self.reset_backoff_threshold = _number("reset_backoff_threshold", reset_backoff_threshold, strict=True)
        self.jitter_factor = _number("jitter_factor", jitter_factor)
        if self.jitter_factor > 1:
            raise FullWindowError(f"jitter_factor {jitter_factor!r}; accepted: a number from 0 to 1")
        self.attempts_before_reset = (None if attempts_before_reset is None
                                      else _count("attempts_before_reset", attempts_before_reset, 1))
        self.clock = clock
        self.random = random if random is not None else _random.Random()
        # beyond this exponent the raw backoff is past max_backoff (and multiplier**n may overflow)
        self._exponent_cap = math.ceil(math.log(self.max_backoff / self.initial_backoff, self.multiplier)) + 1
        self.attempt = 0
        self._next_restart: float | None = None

    def notify_failure(self) -> bool:
        """Record a failure; False when it is merged into the restart already pending."""
        now = self.clock()
        if self._next_restart is not None and now <= self._next_restart:
            return False
        if self._next_restart is None or now - self._next_restart >= self.reset_backoff_threshold:
            self.attempt = 0
        self._next_restart = now + self._backoff_of(self.attempt)
        self.attempt += 1
        return True

    def _backoff_of(self, attempt: int) -> float:
        raw = self.initial_backoff * self.multiplier ** min(attempt, self._exponent_cap)
        spread = raw * self.jitter_factor
        jitter = self.random.uniform(-spread, spread) if spread else 0.0
        return max(self.initial_backoff, min(raw + jitter, self.max_backoff))

    def can_restart(self) -> bool:
        return self.attempts_before_reset is None or self.attempt <= self.attempts_before_reset

    @property
    def backoff(self) -> float:
        """Seconds left until the scheduled restart (0 once it is due)."""
        if self._next_restart is None:
            raise FullWindowError("backoff of ExponentialDelayRestart before any failure; "
                                  "accepted: read it after notify_failure()")
        return max(0.0, self._next_restart - self.clock())

    def __repr__(self) -> str:
        return (f"ExponentialDelayRestart(initial_backoff={self.initial_backoff:g}, max_backoff={self.max_backoff:g}, "
                f"multiplier={self.multiplier:g}, reset_backoff_threshold={self.reset_backoff_threshold:g}, "
                f"jitter_factor={self.jitter_factor:g}, attempts_before_reset={self.attempts_before_reset})")


def restart_strategy(restart) -> RestartBackoffTimeStrategy:
    """``restart`` checked: None (the default FixedDelayRestart()) or an object with the
    RestartBackoffTimeStrategy methods; anything else is one line naming what is missing.
    ``execute()`` and a streaming job's ``start()`` both take it (decided once, where the job starts)."""
    if restart is None:
        return FixedDelayRestart()
    accepted = ("accepted: FixedDelayRestart(...), FailureRateRestart(...), ExponentialDelayRestart(...) "
                "from fw_magics.failover, or an object with notify_failure(), can_restart() and backoff")
    if isinstance(restart, type):
        raise FullWindowError(f"restart={restart.__name__} is a class; {accepted} (an instance, e.g. "
                              f"{restart.__name__}())")
    missing = [name for name in ("notify_failure", "can_restart") if not callable(getattr(restart, name, None))]
    if not hasattr(type(restart), "backoff") and "backoff" not in getattr(restart, "__dict__", {}):
        missing.append("backoff")
    if missing:
        raise FullWindowError(f"restart={restart!r:.60} ({type(restart).__name__}) is not a restart strategy: "
                              f"it has no {', '.join(missing)}; {accepted}")
    return restart


def checked_backoff(strategy: RestartBackoffTimeStrategy, error: BaseException) -> float:
    """The strategy's ``backoff`` once a restart is allowed: a number of seconds >= 0, else one line
    (chained to the failure that asked for the restart)."""
    backoff = strategy.backoff
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or not (
            math.isfinite(backoff) and backoff >= 0):
        raise FullWindowError(f"restart strategy {strategy!r:.60} gave backoff {backoff!r:.40}; "
                              "accepted: a number of seconds >= 0") from error
    return float(backoff)


def restartable(error: BaseException) -> bool:
    """Whether a restart strategy is asked at all after ``error``: any failure (a user function's, Spark's, a
    server's) but fw-magics' own one-line verdicts, raised in the driver or in a Spark worker (a file that is
    not the format it should be, a value its column cannot hold, a damaged job directory, a truncated table):
    a restart would meet the same file, value or folder, and the line already says what to do. ``execute()``
    and a streaming job both ask this, as Flink's unrecoverable errors skip its restart strategy."""
    return isinstance(error, Exception) and not isinstance(error, FwMagicsError) and raised_in_worker(error) is None
