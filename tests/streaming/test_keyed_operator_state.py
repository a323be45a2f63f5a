"""Operator state inside a keyed operator (FLIP-8): a KeyedProcessFunction that is also a CheckpointedFunction.

Each subtask is a state partition of the stream (the keys Spark's hash puts there: ``spark_hash.partition``
says which), so the reference model of its list state is "one unit per record of a key of that partition";
a savepoint holds one snapshot per partition, and a restore at another parallelism redistributes them by
each state's mode (tests/state/reference_state.py's rule) while the keys' own state follows the keys.
"""

from __future__ import annotations

import itertools
import json

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import fw_magics as fw
from fw_magics.errors import ResumeError
from fw_magics.runtime.streaming.keyed.spark_hash import partition
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from tests.examples import examples
from tests.state import reference_state
from tests.streaming import functions
from tests.streaming.files import TRIGGER
from tests.streaming.operator_functions import KEYED_MODES, RULES, Handshake, KeyedTally, Limits

pytestmark = [pytest.mark.spark]

OPERATOR = "process(KeyedTally)"
EXAMPLES = itertools.count()  # hypothesis runs several examples in one test's folder: each its own jobs


def _operator(area, name):
    return fw.from_files(area.source(name), "parquet", functions.SCHEMA).key_by("k").process(KeyedTally())


def _state(path: str, operator: str = OPERATOR) -> list[dict]:
    """Each subtask's units per state name, from a savepoint."""
    return [{name: entry["units"] for name, entry in s.items()} for s in load_savepoint(path).operator_state[operator]]


def _units(records, p: int) -> list[list]:
    """The reference: subtask i's ``seen`` units are the [k, v] of the records whose key Spark puts in partition i."""
    out = [[] for _ in range(p)]
    for k, v, _ in records:
        out[partition((k,), (True,), p)].append([k, v])
    return [sorted(units) for units in out]


def _sorted(state: list[dict], name: str) -> list:
    return [sorted(s.get(name, [])) for s in state]


def _run(job, area, name, files) -> None:
    for rows in files:
        area.write(rows, name)
        job.process_all_available()


def _fixed(op, path: str, first: list) -> tuple[str, list[dict], int]:
    """The savepoint read as tables, written back (``fw.write_savepoint``, over it) with the first record's key
    counted 100 more and its ``seen`` unit [k, v] made [k, v + 1000]: (its path, the units it must hold, the key)."""
    reader = fw.read_savepoint(path)
    (k, v, _) = first[0]
    keyed = reader.keyed_state().withColumn("count", F.when(F.col("k") == k, F.col("count") + 100)
                                            .otherwise(F.col("count")))
    unit, fixed = json.dumps([k, v]), json.dumps([k, v + 1000])
    table = reader.operator_state(OPERATOR)
    table = table.withColumn("element", F.when((F.col("state") == "seen") & (F.col("element") == unit), F.lit(fixed))
                             .otherwise(F.col("element")))
    written = fw.write_savepoint(op, path + "-fixed", keyed_state=keyed,
                                 operator_state={OPERATOR: table}, from_savepoint=path)
    units = [{n: [[k, v + 1000] if n == "seen" and u == [k, v] else u for u in us] for n, us in s.items()}
             for s in _state(path)]
    return written, units, k


