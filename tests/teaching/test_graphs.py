"""The failover tutorial's four jobs restart what its table says, and its clock moves only by hand."""

import pytest

from fw_magics.failover import FailureRateRestart, RestartAllStrategy, RestartPipelinedRegionStrategy
from fw_magics.teaching import ManualClock, shape
from fw_magics.teaching.graphs import SHAPES

#: tutorial 3's table: (job, failed subtask) -> (restarted by region failover, by restart-all)
RESTARTS = {("parallel pipelines", ("parse", 1)): (3, 12), ("keyed streaming", ("sink", 2)): (12, 12),
            ("sort then aggregate", ("sink", 2)): (2, 16), ("sort then aggregate", ("source", 0)): (10, 16),
            ("history join live", ("join", 3)): (12, 20), ("history join live", ("history", 1)): (20, 20)}


@pytest.mark.parametrize(("name", "failed"), list(RESTARTS))
def test_each_shape_restarts_what_the_tutorial_says(name, failed):
    g = shape(name)
    counts = (len(RestartPipelinedRegionStrategy(g).tasks_to_restart(failed)),
              len(RestartAllStrategy(g).tasks_to_restart(failed)))
    assert counts == RESTARTS[(name, failed)]


def test_shapes_are_new_each_time_and_named():
    assert SHAPES == ("parallel pipelines", "keyed streaming", "sort then aggregate", "history join live")
    assert shape("keyed streaming") is not shape("keyed streaming")
    with pytest.raises(ValueError, match=r"shape 'sorted'; accepted: 'parallel pipelines', "):
        shape("sorted")


def test_the_manual_clock_moves_a_failure_rate_window():
    clock = ManualClock()
    rate = FailureRateRestart(max_failures_per_interval=2, interval=60, delay=1, clock=clock)
    verdicts = []
    for at in (0, 10, 20, 100):
        clock.now = at
        rate.notify_failure()
        verdicts.append(rate.can_restart())
    assert verdicts == [True, True, False, True] and clock.advance(5) == 105 == clock()
