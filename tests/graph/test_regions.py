"""Pipelined regions and result types: the shapes of Flink's own tests, plus properties."""

import pytest
from fw_magics.errors import FullWindowError
from fw_magics.graph import JobGraph, OperatorAttributes
from hypothesis import given, settings
from hypothesis import strategies as st

END = OperatorAttributes(output_only_after_end_of_stream=True)


def graph(mode, ops, edges, chaining=True):
    g = JobGraph(mode=mode, chaining=chaining)
    for name, p, *rest in ops:
        g.add_operator(name, p, **(rest[0] if rest else {}))
    for src, dst, pattern, *result in edges:
        g.connect(src, dst, pattern, result[0] if result else None)
    return g


def regions(g):
    return sorted(sorted(r) for r in g.pipelined_regions())


def test_single_vertices_are_single_regions():
    g = graph("streaming", [("a", 1), ("b", 1)], [])
    assert regions(g) == [[("a", 0)], [("b", 0)]]


def test_embarrassingly_parallel_pointwise_pipeline():
    g = graph("streaming", [("a", 3), ("b", 3, {"chainable": False}), ("c", 3, {"chainable": False})],
              [("a", "b", "pointwise"), ("b", "c", "pointwise")])
    assert regions(g) == [[("a", i), ("b", i), ("c", i)] for i in range(3)]


def test_two_all_to_all_pipelined_exchanges_make_one_region():
    g = graph("streaming", [("a", 2), ("b", 2), ("c", 2)], [("a", "b", "all_to_all"), ("b", "c", "all_to_all")])
    assert len(g.pipelined_regions()) == 1


def test_all_to_all_pipelined_then_blocking():
    g = graph("streaming", [("a", 2), ("b", 2), ("c", 2)],
              [("a", "b", "all_to_all"), ("b", "c", "all_to_all", "blocking")])
    assert regions(g) == [[("a", 0), ("a", 1), ("b", 0), ("b", 1)], [("c", 0)], [("c", 1)]]


def test_join_cascade_with_blocking_inputs():
    g = graph("streaming", [("s1", 1), ("s2", 1), ("j1", 1), ("s3", 1), ("j2", 1)],
              [("s1", "j1", "all_to_all", "blocking"), ("s2", "j1", "all_to_all", "blocking"),
               ("j1", "j2", "all_to_all"), ("s3", "j2", "all_to_all", "blocking")])
    assert regions(g) == [[("j1", 0), ("j2", 0)], [("s1", 0)], [("s2", 0)], [("s3", 0)]]


def test_diamond_with_one_blocking_edge():
    g = graph("streaming", [("a", 1), ("b", 1), ("c", 1), ("d", 1)],
              [("a", "b", "all_to_all"), ("a", "c", "all_to_all", "blocking"),
               ("b", "d", "all_to_all"), ("c", "d", "all_to_all")])
    # a-b-d are pipelined; c reads a blocking and feeds d pipelined: a cycle of
    # dependencies between {a,b,c,d}'s regions through the blocking edge merges them all.
    assert regions(g) == [[("a", 0), ("b", 0), ("c", 0), ("d", 0)]]


def test_cyclic_blocking_dependencies_are_merged():
    # {a, c, d} are joined by pipelined edges; b reads a blocking and d reads b blocking:
    # the two regions depend on each other, so Flink merges them into one.
    g = graph("streaming", [("a", 1), ("b", 1), ("c", 1), ("d", 1)],
              [("a", "b", "all_to_all", "blocking"), ("b", "d", "all_to_all", "blocking"),
               ("a", "c", "all_to_all"), ("c", "d", "all_to_all")])
    assert regions(g) == [[("a", 0), ("b", 0), ("c", 0), ("d", 0)]]


def test_flip331_chain_output_is_blocking():
    def job(chaining):
        return graph("streaming", [("source", 2), ("op", 2, {"attributes": END}), ("map", 2),
                                   ("sink", 2, {"chainable": False})],
                     [("source", "op", "all_to_all"), ("op", "map", "pointwise"), ("map", "sink", "pointwise")],
                     chaining=chaining)

    on = job(True)
    assert on.chains() == [["source"], ["op", "map"], ["sink"]]
    assert [on.result_type(*e) for e in [("source", "op"), ("op", "map"), ("map", "sink")]] == \
        ["pipelined", "chained", "blocking"]
    off = job(False)
    assert [off.result_type(*e) for e in [("source", "op"), ("op", "map"), ("map", "sink")]] == \
        ["pipelined", "blocking", "pipelined"]


