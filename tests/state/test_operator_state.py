"""Operator state for user functions: list, union and broadcast state, snapshots and restores at other parallelisms."""

import decimal
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.api.checkpointed import (
    CheckpointedFunction,
    FunctionInitializationContext,
    FunctionSnapshotContext,
    initialize_function,
    snapshot_function,
)
from fw_magics.errors import FullWindowError
from fw_magics.state import (
    BroadcastState,
    ListState,
    OperatorStateStore,
    StateError,
    UnionListState,
    redistribute,
    restore_subtasks,
    snapshot_subtask,
)

# --- the seed's scenario as a function: a source reading 4 partitions ------------------------

PARTITIONS = {f"kp{p}": [f"kp{p}-r{k}" for k in range(10)] for p in range(1, 5)}


class PartitionSource(CheckpointedFunction):
    """Reads PARTITIONS; its operator state is one [partition, offset] unit per partition it owns."""

    def initialize_state(self, context):
        self.context = context
        self.positions = context.operator_state_store.get_list_state("positions")
        if not context.is_restored():
            mine = sorted(PARTITIONS)[context.subtask_index::context.parallelism]
            self.positions.update([[partition, 0] for partition in mine])
        self.offsets_after = self.positions.get()

    def read(self, records_per_partition):
        read, moved = [], []
        for partition, offset in self.positions:
            records = PARTITIONS[partition][offset:offset + records_per_partition]
            read.extend(records)
            moved.append([partition, offset + len(records)])
        self.offsets_after = moved
        return read

    def snapshot_state(self, context):
        self.positions.update(self.offsets_after)
        self.snapshotted = context.checkpoint_id


def start(parallelism, snapshots=None):
    stores = (restore_subtasks(snapshots, parallelism) if snapshots is not None
              else [OperatorStateStore(i, parallelism) for i in range(parallelism)])
    functions = [PartitionSource() for _ in stores]
    for function, store in zip(functions, stores):
        initialize_function(function, store)
    return functions, stores


def savepoint(functions, stores, checkpoint_id):
    snapshots = [snapshot_function(f, s, checkpoint_id, 1_700_000_000_000) for f, s in zip(functions, stores)]
    return json.loads(json.dumps(snapshots))  # what a savepoint file would hold


def owned(functions):
    return sorted(partition for f in functions for partition, _ in f.positions)


def test_seed_scenario_every_record_read_exactly_once_across_rescales():
    read = []
    functions, stores = start(2)
    assert [f.context.is_restored() for f in functions] == [False, False]
    assert [[p for p, _ in f.positions] for f in functions] == [["kp1", "kp3"], ["kp2", "kp4"]]
    for f in functions:
        read += f.read(3)
    snapshots = savepoint(functions, stores, 1)

    functions, stores = start(1, snapshots)  # scale down: the one subtask owns all four partitions
    assert [f.context.is_restored() for f in functions] == [True]
    assert functions[0].positions.get() == [["kp1", 3], ["kp3", 3], ["kp2", 3], ["kp4", 3]]
    read += functions[0].read(2)
    snapshots = savepoint(functions, stores, 2)

    functions, stores = start(4, snapshots)  # scale up: one partition each
    assert [len(f.positions) for f in functions] == [1, 1, 1, 1] and owned(functions) == sorted(PARTITIONS)
    assert [f.context.is_restored() for f in functions] == [True] * 4
    assert [(f.context.subtask_index, f.context.parallelism) for f in functions] == [(i, 4) for i in range(4)]
    for f in functions:
        read += f.read(4)
    snapshots = savepoint(functions, stores, 3)
    assert [f.snapshotted for f in functions] == [3] * 4

    functions, stores = start(3, snapshots)  # and to a parallelism that does not divide 4
    assert sorted(map(len, (f.positions for f in functions))) == [1, 1, 2] and owned(functions) == sorted(PARTITIONS)
    for f in functions:
        read += f.read(100)
    assert sorted(read) == sorted(r for records in PARTITIONS.values() for r in records)  # once each


def test_scaling_up_leaves_a_subtask_without_units_restored_but_empty():
    functions, stores = start(1)
    snapshots = savepoint(functions, stores, 1)
    functions, stores = start(6, snapshots)
    assert [len(f.positions) for f in functions] == [1, 1, 1, 1, 0, 0]
    assert all(f.context.is_restored() for f in functions)  # as in Flink: restored, with nothing in it


