"""Region failover and restart strategies, with Flink's tests as the reference."""

import random

import pytest
from fw_magics.failover import (
    ExponentialDelayRestart, FailureRateRestart, FixedDelayRestart, RestartAllStrategy,
    RestartPipelinedRegionStrategy,
)
from fw_magics.graph import JobGraph
from hypothesis import given, settings

from .test_regions import graph, random_graphs


def test_consumer_regions_restart():
    # v1 -> (blocking, all-to-all) v2 -> (pointwise, pipelined) v3
    g = graph("batch", [("v1", 2), ("v2", 2), ("v3", 2, {"chainable": False})],
              [("v1", "v2", "all_to_all"), ("v2", "v3", "pointwise", "pipelined")])
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("v2", 0)) == {("v2", 0), ("v3", 0)}
    assert s.tasks_to_restart(("v1", 0)) == {("v1", 0), ("v2", 0), ("v2", 1), ("v3", 0), ("v3", 1)}


def test_producers_of_unavailable_results_are_added():
    g = graph("batch", [("v1", 2), ("v2", 2), ("v3", 2)], [("v1", "v2", "all_to_all"), ("v2", "v3", "all_to_all")])
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("v3", 0)) == {("v3", 0)}
    assert s.tasks_to_restart(("v3", 0), unavailable=[("v2", 1)]) == {("v2", 1), ("v3", 0), ("v3", 1)}
    # recursively: v2's input from v1[0] is gone too
    assert s.tasks_to_restart(("v3", 0), unavailable=[("v2", 1), ("v1", 0)]) == \
        {("v1", 0), ("v2", 0), ("v2", 1), ("v3", 0), ("v3", 1)}


def test_chained_regions_behind_blocking_edges():
    g = graph("batch", [("src", 2), ("map", 2), ("agg", 2), ("sink", 2)],
              [("src", "map", "pointwise"), ("map", "agg", "all_to_all"), ("agg", "sink", "pointwise")])
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("sink", 1)) == {("agg", 1), ("sink", 1)}
    assert s.tasks_to_restart(("map", 0)) == {("src", 0), ("map", 0), ("agg", 0), ("agg", 1), ("sink", 0), ("sink", 1)}


def test_restart_all():
    g = graph("batch", [("a", 2), ("b", 3)], [("a", "b", "all_to_all")])
    assert RestartAllStrategy(g).tasks_to_restart(("b", 2)) == set(g.execution_vertices())


@settings(max_examples=200, deadline=None)
@given(random_graphs())
def test_restart_sets_hold_the_failed_region_and_downstream_and_are_within_restart_all(g):
    rng = random.Random(len(g.execution_vertices()))
    vertices = g.execution_vertices()
    failed = rng.choice(vertices)
    tasks = RestartPipelinedRegionStrategy(g).tasks_to_restart(failed)
    assert g.region_of(failed) <= tasks
    for v in tasks:
        for consumer, _ in g.consumers_of(v):
            assert consumer in tasks, "a consumer of a restarted task was left running"
    assert tasks <= RestartAllStrategy(g).tasks_to_restart(failed)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_fixed_delay():
    r = FixedDelayRestart(attempts=2, delay=3.0)
    assert r.can_restart() and r.can_restart()  # asking is not an attempt
    r.notify_failure()
    assert r.can_restart() and r.backoff == 3.0
    r.notify_failure()
    assert r.can_restart()
    r.notify_failure()
    assert not r.can_restart()
    assert FixedDelayRestart().attempts == 1 and FixedDelayRestart().delay == 1.0


def test_failure_rate_within_and_beyond_the_rate():
    clock = Clock()
    r = FailureRateRestart(max_failures_per_interval=2, interval=10.0, delay=0.5, clock=clock)
    for _ in range(2):
        r.notify_failure()
        assert r.can_restart()
    r.notify_failure()  # a third failure inside 10 s
    assert not r.can_restart()
    clock.now = 10.5
    assert r.can_restart()  # the oldest failure left the interval


def test_failure_rate_many_failures_spread_out_never_exceed():
    clock = Clock()
    r = FailureRateRestart(max_failures_per_interval=1, interval=1.0, clock=clock)
    for _ in range(5):
        r.notify_failure()
        assert r.can_restart()
        clock.now += 1.5


def test_exponential_delay_grows_caps_and_resets():
    clock = Clock()
    r = ExponentialDelayRestart(initial_backoff=1, max_backoff=5, multiplier=2, reset_threshold=100, jitter=0,
                                clock=clock)
    seen = []
    for _ in range(5):
        r.notify_failure()
        seen.append(r.backoff)
        clock.now += 1
    assert seen == [1, 2, 4, 5, 5] and r.can_restart()
    clock.now += 200
    r.notify_failure()
    assert r.backoff == 1


def test_exponential_delay_jitter_stays_in_bounds_and_attempts_limit():
    r = ExponentialDelayRestart(initial_backoff=10, max_backoff=100, jitter=0.1, attempts_before_reset=2,
                                clock=Clock(), random=random.Random(1))
    r.notify_failure()
    assert 9 <= r.backoff <= 11
    r.notify_failure()
    assert r.can_restart()
    r.notify_failure()
    assert not r.can_restart()


@pytest.mark.parametrize("make", [lambda: FixedDelayRestart(attempts=-1), lambda: FailureRateRestart(0),
                                  lambda: ExponentialDelayRestart(initial_backoff=5, max_backoff=1)])
def test_bad_settings_are_refused(make):
    from fw_magics.errors import FullWindowError

    with pytest.raises(FullWindowError):
        make()
