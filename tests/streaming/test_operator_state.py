"""A user's operator state (FLIP-8) in a running job on Spark: savepoint at 2, restore at 1 and at 3.

``Tally`` keeps list, union and broadcast state without changing restored units, so the
state each restored job holds right after its first micro-batch must be exactly what the pure
reference of the rule (tests/state/reference_state.py) makes of the savepoint's state; then
fresh files must leave a counter that is exact and every value held once. ``BufferingSink``
(Flink's classic example) is the core case, also under Spark Connect.
"""

from __future__ import annotations

import pytest

import fw_magics as fw
from fw_magics.errors import FullWindowError
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from fw_magics.widgets import show_graph
from tests.state import reference_state
from tests.streaming import functions
from tests.streaming.files import TRIGGER
from tests.streaming.operator_functions import MODES, BufferingSink, Tally

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


@pytest.mark.core
def test_buffering_sink_at_two_restored_at_three_emits_every_value_once(area):
    """Flink's BufferingSink: values buffered at the savepoint are emitted by the restored job, once."""
    area.write(_values([(1, 1), (1, 2), (1, 3), (1, 4)]), "s")  # subtask 0: flushes 1-3, buffers 4
    area.write(_values([(2, 5), (2, 6)]), "s")  # subtask 1: buffers 5, 6
    op = _operator(area, BufferingSink())
    job = op.start(job_dir=area.jobs, job_name="b", trigger=TRIGGER, parallelism=2)
    try:
        job.process_all_available()
        path = job.savepoint()
        flushed = [list(batch) for batch in job.changelog()["flushed"]]
    finally:
        job.stop()
    assert flushed == [[1, 2, 3]]
    before = _state(path, "process(BufferingSink)")
    assert before == [{"buffered": [4]}, {"buffered": [5, 6]}]
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