# --- union and broadcast state ----------------------------------------------------------------

def test_union_state_gives_every_subtask_all_units_in_old_subtask_order():
    stores = [OperatorStateStore(i, 2) for i in range(2)]
    stores[0].get_union_list_state("seen").update(["a", "b"])
    stores[1].get_union_list_state("seen").add("c")
    restored = restore_subtasks([snapshot_subtask(s) for s in stores], 3)
    assert [s.get_union_list_state("seen").get() for s in restored] == [["a", "b", "c"]] * 3
    # each subtask has its own copy: changing one does not change another
    restored[0].get_union_list_state("seen").clear()
    assert restored[1].get_union_list_state("seen").get() == ["a", "b", "c"]


def test_union_state_not_cleared_grows_with_every_restore_as_in_flink():
    stores = [OperatorStateStore(i, 2) for i in range(2)]
    for i, store in enumerate(stores):
        store.get_union_list_state("u").add(i)
    once = restore_subtasks([snapshot_subtask(s) for s in stores], 2)
    twice = restore_subtasks([snapshot_subtask(s) for s in once], 2)
    assert twice[0].get_union_list_state("u").get() == [0, 1, 0, 1]


def test_broadcast_state_every_new_subtask_gets_an_equal_copy_with_its_key_types():
    stores = [OperatorStateStore(i, 2) for i in range(2)]
    for store in stores:
        rules = store.get_broadcast_state("rules")
        rules[1] = {"limit": 10}
        rules["mode"] = "strict"
        rules[2.5] = None
    snapshots = json.loads(json.dumps([snapshot_subtask(s) for s in stores]))
    restored = restore_subtasks(snapshots, 5)
    for store in restored:
        rules = store.get_broadcast_state("rules")
        assert isinstance(rules, BroadcastState)
        assert dict(rules) == {1: {"limit": 10}, "mode": "strict", 2.5: None} and 1 in rules and "1" not in rules
    restored[0].get_broadcast_state("rules")[1]["limit"] = 99
    assert restored[1].get_broadcast_state("rules")[1] == {"limit": 10}


def test_broadcast_copy_is_taken_from_subtask_i_mod_p():
    stores = [OperatorStateStore(i, 2) for i in range(2)]
    for i, store in enumerate(stores):
        store.get_broadcast_state("b")["from"] = i
    restored = restore_subtasks([snapshot_subtask(s) for s in stores], 3)
    assert [s.get_broadcast_state("b")["from"] for s in restored] == [0, 1, 0]


def test_broadcast_state_behaves_as_a_dict():
    state = OperatorStateStore().get_broadcast_state("b")
    state.update({"x": 1, "y": [2]})
    del state["x"]
    assert dict(state) == {"y": [2]} and len(state) == 1 and state.get("x", "none") == "none"
    assert state.pop("y") == [2] and not state


# --- the store: one mode per name, what a restore brings ---------------------------------------

def test_the_store_hands_out_the_same_state_and_knows_its_subtask():
    store = OperatorStateStore(2, 3)
    assert store.get_list_state("a") is store.get_list_state("a")
    assert type(store.get_list_state("a")) is ListState and type(store.get_union_list_state("u")) is UnionListState
    assert (store.subtask_index, store.parallelism, store.is_restored()) == (2, 3, False)
    assert store.state_names() == ["a", "u"] and store.mode_of("u") == "union"
    assert store.state("a") is store.get_list_state("a") and store.state("u") is store.get_union_list_state("u")
    assert store.state_names() == ["a", "u"]  # state() never creates one


def test_a_store_restored_from_units_has_every_name_and_copies_the_units():
    units = [{"offset": 1}]
    store = OperatorStateStore.restored(1, 2, {"a": ("split", units), "b": ("broadcast", [["k", [1]]]),
                                               "e": ("union", [])})
    assert (store.subtask_index, store.parallelism, store.is_restored()) == (1, 2, True)
    assert store.state_names() == ["a", "b", "e"] and store.mode_of("b") == "broadcast"
    assert list(store.get_list_state("a")) == [{"offset": 1}] and dict(store.get_broadcast_state("b")) == {"k": [1]}
    units[0]["offset"] = 99
    assert list(store.state("a")) == [{"offset": 1}] and list(store.state("e")) == []


