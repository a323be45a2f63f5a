"""Hand-picked redistributions: the seed's Kafka example and the cases of Flink's own tests.

Ported from Apache Flink: ``CheckpointCoordinatorTest`` (testReplicateModeStateHandle,
testPartitionableStateRepartitioning) and ``StateAssignmentOperationTest``
(testRepartitionSplitDistributeStates, testRepartitionUnionState,
testRepartitionBroadcastState[WithNull|WithEmpty]SubtaskState,
testReDistributeCombinedPartitionableStates). Flink checks counts of offsets per handle;
here units are values, so the exact lists are checked.
"""

import copy
import random

import pytest

from fw_magics.errors import FullWindowError
from fw_magics.state import StateError, assignment, redistribute
from tests.state import reference_state as ref

KAFKA = [{"partitions": ["kp1", "kp2"]}, {"partitions": ["kp3", "kp4"]}]
SPLIT = {"partitions": "split"}


def names(result, name):
    return [subtask[name] for subtask in result]


# --- the seed's example: 4 Kafka partitions read by 2 source subtasks -------------------------

def test_kafka_scale_down_to_one_subtask_gives_it_all_four_partitions():
    assert redistribute(KAFKA, 1, SPLIT) == [{"partitions": ["kp1", "kp2", "kp3", "kp4"]}]


def test_kafka_scale_up_to_four_subtasks_gives_each_one_partition():
    assert names(redistribute(KAFKA, 4, SPLIT), "partitions") == [["kp1"], ["kp2"], ["kp3"], ["kp4"]]


def test_kafka_scale_to_three_and_unchanged():
    assert names(redistribute(KAFKA, 3, SPLIT), "partitions") == [["kp1", "kp2"], ["kp3"], ["kp4"]]
    assert redistribute(KAFKA, 2, SPLIT) == KAFKA


# --- scale up and down ------------------------------------------------------------------------

def test_one_to_three_flinks_replicate_mode_case():
    # CheckpointCoordinatorTest.testReplicateModeStateHandle: union state to all, split state split
    old = [{"t-1": [0, 23], "t-2": [42, 64], "t-3": [72, 83]}]
    modes = {"t-1": "union", "t-2": "union", "t-3": "split"}
    assert redistribute(old, 3, modes) == [
        {"t-1": [0, 23], "t-2": [42, 64], "t-3": [72]},
        {"t-1": [0, 23], "t-2": [42, 64], "t-3": [83]},
        {"t-1": [0, 23], "t-2": [42, 64], "t-3": []},
    ]


def test_three_to_one_concatenates_in_subtask_order():
    old = [{"s": ["a", "b"]}, {"s": ["c"]}, {"s": ["d", "e"]}]
    assert redistribute(old, 1, {"s": "split"}) == [{"s": ["a", "b", "c", "d", "e"]}]


def test_two_to_four_contiguous_runs_extra_unit_first():
    old = [{"s": [0, 1, 2]}, {"s": [3, 4]}]
    assert names(redistribute(old, 4, {"s": "split"}), "s") == [[0, 1], [2], [3], [4]]


def test_four_to_two_with_an_empty_subtask():
    old = [{"s": [0]}, {"s": [1, 2]}, {"s": []}, {"s": [3, 4, 5]}]
    assert names(redistribute(old, 2, {"s": "split"}), "s") == [[0, 1, 2], [3, 4, 5]]


def test_unchanged_parallelism_keeps_each_subtasks_own_split_units_even_if_unbalanced():
    # Flink returns the previous handles untouched when nothing is union (or partly broadcast)
    old = [{"s": [0, 1, 2], "t": []}, {"s": [], "t": [9]}]
    modes = {"s": "split", "t": "split"}
    assert redistribute(old, 2, modes) == old
    assert assignment(old, 2, modes) == {"s": [[(0, 0), (0, 1), (0, 2)], []], "t": [[], [(1, 0)]]}


def test_unchanged_parallelism_still_gives_union_state_to_every_subtask():
    # Flink repartitions UNION state even when the parallelism is unchanged
    old = [{"u": ["x"], "s": [1]}, {"u": ["y", "z"], "s": [2]}]
    modes = {"u": "union", "s": "split"}
    assert redistribute(old, 2, modes) == [{"s": [1], "u": ["x", "y", "z"]}, {"s": [2], "u": ["x", "y", "z"]}]


