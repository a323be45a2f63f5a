"""The switch hands the backlog's keyed state over lazily (fw_magics.runtime.streaming.keyed.seed): a key reaches
Spark's state store on its first fresh record, a key the stream cleared stays cleared, a savepoint
still holds every key, and keys of each lazily looked-up type find their backlog state (Spark runs)."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fw_magics as fw
from fw_magics.runtime.streaming.savepoints import keyed_state_frame
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark]

KEYS = 40
BACKLOG = [[(k, k + 1, k) for k in range(KEYS)], [(k, 2, 50 + k) for k in range(0, KEYS, 2)]]
FRESH = [[(1, 10, 100), (2, 10, 101), (KEYS + 7, 3, 102)]]


def _stream(area, name):
    return fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts")


def _store_keys(job) -> set:
    frame = keyed_state_frame(job.spark, job.storage.path("checkpoint"), job.spec.key_names)
    return {row["k"] for row in frame.collect()}


@pytest.mark.core
def test_only_the_keys_the_stream_meets_enter_the_state_store_and_a_savepoint_holds_them_all(area):
    for f in BACKLOG:
        area.write(f, "lazy")
    job = operator("reduce", _stream(area, "lazy")).start(job_dir=area.jobs, job_name="lazy", trigger=TRIGGER)
    try:
        job.process_all_available()
        assert _store_keys(job) == set()  # the switch wrote no key: the first micro-batch read nothing
        area.write(FRESH[0], "lazy")
        job.process_all_available()
        assert _store_keys(job) == {1, 2, KEYS + 7}
        assert latest_rows(job) == expected_latest(model("reduce", 0, BACKLOG, FRESH), "reduce")
        path = job.savepoint()
    finally:
        job.stop()
    savepoint = load_savepoint(path)
    saved = savepoint.keyed_table().to_pylist()
    assert sorted(row["k"] for row in saved) == list(range(KEYS)) + [KEYS + 7]  # each key once
    # incremental: the savepoint wrote the store's keys; the backlog's files are its base
    assert sorted(pq.read_table(savepoint.keyed_path).column("k").to_pylist()) == [1, 2, KEYS + 7]


@pytest.mark.extended  # make test-extended (CI): make test keeps the handover's core case
def test_a_key_cleared_in_the_stream_does_not_get_its_backlog_state_back(area):
    backlog = [[(1, 5, 1), (1, 5, 2), (1, 5, 3), (2, 5, 4)]]
    fresh = [[(1, 0, 10)], [(1, 5, 11), (2, 5, 12)]]  # key 1 cleared, then counted from nothing
    results = {}
    for mode in ("mixed", "stream"):
        name = f"resets-{mode}"
        for f in backlog:
            area.write(f, name)
        job = _stream(area, name).key_by("k").process(functions.Resets()).start(
            job_dir=area.jobs, job_name=name, mode=mode, trigger=TRIGGER)
        try:
            job.process_all_available()
            for f in fresh:
                area.write(f, name)
                job.process_all_available()
            results[mode] = latest_rows(job)
        finally:
            job.stop()
    assert results["mixed"] == results["stream"] == {(1,): (1, "element", 1, 0), (2,): (2, "element", 2, 0)}


@pytest.mark.core
@pytest.mark.extended  # make test-extended (CI) and its Spark Connect run
def test_keys_cleared_before_and_after_a_restore_stay_cleared_through_a_chain_of_incremental_savepoints(area):
    """Savepoint A (key 1 cleared over the backlog's files), restored at 3; key 2 cleared there, savepoint B
    (its base still the first job's backlog files, its keyed-state file over them), restored at 1: each key
    ends as in one job that never stopped; key 4, untouched since the backlog, keeps its backlog row."""
    backlog = [[(1, 5, 1), (1, 5, 2), (1, 5, 3), (2, 5, 4), (3, 5, 5), (4, 5, 6)]]
    fresh = [[(1, 0, 10)], [(2, 0, 11)], [(1, 5, 12), (2, 5, 13), (3, 5, 14)]]
    for f in backlog:
        area.write(f, "chain")
    op = _stream(area, "chain").key_by("k").process(functions.Resets())
    path, restored = None, None
    for step, parallelism in enumerate((2, 3, 1)):
        name = f"chain-{step}"
        job = op.start(job_dir=area.jobs, job_name=name, trigger=TRIGGER, parallelism=parallelism,
                       **({"from_savepoint": path} if path else {}))
        try:
            job.process_all_available()
            area.write(fresh[step], "chain")
            job.process_all_available()
            if step < 2:
                path = job.savepoint()
                saved = load_savepoint(path)
                assert len(saved.base) == 2  # the first job's backlog files, shared again
                cleared = {1} if step == 0 else {1, 2}
                assert {r["k"] for r in saved.keyed_table().to_pylist()} == {1, 2, 3, 4} - cleared
            else:
                restored = latest_rows(job)
        finally:
            job.stop()
    # counted from nothing after each clear; key 3 from its backlog count; key 4's row is the backlog's
    assert restored == {(1,): (1, "element", 1, 0), (2,): (2, "element", 1, 0), (3,): (3, "element", 2, 0),
                        (4,): (4, "element", 1, 0)}


def _typed_file(directory: str, count: int, rows) -> None:
    table = pa.table({
        "name": pa.array([r[0] for r in rows], pa.string()),
        "day": pa.array([r[1] for r in rows], pa.date32()),
        "n": pa.array([r[2] for r in rows], pa.int32()),
        "flag": pa.array([r[3] for r in rows], pa.bool_()),
        "at": pa.array([None if r[1] is None else dt.datetime(r[1].year, r[1].month, r[1].day, 12, 30, 0, 250,
                                                              tzinfo=dt.timezone.utc) for r in rows],
                       pa.timestamp("us", tz="UTC")),
        "v": pa.array([r[4] for r in rows], pa.int64()),
    })
    hidden = os.path.join(directory, f".f{count}.tmp")
    pq.write_table(table, hidden)
    os.utime(hidden, (1_700_000_000 + count,) * 2)
    os.replace(hidden, os.path.join(directory, f"f{count}.parquet"))


def _sum(a, b):
    return (a.name, a.day, a.n, a.flag, a.at, a.v + b.v)


@pytest.mark.extended  # make test-extended (CI): make test keeps the handover's core case
def test_string_date_int_boolean_and_timestamp_keys_with_nulls_find_their_backlog_state(area):
    d1, d2 = dt.date(2024, 1, 1), dt.date(2024, 2, 29)
    backlog = [("a", d1, 1, True, 1), ("a", d1, 1, True, 2), ("b", d2, None, False, 4), (None, None, None, None, 8),
               ("é", d2, -3, None, 16)]
    fresh = [("a", d1, 1, True, 100), ("b", d2, None, False, 100), (None, None, None, None, 100),
             ("é", d2, -3, None, 100), ("c", d1, 7, True, 100)]
    results = {}
    for mode in ("mixed", "stream"):
        directory = area.source(f"typed-{mode}")
        _typed_file(directory, 1, backlog)
        stream = fw.from_files(directory, "parquet", "name string, day date, n int, flag boolean, at timestamp, v long")
        job = stream.key_by(["name", "day", "n", "flag", "at"]).reduce(_sum).start(
            job_dir=area.jobs, job_name=f"typed-{mode}", mode=mode, trigger=TRIGGER)
        try:
            job.process_all_available()
            _typed_file(directory, 2, fresh)
            job.process_all_available()
            results[mode] = sorted(map(tuple, job.latest().astype(object).where(job.latest().notna(), None)
                                       .itertuples(index=False)), key=repr)
        finally:
            job.stop()
    assert results["mixed"] == results["stream"]
    assert sorted(row[-1] for row in results["mixed"]) == [100, 103, 104, 108, 116]