def test_a_name_asked_for_in_another_mode_is_refused_in_one_line():
    store = OperatorStateStore()
    store.get_list_state("offsets")
    with pytest.raises(StateError, match=r"^state 'offsets' is a list state \(mode 'split'\), asked for as a "
                                         r"union list state; accepted: one mode per name"):
        store.get_union_list_state("offsets")
    with pytest.raises(StateError, match="asked for as a broadcast state"):
        store.get_broadcast_state("offsets")


def test_a_restored_name_keeps_its_mode_and_is_saved_again_even_if_not_asked_for():
    store = OperatorStateStore()
    store.get_union_list_state("u").add("x")
    store.get_list_state("s").add_all([1, 2])
    (restored,) = restore_subtasks([snapshot_subtask(store)], 1)
    assert restored.state_names() == ["s", "u"]
    with pytest.raises(StateError, match="^state 'u' is restored as a union list state"):
        restored.get_list_state("u")
    restored.get_list_state("s").add(3)  # only 's' is asked for
    assert snapshot_subtask(restored) == {"s": {"mode": "split", "units": [1, 2, 3]},
                                          "u": {"mode": "union", "units": ["x"]}}


def test_snapshot_is_plain_json_and_does_not_follow_later_changes():
    store = OperatorStateStore()
    unit = {"partition": "kp1", "offset": 3, "meta": [1.5, True, None]}
    store.get_list_state("s").add(unit)
    snapshot = snapshot_subtask(store)
    assert json.loads(json.dumps(snapshot, allow_nan=False)) == snapshot
    unit["offset"] = 4
    store.get_list_state("s").add("more")
    assert snapshot == {"s": {"mode": "split", "units": [{"partition": "kp1", "offset": 3,
                                                          "meta": [1.5, True, None]}]}}


def test_list_state_methods():
    state = OperatorStateStore().get_list_state("s")
    state.add(1)
    state.add_all([2, 3])
    got = state.get()
    got.append("not in the state")
    assert state.get() == [1, 2, 3] and list(state) == [1, 2, 3] and len(state) == 3
    state.update(["x"])
    assert state.get() == ["x"]
    state.clear()
    assert state.get() == [] and "ListState('s'" in repr(state)
    state.update(unit for unit in ("a", "b"))  # any iterable of units
    assert state.get() == ["a", "b"]


@pytest.mark.parametrize("units, kind", [("kp1", "str"), ({"kp1": 0}, "dict"), (b"kp", "bytes"), (3, "int")])
def test_add_all_and_update_refuse_a_single_value_that_would_be_taken_apart(units, kind):
    state = OperatorStateStore().get_union_list_state("s")
    state.add("kept")
    for method in ("add_all", "update"):
        with pytest.raises(StateError, match=rf"^{method}\(\) of union list state 's' got a {kind}; accepted: a list"):
            getattr(state, method)(units)
    assert state.get() == ["kept"]


# --- refusals: one line naming the state and the type ------------------------------------------

class Tagged(float):
    pass


@pytest.mark.parametrize("unit, culprit", [
    ({1, 2}, "unit 0 of list state 'offsets' is a value of type set; accepted"),
    (("kp1", 3), "unit 0 of list state 'offsets' is a value of type tuple; accepted"),
    (b"raw", "unit 0 of list state 'offsets' is a value of type bytes; accepted"),
    (decimal.Decimal("1.5"), "unit 0 of list state 'offsets' is a value of type decimal.Decimal; accepted"),
    (Tagged(1.0), "unit 0 of list state 'offsets' is a value of type tests.state.test_operator_state.Tagged;"),
    (float("nan"), "unit 0 of list state 'offsets' is the float nan (not valid JSON); accepted"),
    (float("-inf"), "is the float -inf (not valid JSON)"),
    ({"offset": 1, 2: "x"}, "unit 0 of list state 'offsets' holds a dict key of type int at [2]; accepted"),
    ([1, {"deep": [object()]}], "unit 0 of list state 'offsets' holds a value of type object at [1]['deep'][0];"),
    (PartitionSource, "unit 0 of list state 'offsets' is a value of type abc.ABCMeta; accepted"),
])
def test_a_unit_that_is_not_json_is_refused_when_added(unit, culprit):
    state = OperatorStateStore().get_list_state("offsets")
    for add in (state.add, lambda u: state.add_all(["fine", u]), lambda u: state.update([u])):
        with pytest.raises(StateError) as caught:
            add(unit)
        text = str(caught.value)
        assert culprit in text.replace("unit 1 of", "unit 0 of") and "\n" not in text
        assert "accepted: JSON values" in text and "never pickled" in text
        assert isinstance(caught.value, FullWindowError)
    assert state.get() == []  # nothing half-added