# --- empty lists and missing names ------------------------------------------------------------

@pytest.mark.parametrize("p_new", [1, 2, 3, 5])
def test_empty_lists_and_missing_names_give_every_new_subtask_every_name(p_new):
    old = [{"s": [], "u": []}, {}, {"b": []}]
    modes = {"s": "split", "u": "union", "b": "broadcast", "never": "split"}
    assert redistribute(old, p_new, modes) == [{"b": [], "never": [], "s": [], "u": []}] * p_new


def test_a_name_one_subtask_lacks_counts_as_empty():
    old = [{"s": ["a", "b", "c"]}, {}]
    assert names(redistribute(old, 3, {"s": "split"}), "s") == [["a"], ["b"], ["c"]]
    assert names(redistribute(old, 2, {"s": "split"}), "s") == [["a", "b", "c"], []]


# --- several named split states: the rotation -------------------------------------------------

def test_rotation_spreads_single_units_of_several_names_over_the_subtasks():
    old = [{"a": ["a0"], "b": ["b0"], "c": ["c0"]}]
    modes = dict.fromkeys("abc", "split")
    # without the rotation all three would land on subtask 0
    assert redistribute(old, 3, modes) == [
        {"a": ["a0"], "b": [], "c": []},
        {"a": [], "b": ["b0"], "c": []},
        {"a": [], "b": [], "c": ["c0"]},
    ]


def test_rotation_in_flinks_split_distribute_case():
    # StateAssignmentOperationTest.testRepartitionSplitDistributeStates: t-1 on subtask 0, t-2 on subtask 1
    old = [{"t-1": ["1@0", "1@10"]}, {"t-2": ["2@0", "2@15"]}]
    modes = {"t-1": "split", "t-2": "split"}
    # 2 -> 3: t-1 starts at subtask 0 (extras to 0 and 1), t-2 continues at subtask 2
    assert redistribute(old, 3, modes) == [
        {"t-1": ["1@0"], "t-2": ["2@15"]},
        {"t-1": ["1@10"], "t-2": []},
        {"t-1": [], "t-2": ["2@0"]},
    ]
    assert redistribute(old, 1, modes) == [{"t-1": ["1@0", "1@10"], "t-2": ["2@0", "2@15"]}]
    assert redistribute(old, 2, modes) == [{"t-1": ["1@0", "1@10"], "t-2": []}, {"t-1": [], "t-2": ["2@0", "2@15"]}]


def test_rotation_takes_names_in_sorted_order_and_balances_the_total():
    old = [{name: [f"{name}{k}" for k in range(2)] for name in "edcba"}]
    result = redistribute(old, 3, dict.fromkeys("abcde", "split"))
    assert [sorted(sub) for sub in result] == [list("abcde")] * 3
    # a: extras to 0,1 -> b starts at 2: extras 2,0 -> c starts at 1: 1,2 -> d starts at 0: 0,1 -> e: 2,0
    assert names(result, "a") == [["a0"], ["a1"], []]
    assert names(result, "b") == [["b1"], [], ["b0"]]
    assert names(result, "c") == [[], ["c0"], ["c1"]]
    assert names(result, "d") == [["d0"], ["d1"], []]
    assert names(result, "e") == [["e1"], [], ["e0"]]
    assert [sum(map(len, sub.values())) for sub in result] == [4, 3, 3]


def test_union_and_broadcast_names_do_not_move_the_rotation():
    old = [{"a": ["a0"], "b": ["b0"], "m": [1], "n": [2]}]
    result = redistribute(old, 2, {"a": "split", "m": "union", "n": "broadcast", "b": "split"})
    assert names(result, "a") == [["a0"], []] and names(result, "b") == [[], ["b0"]]


# --- union and broadcast ----------------------------------------------------------------------

@pytest.mark.parametrize("p_new", [3, 1, 2])
def test_union_flinks_case(p_new):
    # StateAssignmentOperationTest.testRepartitionUnionState
    old = [{"t-3": ["3@s0"], "t-4": [22, 44]}, {"t-3": ["3@s1"]}]
    result = redistribute(old, p_new, {"t-3": "union", "t-4": "union"})
    assert result == [{"t-3": ["3@s0", "3@s1"], "t-4": [22, 44]}] * p_new


