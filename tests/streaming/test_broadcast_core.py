"""A broadcast input's function without Spark: the operator that runs it, its contexts, and the fixed key a
partition's operator state is kept under (the Spark runs are in test_keyed_operator_state.py)."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import types as T

import fw_magics as fw
from fw_magics.api.checkpointed import initialize_function
from fw_magics.api.co_process import ReadOnlyBroadcastState
from fw_magics.operators.co_process import BroadcastOperator
from fw_magics.runtime.streaming.keyed.operator_state import placeholder
from fw_magics.state import OperatorStateStore, snapshot_subtask
from fw_magics.values.records import record_type
from tests.streaming.operator_functions import Limits

Rule = record_type(("name", "limit"))


def _operator(function=None) -> tuple[BroadcastOperator, OperatorStateStore]:
    operator, store = BroadcastOperator(function or Limits()), OperatorStateStore(1, 3)
    initialize_function(operator, store)  # what a state partition does before its first key
    return operator, store


@given(st.lists(st.tuples(st.sampled_from(["max", "min", "cap"]), st.none() | st.integers(-5, 5)), max_size=12))
def test_broadcast_records_change_the_broadcast_state_as_the_reference_dict(rules):
    operator, store = _operator()
    reference = {}
    for name, limit in rules:
        operator.broadcast(tuple.__new__(Rule, (name, limit)), None, 0)
        if limit is None:
            reference.pop(name, None)
        else:
            reference[name] = limit
    assert dict(store.get_broadcast_state("limits")) == reference
    assert snapshot_subtask(store)["limits"] == {"mode": "broadcast", "units": [[k, v] for k, v in reference.items()]}


def test_the_keyed_side_reads_the_broadcast_state_and_cannot_change_it():
    operator, store = _operator()
    operator.broadcast(tuple.__new__(Rule, ("max", 3)), None, 0)
    view = ReadOnlyBroadcastState(store.get_broadcast_state("limits"))
    assert view["max"] == 3 and dict(view) == {"max": 3} and len(view) == 1
    for change in (lambda: view.__setitem__("max", 4), lambda: view.pop("max"), lambda: view.clear()):
        with pytest.raises(fw.FullWindowError, match=r"^broadcast state 'limits' is read-only in process_element "
                                                     r"\(every subtask's copy must stay the same\); change it in "
                                                     r"process_broadcast_element$"):
            change()
    assert dict(store.get_broadcast_state("limits")) == {"max": 3}


def test_a_broadcast_function_that_emits_or_asks_for_a_key_is_refused_in_one_line():
    class Emits(fw.KeyedBroadcastProcessFunction):
        def process_element(self, value, ctx):
            return None

        def process_broadcast_element(self, value, ctx):
            return (1,)

    class AsksKey(Emits):
        def process_broadcast_element(self, value, ctx):
            ctx.get_current_key()

    with pytest.raises(fw.FullWindowError, match=r"^Emits.process_broadcast_element returned \(1,\); accepted: "
                                                 r"nothing \(it changes the broadcast state; process_element emits\)$"):
        _operator(Emits())[0].broadcast(tuple.__new__(Rule, ("max", 1)), None, 0)
    with pytest.raises(fw.FullWindowError, match=r"^process_broadcast_element has no current key"):
        _operator(AsksKey())[0].broadcast(tuple.__new__(Rule, ("max", 1)), None, 0)


def test_a_partitions_operator_state_is_kept_under_a_fixed_non_null_key_of_the_key_types():
    types = [T.LongType(), T.StringType(), T.DoubleType(), T.DecimalType(10, 2), T.BooleanType(), T.DateType(),
             T.TimestampType(), T.BinaryType(), T.ArrayType(T.IntegerType()),
             T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])]
    assert [placeholder(t) for t in types] == [0, "", 0.0, decimal.Decimal(0), False, dt.date(1970, 1, 1),
                                               dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), b"", [], (0, "")]
    assert all(T.StructType([T.StructField("k", t)]).toInternal((placeholder(t),)) is not None for t in types)
    with pytest.raises(fw.FullWindowError, match=r"a key column of type map<string,int> has no fixed value"):
        placeholder(T.MapType(T.StringType(), T.IntegerType()))
