"""Building a job graph: validation, chaining, result types (FLIP-331), JSON, fingerprint, diff."""

import ast
import hashlib
import pathlib

import pytest

from fw_magics.errors import FullWindowError
from fw_magics.graph import Edge, JobGraph, Operator, OperatorAttributes

END = OperatorAttributes(output_only_after_end_of_stream=True)


def build(mode, operators, edges, chaining=True):
    """A graph from (name, parallelism, {options}) and (source, target, pattern[, result]) tuples."""
    g = JobGraph(mode=mode, chaining=chaining)
    for name, p, *options in operators:
        g.add_operator(name, p, **(options[0] if options else {}))
    for src, dst, pattern, *result in edges:
        g.connect(src, dst, pattern, result[0] if result else None)
    return g


def types(g):
    return {(e.source, e.target): g.result_type(e.source, e.target) for e in g.edges}


def test_add_operator_and_connect_return_what_was_added():
    g = JobGraph(mode="streaming")
    op = g.add_operator("sort", 4, attributes=END, chainable=False, kind="sort_partition")
    assert op == Operator("sort", 4, END, False, "sort_partition")
    assert g.add_operator("src") == Operator("src", 1, OperatorAttributes(), True, None)
    assert g.connect("src", "sort") == Edge("src", "sort", "pointwise", None)
    assert g.operators == [op, g.operator("src")] and g.edges == [Edge("src", "sort")]
    assert (g.mode, g.chaining) == ("streaming", True)


@pytest.mark.parametrize("misuse, message", [
    (lambda g: JobGraph(mode="stream"), "unknown mode 'stream'; accepted: batch, streaming"),
    (lambda g: JobGraph(chaining="yes"), "chaining must be True or False; got 'yes'"),
    (lambda g: g.add_operator("a"), "duplicate operator name 'a'; accepted: a name not yet used (existing: a, b, c)"),
    (lambda g: g.add_operator(""), "operator name ''; accepted: a non-empty string"),
    (lambda g: g.add_operator("d", 0), "parallelism 0 of operator 'd'; accepted: an integer >= 1"),
    (lambda g: g.add_operator("d", 2.0), "parallelism 2.0 of operator 'd'; accepted: an integer >= 1"),
    (lambda g: g.add_operator("d", True), "parallelism True of operator 'd'; accepted: an integer >= 1"),
    (lambda g: g.add_operator("d", attributes={"x": 1}), "attributes of operator 'd' are a dict; accepted"),
    (lambda g: g.add_operator("d", kind=3), "kind 3 of operator 'd'; accepted: a string or None"),
    (lambda g: g.add_operator("d", chainable=None), "chainable of operator 'd' must be True or False"),
    (lambda g: OperatorAttributes(output_only_after_end_of_stream=1), "must be True or False; got 1"),
    (lambda g: g.connect("a", "zz"), "unknown operator 'zz'; accepted: a, b, c"),
    (lambda g: g.connect("a", "b", "pointwize"), "unknown pattern 'pointwize'; accepted: pointwise, all_to_all"),
    (lambda g: g.connect("a", "b", result="eager"), "unknown result 'eager'; accepted: pipelined, blocking"),
    (lambda g: g.connect("a", "a"), "edge a->a would close the cycle a->a; accepted: edges that keep"),
    (lambda g: g.connect("b", "c"), "edge b->c already exists"),
    (lambda g: g.connect("c", "b"), "edge c->b would close the cycle c->b->c"),
    (lambda g: g.result_type("a", "b"), "no edge a->b; accepted: b->c"),
    (lambda g: g.operator("zz"), "unknown operator 'zz'; accepted: a, b, c"),
    (lambda g: g.consumers_of(("a", 1)), "subtask 1 of operator 'a'; accepted: 0 to 0"),
    (lambda g: g.region_of(("zz", 0)), "unknown execution vertex ('zz', 0); accepted: (operator, subtask)"),
    (lambda g: g.producers_of("a"), "unknown execution vertex 'a'"),
])
def test_misuse_is_refused_in_one_line_and_changes_nothing(misuse, message):
    g = build("batch", [("a", 1), ("b", 1), ("c", 1)], [("b", "c", "pointwise")])
    before = g.to_json()
    with pytest.raises(FullWindowError) as caught:
        misuse(g)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert g.to_json() == before


def test_a_longer_cycle_is_named_in_the_error():
    g = build("batch", [("a", 1), ("b", 1), ("c", 1)], [("a", "b", "pointwise"), ("b", "c", "pointwise")])
    with pytest.raises(FullWindowError, match="edge c->a would close the cycle c->a->b->c"):
        g.connect("c", "a")
    assert [(e.source, e.target) for e in g.edges] == [("a", "b"), ("b", "c")]


# -- chaining (Flink's StreamingJobGraphGenerator#isChainable) -----------------------------------


