"""Properties of the job graph on random graphs, against the naive reference model."""

from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.graph import JobGraph
from tests.examples import examples
from tests.graph import reference_graph as ref

EXAMPLES = settings(max_examples=examples(300), deadline=None)


@settings(max_examples=examples(1500), deadline=None)  # cheap, and chains ending in a marked operator are rare
@given(ref.job_graphs())
def test_chains_and_result_types_agree_with_the_reference(g):
    groups, _ = ref.chains(g)
    assert {frozenset(chain) for chain in g.chains()} == groups
    assert sorted(n for chain in g.chains() for n in chain) == sorted(o.name for o in g.operators)
    for chain in g.chains():
        assert all(g.result_type(a, b) == "chained" for a, b in zip(chain, chain[1:]))
    assert {(e.source, e.target): g.result_type(e.source, e.target) for e in g.edges} == ref.result_types(g)


@EXAMPLES
@given(ref.job_graphs())
def test_vertex_level_connections_agree_with_flinks_wiring(g):
    down = {(v, w, kind) for v in g.execution_vertices() for w, kind in g.consumers_of(v)}
    up = {(u, v, kind) for v in g.execution_vertices() for u, kind in g.producers_of(v)}
    assert down == up == ref.connections(g)


@EXAMPLES
@given(ref.job_graphs())
def test_regions_partition_the_vertices_and_agree_with_the_reference(g):
    found = g.pipelined_regions()
    vertices = g.execution_vertices()
    assert sorted(v for r in found for v in r) == sorted(vertices) and len(vertices) == len(set(vertices))
    expected = ref.regions(g)
    assert set(found) == set(expected.values())
    assert all(g.region_of(v) == expected[v] for v in vertices)
    position = {v: k for k, v in enumerate(vertices)}
    firsts = [min(position[v] for v in r) for r in found]
    assert firsts == sorted(firsts), "regions are listed in topological order"


@EXAMPLES
@given(ref.job_graphs())
def test_no_pipelined_or_chained_connection_crosses_regions(g):
    for v in g.execution_vertices():
        for w, kind in g.consumers_of(v):
            if kind != "blocking":
                assert g.region_of(w) == g.region_of(v)


@EXAMPLES
@given(ref.job_graphs(), st.data())
def test_json_round_trips_exactly_and_the_fingerprint_follows_the_graph(g, data):
    again = JobGraph.from_json(g.to_json())
    assert again == g and again.to_json() == g.to_json() and again.fingerprint() == g.fingerprint()
    assert g.diff(again) == [] and again.pipelined_regions() == g.pipelined_regions()
    target = data.draw(st.sampled_from(g.operators))
    document = __import__("json").loads(g.to_json())
    for o in document["operators"]:
        if o["name"] == target.name:
            o["parallelism"] += 1
    rescaled = JobGraph.from_json(__import__("json").dumps(document))
    assert rescaled.fingerprint() != g.fingerprint()
    assert f"operator {target.name!r} parallelism {target.parallelism} -> {target.parallelism + 1}" in g.diff(rescaled)


@settings(max_examples=examples(300), deadline=None)
@given(ref.job_graphs(max_operators=3, max_parallelism=2), ref.job_graphs(max_operators=3, max_parallelism=2))
def test_diff_is_empty_exactly_when_the_graphs_are_equal(one, two):
    assert (one.diff(two) == []) == (one == two) == (one.fingerprint() == two.fingerprint())
