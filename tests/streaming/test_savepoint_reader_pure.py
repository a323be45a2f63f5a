"""Issue 50, item 1, without Spark: a savepoint's recorded declared state, and each key's JSON state turned into
typed columns (what ``fw.read_savepoint(...).keyed_state()`` runs in its Spark tasks), against a pure model.

The values are stored by the runtime's own codec (``TypedCodec.encode_all``, what a key's state holds), the
declared types recorded in a savepoint's document and parsed back (``declared.record``/``parse``), and the
reader's task must give back what ``tests/value_model.stored`` says Arrow holds of each value, on random
Spark types and values (hypothesis) and on hand-picked ones.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.api.state import StateKind
from fw_magics.operators.spec import StateType, codec_for
from fw_magics.runtime.streaming.keyed.changelog import ROW, STATE, STATE_ROW
from fw_magics.runtime.streaming.keyed.typed_states import TypedStates, column_type
from fw_magics.runtime.streaming.savepoints import declared
from fw_magics.runtime.streaming.savepoints.reader import _BaseTyped, _Decoded, _typed_batches
from fw_magics.values.schema import arrow_schema
from tests import value_model as vm


def state_type(dtype: T.DataType, record: bool = False) -> StateType:
    struct = dtype if record else T.StructType([T.StructField("value", dtype)])
    return StateType(ddl=dtype.simpleString(), arrow_schema=arrow_schema(struct),
                     spark_types=tuple(f.dataType for f in struct.fields), record=record)


def read_back(states: dict, docs: list) -> list:
    """The reader's task over keys 0.. with the JSON ``docs``: rows of (key, each state in name order); the
    declared ``states`` recorded in a document and parsed back first, as a savepoint carries them. Where the
    states are stored typed too (``typed_states``: what a backlog writes beside the JSON), those columns hold
    the same values, NaN and -0.0 included."""
    recorded = json.loads(json.dumps(declared.record(states)))
    parsed = declared.parse(recorded)
    columns = [(name, kind, t) for name, (kind, t) in sorted(parsed.items())]
    out = T.StructType([T.StructField("k", T.LongType())]
                       + [T.StructField(name, column_type(kind, t)) for name, kind, t in columns])
    batch = pa.record_batch({"k": pa.array(range(len(docs)), pa.int64()),
                             STATE: pa.array([json.dumps(d) for d in docs], pa.string())})
    schema = arrow_schema(out)
    got = list(_typed_batches(_Decoded(["k"], columns, schema), iter([batch])))
    rows = pa.Table.from_batches(got, schema).to_pylist()
    stored = TypedStates.of(parsed)
    if stored is not None:  # a base file's state rows with their typed columns, and an older file's without
        arrays = stored.arrays(docs)
        assert [a.type for a in arrays] == [f.type for f in list(schema)[1:]]
        rows_of = pa.record_batch({"k": batch.column("k"), ROW: pa.array([STATE_ROW] * len(docs)),
                                   STATE: batch.column(STATE)})
        typed = pa.RecordBatch.from_arrays(list(rows_of.columns) + arrays,
                                           names=rows_of.schema.names + [f.name for f in stored.fields])
        read = _BaseTyped(["k"], stored, columns, schema)
        assert stored.found(typed) is not None and stored.found(rows_of) is None
        assert repr(read(typed).to_pylist()) == repr(read(rows_of).to_pylist()) == repr(rows)
    return rows


def model_value(value, dtype):
    try:
        return vm.stored(value, dtype)
    except vm.Refused:
        return None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_value_and_a_list_state_of_any_type_read_back_as_the_model_stores_them(data):
    dtype = data.draw(vm.spark_types, "type")
    values = data.draw(st.lists(vm.good(dtype), min_size=1, max_size=4), "values")
    stored = [model_value(v, dtype) for v in values]
    assume(all(s is not None for s in stored))  # a value the type refuses never reaches a state
    typed = state_type(dtype)
    codec = codec_for(typed, "value state 'a'")
    encoded = codec.encode_all(values)
    docs = [{"v": {"a": e}, "l": {"b": encoded[: i + 1]}} for i, e in enumerate(encoded)] + [{}]
    rows = read_back({"a": (StateKind.VALUE, typed), "b": (StateKind.LIST, typed)}, docs)
    assert [vm.canonical(r["a"]) for r in rows] == [vm.canonical(s) for s in stored] + [None]
    assert [vm.canonical(r["b"]) for r in rows] == [vm.canonical(stored[: i + 1]) for i in range(len(stored))] + [[]]
    assert [r["k"] for r in rows] == list(range(len(docs)))


def test_hand_picked_record_json_and_absent_states():
    record = T.StructType([T.StructField("v", T.LongType()), T.StructField("at", T.TimestampType())])
    at = dt.datetime(2024, 1, 1, 0, 0, 4, tzinfo=dt.timezone.utc)
    states = {"last": (StateKind.VALUE, state_type(record, record=True)), "notes": (StateKind.VALUE, StateType(None)),
              "seen": (StateKind.LIST, StateType(None)), "count": (StateKind.VALUE, None)}
    last = codec_for(states["last"][1], "last").encode((4, at))
    docs = [{"v": {"last": last, "notes": {"max": 4}, "count": 2}, "l": {"seen": [3, "x"]}, "t": [5]}, {}]
    rows = read_back(states, docs)
    assert rows == [
        {"k": 0, "count": "2", "last": {"v": 4, "at": at}, "notes": '{"max": 4}', "seen": ["3", '"x"']},
        {"k": 1, "count": None, "last": None, "notes": None, "seen": []},
    ]


@pytest.mark.parametrize("recorded, words", [
    ({"a": {"kind": "map", "record": False, "type": None}}, "state 'a' is"),
    ({"a": {"kind": "value", "record": False, "type": {"type": "struct", "fields": 3}}}, "state 'a' has type"),
    ({"a": {"kind": "value", "record": False, "type": T.StructType([T.StructField("x", T.LongType()),
                                                                    T.StructField("y", T.LongType())]).jsonValue()}},
     "state 'a' has 2 fields; a single value has one"),
    ([1], "not an object"),
])
def test_a_recorded_state_that_record_did_not_write_is_refused(recorded, words):
    with pytest.raises(ValueError, match=words):
        declared.parse(recorded)
    assert not declared.valid(recorded)


def test_a_savepoints_recorded_states_are_checked_at_load_and_against_what_it_holds(tmp_path):
    """A forged 'states' field is refused by the load in one line; recorded states that are not what the
    savepoint holds are refused by read_savepoint in one line naming the state, before Spark is asked."""
    import fw_magics as fw
    from fw_magics.runtime.streaming.savepoints.files import SavepointError, load_savepoint
    from tests.streaming.test_savepoint_trust import read_document, savepoint, write_document

    path = savepoint(str(tmp_path))  # an aggregate's: {"v": {"running": 1}} per key
    doc = read_document(path)
    doc["states"] = {"running": {"kind": "value", "record": False, "type": "long"}}
    write_document(path, doc)
    with pytest.raises(SavepointError, match=r"field 'states' is .*; accepted: what the job's function declared"):
        load_savepoint(path)
    long_running = declared.record({"running": (StateKind.VALUE, state_type(T.LongType()))})
    doc["states"] = {"running": {**long_running["running"], "kind": "list"}}
    write_document(path, doc)
    assert load_savepoint(path).document["states"]["running"]["kind"] == "list"
    with pytest.raises(SavepointError, match=r"holds value state 'running', which the aggregate function it "
                                             r"was taken of does not declare \(its state: list state 'running'\)$"):
        fw.read_savepoint(path)
    doc["states"] = declared.record({"running": (StateKind.VALUE, state_type(T.StringType()))})
    write_document(path, doc)
    with pytest.raises(SavepointError, match=r"holds value state 'running' with values \[\d, \d, \d\], not of its "
                                             r"declared type 'string'$"):
        fw.read_savepoint(path)