@pytest.mark.parametrize("p_new", [3, 1, 2, 5])
def test_broadcast_flinks_case_new_subtask_i_copies_old_subtask_i_mod_p(p_new):
    # StateAssignmentOperationTest.testRepartitionBroadcastState (copies tagged by their subtask)
    old = [{"t-5": ["s0", 10, 20], "t-6": ["s0", 40, 50]}, {"t-5": ["s1", 10, 20], "t-6": ["s1", 40, 50]}]
    result = redistribute(old, p_new, {"t-5": "broadcast", "t-6": "broadcast"})
    assert [sub["t-5"][0] for sub in result] == [f"s{i % 2}" for i in range(p_new)]
    assert [sub["t-6"] for sub in result] == [old[i % 2]["t-6"] for i in range(p_new)]


@pytest.mark.parametrize("second", [None, {}], ids=["null-subtask-state", "empty-subtask-state"])
@pytest.mark.parametrize("p_new", [3, 1, 2])
def test_broadcast_reported_by_one_subtask_only_reaches_every_new_subtask(second, p_new):
    # testRepartitionBroadcastStateWithNullSubtaskState / ...WithEmptySubtaskState: only subtask 0 reports
    old = [{"t-5": [0, 10, 20], "t-6": [30, 40, 50]}]
    if second is not None:
        old.append(second)
    else:
        old.append({"other": []})
    modes = {"t-5": "broadcast", "t-6": "broadcast", "other": "split"}
    result = redistribute(old, p_new, modes)
    assert names(result, "t-5") == [[0, 10, 20]] * p_new
    assert names(result, "t-6") == [[30, 40, 50]] * p_new


def test_broadcast_held_as_an_empty_copy_is_a_real_copy():
    old = [{"b": ["x"]}, {"b": []}]
    assert names(redistribute(old, 4, {"b": "broadcast"}), "b") == [["x"], [], ["x"], []]


# --- the two edge cases, settled against the wording (docs/state.md, "The rule") ----------
# The issue: "broadcast gives subtask i the copy of old subtask i % p" and "if the parallelism is
# unchanged, every subtask keeps its own units". Both hold wherever they say something; Flink
# decides where they do not (old subtask i % p has no copy; union state).

# copies tagged by the subtask they came from, so that a test sees whose copy arrived
PARTLY = [{"b": ["from 0"]}, {"other": []}, {"b": ["from 2"]}]  # subtask 1 lacks "b"
PARTLY_MODES = {"b": "broadcast", "other": "split"}


@pytest.mark.parametrize("p_new, expected", [
    (3, ["from 0", "from 2", "from 2"]),  # unchanged: holders keep their own, 1 gets holders[1 % 2]
    (4, ["from 0", "from 2", "from 2", "from 0"]),
    (6, ["from 0", "from 2", "from 2", "from 0", "from 0", "from 2"]),
    (2, ["from 0", "from 2"]),
    (1, ["from 0"]),
])
def test_broadcast_a_name_some_old_subtasks_lack(p_new, expected):
    got = [units[0] for units in names(redistribute(PARTLY, p_new, PARTLY_MODES), "b")]
    for i, copy_from in enumerate(got):
        if i % 3 != 1:  # the case: old subtask i % p holds the name, its copy arrives
            assert copy_from == f"from {i % 3}"
        else:  # old subtask i % p lacks it: Flink's answer, the (i % holders)-th holder's copy
            assert copy_from == ["from 0", "from 2"][i % 2]
    assert got == expected


def test_broadcast_at_an_unchanged_parallelism_every_holder_keeps_its_own_copy():
    # Flink hands partly reported broadcast state round robin over the holders even at an unchanged
    # parallelism (its TODO: subtask 2 would get subtask 0's copy); the issue's "every subtask keeps
    # its own units" holds here: only the subtask without a copy is given one
    result = redistribute(PARTLY, 3, PARTLY_MODES)
    assert names(result, "b") == [["from 0"], ["from 2"], ["from 2"]]
    everyone = [{"b": [f"from {s}"]} for s in range(3)]
    assert names(redistribute(everyone, 3, {"b": "broadcast"}), "b") == [["from 0"], ["from 1"], ["from 2"]]