@pytest.mark.parametrize("operators, edges, chaining, expected", [
    ([("a", 2), ("b", 2)], [("a", "b", "pointwise")], True, "chained"),
    ([("a", 2), ("b", 2)], [("a", "b", "pointwise", "pipelined")], True, "chained"),
    ([("a", 2), ("b", 2)], [("a", "b", "pointwise", "blocking")], True, "blocking"),
    ([("a", 2), ("b", 2)], [("a", "b", "all_to_all")], True, "pipelined"),
    ([("a", 2), ("b", 3)], [("a", "b", "pointwise")], True, "pipelined"),
    ([("a", 2, {"chainable": False}), ("b", 2)], [("a", "b", "pointwise")], True, "pipelined"),
    ([("a", 2), ("b", 2, {"chainable": False})], [("a", "b", "pointwise")], True, "pipelined"),
    ([("a", 2), ("b", 2)], [("a", "b", "pointwise")], False, "pipelined"),
    ([("a", 2), ("b", 2), ("c", 2)], [("a", "b", "pointwise"), ("a", "c", "pointwise")], True, "pipelined"),
    ([("a", 2), ("b", 2), ("c", 2)], [("a", "b", "pointwise"), ("c", "b", "pointwise")], True, "pipelined"),
], ids=["forward", "explicit-pipelined-still-chains", "explicit-blocking-never-chains", "all-to-all",
        "different-parallelism", "upstream-not-chainable", "downstream-not-chainable", "chaining-off",
        "upstream-with-two-consumers", "downstream-with-two-inputs"])
def test_when_an_edge_chains(operators, edges, chaining, expected):
    g = build("streaming", operators, edges, chaining)
    assert g.result_type("a", "b") == expected
    assert (["a", "b"] in g.chains()) == (expected == "chained")


def test_chains_are_paths_listed_in_topological_order():
    g = build("batch", [("sink", 3), ("map", 3), ("src", 3), ("sort", 3), ("agg", 2)],
              [("src", "map", "pointwise"), ("map", "sort", "pointwise"), ("sort", "agg", "all_to_all"),
               ("agg", "sink", "pointwise")])
    assert g.topological_order() == ["src", "map", "sort", "agg", "sink"]
    assert g.chains() == [["src", "map", "sort"], ["agg"], ["sink"]]
    assert g.chain_of("map") == ["src", "map", "sort"]


def test_topological_order_breaks_ties_by_the_order_of_adding():
    g = build("batch", [("z", 1), ("y", 1), ("x", 1), ("w", 1)], [("x", "w", "pointwise"), ("z", "w", "pointwise")])
    assert g.topological_order() == ["z", "y", "x", "w"]
    assert g.execution_vertices() == [("z", 0), ("y", 0), ("x", 0), ("w", 0)]


# -- result types (FLIP-331) ----------------------------------------------------------------------


def flip331_job(chaining):
    """source -> keyBy -> operator with the attribute -> map -> sink that may not chain."""
    return build("streaming", [("source", 2), ("op", 2, {"attributes": END}), ("map", 2),
                               ("sink", 2, {"chainable": False})],
                 [("source", "op", "all_to_all"), ("op", "map", "pointwise"), ("map", "sink", "pointwise")],
                 chaining=chaining)


def test_flip331_the_output_of_the_whole_chain_is_blocking():
    g = flip331_job(chaining=True)
    assert g.chains() == [["source"], ["op", "map"], ["sink"]]
    assert types(g) == {("source", "op"): "pipelined", ("op", "map"): "chained", ("map", "sink"): "blocking"}


def test_flip331_with_chaining_off_only_the_operators_own_output_is_blocking():
    g = flip331_job(chaining=False)
    assert g.chains() == [["source"], ["op"], ["map"], ["sink"]]
    assert types(g) == {("source", "op"): "pipelined", ("op", "map"): "blocking", ("map", "sink"): "pipelined"}


def test_flip331_an_operator_chained_before_the_attribute_marks_the_chain_too():
    # Flink marks every node of the chain, upstream ones included; the chain's output blocks.
    g = build("streaming", [("src", 2), ("sort", 2, {"attributes": END}), ("agg", 2)],
              [("src", "sort", "pointwise"), ("sort", "agg", "all_to_all")])
    assert types(g) == {("src", "sort"): "chained", ("sort", "agg"): "blocking"}


def test_batch_mode_makes_every_unchained_edge_blocking_unless_told_otherwise():
    g = build("batch", [("a", 2), ("b", 2), ("c", 3), ("d", 3)],
              [("a", "b", "pointwise"), ("b", "c", "all_to_all"), ("c", "d", "all_to_all", "pipelined")])
    assert types(g) == {("a", "b"): "chained", ("b", "c"): "blocking", ("c", "d"): "pipelined"}


def test_an_explicit_result_wins_over_the_attribute():
    g = build("streaming", [("a", 2, {"attributes": END}), ("b", 2), ("c", 2)],
              [("a", "b", "all_to_all", "pipelined"), ("a", "c", "all_to_all")])
    assert types(g) == {("a", "b"): "pipelined", ("a", "c"): "blocking"}


