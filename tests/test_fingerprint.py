"""The fingerprint pieces: equal for the same content in any process, different when a row,
a function body or a closure value changes (issue 16, item 2). No Spark.

A small reference model says when two plain values are the same: type-strict structural
equality (1, 1.0 and True differ; sets compare by their members). Digests must agree with it.
"""

import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery.content import affected_vertices, compare
from fw_magics.recovery.fingerprint import (
    UNKNOWN,
    files_digest,
    function_digest,
    plan_leaves,
    plan_text,
    rows_digest,
    value_digest,
)
from tests.widgets.graphs import four_operators

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
           | st.binary(max_size=8))
plain = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.frozensets(scalars, max_size=4),
    max_leaves=12,
)


def canonical(value):
    """The reference model: a value as a type-tagged structure; equal canons = the same content."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((canonical(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(repr(canonical(v)) for v in value)))
    if isinstance(value, float) and value == 0.0:
        return ("float", math.copysign(1.0, value))
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(plain, plain)
def test_value_digests_agree_with_the_reference_model(a, b):
    assert (value_digest(a) == value_digest(b)) == (canonical(a) == canonical(b))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(), st.text(max_size=5)), min_size=1, max_size=8), st.data())
def test_a_changed_row_changes_the_rows_digest(rows, data):
    chunk = lambda rs: json.dumps(rs).encode()  # noqa: E731 - any serialisation of the rows
    k = data.draw(st.integers(0, len(rows) - 1))
    changed = list(rows)
    changed[k] = (rows[k][0] + data.draw(st.integers(1, 5)), rows[k][1])
    assert rows_digest([chunk(rows)]) == rows_digest([chunk(list(rows))])
    assert rows_digest([chunk(rows)]) != rows_digest([chunk(changed)])
    assert rows_digest([chunk(rows[:1]), chunk(rows[1:])]) != rows_digest([chunk(rows)])  # the split counts


def build(body: str, name: str = "summarize"):
    """A function from source text, as re-running a notebook cell builds it (a new object each time)."""
    namespace = {"FACTOR": 3}
    exec(f"def {name}(records):\n    return {body}\n", namespace)
    return namespace[name]


bodies = st.builds(lambda op, c, use_global: f"[r {op} {c}{' * FACTOR' if use_global else ''} for r in records]",
                   st.sampled_from(["+", "-", "*"]), st.integers(0, 20), st.booleans())


@settings(max_examples=150, deadline=None)
@given(bodies, bodies)
def test_a_changed_function_body_changes_the_digest_and_a_rebuilt_one_does_not(one, two):
    assert function_digest(build(one)) == function_digest(build(one))
    assert (function_digest(build(one)) == function_digest(build(two))) == (one == two)


def make(factor, offset=0):
    def summarize(records):
        return [r * factor + offset for r in records]
    return summarize


@settings(max_examples=150, deadline=None)
@given(plain, plain)
def test_a_changed_closure_value_changes_the_digest(a, b):
    assert (function_digest(make(a)) == function_digest(make(b))) == (canonical(a) == canonical(b))


def test_globals_defaults_and_nested_helpers_count_but_line_numbers_do_not():
    namespace = {"LIMIT": 3}
    source = "def helper(x):\n    return x * LIMIT\n\ndef top(records, n=2):\n    return [helper(r) for r in records][:n]\n"
    exec(source, namespace)
    first = function_digest(namespace["top"])
    exec("\n\n\n" + source, namespace)  # the same cell moved down: other line numbers
    assert function_digest(namespace["top"]) == first
    namespace["LIMIT"] = 4  # a plain global the helper reads
    assert function_digest(namespace["top"]) != first
    namespace["LIMIT"] = 3
    exec(source.replace("n=2", "n=5"), namespace)
    assert function_digest(namespace["top"]) != first
    exec(source.replace("x * LIMIT", "x + LIMIT"), namespace)
    assert function_digest(namespace["top"]) != first


def test_aggregate_functions_count_by_their_methods_and_attributes():
    import fw_magics as fw

    class Total(fw.AggregateFunction):
        schema = "total double"

        def __init__(self, scale=1.0):
            self.scale = scale

        def create_accumulator(self):
            return 0.0

        def add(self, record, total):
            return total + record.v * self.scale

        def get_result(self, total):
            return total

    assert value_digest(Total()) == value_digest(Total())
    assert value_digest(Total()) != value_digest(Total(2.0))


SCRIPT = """
import json
from fw_magics.recovery.fingerprint import function_digest, value_digest
namespace = {"FACTOR": 3}
exec("def summarize(records):\\n    return [r for r in records if r in {'a', 'b', 'c'}] * FACTOR\\n", namespace)
print(json.dumps([function_digest(namespace["summarize"]), value_digest({"k": frozenset({"x", "y", 1.5})})]))
"""


def test_digests_are_the_same_in_a_fresh_process_whatever_its_hash_seed():
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=ROOT)
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
        outputs.add(out.stdout.strip())
    namespace = {"FACTOR": 3}
    exec("def summarize(records):\n    return [r for r in records if r in {'a', 'b', 'c'}] * FACTOR\n", namespace)
    here = json.dumps([function_digest(namespace["summarize"]), value_digest({"k": frozenset({"x", "y", 1.5})})])
    assert outputs == {here}


def test_files_count_by_size_and_modification_time(tmp_path):
    data = tmp_path / "part-0.parquet"
    data.write_bytes(b"one")
    first = files_digest([f"file://{data}"])
    assert files_digest([str(data)]) != first and files_digest([f"file://{data}"]) == first
    data.write_bytes(b"three")
    assert files_digest([f"file://{data}"]) != first


EXPLAIN = """== Parsed Logical Plan ==
'Filter ('id > 2)
+- Relation [id#10L] parquet

== Analyzed Logical Plan ==
id: bigint
Filter (id#12L > cast(2 as bigint))
+- LocalRelation [id#12L, name#13], plan_id=7

== Optimized Logical Plan ==
LocalRelation [id#12L]
"""


def test_plan_text_keeps_the_analyzed_plan_without_ids():
    text = plan_text(EXPLAIN)
    assert text == "id: bigint\nFilter (id# > cast(2 as bigint))\n+- LocalRelation [id#, name#], plan_id"
    assert plan_leaves(text) == {"LocalRelation"}
    assert plan_leaves("Project [a#1]\n+- LogicalRDD [a#1], false") == {"LogicalRDD"}


def test_compare_names_what_changed_and_what_could_not_be_compared():
    recorded = {"source": {"rows": "a", "schema": "s"}, "sort": {"sort": "x"}, "reduce": {"function": "f"},
                "map": {"function": "g", "files": UNKNOWN + "why"}}
    current = {"source": {"rows": "b", "schema": "s"}, "sort": {"sort": "x"}, "reduce": {"function": "f"},
               "map": {"function": "g2", "files": UNKNOWN + "why"}}
    result = compare(recorded, current)
    assert result.changed == {"source": ["rows"], "map": ["function"]}
    assert result.summary() == "the rows of 'source'; the function of 'map'"
    assert result.unknown == ["the files 'map' reads (their sizes or modification times): why"]
    assert compare(None, current).unknown[0].startswith("everything (the job was recorded without")
    g = four_operators()  # v0 = source + sort, v1 = reduce, v2 = map
    assert affected_vertices(g, {"sort"}) == {"v0", "v1", "v2"}
    assert affected_vertices(g, {"reduce"}) == {"v1", "v2"} and affected_vertices(g, {"map"}) == {"v2"}


@pytest.mark.parametrize("value", [float("nan"), list(range(10)), {"a": [1, {2: 3}]}])
def test_values_are_stable(value):
    assert value_digest(value) == value_digest(value)


def test_fw_magics_own_wrappers_count_by_the_user_code_they_wrap():
    """An interval join's operator and a broadcast function's adapter are fw-magics classes, which count
    by name; what they wrap is the user's and counts by its code: a changed join function or broadcast
    function is a changed job (it was taken for the same one)."""
    import fw_magics as fw
    from fw_magics.operators.co_process import BroadcastOperator, IntervalJoinOperator

    first, again, other = (build(body, "pair") for body in ("(records, 1)", "(records, 1)", "(records, 2)"))
    joined = [value_digest(IntervalJoinOperator(-5, 5, f, "v long", "w long")) for f in (first, again, other)]
    assert joined[0] == joined[1] != joined[2]
    assert value_digest(IntervalJoinOperator(-5, 5, first, "v long", "w long")) != value_digest(
        IntervalJoinOperator(-5, 6, first, "v long", "w long"))

    def limits(bound):
        class Limits(fw.KeyedBroadcastProcessFunction):
            schema = "v long"

            def __init__(self):
                self.bound = bound

            def process_element(self, record, ctx):
                return [(record.v,)] if record.v < self.bound else []

            def process_broadcast_element(self, record, ctx):
                pass

        return Limits()

    assert value_digest(BroadcastOperator(limits(3))) == value_digest(BroadcastOperator(limits(3)))
    assert value_digest(BroadcastOperator(limits(3))) != value_digest(BroadcastOperator(limits(4)))
