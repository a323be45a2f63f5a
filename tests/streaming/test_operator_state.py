"""A user's operator state (FLIP-8) in a running job on Spark: savepoint at 2, restore at 1 and at 3.

``Tally`` keeps list, union and broadcast state without changing restored units, so the
state each restored job holds right after its first micro-batch must be exactly what the pure
reference of the rule (tests/state/reference_state.py) makes of the savepoint's state; then
fresh files must leave a counter that is exact and every value held once. ``BufferingSink``
(Flink's classic example) is the core case, also under Spark Connect.
"""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

import fw_magics as fw
from fw_magics.errors import FullWindowError, ResumeError
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from fw_magics.state.tables import SCHEMA
from fw_magics.widgets import show_graph
from tests.state import reference_state
from tests.streaming import functions, operator_functions
from tests.streaming.files import TRIGGER
from tests.streaming.operator_functions import MODES, RULES, BufferingSink, KeyedTally, Limits, Tally

pytestmark = [pytest.mark.spark]

OPERATOR = "process(Tally)"


def _operator(area, function):
    return fw.from_files(area.source("s"), "parquet", functions.SCHEMA).process(function)


def _state(path: str, operator: str) -> list[dict]:
    """Each subtask's units per state name, from a savepoint."""
    return [{name: entry["units"] for name, entry in s.items()} for s in load_savepoint(path).operator_state[operator]]


def _values(rows) -> list[tuple]:
    return [(k, v, k) for k, v in rows]  # (k, v, ts seconds): k is the value's file number


@pytest.mark.extended  # make test-extended (CI): make test keeps the buffering sink's restore
def test_tally_restored_at_one_and_at_three_from_one_savepoint(area):
    area.write(_values([(1, 1), (1, 2)]), "s")  # file 0: subtask 0
    area.write(_values([(2, 3)]), "s")  # file 1: subtask 1
    op = _operator(area, Tally())
    job = op.start(job_dir=area.jobs, job_name="t", trigger=TRIGGER, parallelism=2)
    try:
        job.process_all_available()
        area.write(_values([(3, 4), (3, 5)]), "s")  # file 2: subtask 0
        job.process_all_available()
        path = job.savepoint()
        fresh_rows = job.changelog()
    finally:
        job.stop()
    before = _state(path, OPERATOR)
    assert [sorted(s["seen"]) for s in before] == [[1, 2, 4, 5], [3]]
    assert [s["count"] for s in before] == [[4], [1]]
    assert [s["origins"] for s in before] == [[0], [1]]
    assert list(fresh_rows["subtask"]) == [0, 0, 1, 0, 0] and list(fresh_rows["v"]) == [1, 2, 3, 4, 5]

    restored = {}
    try:
        for p in (1, 3):  # both from the same savepoint, running side by side
            restored[p] = op.start(job_dir=area.jobs, job_name=f"t{p}", trigger=TRIGGER, from_savepoint=path,
                                   parallelism=p)
        for p, r in restored.items():
            r.process_all_available()
            assert _state(r.savepoint(), OPERATOR) == reference_state.redistribute(before, p, MODES)
        for k in (4, 5, 6):  # files 3, 4, 5: new files go round robin over each job's subtasks
            area.write(_values([(k, 10 * k)]), "s")
        for p, r in restored.items():
            r.process_all_available()
            rows = r.changelog()
            assert rows["restored"].all()
            assert sorted(rows["v"]) == [40, 50, 60]
            assert sorted(rows["subtask"]) == sorted(i % p for i in range(3, 6))
            after = _state(r.savepoint(), OPERATOR)
            assert sum(sum(s["count"]) for s in after) == 8
            assert sorted(v for s in after for v in s["seen"]) == [1, 2, 3, 4, 5, 40, 50, 60]
            assert all(sorted(s["origins"]) == [0, 1] and s["rules"] == [["unit", "v"]] for s in after)
    finally:
        for r in restored.values():
            r.stop()


def _buffering_savepoint(area, job_name: str) -> tuple:
    """A BufferingSink job at 2 over two files, its savepoint: (the stream, the savepoint, what it flushed)."""
    area.write(_values([(1, 1), (1, 2), (1, 3), (1, 4)]), "s")  # subtask 0: flushes 1-3, buffers 4
    area.write(_values([(2, 5), (2, 6)]), "s")  # subtask 1: buffers 5, 6
    op = _operator(area, BufferingSink())
    job = op.start(job_dir=area.jobs, job_name=job_name, trigger=TRIGGER, parallelism=2)
    try:
        job.process_all_available()
        return op, job.savepoint(), [list(batch) for batch in job.changelog()["flushed"]]
    finally:
        job.stop()


def _union_buffering_sink():
    class BufferingSink(operator_functions.BufferingSink):  # the same operator, its buffer now union list state
        def initialize_state(self, ctx):
            self.state = ctx.get_union_list_state("buffered")
            self.buffer = self.state.get() if ctx.is_restored() else []

    return BufferingSink()


