"""Job vertices: their names are an on-disk contract (results/v0/..., the events' "vertex"). No Spark.

A resumed run finds a subtask's result by the vertex name recorded in the event log and the
folder it names; if the names drifted between versions, resume would silently recompute (or
read the wrong files). These tests pin them.
"""

import pytest
from hypothesis import given, settings

from fw_magics.errors import FullWindowError
from fw_magics.graph import JobGraph, JobVertex, subtask_inputs, vertex_index, vertex_name
from fw_magics.recovery.paths import result_file, result_sidecar
from tests.graph import reference_graph as ref


def three_chains() -> JobGraph:
    g = JobGraph(mode="batch")
    g.add_operator("src", parallelism=2)
    g.add_operator("sort", parallelism=2)
    g.add_operator("map", parallelism=2, chainable=False)
    g.add_operator("keyed", parallelism=3)
    g.connect("src", "sort")
    g.connect("sort", "map")
    g.connect("map", "keyed", pattern="all_to_all")
    return g


def test_the_on_disk_names_of_job_vertices_and_their_result_files():
    g = three_chains()
    assert g.job_vertices() == [
        JobVertex(0, "v0", ("src", "sort"), 2, ()),
        JobVertex(1, "v1", ("map",), 2, ("v0",)),
        JobVertex(2, "v2", ("keyed",), 3, ("v1",)),
    ]
    assert [vertex_name(k) for k in range(3)] == ["v0", "v1", "v2"]
    assert result_file("v1", 2) == "results/v1/2.arrow" and result_sidecar("v1", 2) == "results/v1/2.json"
    assert g.job_vertices()[0].label == "src -> sort"


def test_subtask_inputs_follow_the_graph_wiring():
    g = three_chains()
    vertices, inputs = subtask_inputs(g)
    assert g.chains() == [["src", "sort"], ["map"], ["keyed"]]
    assert vertices == [("v0", 0), ("v0", 1), ("v1", 0), ("v1", 1), ("v2", 0), ("v2", 1), ("v2", 2)]
    assert inputs[("v0", 1)] == [] and inputs[("v1", 1)] == [("v0", 1)]
    assert sorted(inputs[("v2", 2)]) == [("v1", 0), ("v1", 1)]


@pytest.mark.parametrize("name, index", [("v0", 0), ("v7", 7), ("v12", 12)])
def test_a_name_reads_back_as_its_index(name, index):
    assert vertex_index(name) == index and vertex_name(index) == name


@pytest.mark.parametrize("name", ["v", "0", "V1", "v01", "v-1", "x1", "v1 ", None, 1])
def test_anything_else_is_not_a_job_vertex_name(name):
    with pytest.raises(FullWindowError, match="accepted: 'v0', 'v1'"):
        vertex_index(name)


@settings(max_examples=150, deadline=None)
@given(ref.job_graphs())
def test_job_vertices_are_the_chains_in_order_named_by_position(g):
    vertices = g.job_vertices()
    assert [v.operators for v in vertices] == [tuple(chain) for chain in g.chains()]
    assert [v.name for v in vertices] == [f"v{k}" for k in range(len(vertices))]
    assert [v.index for v in vertices] == list(range(len(vertices)))
    vertex_of = {op: v.name for v in vertices for op in v.operators}
    for v in vertices:
        assert {g.operator(op).parallelism for op in v.operators} == {v.parallelism}
        assert v.inputs == tuple(vertex_of[e.source] for e in g.edges if e.target == v.operators[0])
    subtasks, inputs = subtask_inputs(g)
    assert subtasks == [(v.name, i) for v in vertices for i in range(v.parallelism)]
    for name, i in subtasks:  # a subtask reads exactly what its chain's first operator reads
        head = vertices[vertex_index(name)].operators[0]
        assert inputs[(name, i)] == [(vertex_of[op], j) for (op, j), _ in g.producers_of((head, i))]
