"""Restart strategies with an injected clock, after Flink's *RestartBackoffTimeStrategyTest cases."""

import random

import pytest

from fw_magics.errors import FullWindowError
from fw_magics.failover import ExponentialDelayRestart, FailureRateRestart, FixedDelayRestart


class Clock:
    """A clock that moves only when told to."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def test_defaults_are_flink_1_20s():
    fixed, rate, exponential = FixedDelayRestart(), FailureRateRestart(), ExponentialDelayRestart()
    assert (fixed.attempts, fixed.delay) == (1, 1.0)
    assert (rate.max_failures_per_interval, rate.interval, rate.delay) == (1, 60.0, 1.0)
    assert (exponential.initial_backoff, exponential.max_backoff, exponential.multiplier,
            exponential.reset_backoff_threshold, exponential.jitter_factor, exponential.attempts_before_reset) == \
        (1.0, 60.0, 1.5, 3600.0, 0.1, None)


# -- fixed delay ---------------------------------------------------------------------------------


def test_fixed_delay_allows_exactly_the_number_of_attempts():
    r = FixedDelayRestart(attempts=3, delay=2.5)
    for _ in range(3):
        assert r.notify_failure() is True
        assert r.can_restart() and r.backoff == 2.5
    r.notify_failure()
    assert not r.can_restart()


def test_asking_is_not_an_attempt():
    r = FixedDelayRestart(attempts=1)
    assert all(r.can_restart() for _ in range(10))
    r.notify_failure()
    assert all(r.can_restart() for _ in range(10))
    r.notify_failure()
    assert not r.can_restart()


def test_zero_attempts_never_restarts():
    r = FixedDelayRestart(attempts=0, delay=0)
    assert r.can_restart()
    r.notify_failure()
    assert not r.can_restart()


# -- failure rate --------------------------------------------------------------------------------


def test_failure_rate_many_failures_within_the_rate():
    clock = Clock()
    r = FailureRateRestart(max_failures_per_interval=1, interval=1.0, delay=0, clock=clock)
    for _ in range(3):
        r.notify_failure()
        assert r.can_restart()
        clock.advance(1.001)


def test_failure_rate_failures_exceeding_the_rate():
    clock = Clock()
    r = FailureRateRestart(max_failures_per_interval=3, interval=10.0, delay=0, clock=clock)
    for _ in range(3):
        r.notify_failure()
        assert r.can_restart()
    r.notify_failure()
    assert not r.can_restart()
    clock.advance(10.0)
    assert not r.can_restart(), "a failure exactly one interval old still counts"
    clock.advance(0.001)
    assert r.can_restart(), "once the oldest of the last four leaves the interval, restarting is allowed again"


def test_failure_rate_backoff_is_the_delay_and_asking_changes_nothing():
    clock = Clock()
    r = FailureRateRestart(max_failures_per_interval=1, interval=60, delay=3, clock=clock)
    r.notify_failure()
    assert [r.can_restart() for _ in range(5)] == [True] * 5 and r.backoff == 3.0
    r.notify_failure()
    assert not r.can_restart()


# -- exponential delay (FLIP-364 semantics) ---------------------------------------------------------


def test_exponential_max_attempts():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=1, max_backoff=3, multiplier=1.2, reset_backoff_threshold=10,
                                jitter_factor=0.25, attempts_before_reset=13, clock=clock, random=random.Random(0))
    for _ in range(14):
        assert r.can_restart()
        assert r.notify_failure() is True
        clock.advance(3 + 1)
    assert not r.can_restart()


def test_exponential_backoff_before_any_failure_is_refused():
    with pytest.raises(FullWindowError, match="before any failure; accepted: read it after notify_failure"):
        ExponentialDelayRestart(clock=Clock()).backoff


def test_exponential_backoff_multiplies_and_counts_down():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=4, max_backoff=300, multiplier=2.3, reset_backoff_threshold=1e9,
                                jitter_factor=0, clock=clock)
    waits = []
    for _ in range(3):
        r.notify_failure()
        waits.append(r.backoff)
        clock.advance(301)
    assert waits == pytest.approx([4, 4 * 2.3, 4 * 2.3 ** 2])
    r.notify_failure()
    clock.advance(10)
    assert r.backoff == pytest.approx(4 * 2.3 ** 3 - 10), "backoff is the time left until the restart"


def test_exponential_backoff_never_exceeds_the_maximum_nor_goes_below_the_initial():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=1, max_backoff=6, multiplier=2, reset_backoff_threshold=8,
                                jitter_factor=1, clock=clock, random=random.Random(7))
    for _ in range(200):
        r.notify_failure()
        assert 1 <= r.backoff <= 6
        clock.advance(6.5)


def test_exponential_jitter_stays_within_its_factor():
    seen = []
    for seed in range(300):
        clock = Clock()
        r = ExponentialDelayRestart(initial_backoff=2, max_backoff=7, multiplier=2, reset_backoff_threshold=1e9,
                                    jitter_factor=0.25, clock=clock, random=random.Random(seed))
        for _ in range(2):
            clock.advance(8)
            r.notify_failure()
        seen.append(r.backoff)
    assert min(seen) >= 3 and max(seen) <= 5 and max(seen) - min(seen) > 1.5  # 4 +- 25 %


def test_exponential_backoff_resets_after_the_threshold():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=1, max_backoff=5, multiplier=2, reset_backoff_threshold=8,
                                jitter_factor=0, clock=clock)
    r.notify_failure()
    clock.advance(8 + 1 - 0.001)  # the restart happened at 1; 7.999 s of running since
    r.notify_failure()
    assert r.backoff == 2, "increased"
    clock.advance(8 + 2)
    r.notify_failure()
    assert r.backoff == 1, "reset"


def test_exponential_failures_before_the_pending_restart_are_one_attempt():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=2, max_backoff=6, multiplier=2, reset_backoff_threshold=80,
                                jitter_factor=0, attempts_before_reset=3, clock=clock)
    for expected in (2, 4, 6):
        first = True
        for elapsed in range(expected):
            for _ in range(10):
                assert r.notify_failure() is first
                first = False
                assert r.can_restart() and r.backoff == pytest.approx(expected - elapsed)
            clock.advance(1)
        clock.advance(0.001)
    assert r.notify_failure() is True and not r.can_restart(), "the fourth attempt is one too many"


def test_exponential_many_attempts_do_not_overflow():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=0.001, max_backoff=60, jitter_factor=0, clock=clock)
    for _ in range(5000):
        clock.advance(61)
        r.notify_failure()
    assert r.backoff == 60 and r.can_restart()


@pytest.mark.parametrize("make, message", [
    (lambda: FixedDelayRestart(attempts=-1), "attempts -1; accepted: an integer >= 0"),
    (lambda: FixedDelayRestart(attempts=1.5), "attempts 1.5; accepted: an integer >= 0"),
    (lambda: FixedDelayRestart(delay=-1), "delay -1; accepted: a number >= 0"),
    (lambda: FailureRateRestart(0), "max_failures_per_interval 0; accepted: an integer >= 1"),
    (lambda: FailureRateRestart(interval=0), "interval 0; accepted: a number > 0"),
    (lambda: ExponentialDelayRestart(initial_backoff=5, max_backoff=1), "max_backoff 1; accepted: a number >= "),
    (lambda: ExponentialDelayRestart(multiplier=1), "multiplier 1; accepted: a number > 1"),
    (lambda: ExponentialDelayRestart(jitter_factor=1.5), "jitter_factor 1.5; accepted: a number from 0 to 1"),
    (lambda: ExponentialDelayRestart(attempts_before_reset=0), "attempts_before_reset 0; accepted: an integer >= 1"),
    (lambda: ExponentialDelayRestart(initial_backoff=float("nan")), "initial_backoff nan; accepted: a number > 0"),
])
def test_bad_settings_are_refused_in_one_line(make, message):
    with pytest.raises(FullWindowError) as caught:
        make()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_restart_strategy_has_the_restart_backoff_time_strategy_interface():
    import inspect

    from fw_magics.failover import RestartBackoffTimeStrategy

    members = {"notify_failure", "can_restart", "backoff"}
    assert members <= set(vars(RestartBackoffTimeStrategy))
    for kind in (FixedDelayRestart, FailureRateRestart, ExponentialDelayRestart):
        for name in members:
            ours, theirs = inspect.getattr_static(kind, name), inspect.getattr_static(RestartBackoffTimeStrategy, name)
            assert type(ours) is type(theirs), (kind.__name__, name)  # a method, or a property


def test_fw_magics_own_verdicts_are_not_restarted_wherever_they_were_raised():
    """restartable(): a user's, Spark's or a server's failure goes to the restart strategy; fw-magics' one-line
    verdicts do not, raised in the driver or arriving as the text of a Spark worker's failure."""
    from fw_magics.errors import JobStorageError
    from fw_magics.failover import restartable

    class WorkerFailed(Exception):  # what PySpark raises: the worker's traceback as text
        pass

    worker_text = "Traceback (most recent call last):\n  File \"worker.py\", line 1\n{}: {}\n"
    restarted = [ValueError("injected failure on key 3"), ConnectionError("server closed the connection"),
                 WorkerFailed(worker_text.format("ZeroDivisionError", "division by zero")),
                 WorkerFailed(worker_text.format("psycopg.OperationalError", "connection refused"))]
    verdicts = [FullWindowError("source file 'x.parquet' cannot be read"), JobStorageError("damaged"),
                WorkerFailed(worker_text.format("fw_magics.errors.FullWindowError", "source file 'x' cannot be read")),
                WorkerFailed(worker_text.format("JobStorageError", "the source manifest m is not read"))]
    assert [restartable(e) for e in restarted] == [True] * 4
    assert [restartable(e) for e in verdicts] == [False] * 4
    assert not restartable(KeyboardInterrupt())
