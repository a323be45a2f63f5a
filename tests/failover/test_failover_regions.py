"""Which tasks restart, on the shapes of Flink's RestartPipelinedRegionFailoverStrategyTest.

As in Flink's tests each vertex v1, v2, ... is its own operator of parallelism 1, with the
result type of every edge given explicitly (streaming mode, chaining off). ``unavailable``
plays the part of Flink's partition availability checker: the producers whose results are gone.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.errors import FullWindowError
from fw_magics.failover import RestartAllStrategy, RestartPipelinedRegionStrategy
from fw_magics.graph import JobGraph, OperatorAttributes
from tests.graph import reference_graph as ref


def shape(operators, edges, mode="streaming", chaining=False):
    g = JobGraph(mode=mode, chaining=chaining)
    for name, p in operators.items():
        g.add_operator(name, p)
    for src, dst, *rest in edges:
        g.connect(src, dst, *rest)
    return g


def restarts(g, failed, unavailable=()):
    """Names of the restarted vertices, for graphs whose operators have one subtask."""
    return sorted(name for name, _ in RestartPipelinedRegionStrategy(g).tasks_to_restart((failed, 0), unavailable))


def flink_six():
    """v1, v2 -> v4, v5 (all pairs) and v3 -> v6, every edge blocking: each vertex is its own region."""
    return shape({f"v{k}": 1 for k in range(1, 7)},
                 [("v1", "v4", "pointwise", "blocking"), ("v1", "v5", "pointwise", "blocking"),
                  ("v2", "v4", "pointwise", "blocking"), ("v2", "v5", "pointwise", "blocking"),
                  ("v3", "v6", "pointwise", "blocking")])


@pytest.mark.parametrize("failed, expected", [
    ("v1", ["v1", "v4", "v5"]), ("v2", ["v2", "v4", "v5"]), ("v3", ["v3", "v6"]),
    ("v4", ["v4"]), ("v5", ["v5"]), ("v6", ["v6"]),
])
def test_a_task_failing_on_its_own_restarts_its_region_and_the_consumer_regions(failed, expected):
    assert restarts(flink_six(), failed) == expected


@pytest.mark.parametrize("failed, lost, expected", [
    ("v4", "v1", ["v1", "v4", "v5"]), ("v4", "v2", ["v2", "v4", "v5"]),
    ("v5", "v1", ["v1", "v4", "v5"]), ("v5", "v2", ["v2", "v4", "v5"]),
    ("v6", "v3", ["v3", "v6"]),
])
def test_a_lost_input_brings_its_producer_region_and_that_regions_consumers(failed, lost, expected):
    assert restarts(flink_six(), failed, [(lost, 0)]) == expected


@pytest.mark.parametrize("lost, expected", [
    ([], {"v1": ["v1", "v3"], "v2": ["v2", "v3"], "v3": ["v3"]}),
    (["v1"], {"v1": ["v1", "v3"], "v2": ["v1", "v2", "v3"], "v3": ["v1", "v3"]}),
    (["v2"], {"v1": ["v1", "v2", "v3"], "v2": ["v2", "v3"], "v3": ["v2", "v3"]}),
    (["v1", "v2"], {"v1": ["v1", "v2", "v3"], "v2": ["v1", "v2", "v3"], "v3": ["v1", "v2", "v3"]}),
])
def test_every_combination_of_available_inputs(lost, expected):
    # v1 -> v3 <- v2, blocking. A consumer region brought in by the walk backtracks too:
    # v1 failing restarts v3, which needs v2's lost result, so v2 restarts as well.
    g = shape({"v1": 1, "v2": 1, "v3": 1},
              [("v1", "v3", "all_to_all", "blocking"), ("v2", "v3", "all_to_all", "blocking")])
    for failed, names in expected.items():
        assert restarts(g, failed, [(name, 0) for name in lost]) == names


def test_multiple_vertices_per_region_restart_downstream_of_the_failure_only():
    g = shape({f"v{k}": 1 for k in range(1, 7)},
              [("v1", "v2", "pointwise", "pipelined"), ("v2", "v3", "pointwise", "blocking"),
               ("v3", "v4", "pointwise", "pipelined"), ("v4", "v5", "pointwise", "blocking"),
               ("v5", "v6", "pointwise", "pipelined")])
    assert restarts(g, "v3") == ["v3", "v4", "v5", "v6"]
    assert restarts(g, "v3", [("v2", 0)]) == ["v1", "v2", "v3", "v4", "v5", "v6"]


def test_chained_regions_behind_blocking_edges():
    # batch: source -> map chained, => all-to-all blocking => aggregate -> sink chained
    g = shape({"source": 2, "map": 2, "aggregate": 2, "sink": 2},
              [("source", "map"), ("map", "aggregate", "all_to_all"), ("aggregate", "sink")],
              mode="batch", chaining=True)
    assert g.chains() == [["source", "map"], ["aggregate", "sink"]]
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("sink", 1)) == {("aggregate", 1), ("sink", 1)}
    assert s.tasks_to_restart(("map", 0)) == {("source", 0), ("map", 0), ("aggregate", 0), ("aggregate", 1),
                                              ("sink", 0), ("sink", 1)}
    assert s.tasks_to_restart(("sink", 1), unavailable=[("map", 1)]) == {
        ("source", 1), ("map", 1), ("aggregate", 0), ("aggregate", 1), ("sink", 0), ("sink", 1)}


def test_pointwise_blocking_edges_restart_only_the_connected_subtasks():
    # a (4) => pointwise blocking => b (2): b[0] reads a[0], a[1]; b[1] reads a[2], a[3]
    g = shape({"a": 4, "b": 2}, [("a", "b", "pointwise", "blocking")])
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("a", 2)) == {("a", 2), ("b", 1)}
    assert s.tasks_to_restart(("b", 0), unavailable=[("a", 1), ("a", 3)]) == {("a", 1), ("b", 0)}


def test_the_flip331_operator_lets_its_consumers_restart_alone():
    g = JobGraph(mode="streaming")
    g.add_operator("source", 3)
    g.add_operator("sort", 3, OperatorAttributes(output_only_after_end_of_stream=True))
    g.add_operator("sink", 3, chainable=False)
    g.connect("source", "sort", "all_to_all")
    g.connect("sort", "sink")
    assert RestartPipelinedRegionStrategy(g).tasks_to_restart(("sink", 2)) == {("sink", 2)}
    assert len(RestartAllStrategy(g).tasks_to_restart(("sink", 2))) == 9


@pytest.mark.parametrize("strategy", [RestartAllStrategy, RestartPipelinedRegionStrategy])
@pytest.mark.parametrize("failed, unavailable, message", [
    (("nope", 0), (), "unknown execution vertex ('nope', 0)"),
    (("a", 2), (), "subtask 2 of operator 'a'; accepted: 0 to 1"),
    (("a", 0), [("a", -1)], "subtask -1 of operator 'a'; accepted: 0 to 1"),
    ("a", (), "unknown execution vertex 'a'"),
])
def test_unknown_vertices_are_refused_in_one_line(strategy, failed, unavailable, message):
    g = shape({"a": 2}, [])
    with pytest.raises(FullWindowError) as caught:
        strategy(g).tasks_to_restart(failed, unavailable)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_strategy_follows_the_graph_as_it_grows():
    g = shape({"a": 1}, [])
    s = RestartPipelinedRegionStrategy(g)
    assert s.tasks_to_restart(("a", 0)) == {("a", 0)}
    g.add_operator("b", 1)
    g.connect("a", "b", "pointwise", "blocking")
    assert s.tasks_to_restart(("a", 0)) == {("a", 0), ("b", 0)}


# -- properties on random graphs ----------------------------------------------------------------


@st.composite
def failures(draw):
    g = draw(ref.job_graphs())
    vertices = g.execution_vertices()
    failed = draw(st.sampled_from(vertices))
    unavailable = draw(st.lists(st.sampled_from(vertices), max_size=4, unique=True))
    return g, failed, unavailable


@settings(max_examples=300, deadline=None)
@given(failures())
def test_region_restart_agrees_with_flinks_walk(case):
    g, failed, unavailable = case
    assert RestartPipelinedRegionStrategy(g).tasks_to_restart(failed, unavailable) == \
        ref.restart_set(g, failed, unavailable)


@settings(max_examples=300, deadline=None)
@given(failures())
def test_restart_sets_are_whole_regions_closed_downstream_and_within_restart_all(case):
    g, failed, unavailable = case
    tasks = RestartPipelinedRegionStrategy(g).tasks_to_restart(failed, unavailable)
    assert g.region_of(failed) <= tasks
    for v in tasks:
        assert g.region_of(v) <= tasks, "regions restart whole"
        assert all(w in tasks for w, _ in g.consumers_of(v)), "a consumer of a restarted task was left running"
        assert all(u in tasks for u, _ in g.producers_of(v) if u in unavailable), "a lost input was not recomputed"
    everything = RestartAllStrategy(g).tasks_to_restart(failed, unavailable)
    assert tasks <= everything == set(g.execution_vertices())


def test_both_strategies_are_failover_strategies():
    from fw_magics.failover import FailoverStrategy

    g = flink_six()
    assert isinstance(RestartAllStrategy(g), FailoverStrategy)
    assert isinstance(RestartPipelinedRegionStrategy(g), FailoverStrategy)