def _check_round_trip(area, name, first, second, third, p_new, written_at=None):
    """A job at 2 over ``first`` then ``second``, a savepoint, a restore at ``p_new`` over ``third``; with
    ``written_at``, beside it the savepoint read as tables, fixed and written back (``_fixed``), restored at
    ``written_at`` over ``third`` too."""
    op = _operator(area, name)
    job = op.start(job_dir=area.jobs, job_name=name, trigger=TRIGGER, parallelism=2)  # mode 'mixed' asked
    try:
        assert "keeps operator state" in job.mode_reason  # a stream from the start, and why
        _run(job, area, name, [first, second])
        path = job.savepoint()
        rows = job.changelog()
    finally:
        job.stop()
    records = first + second
    assert repr(load_savepoint(path)).endswith(
        f"keyed state by k, operator state of files({name}), process(KeyedTally))")
    before = _state(path)
    assert _sorted(before, "seen") == _units(records, 2)
    ran = [i for i in range(2) if _units(records, 2)[i]]
    assert [s.get("origins", []) for s in before] == [[i] if i in ran else [] for i in range(2)]
    assert all(s.get("rules", [["unit", "k, v"]]) == [["unit", "k, v"]] for s in before)
    assert not rows["restored"][rows["batch"] == rows["batch"].min()].any()  # each subtask's first run is fresh
    assert sorted(zip(rows["k"], rows["subtask"])) == sorted((k, partition((k,), (True,), 2)) for k, _, _ in records)
    counts = {}
    for k, _, _ in records:
        counts[k] = counts.get(k, 0) + 1
    restores = {p_new: (path, before, counts)}
    if written_at is not None:
        written, units, key = _fixed(op, path, first)
        assert _state(written) == units  # everything else as the savepoint held it
        restores[written_at] = (written, units, {**counts, key: counts[key] + 100})
    area.write(third, name)
    for p, (saved, old, counted) in restores.items():  # one after the other: one query at a time
        restored = op.start(job_dir=area.jobs, job_name=f"{name}-{p}", trigger=TRIGGER, from_savepoint=saved,
                            parallelism=p)
        try:
            restored.process_all_available()
            after, latest, fresh = _state(restored.savepoint()), restored.latest(), restored.changelog()
        finally:
            restored.stop()
        moved = reference_state.redistribute(old, p, KEYED_MODES)  # where the restore put the old units
        new = _units(third, p)
        assert _sorted(after, "seen") == [sorted(m.get("seen", []) + new[i]) for i, m in enumerate(moved)]
        assert [sorted(s.get("origins", [])) for s in after] == [sorted(m.get("origins", [])) for m in moved]
        assert sorted(u for s in after for u in s.get("seen", [])) == \
            sorted([u for s in old for u in s.get("seen", [])] + [[k, v] for k, v, _ in third])
        assert fresh[fresh["batch"] >= 0]["restored"].all()  # (before batch 0: the savepoint's latest rows)
        for k, _, _ in third:  # the keys' own state went with the keys: counts go on from the savepoint
            counted[k] = counted.get(k, 0) + 1
        if p != p_new:  # a written savepoint has no output rows: its job's latest() has the keys it emitted since
            counted = {k: counted[k] for k, _, _ in third}
        assert dict(zip(latest["k"], latest["n"])) == counted


@pytest.mark.core
def test_operator_state_of_a_keyed_function_is_kept_per_state_partition_and_restored_at_three(area):
    first = [(1, 10, 0), (2, 20, 0), (3, 30, 0), (1, 11, 0)]
    second = [(4, 40, 0), (2, 21, 0), (5, 50, 0)]
    third = [(1, 12, 0), (6, 60, 0), (7, 70, 0), (3, 31, 0)]
    _check_round_trip(area, "ks", first, second, third, 3)  # written back as tables: the random case below


rows = st.lists(st.tuples(st.integers(-20, 20), st.integers(-1000, 1000), st.just(0)), min_size=1, max_size=8)


@pytest.mark.extended  # several jobs per example: make test-extended
@settings(max_examples=examples(3),  # FW_EXAMPLES' share: the hand-picked round trip above runs too
          deadline=None, suppress_health_check=list(HealthCheck))
@given(first=rows, second=rows, third=rows, p_new=st.sampled_from([1, 3, 5]), written_at=st.sampled_from([2, 4]))
def test_keyed_operator_state_on_random_records_matches_the_reference_at_any_parallelism(area, first, second, third,
                                                                                         p_new, written_at):
    _check_round_trip(area, f"kr{next(EXAMPLES)}", first, second, third, p_new, written_at)


def _handshake(area):
    """A Handshake job over two folders at 2 (mode batch refused first) and its savepoint: (the stream, the
    savepoint's path, its operator state, each record where the rule puts it)."""
    area.write([(1, 1, 0), (2, 2, 0)], "h-a")
    area.write([(1, 5, 0), (3, 7, 0)], "h-b", names=("key", "w", "ts"))
    first = fw.from_files(area.source("h-a"), "parquet", functions.SCHEMA)
    second = fw.from_files(area.source("h-b"), "parquet", "key long, w long, ts timestamp")
    op = first.connect(second).key_by("k", "key").process(Handshake())
    with pytest.raises(fw.FullWindowError, match=r"^mode 'batch' runs the backlog, and Handshake keeps operator "
                                                 r"state \(FLIP-8\), which lives in a stream's micro-batches; "
                                                 r"accepted: mode 'mixed' or 'stream'"):
        op.start(job_dir=area.jobs, job_name="hb", mode="batch")
    job = op.start(job_dir=area.jobs, job_name="h", trigger=TRIGGER, mode="stream", parallelism=2)
    try:
        job.process_all_available()
        path = job.savepoint()
    finally:
        job.stop()
    state = _state(path, "co_process(Handshake)")
    expected = [[] for _ in range(2)]
    for side, k, v in [(1, 1, 1), (1, 2, 2), (2, 1, 5), (2, 3, 7)]:
        expected[partition((k,), (True,), 2)].append([side, k, v])
    assert _sorted(state, "seen") == [sorted(e) for e in expected]
    return op, path, state


def test_a_two_input_function_keeps_operator_state_and_batch_mode_refuses_it_in_one_line(area):
    _handshake(area)