def test_union_at_an_unchanged_parallelism_is_flinks_every_subtask_gets_all():
    # the "unchanged keeps its own units" is about split state: split keeps, union unions
    old = [{"s": ["s0"], "u": ["u0"]}, {"s": ["s1"], "u": ["u1"]}]
    result = redistribute(old, 2, {"s": "split", "u": "union"})
    assert names(result, "s") == [["s0"], ["s1"]]
    assert names(result, "u") == [["u0", "u1"], ["u0", "u1"]]


# --- mixes of modes ---------------------------------------------------------------------------

COMBINED = [
    {"t-1": ["1@s0"], "t-2": [22, 44], "t-3": [52, 63], "t-4": ["4@s0", 74, 75], "t-5": ["5@s0", 88, 92],
     "t-6": ["6@s0", 123, 127]},
    {"t-1": ["1@s1"], "t-4": ["4@s1", 27, 28], "t-5": ["5@s1", 44, 48], "t-6": ["6@s1", 79, 83]},
]
COMBINED_MODES = {"t-1": "union", "t-2": "union", "t-3": "split", "t-4": "broadcast", "t-5": "broadcast",
                  "t-6": "broadcast"}


@pytest.mark.parametrize("p_new, t3", [(3, [[52], [63], []]), (1, [[52, 63]]), (2, [[52, 63], []])])
def test_combined_modes_flinks_case(p_new, t3):
    # StateAssignmentOperationTest.testReDistributeCombinedPartitionableStates: 2 -> 3, 2 -> 1, 2 -> 2
    result = redistribute(COMBINED, p_new, COMBINED_MODES)
    assert names(result, "t-1") == [["1@s0", "1@s1"]] * p_new
    assert names(result, "t-2") == [[22, 44]] * p_new
    assert names(result, "t-3") == t3
    for name in ("t-4", "t-5", "t-6"):
        assert names(result, name) == [COMBINED[i % 2][name] for i in range(p_new)]