def test_vertex_level_producers_and_consumers_carry_the_result_type():
    g = build("batch", [("a", 4), ("b", 2), ("c", 3)], [("a", "b", "pointwise", "pipelined"), ("b", "c", "all_to_all")])
    assert g.consumers_of(("a", 3)) == [(("b", 1), "pipelined")]
    assert g.producers_of(("b", 1)) == [(("a", 2), "pipelined"), (("a", 3), "pipelined")]
    assert g.consumers_of(("b", 0)) == [(("c", 0), "blocking"), (("c", 1), "blocking"), (("c", 2), "blocking")]
    assert g.producers_of(("a", 0)) == [] and g.consumers_of(("c", 2)) == []


# -- JSON, fingerprint, diff -----------------------------------------------------------------------


def sample():
    return build("batch", [("src", 2, {"kind": "source"}), ("sort", 2, {"attributes": END})],
                 [("src", "sort", "all_to_all", "blocking")])


def test_json_is_canonical_and_round_trips_exactly():
    g = sample()
    assert g.to_json() == (
        '{"chaining":true,"edges":[{"pattern":"all_to_all","result":"blocking","source":"src","target":"sort"}],'
        '"mode":"batch","operators":[{"chainable":true,"internal_sorter_supported":false,"kind":"source",'
        '"name":"src","output_only_after_end_of_stream":false,"parallelism":2},{"chainable":true,'
        '"internal_sorter_supported":false,"kind":null,"name":"sort","output_only_after_end_of_stream":true,'
        '"parallelism":2}]}'
    )
    again = JobGraph.from_json(g.to_json())
    assert again == g and again.to_json() == g.to_json() and again.pipelined_regions() == g.pipelined_regions()


def test_fingerprint_is_the_sha256_of_the_json_and_stable_across_processes():
    g = sample()
    assert g.fingerprint() == hashlib.sha256(g.to_json().encode()).hexdigest()
    # pinned: a later process, or a later fw-magics, must compute the same value for the same graph
    assert g.fingerprint() == "fcca0f9a0f0767f93ae1967ff3fb5630af640f0f9a18e7268cf876700014e9cf"
    assert JobGraph.from_json(g.to_json()).fingerprint() == g.fingerprint()


@pytest.mark.parametrize("text, message", [
    ("{", "job graph JSON does not parse"),
    ("[]", "job graph JSON: the job graph is not an object"),
    ('{"mode":"batch","chaining":true,"operators":[]}', "the job graph lacks 'edges'"),
    ('{"mode":"batch","chaining":true,"operators":[],"edges":[],"x":1}', "has unexpected key 'x'"),
    ('{"mode":"batch","chaining":true,"operators":{},"edges":[]}', "'operators' and 'edges' must be lists"),
    ('{"mode":"batch","chaining":true,"operators":[{"name":"a"}],"edges":[]}', "operator 0 lacks 'parallelism'"),
    ('{"mode":"fast","chaining":true,"operators":[],"edges":[]}', "unknown mode 'fast'"),
    ('{"mode":"batch","chaining":true,"operators":[],"edges":[{"source":"a","target":"b","pattern":"pointwise",'
     '"result":null}]}', "unknown operator 'a'"),
])
def test_from_json_refuses_anything_to_json_did_not_write(text, message):
    with pytest.raises(FullWindowError) as caught:
        JobGraph.from_json(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_diff_names_each_change_in_a_short_phrase():
    before = build("batch", [("a", 4), ("sort", 4), ("b", 2)],
                   [("a", "sort", "pointwise"), ("sort", "b", "all_to_all")])
    after = build("streaming", [("a", 4), ("sort", 8, {"attributes": END, "kind": "sort_partition"}), ("c", 2)],
                  [("a", "sort", "all_to_all"), ("sort", "c", "all_to_all", "blocking")], chaining=False)
    assert before.diff(after) == [
        "mode 'batch' -> 'streaming'",
        "chaining True -> False",
        "operator 'b' removed",
        "operator 'c' added",
        "operator 'sort' parallelism 4 -> 8",
        "operator 'sort' kind None -> 'sort_partition'",
        "operator 'sort' output_only_after_end_of_stream False -> True",
        "edge sort->b removed",
        "edge sort->c added",
        "edge a->sort pattern 'pointwise' -> 'all_to_all'",
    ]
    assert before.diff(JobGraph.from_json(before.to_json())) == []


def test_diff_notices_a_different_order_of_adding():
    one = build("batch", [("a", 1), ("b", 1)], [])
    two = build("batch", [("b", 1), ("a", 1)], [])
    assert one != two and one.diff(two) == ["operator order a, b -> b, a"]


def test_graph_and_failover_modules_never_import_spark():
    root = pathlib.Path(__file__).resolve().parents[2] / "fw_magics"
    for path in [*(root / "graph").glob("*.py"), *(root / "failover").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in {"pyspark", "py4j"} for n in names), f"{path.name} imports Spark"