def test_batch_mode_makes_every_unchained_edge_blocking():
    g = graph("batch", [("a", 2), ("b", 2), ("c", 3)], [("a", "b", "pointwise"), ("b", "c", "all_to_all")])
    assert g.result_type("a", "b") == "chained" and g.result_type("b", "c") == "blocking"


def test_explicit_result_wins():
    g = graph("batch", [("a", 2), ("b", 2, {"chainable": False})], [("a", "b", "pointwise", "pipelined")])
    assert g.result_type("a", "b") == "pipelined"


@pytest.mark.parametrize("p,q,expected", [
    (4, 2, [(0, 0), (1, 0), (2, 1), (3, 1)]),
    (2, 4, [(0, 0), (0, 1), (1, 2), (1, 3)]),
    (3, 2, [(0, 0), (1, 1), (2, 1)]),
])
def test_pointwise_between_parallelisms_connects_contiguous_ranges(p, q, expected):
    g = graph("streaming", [("a", p), ("b", q)], [("a", "b", "pointwise")])
    pairs = sorted((i, j) for i in range(p) for (_, j), _ in g.consumers_of(("a", i)))
    assert pairs == expected


@pytest.mark.parametrize("bad,message", [
    (lambda g: g.connect("a", "zz"), "unknown operator 'zz'"),
    (lambda g: g.connect("a", "b", "pointwize"), "unknown pattern 'pointwize'; accepted: pointwise, all_to_all"),
    (lambda g: g.connect("a", "b", result="eager"), "unknown result 'eager'"),
    (lambda g: g.add_operator("c", 0), "parallelism of 'c' must be a positive integer"),
    (lambda g: g.add_operator("a"), "operator 'a' already exists"),
    (lambda g: (g.connect("a", "b"), g.connect("b", "a")), "would make a cycle"),
])
def test_misuse_is_one_line(bad, message):
    g = graph("batch", [("a", 1), ("b", 1)], [])
    with pytest.raises(FullWindowError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bad(g)


@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 6))
    g = JobGraph(mode=draw(st.sampled_from(["batch", "streaming"])), chaining=draw(st.booleans()))
    for i in range(n):
        g.add_operator(f"o{i}", draw(st.integers(1, 4)), chainable=draw(st.booleans()),
                       attributes=OperatorAttributes(draw(st.booleans()), draw(st.booleans())))
    for j in range(1, n):
        for i in draw(st.sets(st.integers(0, j - 1), max_size=2)):
            g.connect(f"o{i}", f"o{j}", draw(st.sampled_from(["pointwise", "all_to_all"])),
                      draw(st.sampled_from([None, None, "pipelined", "blocking"])))
    return g


@settings(max_examples=200, deadline=None)
@given(random_graphs())
def test_regions_partition_the_vertices_and_no_pipelined_edge_crosses_them(g):
    found = g.pipelined_regions()
    everything = [v for r in found for v in r]
    assert sorted(everything) == sorted(g.execution_vertices()) and len(everything) == len(set(everything))
    for v in g.execution_vertices():
        for consumer, kind in g.consumers_of(v):
            if kind != "blocking":
                assert g.region_of(consumer) == g.region_of(v)


@settings(max_examples=200, deadline=None)
@given(random_graphs())
def test_json_round_trip_is_exact_and_fingerprint_stable(g):
    again = JobGraph.from_json(g.to_json())
    assert again == g and again.to_json() == g.to_json() and again.fingerprint() == g.fingerprint()
    assert again.pipelined_regions() == g.pipelined_regions() and g.diff(again) == []
    bigger = JobGraph.from_json(g.to_json())
    bigger._operators[g.operators[0].name].parallelism += 1
    assert bigger.fingerprint() != g.fingerprint() and g.diff(bigger)


def test_dot_draws_blocking_dashed_and_numbers_regions():
    g = graph("batch", [("src", 2, {"kind": "source"}), ("sort", 2, {"attributes": END}), ("agg", 2)],
              [("src", "sort", "pointwise"), ("sort", "agg", "all_to_all")])
    dot = g.to_dot()
    assert 'style=dashed, label="blocking' in dot and "region" in dot and "output only after end of input" in dot
    assert "cluster_chain0" in dot and "legend" in dot
    bundle = g._repr_mimebundle_()
    assert "text/plain" in bundle and ("image/svg+xml" in bundle) == bool(__import__("shutil").which("dot"))
