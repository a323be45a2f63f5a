"""The user API (fw_magics.api): one Function base, one check that reads the abstract methods, one state
vocabulary for keyed and operator state, and the facade's names (no Spark)."""

from __future__ import annotations

import pytest

import fw_magics as fw
from fw_magics.api import context, state
from fw_magics.api.function import Function, check_function, required_methods
from fw_magics.operators import PROCESS
from fw_magics.operators.spec import StateType
from fw_magics.runtime.streaming.keyed.core import KeyedCore
from fw_magics.state import OperatorStateStore
from tests.streaming.pure import long_state


def test_every_function_a_user_subclasses_is_a_function_with_its_required_methods_declared_abstract():
    bases = {fw.AggregateFunction: ["create_accumulator", "add", "get_result"],
             fw.ProcessFunction: ["process_element"], fw.KeyedProcessFunction: ["process_element"],
             fw.KeyedCoProcessFunction: ["process_element1", "process_element2"],
             fw.KeyedBroadcastProcessFunction: ["process_element", "process_broadcast_element"],
             fw.ProcessJoinFunction: ["process_element"]}
    for base, required in bases.items():
        assert issubclass(base, Function) and required_methods(base) == required, base
        assert callable(base.open) and callable(base.close)


def test_the_one_check_names_what_is_missing_and_takes_a_class():
    class Half(fw.KeyedCoProcessFunction):
        def process_element1(self, record, ctx):
            return None

    Half()  # a class that lacks a method can still be made: the check says what is missing where it is handed over
    takes = "connect(...).key_by(...).process takes an fw.KeyedCoProcessFunction"
    with pytest.raises(fw.FullWindowError, match=r"^Half must define process_element2\(record, ctx\)$"):
        check_function(Half, fw.KeyedCoProcessFunction, takes)
    with pytest.raises(fw.FullWindowError, match=r"^connect\(\.\.\.\)\.key_by\(\.\.\.\)\.process takes an "
                                                 r"fw\.KeyedCoProcessFunction; got int 3$"):
        check_function(3, fw.KeyedCoProcessFunction, takes)

    class Both(Half):
        def process_element2(self, record, ctx):
            return None

    fn, name = check_function(Both, fw.KeyedCoProcessFunction, takes)
    assert isinstance(fn, Both) and name == "Both"


def test_operator_state_methods_both_or_neither_where_a_function_may_keep_it():
    class Tally(fw.ProcessFunction):
        def process_element(self, record, ctx):
            return None

        def initialize_state(self, ctx):
            pass

    with pytest.raises(fw.FullWindowError, match=r"^Tally defines initialize_state but not snapshot_state"):
        check_function(Tally(), fw.ProcessFunction, "process")

    class Join(fw.ProcessJoinFunction):  # a join function keeps no operator state: as before, not asked
        def process_element(self, left, right, ctx):
            return None

        def initialize_state(self, ctx):
            pass

    assert check_function(Join(), fw.ProcessJoinFunction, "join")[1] == "Join"


def test_add_batch_stands_in_for_add_in_an_aggregate_function():
    class Empty(fw.AggregateFunction):
        pass

    with pytest.raises(fw.FullWindowError, match=r"^Empty must define create_accumulator\(\), add\(value, "
                                                 r"accumulator\) \(or add_batch\), get_result\(accumulator\)$"):
        check_function(Empty(), fw.AggregateFunction, "aggregate")

    class Batched(fw.AggregateFunction):
        def create_accumulator(self):
            return 0

        def add_batch(self, batch, accumulator):
            return accumulator + batch.num_rows

        def get_result(self, accumulator):
            return accumulator

    assert check_function(Batched, fw.AggregateFunction, "aggregate")[1] == "Batched"


def test_keyed_and_operator_state_speak_one_vocabulary():
    store = OperatorStateStore()
    assert isinstance(store.get_list_state("a"), state.ListState)
    assert isinstance(store.get_union_list_state("b"), state.ListState)

    class Counts(fw.KeyedProcessFunction):
        def open(self, ctx):
            self.count = ctx.get_state(fw.ValueStateDescriptor("count", "long"))
            self.seen = ctx.get_list_state(fw.ListStateDescriptor("seen"))

        def process_element(self, record, ctx):
            return None

    spec = PROCESS.spec(function=Counts(), label="Counts", record=StateType(None), key=StateType(None),
                        event_time=None, result=StateType(None),
                        states={"count": ("value", long_state("count")), "seen": ("list", StateType(None))})
    core = KeyedCore(spec)
    fn = spec.function
    assert isinstance(fn.count, state.ValueState) and isinstance(fn.seen, state.ListState)
    assert isinstance(core.context, context.Context) and isinstance(core.context.timer_service, context.TimerService)
    assert isinstance(core.runtime_context, context.RuntimeContext)
    assert issubclass(fw.ValueStateDescriptor, state.StateDescriptor)
    assert issubclass(fw.ListStateDescriptor, state.StateDescriptor)
    with pytest.raises(fw.FullWindowError, match=r"^list state name ''; accepted: a non-empty printable string$"):
        fw.ListStateDescriptor("")


def test_dir_of_the_package_is_its_public_names_and_dunders():
    listed = dir(fw)
    assert listed == sorted(set(fw.__all__) | {n for n in listed if n.startswith("__") and n.endswith("__")})
    assert "api" not in listed and "state" not in listed and "verbs" not in listed
    assert fw.api is not None and fw.load_ipython_extension  # still attributes, not listed