def test_flinks_randomized_partitionable_state_repartitioning():
    """CheckpointCoordinatorTest.testPartitionableStateRepartitioning, ported with its expectations.

    Flink draws a mode per state per subtask; here a name has one mode, drawn once.
    """
    r = random.Random(42)
    for _ in range(2000):
        p_old, p_new = 1 + r.randrange(9), 1 + r.randrange(9)
        n_states, max_units = 1 + r.randrange(9), 1 + r.randrange(9)
        modes = {f"State-{s}": "union" if r.randrange(10) == 0 else "split" for s in range(n_states - 1)}
        if n_states % 2 == 0:
            modes[f"State-{n_states - 1}"] = "broadcast"
        old = []
        for i in range(p_old):
            subtask, off = {}, 0
            for name in sorted(modes, key=lambda n: int(n.split("-")[1])):
                if modes[name] == "broadcast":
                    subtask[name] = [(i, off + 1), (i, off + 2), (i, off + 3), (i, off + 4)]
                else:
                    size = 1 + r.randrange(max_units)
                    subtask[name] = [(i, off + o) for o in range(size)]
                    off += size
            old.append(subtask)
        result = redistribute(old, p_new, modes)
        # every unit arrives as often as Flink expects: split once, union p_new times, broadcast copies
        expected, actual = {}, {}
        for i, subtask in enumerate(old):
            for name, units in subtask.items():
                replication = {"split": 1, "union": p_new,
                               "broadcast": p_new // p_old + (1 if i < p_new % p_old else 0)}[modes[name]]
                expected.setdefault(name, []).extend(u for u in units for _ in range(replication))
        loads = []
        for subtask in result:
            for name, units in subtask.items():
                actual.setdefault(name, []).extend(units)
            loads.append(sum(map(len, subtask.values())))
        assert {k: sorted(v) for k, v in actual.items()} == {k: sorted(v) for k, v in expected.items()}
        if p_old != p_new:
            assert max(loads) - min(loads) <= 1, (p_old, p_new, modes)
        assert result == ref.redistribute(old, p_new, modes)


# --- what-if view, identity, no mutation ------------------------------------------------------

def test_assignment_names_the_old_position_of_every_unit():
    plan = assignment(COMBINED, 3, COMBINED_MODES)
    assert list(plan) == sorted(COMBINED_MODES)
    assert plan["t-3"] == [[(0, 0)], [(0, 1)], []]
    assert plan["t-1"] == [[(0, 0), (1, 0)]] * 3
    assert plan["t-4"] == [[(0, 0), (0, 1), (0, 2)], [(1, 0), (1, 1), (1, 2)], [(0, 0), (0, 1), (0, 2)]]
    result = redistribute(COMBINED, 3, COMBINED_MODES)
    for name, runs in plan.items():
        assert [[COMBINED[s][name][k] for s, k in run] for run in runs] == names(result, name)


def test_nothing_is_mutated_and_split_units_are_moved_not_copied():
    units = [{"partition": k} for k in range(5)]
    old = [{"s": units[:2], "u": [units[2]]}, {"s": units[2:]}]
    before = copy.deepcopy(old)
    result = redistribute(old, 3, {"s": "split", "u": "union"})
    assert old == before
    moved = [unit for sub in result for unit in sub["s"]]
    assert [id(unit) for unit in moved] == [id(unit) for unit in units]
    assert all(sub["s"] is not old[0]["s"] and sub["s"] is not old[1]["s"] for sub in result)
    assert redistribute(old, 2, {"s": "split", "u": "union"})[0]["s"] is not old[0]["s"]


def test_tuples_and_mappings_are_accepted_as_containers():
    from types import MappingProxyType

    old = ({"s": ("a", "b")}, MappingProxyType({"s": ["c"]}))
    assert redistribute(old, 1, MappingProxyType({"s": "split"})) == [{"s": ["a", "b", "c"]}]


# --- bad arguments: one line, naming the culprit and what is accepted -------------------------

@pytest.mark.parametrize("old, p_new, modes, message", [
    (KAFKA, 0, SPLIT, "new_parallelism 0; accepted: an integer >= 1"),
    (KAFKA, -2, SPLIT, "new_parallelism -2; accepted: an integer >= 1"),
    (KAFKA, 2.0, SPLIT, "new_parallelism 2.0; accepted: an integer >= 1"),
    (KAFKA, True, SPLIT, "new_parallelism True; accepted: an integer >= 1"),
    (KAFKA, "2", SPLIT, "new_parallelism '2'; accepted: an integer >= 1"),
    (KAFKA, 2, {"partitions": "spilt"}, "mode 'spilt' of state 'partitions'; accepted: 'split', 'union' or 'broad"),
    (KAFKA, 2, {"partitions": None}, "mode None of state 'partitions'; accepted: 'split', 'union' or"),
    (KAFKA, 2, {}, "state 'partitions' (in old[0]) has no mode; accepted: modes mapping it to 'split', 'union'"),
    (KAFKA, 2, [("partitions", "split")], "modes is a list; accepted: a dict mapping every state name to"),
    (KAFKA, 2, {"partitions": "split", 3: "union"}, "state name 3 in modes; accepted: a non-empty string"),
    ([], 2, SPLIT, "old is empty; accepted: a list with one dict per old subtask, at least one"),
    ({"partitions": ["kp1"]}, 2, SPLIT, "old is a dict; accepted: a list with one dict per old subtask"),
    ("kp1", 2, SPLIT, "old is a str; accepted: a list with one dict per old subtask"),
    ([{"partitions": ["kp1"]}, ["kp2"]], 2, SPLIT, "old[1] is a list; accepted: a dict mapping state names to lists"),
    ([{"partitions": "kp1"}], 2, SPLIT, "old[0]['partitions'] is a str; accepted: a list of units"),
    ([{"partitions": None}], 2, SPLIT, "old[0]['partitions'] is a NoneType; accepted: a list of units"),
    ([{"": []}], 2, {"": "split"}, "state name '' in modes; accepted: a non-empty string"),
    ([{("a",): []}], 2, SPLIT, "state name ('a',) in old[0]; accepted: a non-empty string"),
])
def test_bad_arguments_are_refused_in_one_line(old, p_new, modes, message):
    for function in (redistribute, assignment):
        with pytest.raises(StateError) as caught:
            function(old, p_new, modes)
        text = str(caught.value)
        assert message in text and "\n" not in text
        assert isinstance(caught.value, FullWindowError) and isinstance(caught.value, ValueError)