def _stateless_buffering_sink():
    class BufferingSink(fw.ProcessFunction):  # the same operator, keeping no operator state any more
        schema = "flushed array<long>"

        def process_element(self, record, ctx):
            yield ([record.v],)

    return BufferingSink()


@pytest.mark.core
def test_buffering_sink_at_two_restored_at_three_emits_every_value_once(area):
    """Flink's BufferingSink: values buffered at the savepoint are emitted by the restored job, once."""
    op, path, flushed = _buffering_savepoint(area, "b")
    assert flushed == [[1, 2, 3]]
    before = _state(path, "process(BufferingSink)")
    assert before == [{"buffered": [4]}, {"buffered": [5, 6]}]
    # what a restore would do with each operator state (issue 50), without starting anything
    table = fw.check_savepoint(path, op)
    assert [tuple(r) for r in table.itertuples(index=False)] == [
        ("buffered", "operator list state", "operator list state", "carried", "")]
    union = _operator(area, _union_buffering_sink())
    assert list(fw.check_savepoint(path, union)["verdict"]) == ["refused"]
    with pytest.raises(ResumeError, match=r"holds state 'buffered' recorded as operator list state, which "
                                          r"process\(BufferingSink\) asks for as operator union list state \(another "
                                          r"mode") as refused:
        union.start(job_dir=area.jobs, job_name="bu", from_savepoint=path)
    assert "\n" not in str(refused.value)
    stateless = _operator(area, _stateless_buffering_sink())
    assert list(fw.check_savepoint(path, stateless, allow_non_restored_state=True)["verdict"]) == ["dropped"]
    restored = op.start(job_dir=area.jobs, job_name="b3", trigger=TRIGGER, from_savepoint=path, parallelism=3)
    try:
        restored.process_all_available()
        moved = _state(restored.savepoint(), "process(BufferingSink)")
        assert moved == reference_state.redistribute(before, 3, {"buffered": "split"})
        view = show_graph(restored)  # the widget says where the restored job's units came from
        assert "Restored at parallelism 3" in view.rescale_text.value
        rows = view.last_rescale_operators["process(BufferingSink)"]
        assert [[u for *_, u, new in rows if new == j] for j in range(3)] == [m["buffered"] for m in moved]
        for k in (3, 4, 5):  # one file per subtask: two values each
            area.write(_values([(k, 10 * k), (k, 10 * k + 1)]), "s")
        restored.process_all_available()
        flushed += [list(batch) for batch in restored.changelog()["flushed"]]
        left = _state(restored.savepoint(), "process(BufferingSink)")
    finally:
        restored.stop()
    buffered = [v for s in left for v in s["buffered"]]
    everything = [1, 2, 3, 4, 5, 6, 30, 31, 40, 41, 50, 51]
    assert sorted([v for batch in flushed for v in batch] + buffered) == everything
    with pytest.raises(FullWindowError, match="no key, so no latest row per key"):
        restored.latest()


def test_process_refuses_what_it_cannot_run_in_one_line(area):
    files = fw.from_files(area.source("s"), "parquet", functions.SCHEMA)
    with pytest.raises(FullWindowError, match=r"an instance of the function: Tally\(\), not the class"):
        files.process(Tally)
    with pytest.raises(FullWindowError, match=r"over a stream read by fw.from_files\(...\) or fw.from_table\(...\); "
                                              r"'records' is a records stream"):
        fw.from_records([(1, 2)], "k long, v long").process(Tally())

    class NoSchema(Tally):
        schema = None

    with pytest.raises(FullWindowError, match="NoSchema emits rows of an unknown schema"):
        files.process(NoSchema())
    op = files.process(BufferingSink(), schema="flushed array<long>")
    graph = op.job_graph()
    assert [(o.name, o.parallelism) for o in graph.operators] == [
        ("files(s)", 2), ("process(BufferingSink)", 2), ("changelog", 2)]
    assert {e.pattern for e in graph.edges} == {"pointwise"}


# -- written from tables (issue 50, item 2): fw.write_savepoint(..., operator_state={name: df}) -------------------


def _buffering(buffers: list[list], files: list[list], p: int) -> list:
    """The reference BufferingSink at ``p``: new subtask j starts from ``buffers[j]`` and reads, in order, the values
    of each fresh file of manifest index i (after the two read ones) with i % p == j; (subtask, flushed) sorted."""
    emitted, left = [], [list(b) for b in buffers]
    for i, values in enumerate(files, start=2):
        buffer = left[i % p]
        for v in values:
            buffer.append(v)
            if len(buffer) >= BufferingSink.THRESHOLD:
                emitted.append((i % p, tuple(buffer)))
                buffer.clear()
    return sorted(emitted)


