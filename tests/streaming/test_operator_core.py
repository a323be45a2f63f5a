"""A user's operator state without Spark: the per-subtask core on the schedule the Spark job runs it.

Each micro-batch runs every subtask that has records through ``run_subtask`` (its snapshot
going through JSON text between runs, as it does in Spark's state store); a restore
redistributes the snapshots with ``redistribute_snapshots`` and runs every new subtask once
with no records (``handleInitialState``). Checked against the pure reference of the rule
(tests/state/reference_state.py) and against counting: no record lost or counted twice.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.api.process_function import check_process_function
from fw_magics.datastream.stateful import struct_state_type
from fw_magics.errors import FullWindowError
from fw_magics.operators import OPERATOR
from fw_magics.operators.spec import OperatorSpec
from fw_magics.runtime.streaming.operator.core import run_subtask
from fw_magics.state import StateError, redistribute_snapshots
from fw_magics.values.records import make_record
from tests.state import reference_state
from tests.streaming.operator_functions import MODES, BufferingSink, Tally

RECORD = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.LongType())])


def spec(function) -> OperatorSpec:
    result = T.StructType([T.StructField("x", T.LongType())])  # the core does not look at it
    return OPERATOR.spec(function=function, label=type(function).__name__, record=struct_state_type(RECORD, "record"),
                         result=struct_state_type(result, "result"))


class Job:
    """The schedule of the Spark job, in Python: a state text per subtask, batches, restores."""

    def __init__(self, function, parallelism: int):
        self.spec, self.p, self.batch = spec(function), parallelism, 0
        self.texts = [self._run(i, None, [])[0] for i in range(parallelism)]  # the fresh job's initial state
        self.outputs: list = []

    def _run(self, subtask, text, values):
        records = [make_record(("k", "v"), (0, v)) for v in values]
        return run_subtask(self.spec, subtask, self.p, text, records, self.batch)

    def run(self, per_subtask: dict) -> None:
        for subtask, values in sorted(per_subtask.items()):
            self.texts[subtask], outputs = self._run(subtask, self.texts[subtask], values)
            self.outputs.extend(outputs)
        self.batch += 1

    def snapshots(self) -> list[dict]:
        return [json.loads(t) for t in self.texts]

    def restore(self, parallelism: int) -> list[dict]:
        """A new job from a savepoint of this one; returns the snapshots it handed its subtasks."""
        given_ = redistribute_snapshots(self.snapshots(), parallelism)
        self.p, self.batch = parallelism, 0
        self.texts = [self._run(i, json.dumps(given_[i]), [])[0] for i in range(parallelism)]
        return given_


def units(snapshots: list[dict]) -> list[dict]:
    return [{name: entry["units"] for name, entry in s.items()} for s in snapshots]


def test_tally_at_two_restored_at_one_and_three_puts_every_unit_where_the_rule_says():
    job = Job(Tally(), 2)
    job.run({0: [1, 2], 1: [3]})
    assert [(s, restored) for s, restored, *_ in job.outputs] == [(0, True), (0, True), (1, True)]
    before = job.snapshots()
    assert units(before) == [{"count": [2], "origins": [0], "rules": [["unit", "v"]], "seen": [1, 2]},
                             {"count": [1], "origins": [1], "rules": [["unit", "v"]], "seen": [3]}]
    for p in (1, 3):
        restored = Job(Tally(), 2)
        restored.texts = [json.dumps(s) for s in before]
        restored.restore(p)
        assert units(restored.snapshots()) == reference_state.redistribute(units(before), p, MODES)
        restored.run({i: [10 + i] for i in range(p)})
        after = units(restored.snapshots())
        assert sum(sum(s["count"]) for s in after) == 3 + p
        assert sorted(v for s in after for v in s["seen"]) == sorted([1, 2, 3] + [10 + i for i in range(p)])


def test_a_fresh_subtask_initializes_unrestored_exactly_once():
    seen = []

    class Probe(Tally):
        def initialize_state(self, ctx):
            seen.append((ctx.subtask_index, ctx.parallelism, ctx.is_restored()))
            super().initialize_state(ctx)

    job = Job(Probe(), 2)
    job.run({1: [5]})
    job.run({0: [6], 1: [7]})
    assert seen == [(0, 2, False), (1, 2, False), (1, 2, True), (0, 2, True), (1, 2, True)]
    seen.clear()
    job.restore(3)
    assert seen == [(0, 3, True), (1, 3, True), (2, 3, True)]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_schedule_of_batches_and_rescales_loses_and_doubles_nothing(data):
    """Reference: counting. Whatever the batches and rescales, the list units are every value once, the
    counters add up to the number of records, after a restore every subtask holds the union of what the
    old ones held (it snowballs, as Flink's union does when nobody trims it), and every restore matches
    the pure rule."""
    p = data.draw(st.integers(1, 5))
    job, values, next_value = Job(Tally(), p), [], 0
    origins = [[i] for i in range(p)]  # each fresh subtask adds its index once
    for _ in range(data.draw(st.integers(1, 6))):
        if data.draw(st.booleans()):
            new = data.draw(st.integers(1, 6))
            before = units(job.snapshots())
            job.restore(new)
            assert units(job.snapshots()) == reference_state.redistribute(before, new, MODES)
            origins = [[i for held in origins for i in held]] * new
        else:
            batch = {}
            for subtask in data.draw(st.lists(st.integers(0, job.p - 1), max_size=4, unique=True)):
                n = data.draw(st.integers(1, 3))
                batch[subtask] = list(range(next_value, next_value + n))
                values += batch[subtask]
                next_value += n
            job.run(batch)
    final = units(job.snapshots())
    assert sorted(v for s in final for v in s["seen"]) == values
    assert sum(sum(s["count"]) for s in final) == len(values)
    assert [s["origins"] for s in final] == origins
    assert all(s["rules"] == [["unit", "v"]] for s in final)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_buffering_sink_emits_each_value_once_or_keeps_it_buffered(data):
    p = data.draw(st.integers(1, 4))
    job, values, next_value = Job(BufferingSink(), p), [], 0
    for _ in range(data.draw(st.integers(1, 6))):
        if data.draw(st.integers(0, 3)) == 0:
            job.restore(data.draw(st.integers(1, 4)))
        else:
            subtask = data.draw(st.integers(0, job.p - 1))
            n = data.draw(st.integers(1, 5))
            job.run({subtask: list(range(next_value, next_value + n))})
            values += list(range(next_value, next_value + n))
            next_value += n
    flushed = [v for (batch,) in job.outputs for v in batch]
    assert all(len(batch) >= BufferingSink.THRESHOLD for (batch,) in job.outputs)  # a merged buffer may hold more
    buffered = [v for s in units(job.snapshots()) for v in s.get("buffered", [])]
    assert sorted(flushed + buffered) == values


def test_misused_functions_and_state_are_refused_in_one_line():
    class Half(Tally):
        snapshot_state = None

    class Stateless(Tally):
        initialize_state = snapshot_state = None

    with pytest.raises(FullWindowError, match="defines initialize_state but not snapshot_state"):
        check_process_function(Half())
    assert check_process_function(Stateless()) == "Stateless"
    with pytest.raises(FullWindowError, match="process takes an fw.ProcessFunction"):
        check_process_function(lambda r: r)

    class Pickles(Tally):
        def process_element(self, record, ctx):
            self.seen.add({record.v})
            return ()

    job = Job(Pickles(), 1)
    with pytest.raises(StateError, match="unit 0 of list state 'seen' is a value of type set"):
        job.run({0: [1]})