def test_a_unit_changed_after_it_was_added_is_refused_at_snapshot():
    store = OperatorStateStore()
    unit = {"offset": 1}
    store.get_union_list_state("u").add(unit)
    unit["when"] = {1, 2}
    with pytest.raises(StateError, match=r"^unit 0 of union list state 'u' holds a value of type set at \['when'\];"):
        snapshot_subtask(store)


def test_a_unit_that_contains_itself_is_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(StateError, match=r"holds a list that contains itself at \[0\]"):
        OperatorStateStore().get_list_state("s").add(loop)
    shared = [1]
    OperatorStateStore().get_list_state("s").add([shared, shared])  # shared, not cyclic: fine


def test_broadcast_keys_and_values_must_be_json():
    state = OperatorStateStore().get_broadcast_state("rules")
    with pytest.raises(StateError, match=r"^key \('a', 1\) of broadcast state 'rules' is of type tuple; accepted:"):
        state[("a", 1)] = 1
    with pytest.raises(StateError, match=r"^value for key 'a' of broadcast state 'rules' is a value of type set;"):
        state["a"] = {1}
    with pytest.raises(StateError, match=r"^key nan of broadcast state 'rules' is the float nan \(not valid JSON\);"):
        state[float("nan")] = 1
    assert dict(state) == {}


