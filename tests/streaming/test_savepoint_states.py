"""A savepoint's keyed states against the restoring function's declared state (issue 47, item 2).

Pure: no Spark. ``load_savepoint`` sums up what the states hold (``StateShape``: every name by its kind,
timers, each name's first values) and ``check_restorable`` holds it against the operator kind's
``declared_states``: a state of another function (a name the function does not declare) would be lost
key by key, silently, so it is refused in one line; so are a value of another type and timers where the
function keeps none. A reference model of the rule is compared on random states.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.operators import AGGREGATE, PROCESS, REDUCE
from fw_magics.operators.spec import StateType
from fw_magics.runtime.streaming.savepoints.checks import Refused, StateShape, shape_problem
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from fw_magics.values.schema import arrow_schema
from tests.streaming.test_savepoint_trust import savepoint


def one(ddl: str, spark_type) -> StateType:
    struct = T.StructType([T.StructField("value", spark_type)])
    return StateType(ddl=ddl, arrow_schema=arrow_schema(struct), spark_types=(spark_type,))


RECORD = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.LongType()),
                       T.StructField("ts", T.TimestampType())])
#: Sessions' state (tests/streaming/functions.py): count (long), total (JSON), seen (a JSON list)
SESSIONS = {"count": ("value", one("long", T.LongType())), "total": ("value", StateType(ddl=None)),
            "seen": ("list", StateType(ddl=None))}


def shape_of(*states: str) -> StateShape:
    shape = StateShape()
    for text in states:
        shape.observe(json.loads(text), "keyed-state.parquet")
    return shape


def test_a_process_functions_own_states_pass_and_another_functions_are_refused_naming_the_state():
    ok = shape_of('{"v": {"count": 2, "total": 7}, "l": {"seen": [3, 4]}, "t": [1700000004000]}', "{}",
                  '{"v": {"count": 1, "total": 1.5}}')
    assert shape_problem(ok, SESSIONS, True, "process(Sessions)") is None
    # CountSum's accumulator: every key's state would be lost (the 4 of 4)
    assert shape_problem(shape_of('{"v": {"running": [2, 5]}}'), SESSIONS, True, "process(Sessions)") == (
        "holds value state 'running', which process(Sessions) does not declare (its state: value state 'count', "
        "list state 'seen', value state 'total')")
    assert "holds list state 'count', which" in shape_problem(shape_of('{"l": {"count": [1]}}'), SESSIONS, True, "p")
    assert shape_problem(shape_of('{"v": {"count": "three"}}'), SESSIONS, True, "p") == (
        "holds value state 'count' with values ['three'], not of its declared type 'long'")
    assert shape_problem(shape_of('{"v": {"count": 2}, "t": [5]}'), SESSIONS, False, "reduce(add)") == (
        "holds event-time timers, which reduce(add) does not keep")


def test_a_running_reduce_and_aggregate_declare_their_running_value_and_its_type():
    record = StateType(ddl="k long, v long, ts timestamp", arrow_schema=arrow_schema(RECORD),
                       spark_types=tuple(f.dataType for f in RECORD.fields), record=True)
    reduce_state = REDUCE.declared_states(REDUCE.spec(function=None, label="add", record=record, key=record,
                                                      event_time="ts"))
    assert list(reduce_state) == ["running"] and reduce_state["running"][0] == "value"
    own = shape_of('{"v": {"running": [1, 6, 1704067201000000]}}')
    assert shape_problem(own, reduce_state, False, "reduce(add)") is None
    counted = shape_of('{"v": {"running": [2, 5]}}')  # an aggregate's [n, total]: two fields, not three
    assert "not of its declared type 'k long, v long, ts timestamp'" in shape_problem(counted, reduce_state, False, "r")
    aggregate_state = AGGREGATE.declared_states(AGGREGATE.spec(function=None, label="CountSum", record=record,
                                                               key=record, event_time="ts"))
    assert aggregate_state == {"running": ("value", None)}  # a JSON accumulator: any JSON value
    assert shape_problem(counted, aggregate_state, False, "aggregate(CountSum)") is None
    assert PROCESS.declared_states(PROCESS.spec(function=None, label="S", record=record, key=record,
                                                event_time="ts", states=SESSIONS)) == SESSIONS


@pytest.mark.parametrize("text, says", [
    ('{"count": 3}', "not a JSON object of 'v', 'l' and 't'"),
    ('{"v": [1]}', "whose 'v', 'l' or 't' is not the per-key core's"),
    ('{"l": {"seen": 3}}', "whose 'v', 'l' or 't' is not the per-key core's"),
    ('{"t": ["soon"]}', "whose 'v', 'l' or 't' is not the per-key core's"),
    ('[1, 2]', "not a JSON object of 'v', 'l' and 't'"),
])
def test_a_state_not_of_the_per_key_cores_shape_is_refused_naming_the_file(text, says):
    with pytest.raises(Refused) as refused:
        shape_of(text)
    assert says in str(refused.value) and refused.value.file == "keyed-state.parquet"


def test_what_a_loaded_savepoint_holds_is_checked_against_the_function_restoring_it(tmp_path):
    loaded = load_savepoint(savepoint(str(tmp_path / "job"), states=['{"v": {"count": 2}}'] * 3))
    # the base's states are {"v": {"running": 0}}: a base of another function is refused too
    assert "holds value state 'running', which process(Sessions)" in shape_problem(loaded.shape, SESSIONS, True,
                                                                                   "process(Sessions)")
    assert shape_problem(loaded.shape, {**SESSIONS, "running": ("value", StateType(ddl=None))}, True, "p") is None


_NAMES = st.sampled_from(["a", "b", "c", "d"])
_KINDS = st.sampled_from(["value", "list"])


@settings(max_examples=200, deadline=None)
@given(declared=st.dictionaries(_NAMES, _KINDS, max_size=4),
       states=st.lists(st.tuples(st.dictionaries(_NAMES, st.integers(-9, 9), max_size=3),
                                 st.dictionaries(_NAMES, st.lists(st.integers(-9, 9), max_size=3), max_size=3),
                                 st.booleans()), max_size=6),
       timed=st.booleans())
def test_the_rule_against_a_reference_model_on_random_states(declared, states, timed):
    """Reference: refused exactly when a state holds a name the function does not declare with that kind, or
    timers where it keeps none (JSON-typed states: any value is of their type)."""
    shape = StateShape()
    for values, lists, timers in states:
        shape.observe({"v": values, "l": lists, **({"t": [1]} if timers else {})}, "keyed-state.parquet")
    held = {("value", n) for v, _, _ in states for n in v} | {("list", n) for _, lv, _ in states for n in lv}
    wrong = any(declared.get(name) != kind for kind, name in held) or (not timed and any(t for *_, t in states))
    problem = shape_problem(shape, {n: (k, StateType(ddl=None)) for n, k in declared.items()}, timed, "f")
    assert (problem is not None) == wrong, problem


def test_a_shape_keeps_a_few_values_per_name_and_refuses_too_many_names():
    shape = shape_of(*[json.dumps({"v": {"a": i}, "l": {"b": [i, i]}}) for i in range(40)])
    assert len(shape.names[("value", "a")]) == len(shape.names[("list", "b")]) == 16
    many = StateShape()
    with pytest.raises(Refused, match="more than 1024 names"):
        for i in range(1100):
            many.observe({"v": {f"n{i}": 1}}, "keyed-state.parquet")
