"""A two-input job's savepoint written from tables without ``from_savepoint`` (issue 50's bootstrap): each input at
its own beginning or ``now`` (``Composite.position_at``; the positions' checks and restores at 1 to 3 subtasks are
tested without Spark in tests/connectors/test_two_input_position.py), restored by a job at 1 or 3 over the
reference models: a co-process function's (``Ledger``, co_reference) and a broadcast input's (``Limits``, whose
broadcast state is given as ``operator_state`` or left empty, as Flink's State Processor API leaves it).
"""

from __future__ import annotations

import json

import pytest

import fw_magics as fw
from fw_magics.state.tables import SCHEMA as OPERATOR_TABLE
from tests.streaming import functions
from tests.streaming.co_reference import CoModel
from tests.streaming.files import TRIGGER, record
from tests.streaming.test_keyed_operator_state import LimitsModel, _emitted, _limits, _rules, _state
from tests.streaming.test_two_inputs import SECOND_NAMES, _streams, _write, ledger

pytestmark = [pytest.mark.spark]

DAY = 86_400_000  # each input's watermark delay: no record here is late, and no timer fires
BACKLOG = ([(1, 5, 20), (2, 1, 30), (3, 2, 40)], [(1, 2, 10), (3, 7, 15)])
FRESH = ([(1, 3, 50), (4, 6, 60)], [(2, 4, 55), (7, 1, 58)])
BOOT = {1: (10, 100), 2: (1, -5), 7: (3, 30)}  # key -> Ledger's (count, total): the table written
LIMITS = "co_process(Limits)"


def _ledger_model(read) -> CoModel:
    """The model of a Ledger job restored from ``BOOT`` that reads ``read`` (each input's records)."""
    m = CoModel(functions.Ledger(), (DAY, DAY))
    for k, (count, total) in BOOT.items():
        m.values[((k,), "count")], m.values[((k,), "total")] = count, total
    for batch, (side, rows) in enumerate(zip((1, 2), read)):
        m.fresh(batch, side, [record(r, SECOND_NAMES if side == 2 else ("k", "v", "ts")) for r in rows])
    return m


@pytest.mark.extended  # a restore per case
@pytest.mark.parametrize("positions, parallelism", [("now", 3), ("beginning", 1)])
def test_a_co_process_job_bootstrapped_from_a_table_reads_what_its_positions_say(
        spark, area, positions, parallelism):
    """Per-key (count, total) written as a Ledger job's savepoint at 2; files written after it; restored at 3
    ("now") or 1 ("beginning"): the state and the pending timers are the model's over the fresh files ("now") or
    over every file ("beginning": the ones present at the write read again), and the job read exactly those
    records."""
    name = f"co-{positions}"
    for side, rows in enumerate(BACKLOG, start=1):
        _write(area, name, side, rows)
    stream = ledger(*_streams(area, name, (DAY, DAY)))
    frame = spark.createDataFrame([(k, c, json.dumps(t)) for k, (c, t) in BOOT.items()],
                                  "k long, count long, total string")
    written = fw.write_savepoint(stream, area.jobs + "/boot", keyed_state=frame, parallelism=2, positions=positions)
    saved = fw.load_savepoint(written)
    assert saved.document["watermark"] is None and "tops" not in saved.document
    n = 1 if positions == "now" else 0
    assert f"{n} of 1 files read; {n} of 1 files read" in repr(saved)
    for side, rows in enumerate(FRESH, start=1):
        _write(area, name, side, rows)
    read = FRESH if positions == "now" else tuple(b + f for b, f in zip(BACKLOG, FRESH))
    m = _ledger_model(read)
    keys = {k for (k,), _ in m.values}
    expected = {k: (m.values.get(((k,), "count")), m.values.get(((k,), "total"))) for k in keys}
    timers = sorted((k, t) for (k,), times in m.timers.items() for t in times)
    job = stream.start(job_dir=area.jobs, job_name=name, trigger=TRIGGER, from_savepoint=written,
                       parallelism=parallelism)
    try:
        job.process_all_available()
        state = job.state()
        got = {r["k"]: (r["count"], None if r["total"] is None else json.loads(r["total"]))
               for r in state.keyed_state().collect()}
        pending = sorted((r["k"], r["timestamp"]) for r in state.timers().collect())
        rows = sum(e["input_rows"] for e in job.events() if e["type"] == "micro_batch")
    finally:
        job.stop()
    assert job.parallelism == parallelism
    assert (got, pending) == (expected, timers)
    assert rows == sum(map(len, read))


@pytest.mark.extended  # two restores
def test_a_broadcast_job_bootstrapped_from_a_table_starts_with_the_broadcast_state_given_or_an_empty_one(
        spark, area):
    """Per-key counts written as a Limits job's savepoint with ``positions="now"``: with the rules given as its
    operator state (restored at 3: every subtask holds them) and without them (restored at 1: empty, as a fresh
    start's; at the beginning the rules file would be read again, as the co-process case's files are). The orders
    written after the write are the model's rows; the counts go on from the table."""
    _rules(area, [("max", 10)])
    area.write([(1, 5, 0), (2, 15, 0)], "bb-orders")
    op = _limits(area, "bb")
    counts = spark.createDataFrame([(1, 7), (9, 2)], "k long, count long")
    rules = spark.createDataFrame([(0, "limits", "broadcast", json.dumps(["max", 12]))], OPERATOR_TABLE)
    written = {"given": fw.write_savepoint(op, area.jobs + "/given", keyed_state=counts, positions="now",
                                           operator_state={LIMITS: rules}),
               "none": fw.write_savepoint(op, area.jobs + "/none", keyed_state=counts, positions="now")}
    given = _state(written["given"], LIMITS)  # subtask 0's rows: the others hold none (a restore copies it)
    assert given[0] == {"limits": [["max", 12]]} and all(s == {} for s in given[1:])
    assert LIMITS not in fw.load_savepoint(written["none"]).operator_state
    fresh = [(1, 13, 0), (3, 11, 0)]
    area.write(fresh, "bb-orders")
    for case, parallelism, rules_now in (("given", 3, [("max", 12)]), ("none", 1, [])):
        model = LimitsModel()
        model.counts = {1: 7, 9: 2}
        model.rule(rules_now)
        model.orders(fresh)
        job = op.start(job_dir=area.jobs, job_name=f"bb-{case}", trigger=TRIGGER, from_savepoint=written[case],
                       parallelism=parallelism)
        try:
            job.process_all_available()
            emitted, state = _emitted(job.changelog()), _state(job.savepoint(), LIMITS)
            counted = {r["k"]: r["count"] for r in job.state().keyed_state().collect()}
        finally:
            job.stop()
        assert counted == model.counts, case
        assert [sorted(s.get("limits", [])) for s in state] == [[list(r) for r in rules_now]] * parallelism, case
        assert emitted == sorted(model.rows, key=repr), case
