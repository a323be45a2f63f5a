"""Operator state as a table (fw_magics.state.tables): rows and snapshots back and forth, and each row refused in
one line; the modes a function declares (api.checkpointed.declared_modes). No Spark: fw.write_savepoint's
operator_state is this conversion over a DataFrame's rows (tests/streaming/test_operator_state.py runs it)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.api.checkpointed import declared_modes
from fw_magics.state import StateError, redistribute_snapshots
from fw_magics.state.tables import rows_of, snapshots_of
from tests.streaming.operator_functions import MODES, BufferingSink, KeyedTally, Tally

EXAMPLES = settings(max_examples=100, deadline=None)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=5),
                    st.floats(allow_nan=False, allow_infinity=False))
units = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                            max_size=3), max_leaves=8)


@st.composite
def tables(draw):
    """(parallelism, modes, rows in any order): random states of each mode, a broadcast state's keys distinct."""
    p = draw(st.integers(1, 5))
    modes = draw(st.dictionaries(st.sampled_from(["a", "b", "rules", "x y"]),
                                 st.sampled_from(["split", "union", "broadcast"]), min_size=1))
    rows = []
    for subtask in range(p):
        for state, mode in modes.items():
            if mode == "broadcast":
                copy = draw(st.dictionaries(st.text(max_size=3), units, max_size=3))
                rows += [(subtask, state, mode, json.dumps([k, v])) for k, v in copy.items()]
            else:
                rows += [(subtask, state, mode, json.dumps(u)) for u in draw(st.lists(units, max_size=4))]
    return p, modes, draw(st.permutations(rows))


def model(rows, p):
    """The reference: subtask -> state -> its mode and its units, in the rows' order."""
    out = [{} for _ in range(p)]
    for subtask, state, mode, element in rows:
        out[subtask].setdefault(state, {"mode": mode, "units": []})["units"].append(json.loads(element))
    return out


@EXAMPLES
@given(tables())
def test_rows_become_the_models_snapshots_and_read_back_as_the_same_rows(table):
    p, modes, rows = table
    snapshots = snapshots_of(rows, p, modes)
    assert snapshots == model(rows, p)
    assert sorted(rows_of(snapshots)) == sorted(rows)  # the reader's rows of what was written
    assert snapshots_of(rows_of(snapshots), p, modes) == snapshots


def without_empty(snapshots):
    return [{name: e for name, e in s.items() if e["units"]} for s in snapshots]


@EXAMPLES
@given(tables(), st.integers(1, 7))
def test_a_written_table_restores_at_any_parallelism_as_the_snapshots_it_was_read_from(table, p_new):
    """Snapshots whose states some subtasks hold empty (as a job's are) read as rows and written back: a restore
    at any parallelism redistributes them as it does the originals (split and union; broadcast copies equal)."""
    p, modes, rows = table
    copies = {s: [r for r in rows if r[1] == s and r[0] == 0] for s, m in modes.items() if m == "broadcast"}
    rows = [r for r in rows if modes[r[1]] != "broadcast"] + [(i, *r[1:]) for c in copies.values() for r in c
                                                              for i in range(p)]
    original = model(rows, p)
    for snapshot in original:  # the job registered every state in every subtask, empty or not
        for name, mode in modes.items():
            snapshot.setdefault(name, {"mode": mode, "units": []})
    written = snapshots_of(rows_of(original), p, modes)
    assert without_empty(redistribute_snapshots(written, p_new)) == \
        without_empty(redistribute_snapshots(original, p_new))


BUFFERED = {"buffered": "split"}


@pytest.mark.parametrize("row, other, message", [
    ((2, "buffered", "split", "1"), None, r"^rows row 0 \(subtask 2, state 'buffered'\): subtask 2; accepted: 0 to 1 "
                                          r"\(the parallelism written is 2\)$"),
    ((-1, "buffered", "split", "1"), None, r"subtask -1; accepted: 0 to 1"),
    ((None, "buffered", "split", "1"), None, r"subtask None; accepted: 0 to 1"),
    ((0, "bufferd", "split", "1"), None, r"the operator keeps no state 'bufferd'; accepted: 'buffered' \(split\)$"),
    ((0, "limits", "split", "1"), "broadcast", r"mode 'split'; accepted: 'broadcast', the state's declared mode$"),
    ((0, "buffered", "union", "1"), None, r"mode 'union'; accepted: 'split', the state's declared mode$"),
    ((0, "buffered", "split", "{not json"), None, r"element '\{not json' is not JSON text \(Expecting property name"),
    ((0, "buffered", "split", "NaN"), None, r"element 'NaN' is not JSON text \(NaN is not JSON\)"),
    ((0, "buffered", "split", '{"a": 1, "a": 2}'), None, r"is not JSON text \(key 'a' twice in an object\)"),
    ((0, "buffered", "split", None), None, r"element None; accepted: a unit as JSON text"),
    ((0, "limits", "broadcast", "[1, 2, 3]"), "broadcast", r"unit 0 of broadcast state .*\['limits'\] is \[1, 2, 3\]; "
                                                          r"accepted: a \[key, value\] pair$"),
])
def test_each_bad_row_is_one_line_naming_it(row, other, message):
    with pytest.raises(StateError, match=message) as refused:
        snapshots_of([row], 2, BUFFERED, other)
    assert "\n" not in str(refused.value)


def test_a_broadcast_key_twice_in_a_subtask_is_one_line():
    rows = [(1, "limits", "broadcast", '["max", 1]'), (1, "limits", "broadcast", '["max", 2]')]
    with pytest.raises(StateError, match=r"^key 'max' appears twice in broadcast state rows's subtask 1\['limits'\]"):
        snapshots_of(rows, 2, {}, "broadcast")


def test_the_modes_a_function_declares_are_learned_on_a_copy():
    function = Tally()
    assert declared_modes(function) == MODES and declared_modes(BufferingSink()) == BUFFERED
    assert declared_modes(KeyedTally()) == {"seen": "split", "origins": "union", "rules": "broadcast"}
    assert vars(function) == {}  # initialize_state ran on copies

    class Restored(fw.ProcessFunction, fw.CheckpointedFunction):  # a state asked for on a restore only
        schema = "x long"

        def initialize_state(self, ctx):
            if ctx.is_restored():
                ctx.get_union_list_state("late")

        def process_element(self, record, ctx):
            return None

        def snapshot_state(self, ctx):
            raise AssertionError("not called")

    class Failing(Restored):
        def initialize_state(self, ctx):
            raise RuntimeError("needs its job")

    assert declared_modes(Restored()) == {"late": "union"} and declared_modes(Failing()) == {}