@pytest.mark.parametrize("snapshots, p, message", [
    ([], 2, "snapshots is empty; accepted: a list with one snapshot per old subtask"),
    ({"s": {}}, 2, "snapshots is a dict; accepted: a list with one snapshot per old subtask"),
    ([{"s": {"mode": "split", "units": []}}], 0, "new_parallelism 0; accepted: an integer >= 1"),
    ([["s"]], 2, "snapshots[0] is a list; accepted: a dict of state name -> {mode, units}"),
    ([{"s": ["split", []]}], 2, "snapshots[0]['s'] is a list; accepted: a dict with exactly the keys 'mode'"),
    ([{"s": {"mode": "split"}}], 2, "snapshots[0]['s'] has keys ['mode']; accepted: a dict with exactly the keys"),
    ([{"s": {"mode": "split", "units": [], "x": 1}}], 2, "has keys ['mode', 'units', 'x']; accepted"),
    ([{"s": {"mode": "list", "units": []}}], 2, "mode 'list' of snapshots[0]['s']; accepted: 'split', 'union'"),
    ([{"s": {"mode": "split", "units": "ab"}}], 2, "units of snapshots[0]['s'] are a str; accepted: a list"),
    ([{"s": {"mode": "split", "units": [[1, {"a": {2}}]]}}], 2,
     "unit 0 of snapshots[0]['s'] holds a value of type set at [1]['a']"),
    ([{"": {"mode": "split", "units": []}}], 2, "state name '' in snapshots[0]; accepted: a non-empty string"),
    ([{"s": {"mode": "split", "units": []}}, {"s": {"mode": "union", "units": []}}], 2,
     "state 's' is 'split' in snapshots[0] but 'union' in snapshots[1]; accepted: one mode per name"),
    ([{"b": {"mode": "broadcast", "units": [["k", 1, 2]]}}], 2,
     "unit 0 of broadcast state snapshots[0]['b'] is ['k', 1, 2]; accepted: a [key, value] pair"),
    ([{"b": {"mode": "broadcast", "units": [[["k"], 1]]}}], 2, "key ['k'] of broadcast state"),
    ([{"b": {"mode": "broadcast", "units": [["k", 1], ["k", 2]]}}], 2,
     "key 'k' appears twice in broadcast state snapshots[0]['b']; accepted: distinct keys"),
])
def test_bad_snapshots_are_refused_in_one_line(snapshots, p, message):
    with pytest.raises(StateError) as caught:
        restore_subtasks(snapshots, p)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_misuse_of_stores_contexts_and_functions_is_one_line():
    cases = [
        (lambda: OperatorStateStore(2, 2), "subtask_index 2 of parallelism 2; accepted: an integer from 0 to 1"),
        (lambda: OperatorStateStore(0, 0), "parallelism 0; accepted: an integer >= 1"),
        (lambda: OperatorStateStore().get_list_state(""), "state name ''; accepted: a non-empty string"),
        (lambda: OperatorStateStore().get_list_state(None), "state name None; accepted: a non-empty string"),
        (lambda: OperatorStateStore().mode_of("x"), "no state 'x' in this store; accepted: none yet"),
        (lambda: OperatorStateStore().state("x"), "no state 'x' in this store; accepted: none yet"),
        (lambda: FunctionSnapshotContext(-1, 0), "checkpoint_id -1; accepted: an integer >= 0"),
        (lambda: FunctionSnapshotContext(1, 1.5), "timestamp 1.5; accepted: milliseconds since the epoch"),
        (lambda: FunctionInitializationContext({}), "store is a dict; accepted: an OperatorStateStore"),
        (lambda: initialize_function(object(), OperatorStateStore()), "function is a object; accepted: a Checkpointed"),
        (lambda: snapshot_function(PartitionSource(), "store", 1), "store is a str; accepted: an OperatorStateStore"),
        (lambda: snapshot_subtask([]), "snapshot_subtask got a list; accepted: an OperatorStateStore"),
    ]
    for misuse, message in cases:
        with pytest.raises(StateError) as caught:
            misuse()
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_contexts_expose_what_flink_exposes():
    store = OperatorStateStore(1, 3)
    context = FunctionInitializationContext(store)
    assert context.operator_state_store is store and not context.is_restored()
    assert (context.subtask_index, context.parallelism) == (1, 3)
    snap = FunctionSnapshotContext(7, 1_700_000_000_123)
    assert (snap.checkpoint_id, snap.timestamp) == (7, 1_700_000_000_123)
    with pytest.raises(TypeError):
        type("Half", (CheckpointedFunction,), {"initialize_state": lambda self, c: None})()


# --- round trips at other parallelisms on random state -----------------------------------------

JSON_UNITS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def stores_of(draw):
    p = draw(st.integers(1, 5))
    names = draw(st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["split", "union", "broadcast"]),
                                 min_size=1))
    stores = []
    for i in range(p):
        store = OperatorStateStore(i, p)
        for name, mode in names.items():
            if mode == "broadcast":
                entries = draw(st.dictionaries(st.text(max_size=3), JSON_UNITS, max_size=3))
                store.get_broadcast_state(name).update(entries)
            else:
                getter = store.get_list_state if mode == "split" else store.get_union_list_state
                getter(name).update(draw(st.lists(JSON_UNITS, max_size=4)))
        stores.append(store)
    return stores, names


@settings(max_examples=60, deadline=None)
@given(stores_of(), st.integers(1, 6))
def test_snapshot_and_restore_at_any_parallelism_is_redistribute_on_the_units(stores_and_names, p_new):
    stores, modes = stores_and_names
    snapshots = json.loads(json.dumps([snapshot_subtask(s) for s in stores], allow_nan=False))
    restored = restore_subtasks(snapshots, p_new)
    old_units = [{name: entry["units"] for name, entry in snapshot.items()} for snapshot in snapshots]
    expected = redistribute(old_units, p_new, modes)
    assert [snapshot_subtask(s) for s in restored] == [
        {name: {"mode": modes[name], "units": units} for name, units in subtask.items()} for subtask in expected
    ]
    assert [(s.subtask_index, s.parallelism, s.is_restored()) for s in restored] == [
        (i, p_new, True) for i in range(p_new)
    ]
    for name, mode in modes.items():
        if mode == "split":  # every unit once, whatever the parallelism
            before = [json.dumps(u) for s in stores for u in s.get_list_state(name)]
            after = [json.dumps(u) for s in restored for u in s.get_list_state(name)]
            assert sorted(after) == sorted(before)
