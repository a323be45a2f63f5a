"""Restart strategies with Apache Flink's semantics and defaults (Flink 1.20).

Each strategy is told of every failure (``notify_failure``) and answers whether the job
may restart (``can_restart`` — asking does not count as an attempt) and after how many
seconds (``backoff``). ``clock`` is a zero-argument callable returning seconds
(``time.monotonic`` by default), injectable for tests.
"""

from __future__ import annotations

import random as _random
import time

from ..errors import FullWindowError


def _non_negative(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise FullWindowError(f"{name} must be a number >= 0; got {value!r}")
    return value


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FullWindowError(f"{name} must be a positive integer; got {value!r}")
    return value


class FixedDelayRestart:
    """At most ``attempts`` restarts, each after ``delay`` seconds (Flink: 1 attempt, 1 s)."""

    def __init__(self, attempts: int = 1, delay: float = 1.0, clock=time.monotonic):
        self.attempts = _non_negative("attempts", attempts)
        self.delay = _non_negative("delay", delay)
        self.failures = 0

    def notify_failure(self) -> None:
        self.failures += 1

    def can_restart(self) -> bool:
        return self.failures <= self.attempts

    @property
    def backoff(self) -> float:
        return float(self.delay)

    def __repr__(self):
        return f"FixedDelayRestart(attempts={self.attempts}, delay={self.delay})"


class FailureRateRestart:
    """Restart while at most ``max_failures_per_interval`` failures fall in ``interval`` seconds.

    Flink's defaults: 1 failure per 60 s, 1 s delay. As in Flink, the oldest of the last
    ``max + 1`` failures must be older than the interval for another restart.
    """

    def __init__(self, max_failures_per_interval: int = 1, interval: float = 60.0, delay: float = 1.0,
                 clock=time.monotonic):
        self.max_failures = _positive_int("max_failures_per_interval", max_failures_per_interval)
        if _non_negative("interval", interval) == 0:
            raise FullWindowError("interval must be > 0 seconds")
        self.interval = interval
        self.delay = _non_negative("delay", delay)
        self.clock = clock
        self.failures: list[float] = []

    def notify_failure(self) -> None:
        if len(self.failures) > self.max_failures:
            self.failures.pop(0)
        self.failures.append(self.clock())

    def can_restart(self) -> bool:
        if len(self.failures) > self.max_failures:
            return self.clock() - self.failures[0] > self.interval
        return True

    @property
    def backoff(self) -> float:
        return float(self.delay)

    def __repr__(self):
        return f"FailureRateRestart({self.max_failures} per {self.interval}s, delay={self.delay})"


class ExponentialDelayRestart:
    """Backoff growing by ``multiplier`` per failure up to ``max_backoff``, with jitter.

    Flink 1.20's defaults: initial 1 s, max 60 s, multiplier 1.5, reset after 1 hour without
    failures, jitter 0.1, unlimited attempts before reset. A failure more than
    ``reset_threshold`` seconds after the previous one starts again from ``initial_backoff``.
    """

    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 60.0, multiplier: float = 1.5,
                 reset_threshold: float = 3600.0, jitter: float = 0.1, attempts_before_reset: int | None = None,
                 clock=time.monotonic, random=None):
        self.initial = _non_negative("initial_backoff", initial_backoff)
        self.max = _non_negative("max_backoff", max_backoff)
        if self.max < self.initial:
            raise FullWindowError(f"max_backoff {max_backoff} is below initial_backoff {initial_backoff}")
        if _non_negative("multiplier", multiplier) < 1:
            raise FullWindowError(f"multiplier must be >= 1; got {multiplier!r}")
        self.multiplier = multiplier
        self.reset_threshold = _non_negative("reset_threshold", reset_threshold)
        if not 0 <= jitter <= 1:
            raise FullWindowError(f"jitter must be between 0 and 1; got {jitter!r}")
        self.jitter = jitter
        self.attempts_before_reset = attempts_before_reset
        self.clock = clock
        self.random = random or _random.Random()
        self.current = 0.0
        self.attempts = 0
        self.last_failure: float | None = None
        self._backoff = 0.0

    def notify_failure(self) -> None:
        now = self.clock()
        if self.last_failure is None or now - self.last_failure >= self.reset_threshold:
            self.current, self.attempts = self.initial, 0
        else:
            self.current = min(self.current * self.multiplier, self.max)
        self.attempts += 1
        self.last_failure = now
        spread = self.current * self.jitter
        self._backoff = max(0.0, min(self.max, self.current + self.random.uniform(-spread, spread)))

    def can_restart(self) -> bool:
        return self.attempts_before_reset is None or self.attempts <= self.attempts_before_reset

    @property
    def backoff(self) -> float:
        return self._backoff

    def __repr__(self):
        return f"ExponentialDelayRestart(initial={self.initial}, max={self.max}, multiplier={self.multiplier})"
