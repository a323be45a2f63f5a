"""Redistribution on random restores, against the reference model and the rule's invariants."""

from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.state import assignment, redistribute
from tests.state import reference_state as ref

EXAMPLES = settings(max_examples=300, deadline=None)


def concatenation(old, name):
    return [unit for subtask in old for unit in subtask.get(name, [])]


@EXAMPLES
@given(ref.restores())
def test_agrees_with_the_reference_model_and_the_what_if_plan(restore):
    old, p_new, modes = restore
    result = redistribute(old, p_new, modes)
    assert result == ref.redistribute(old, p_new, modes)
    assert len(result) == p_new and all(list(subtask) == sorted(modes) for subtask in result)
    plan = assignment(old, p_new, modes)
    assert list(plan) == sorted(modes)
    for name, runs in plan.items():
        assert [[old[s][name][k] for s, k in run] for run in runs] == [subtask[name] for subtask in result]


@EXAMPLES
@given(ref.restores())
def test_invariants_of_split_union_and_broadcast(restore):
    old, p_new, modes = restore
    result = redistribute(old, p_new, modes)
    rescaled = p_new != len(old)
    split_load = [0] * p_new
    for name, mode in modes.items():
        units = concatenation(old, name)
        got = [subtask[name] for subtask in result]
        if mode == "split":
            assert sorted(u for run in got for u in run) == sorted(units)  # no unit lost or duplicated
            if not rescaled:
                assert got == [subtask.get(name, []) for subtask in old]  # unchanged parallelism keeps
                continue
            assert max(map(len, got)) - min(map(len, got)) <= 1
            split_load = [load + len(run) for load, run in zip(split_load, got)]
            # contiguous runs in order: read from the subtask holding the first unit on (wrapping),
            # the runs rebuild the concatenation
            if units:
                first = next(j for j, run in enumerate(got) if run and run[0] == units[0])
                assert [u for run in got[first:] + got[:first] for u in run] == units
        elif mode == "union":
            assert got == [units] * p_new
        else:
            holders = [s for s, subtask in enumerate(old) if name in subtask]
            for i, copy in enumerate(got):
                if name in old[i % len(old)]:  # the rule as stated: old subtask i % p's copy
                    assert copy == old[i % len(old)][name]
                else:  # it has none: Flink's answer, a holder's copy, so nobody is left without
                    assert copy == (old[holders[i % len(holders)]][name] if holders else [])
            if not rescaled:  # unchanged parallelism: every holder keeps its own copy
                assert all(got[s] == old[s][name] for s in holders)
    if rescaled:  # over all split names together, too (Flink's maxLoadDiff)
        assert max(split_load) - min(split_load) <= 1


@settings(max_examples=150, deadline=None)
@given(ref.restores(max_old=5, max_new=5), st.lists(st.integers(1, 6), min_size=1, max_size=3))
def test_chained_rescales_keep_every_split_unit_exactly_once(restore, parallelisms):
    old, _, modes = restore
    split_modes = {name: "split" for name in modes}
    state = old
    for p in parallelisms:
        state = redistribute(state, p, split_modes)
    for name in modes:
        assert sorted(u for subtask in state for u in subtask[name]) == sorted(concatenation(old, name))
