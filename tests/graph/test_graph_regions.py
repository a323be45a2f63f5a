"""Pipelined regions, on the shapes of Flink's SchedulingPipelinedRegionComputeUtilTest.

Flink's tests build execution vertices one by one; here each of its vertices is an operator
of parallelism 1 unless the shape needs subtasks (a1, a2, ... become operator a with 2
subtasks). Edges carry an explicit result type, as Flink's tests do, and the graphs run in
streaming mode with chaining off so that nothing else decides the type.
"""

import pytest

from fw_magics.graph import JobGraph
from fw_magics.graph.components import DisjointSets, strongly_connected
from tests.graph.reference_graph import flink_pointwise_pairs


def shape(operators, edges):
    """Operators as {name: parallelism}; edges as (source, target, pattern, result)."""
    g = JobGraph(mode="streaming", chaining=False)
    for name, p in operators.items():
        g.add_operator(name, p)
    for src, dst, pattern, result in edges:
        g.connect(src, dst, pattern, result)
    return g


def regions(g):
    """The regions as sorted lists, in the order the graph gives them."""
    return [sorted(r) for r in g.pipelined_regions()]


def ones(*names):
    return {name: 1 for name in names}


def test_individual_vertices_are_individual_regions():
    g = shape(ones("v1", "v2", "v3"), [])
    assert regions(g) == [[("v1", 0)], [("v2", 0)], [("v3", 0)]]


def test_embarrassingly_parallel_pipelines_are_one_region_each():
    g = shape({"a": 3, "b": 3}, [("a", "b", "pointwise", "pipelined")])
    assert regions(g) == [[("a", i), ("b", i)] for i in range(3)]


def test_one_region_via_two_all_to_all_pipelined_exchanges():
    g = shape({"a": 2, "b": 2, "c": 2}, [("a", "b", "all_to_all", "pipelined"), ("b", "c", "all_to_all", "pipelined")])
    assert len(g.pipelined_regions()) == 1 and len(g.pipelined_regions()[0]) == 6


def test_one_region_via_a_cascade_of_joins():
    g = shape(ones(*"1234567"), [(s, t, "pointwise", "pipelined")
                                 for s, t in [("1", "5"), ("2", "5"), ("3", "6"), ("4", "6"), ("5", "7"), ("6", "7")]])
    assert len(g.pipelined_regions()) == 1


def test_one_region_from_one_source_fanning_out():
    g = shape(ones(*"1234567"), [(s, t, "pointwise", "pipelined")
                                 for s, t in [("1", "2"), ("1", "3"), ("2", "4"), ("2", "5"), ("3", "6"), ("3", "7")]])
    assert len(g.pipelined_regions()) == 1


@pytest.mark.parametrize("last_exchange", ["pointwise", "all_to_all"])
def test_all_to_all_pipelined_then_blocking_makes_two_kinds_of_region(last_exchange):
    g = shape({"a": 2, "b": 2, "c": 2}, [("a", "b", "all_to_all", "pipelined"), ("b", "c", last_exchange, "blocking")])
    assert regions(g) == [[("a", 0), ("a", 1), ("b", 0), ("b", 1)], [("c", 0)], [("c", 1)]]


def test_a_cascade_of_joins_with_blocking_inputs_splits_at_the_blocking_edges():
    g = shape(ones(*"1234567"), [("1", "5", "pointwise", "pipelined"), ("2", "5", "pointwise", "pipelined"),
                                 ("3", "6", "pointwise", "pipelined"), ("4", "6", "pointwise", "pipelined"),
                                 ("5", "7", "pointwise", "blocking"), ("6", "7", "pointwise", "blocking")])
    assert regions(g) == [[("1", 0), ("2", 0), ("5", 0)], [("3", 0), ("4", 0), ("6", 0)], [("7", 0)]]


def test_a_diamond_with_one_blocking_edge_is_one_region():
    # v1 -> v2 is blocking, but v2 is joined to v1 through v4 and v3 by pipelined edges anyway
    g = shape(ones("v1", "v2", "v3", "v4"),
              [("v1", "v2", "pointwise", "blocking"), ("v1", "v3", "pointwise", "pipelined"),
               ("v2", "v4", "pointwise", "pipelined"), ("v3", "v4", "pointwise", "pipelined")])
    assert len(g.pipelined_regions()) == 1