@pytest.mark.extended  # a second restore of the same kind of job: make test keeps the one above
def test_a_two_input_functions_operator_state_written_back_from_its_tables_restores_at_three(area):
    op, path, state = _handshake(area)
    # its savepoint read as tables and written back (issue 50), restored at 3: the units where the rule puts them
    reader = fw.read_savepoint(path)
    written = fw.write_savepoint(op, path + "-tables", keyed_state=reader.keyed_state(), from_savepoint=path,
                                 operator_state={"co_process(Handshake)": reader.operator_state("co_process(Handshake)")})
    assert _state(written, "co_process(Handshake)") == state
    area.write([(4, 8, 0)], "h-a")
    area.write([(5, 9, 0)], "h-b", names=("key", "w", "ts"))
    restored = op.start(job_dir=area.jobs, job_name="h3", trigger=TRIGGER, from_savepoint=written, parallelism=3)
    try:
        restored.process_all_available()
        after = _state(restored.savepoint(), "co_process(Handshake)")
    finally:
        restored.stop()
    moved, new = reference_state.redistribute(state, 3, {"seen": "split"}), [[] for _ in range(3)]
    for side, k, v in [(1, 4, 8), (2, 5, 9)]:
        new[partition((k,), (True,), 3)].append([side, k, v])
    assert _sorted(after, "seen") == [sorted(m.get("seen", []) + n) for m, n in zip(moved, new)]


def test_a_function_that_keeps_half_of_operator_state_or_drops_it_on_a_restore_is_refused(area):
    class Half(fw.KeyedProcessFunction):
        schema = "x long"

        def process_element(self, record, ctx):
            return (1,)

        def initialize_state(self, ctx):
            pass

    stream = fw.from_files(area.source("half"), "parquet", functions.SCHEMA).key_by("k")
    with pytest.raises(fw.FullWindowError, match=r"^Half defines initialize_state but not snapshot_state; accepted: "
                                                 r"both"):
        stream.process(Half())
    area.write([(1, 1, 0)], "half")
    job = _operator(area, "half").start(job_dir=area.jobs, job_name="half", trigger=TRIGGER, parallelism=2)
    try:
        job.process_all_available()
        path = job.savepoint()
    finally:
        job.stop()

    class KeyedTally(fw.KeyedProcessFunction):  # same name, no operator state any more
        schema = "subtask int, restored boolean, n long"

        def process_element(self, record, ctx):
            return (0, False, 1)

    with pytest.raises(ResumeError, match=r"holds state 'origins' recorded as operator union list state, which "
                                          r"process\(KeyedTally\) no longer keeps \(its function has no "
                                          r"initialize_state and snapshot_state; allow_non_restored_state=True drops "
                                          r"it\) \(and 2 more\); fw.check_savepoint\(path, stream\) shows every "
                                          r"state's verdict$"):
        stream.process(KeyedTally()).start(job_dir=area.jobs, job_name="half2", from_savepoint=path)
    table = fw.check_savepoint(path, stream.process(KeyedTally()), allow_non_restored_state=True)
    assert [tuple(r) for r in table[["state", "recorded", "verdict"]].itertuples(index=False)] == [
        ("count", "value bigint", "dropped"), ("origins", "operator union list state", "dropped"),
        ("rules", "operator broadcast state", "dropped"), ("seen", "operator list state", "dropped")]
    job = stream.process(KeyedTally()).start(job_dir=area.jobs, job_name="half3", from_savepoint=path,
                                             allow_non_restored_state=True)  # Flink's flag: dropped, in the log
    try:
        switch = [e for e in job.events() if e["type"] == "switch"][-1]
    finally:
        job.stop()
    assert (switch["states_dropped"], switch["operator_states_dropped"]) == (["count"], ["origins", "rules", "seen"])


# -- a broadcast input: its state is the BroadcastState of every subtask ------------------------------


def _rules(area, rules) -> None:
    area.write(pa.table({"name": pa.array([n for n, _ in rules], pa.string()),
                         "limit": pa.array([v for _, v in rules], pa.int64())}), "rules")


def _limits(area, name):
    orders = fw.from_files(area.source(f"{name}-orders"), "parquet", functions.SCHEMA)
    rules = fw.from_files(area.source("rules"), "parquet", RULES)
    return orders.key_by("k").connect(rules.broadcast()).process(Limits())


class LimitsModel:
    """The reference: one rules dict, applied before the orders of a later micro-batch; a count per key."""

    def __init__(self):
        self.rules, self.counts, self.rows = {}, {}, []

    def rule(self, rules):
        for name, limit in rules:
            if limit is None:
                self.rules.pop(name, None)
            else:
                self.rules[name] = limit

    def orders(self, records):
        for k, v, _ in records:
            self.counts[k] = self.counts.get(k, 0) + 1
            limit = self.rules.get("max")
            self.rows.append((k, v, limit, limit is not None and v > limit, self.counts[k]))


