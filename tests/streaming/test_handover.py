"""The switch hands the backlog's keyed state over lazily (fw_magics.streaming.seed): a key reaches
Spark's state store on its first fresh record, a key the stream cleared stays cleared, a savepoint
still holds every key, and keys of each lazily looked-up type find their backlog state (Spark runs)."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fw_magics as fw
from fw_magics.streaming.savepoint_files import load_savepoint
from fw_magics.streaming.savepoints import keyed_state_frame

from . import functions
from .files import TRIGGER, expected_latest, latest_rows, model, operator

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
    saved = pq.read_table(load_savepoint(path).keyed_path).to_pylist()
    assert sorted(row["k"] for row in saved) == list(range(KEYS)) + [KEYS + 7]  # each key once


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