@pytest.mark.core
def test_buffering_sink_written_from_its_table_restores_at_one_and_three_as_the_model(area):
    """read -> write gives the savepoint's operator state back; one subtask's list fixed in the table, written over
    the savepoint (restored at 1) and bootstrapped without it (positions='now', restored at 3): each restored
    job's flushes are the model's over the fixed buffers, redistributed by the rule."""
    name = "process(BufferingSink)"
    op, path, _ = _buffering_savepoint(area, "w")
    table = fw.read_savepoint(path).operator_state(name)
    same = fw.write_savepoint(op, area.jobs + "/same", operator_state={name: table}, from_savepoint=path)
    assert load_savepoint(same).operator_state == load_savepoint(path).operator_state
    fixed = table.withColumn("element", F.when(F.col("element") == "6", F.lit("60")).otherwise(F.col("element")))
    buffers = [[4], [5, 60]]
    written = {1: fw.write_savepoint(op, area.jobs + "/fixed", operator_state={name: fixed}, from_savepoint=path),
               3: fw.write_savepoint(op, area.jobs + "/boot", operator_state={name: fixed}, positions="now",
                                     parallelism=2)}
    assert [_state(p, name) for p in written.values()] == [[{"buffered": b} for b in buffers]] * 2
    files = [[100, 101], [102, 103]]  # manifest files 2 and 3, read in manifest order by each subtask
    for k, values in enumerate(files, start=3):
        area.write(_values([(k, v) for v in values]), "s")
    for p, w in written.items():  # one after the other: one query at a time
        restored = op.start(job_dir=area.jobs, job_name=f"w{p}", trigger=TRIGGER, from_savepoint=w, parallelism=p)
        try:
            restored.process_all_available()
            rows = restored.changelog()
        finally:
            restored.stop()
        moved = [s["buffered"] for s in reference_state.redistribute([{"buffered": b} for b in buffers], p,
                                                                     {"buffered": "split"})]
        assert sorted(zip(rows["subtask"], [tuple(f) for f in rows["flushed"]])) == _buffering(moved, files, p)


def test_operator_state_written_from_a_table_is_refused_in_one_line_before_anything_is_written(area, spark):
    """Each bad table (and a keyed stream's missing keyed_state, a non-keyed one's keyed_state): one line, no folder.
    Each kind of bad row once (tests/state/test_tables.py has them all, without Spark)."""
    area.write(_values([(1, 1)]), "s")
    op, name = _operator(area, BufferingSink()), "process(BufferingSink)"

    def table(*rows, schema=SCHEMA):
        return spark.createDataFrame(list(rows), schema)

    good = table((0, "buffered", "split", "4"))
    cases = [
        ({"files(s)": good}, r"\['files\(s\)'\]: a source's operator state is its splits, its position .*; accepted: "
                             r"'process\(BufferingSink\)'$"),
        ({"process(Tally)": good}, r"the stream's graph has no operator 'process\(Tally\)'"),
        ({name: good.withColumnRenamed("element", "unit")}, r"column 'unit' is not one of the table's; column 'element' "
                                                           r"is missing; accepted: subtask int, state string, mode"),
        ({name: table((0, "buffered", "split", 4), schema="subtask int, state string, mode string, element int")},
         r"column 'element' is int; accepted: "),
        ({name: table((0, "buffered", "split", "4"), (2, "buffered", "split", "5"))},
         r"^write_savepoint's operator_state\['process\(BufferingSink\)'\] row 1 \(subtask 2, state 'buffered'\): "
         r"subtask 2; accepted: 0 to 1 \(the parallelism written is 2\)$"),
    ]
    for operator_state, message in cases:
        with pytest.raises(FullWindowError, match=message) as refused:
            fw.write_savepoint(op, area.jobs + "/bad", operator_state=operator_state, parallelism=2)
        assert "\n" not in str(refused.value)
    with pytest.raises(FullWindowError, match=r"^write_savepoint's keyed_state: BufferingSink is not keyed"):
        fw.write_savepoint(op, area.jobs + "/bad", keyed_state=good, operator_state={name: good})
    keyed = fw.from_files(area.source("s"), "parquet", functions.SCHEMA).key_by("k")
    with pytest.raises(FullWindowError, match=r"^write_savepoint of KeyedTally without keyed_state; accepted: "):
        fw.write_savepoint(keyed.process(KeyedTally()), area.jobs + "/bad", operator_state={"process(KeyedTally)": good})
    rules = fw.from_files(area.source("r"), "parquet", RULES)  # a broadcast function's states are broadcast state
    limits = keyed.connect(rules.broadcast()).process(Limits())
    with pytest.raises(FullWindowError, match=r"row 0 \(subtask 0, state 'limits'\): mode 'split'; accepted: "
                                              r"'broadcast'"):
        fw.write_savepoint(limits, area.jobs + "/bad", keyed_state=spark.createDataFrame([], "k long, count long"),
                           operator_state={"co_process(Limits)": table((0, "limits", "split", '["max", 1]'))})
    assert not os.path.exists(area.jobs + "/bad")