def _emitted(rows) -> list[tuple]:
    rows = rows[rows["batch"] >= 0]  # (before batch 0: a restored job's savepoint rows)
    return sorted(zip(rows["k"], rows["v"], [None if pd.isna(x) else int(x) for x in rows["limit"]],
                      rows["over"], rows["n"]), key=repr)


@pytest.mark.core
def test_a_broadcast_input_reaches_every_subtask_and_its_state_is_restored_at_three(area):
    model, steps = LimitsModel(), [("rules", [("max", 10)]), ("orders", [(1, 5, 0), (2, 15, 0), (3, 10, 0), (4, 11, 0)]),
                                   ("rules", [("max", 12), ("min", 1)]), ("orders", [(1, 13, 0), (5, 12, 0)])]
    op = _limits(area, "b")
    area.source("b-orders")
    job = op.start(job_dir=area.jobs, job_name="b", trigger=TRIGGER, parallelism=2)
    try:
        assert job.mode_reason.startswith("Limits keeps a broadcast input's state (FLIP-8), kept per state partition")
        for what, rows in steps:
            _rules(area, rows) if what == "rules" else area.write(rows, "b-orders")
            getattr(model, "rule" if what == "rules" else "orders")(rows)
            job.process_all_available()
        assert _emitted(job.changelog()) == sorted(model.rows, key=repr)
        path = job.savepoint()
    finally:
        job.stop()
    every = [["max", 12], ["min", 1]]
    assert [sorted(s["limits"]) for s in _state(path, "co_process(Limits)")] == [every, every]  # each subtask's copy
    # its savepoint read as tables and written back (issue 50), restored at 1 over the next orders: the model's rows
    reader, first = fw.read_savepoint(path), [(6, 20, 0), (2, 1, 0), (7, 12, 0)]
    written = fw.write_savepoint(op, path + "-tables", keyed_state=reader.keyed_state(), from_savepoint=path,
                                 operator_state={"co_process(Limits)": reader.operator_state("co_process(Limits)")})
    assert _state(written, "co_process(Limits)") == _state(path, "co_process(Limits)")
    area.write(first, "b-orders")
    before = len(model.rows)
    model.orders(first)
    at_one = op.start(job_dir=area.jobs, job_name="b1", trigger=TRIGGER, from_savepoint=written, parallelism=1)
    try:
        at_one.process_all_available()
        assert _emitted(at_one.changelog()) == sorted(model.rows[before:], key=repr)
    finally:
        at_one.stop()

    restored = op.start(job_dir=area.jobs, job_name="b3", trigger=TRIGGER, from_savepoint=path, parallelism=3)
    try:
        restored.process_all_available()  # the same orders, from the savepoint itself
        for what, rows in [("rules", [("max", None)]), ("orders", [(1, 100, 0)])]:
            _rules(area, rows) if what == "rules" else area.write(rows, "b-orders")
            getattr(model, "rule" if what == "rules" else "orders")(rows)
            restored.process_all_available()
        assert _emitted(restored.changelog()) == sorted(model.rows[before:], key=repr)
        after = _state(restored.savepoint(), "co_process(Limits)")
    finally:
        restored.stop()
    assert [sorted(s["limits"]) for s in after] == [[["min", 1]]] * 3


def test_a_broadcast_input_is_refused_in_one_line_where_it_cannot_run(area):
    orders = fw.from_files(area.source("r-orders"), "parquet", functions.SCHEMA)
    rules = fw.from_files(area.source("rules"), "parquet", RULES)
    timed = fw.from_files(area.source("r-timed"), "parquet", functions.SCHEMA, event_time="ts")
    with pytest.raises(fw.FullWindowError, match=r"^a keyed stream connects with a broadcast stream: "
                                                 r"keyed.connect\(other.broadcast\(\)\); got DataStream"):
        orders.key_by("k").connect(rules)
    with pytest.raises(fw.FullWindowError, match=r"has an event time and 'files\(rules\)' has none"):
        timed.key_by("k").connect(rules.broadcast())
    with pytest.raises(fw.FullWindowError, match=r"takes an fw.KeyedBroadcastProcessFunction"):
        orders.key_by("k").connect(rules.broadcast()).process(functions.Sessions())

    class Half(fw.KeyedBroadcastProcessFunction):
        schema = "x long"

        def process_element(self, record, ctx):
            return (1,)

    with pytest.raises(fw.FullWindowError, match=r"^Half must define process_broadcast_element\(record, ctx\)$"):
        orders.key_by("k").connect(rules.broadcast()).process(Half())
    with pytest.raises(fw.FullWindowError, match=r"^mode 'batch' runs the backlog, and Limits keeps a broadcast input's "
                                                 r"state \(FLIP-8\)"):
        _limits(area, "r").start(job_dir=area.jobs, job_name="rb", mode="batch")