def test_cyclic_dependent_regions_are_merged():
    # {v1, v3, v4} and {v2} each need the other's blocking output: scheduling either first
    # would deadlock, so Flink merges them (FLINK-17330)
    g = shape(ones("v1", "v2", "v3", "v4"),
              [("v1", "v2", "pointwise", "blocking"), ("v1", "v3", "pointwise", "pipelined"),
               ("v2", "v4", "pointwise", "blocking"), ("v3", "v4", "pointwise", "pipelined")])
    assert regions(g) == [[("v1", 0), ("v2", 0), ("v3", 0), ("v4", 0)]]


def test_cyclic_merging_is_per_subtask_and_only_where_there_is_a_cycle():
    g = shape({"a": 2, "b": 2, "c": 2, "d": 2, "e": 2},
              [("a", "b", "pointwise", "blocking"), ("a", "c", "pointwise", "pipelined"),
               ("b", "d", "pointwise", "blocking"), ("c", "d", "pointwise", "pipelined"),
               ("d", "e", "all_to_all", "blocking")])
    assert regions(g) == [[("a", i), ("b", i), ("c", i), ("d", i)] for i in range(2)] + [[("e", 0)], [("e", 1)]]


def test_a_cycle_through_an_all_to_all_blocking_edge_is_merged():
    # a[i] -> b (all-to-all, blocking) -> c[i] (pointwise, blocking), and a[i] - c[i] pipelined
    g = shape({"a": 2, "b": 1, "c": 2}, [("a", "b", "all_to_all", "blocking"), ("b", "c", "all_to_all", "blocking"),
                                         ("a", "c", "pointwise", "pipelined")])
    assert regions(g) == [[("a", 0), ("a", 1), ("b", 0), ("c", 0), ("c", 1)]]


def test_regions_come_in_topological_order_and_region_of_finds_them():
    g = shape({"sink": 2, "src": 2}, [("src", "sink", "pointwise", "blocking")])
    assert regions(g) == [[("src", 0)], [("src", 1)], [("sink", 0)], [("sink", 1)]]
    assert g.region_of(("sink", 1)) == frozenset({("sink", 1)}) and g.region_of(["src", 0]) == {("src", 0)}


@pytest.mark.parametrize("p, q, pairs", [
    (4, 2, [(0, 0), (1, 0), (2, 1), (3, 1)]),
    (3, 2, [(0, 0), (1, 1), (2, 1)]),
    (2, 4, [(0, 0), (0, 1), (1, 2), (1, 3)]),
    (2, 3, [(0, 0), (0, 1), (1, 2)]),
    (5, 8, [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (3, 5), (3, 6), (4, 7)]),
    (8, 5, [(0, 0), (1, 1), (2, 1), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4)]),
])
def test_pointwise_edges_connect_contiguous_ranges_as_flink_does(p, q, pairs):
    g = shape({"a": p, "b": q}, [("a", "b", "pointwise", "pipelined")])
    found = sorted((i, j) for i in range(p) for (_, j), _ in g.consumers_of(("a", i)))
    assert found == pairs
    assert sorted((i, j) for j in range(q) for (_, i), _ in g.producers_of(("b", j))) == pairs


def test_pointwise_wiring_matches_flinks_loops_for_every_small_parallelism():
    for p in range(1, 25):
        for q in range(1, 25):
            g = shape({"a": p, "b": q}, [("a", "b", "pointwise", "pipelined")])
            down = {(i, j) for i in range(p) for (_, j), _ in g.consumers_of(("a", i))}
            up = {(i, j) for j in range(q) for (_, i), _ in g.producers_of(("b", j))}
            assert down == up == flink_pointwise_pairs(p, q), (p, q)


def test_the_graph_algorithms_have_no_recursion_limit():
    n = 200_000
    ring = [[(v + 1) % n] for v in range(n)]  # one cycle through every node
    assert set(strongly_connected(ring)) == {0}
    path = [[v + 1] for v in range(n - 1)] + [[]]
    assert len(set(strongly_connected(path))) == n
    sets = DisjointSets(n)
    for v in range(n - 1):
        sets.union(v, v + 1)
    assert len({sets.find(v) for v in range(n)}) == 1
