"""The seed's scenario (FLIP-8) on Spark, for real: 4 splits read by 2 source subtasks, one of them
still unread at the savepoint; ONE savepoint restored at 1 and at 4, and at 5 then 3.

The job counts and sums per key (CountSum: a record lost lowers a count, one read twice raises
it). Files 0 and 1 are the backlog; files 2 and 3 arrive together and are read one per
micro-batch (``max_files_per_trigger=1``); the test's sink holds micro-batch 2 (file 3) until
the savepoint of micro-batch 1 is taken, so file 3 is an unread split of source subtask 1,
deterministically. The job then runs on: it is the never-rescaled run every restore is
compared with, key by key (the keyed state's JSON, row for row) after the same fresh files.
"""

from __future__ import annotations

import json
import os

import pytest

import fw_magics as fw
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from tests.streaming import functions
from tests.streaming.files import TRIGGER, HoldBatch, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark, pytest.mark.extended]  # make test-extended (CI)

SPLITS = [[(1, 1, 1), (2, 2, 2)], [(1, 3, 3), (3, 4, 4)], [(2, 5, 5), (4, 6, 6)], [(3, 7, 7), (5, 8, 8)]]
FRESH = [[(1, 9, 9), (6, 10, 10)], [(4, 11, 11), (7, 12, 12)]]
KIND = "aggregate"


def _keyed_state(path: str) -> list[tuple]:
    table = load_savepoint(path).keyed_table()
    return sorted(zip(*[table.column(n).to_pylist() for n in table.column_names]))


def _owners(area, job_name: str) -> dict[str, int]:
    with open(os.path.join(area.jobs, job_name, "source", "manifest.json")) as f:
        doc = json.load(f)
    return {entry["name"]: entry["subtask"] for entry in doc["files"]}


def _until(job, batch: int) -> dict:
    """The job's latest row per key as of micro-batch ``batch`` (the backlog is -1), from its changelog."""
    rows = job.changelog()
    rows = rows[rows["batch"] <= batch]
    out = {}
    for row in rows.drop(columns=["kind", "batch"]).itertuples(index=False):
        out[(int(row[0]),)] = tuple(int(v) for v in row)
    return out


def test_one_savepoint_with_an_unread_split_restored_at_1_and_4_and_at_5_then_3(area):
    for rows in SPLITS[:2]:
        area.write(rows)
    hold = HoldBatch(2)
    op = operator(KIND, fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts",
                                      watermark_delay="0 milliseconds"))
    jobs = {}
    try:
        jobs["unscaled"] = job = op.start(job_dir=area.jobs, job_name="at2", trigger=TRIGGER, sink=hold,
                                          max_files_per_trigger=1, parallelism=2)
        job.process_all_available()  # the backlog, then micro-batch 0 (the switch)
        files = [area.write(rows) for rows in SPLITS[2:]]
        assert hold.reached.wait(300)  # micro-batch 1 (file 2) committed, micro-batch 2 (file 3) held
        path = job.savepoint()
        hold.released.set()
        savepoint = load_savepoint(path)
        assert savepoint.document["batch"] == 1 and savepoint.document["read_files"] == 3
        splits = savepoint.operator_state["files(src)"]
        assert [[(u["file"], u["read"]) for u in s["splits"]["units"]] for s in splits] == [
            [("part-0001.parquet", True), (os.path.basename(files[0]), True)],
            [("part-0002.parquet", True), (os.path.basename(files[1]), False)]]
        before = _until(job, 1)

        for name, p in (("at1", 1), ("at4", 4), ("at5", 5)):
            jobs[name] = op.start(job_dir=area.jobs, job_name=name, trigger=TRIGGER, from_savepoint=path,
                                  parallelism=p)
        assert set(_owners(area, "at1").values()) == {0}  # scaled down: one subtask owns all 4 splits
        assert sorted(_owners(area, "at4").values()) == [0, 1, 2, 3]  # scaled up: one split each
        assert _owners(area, "at4")[os.path.basename(files[1])] == 3  # the unread one, read by subtask 3
        for name in ("at1", "at4", "at5"):
            jobs[name].process_all_available()  # each reads the unread split, once
        at5 = jobs.pop("at5")
        path5 = at5.savepoint()
        after5 = latest_rows(at5)
        at5.stop()
        jobs["at3"] = op.start(job_dir=area.jobs, job_name="at3", trigger=TRIGGER, from_savepoint=path5,
                               parallelism=3)
        jobs["at3"].process_all_available()

        for rows in FRESH:
            area.write(rows)
        for job in jobs.values():
            job.process_all_available()
        final = {name: job.savepoint() for name, job in jobs.items()}
        results = {name: latest_rows(job) for name, job in jobs.items()}
    finally:
        hold.released.set()
        for job in jobs.values():
            job.stop()

    expected = expected_latest(model(KIND, 0, SPLITS[:2], SPLITS[2:] + FRESH), KIND)
    assert results["unscaled"] == expected
    assert before == expected_latest(model(KIND, 0, SPLITS[:2], SPLITS[2:3]), KIND)
    # each restored job's own latest() lists every key, those with no record since the restore included
    assert after5 == expected_latest(model(KIND, 0, SPLITS[:2], SPLITS[2:]), KIND)
    for name in ("at1", "at4", "at3"):
        assert results[name] == expected, name
    for name in ("at1", "at4", "at3"):
        assert _keyed_state(final[name]) == _keyed_state(final["unscaled"]), name
        assert load_savepoint(final[name]).document["read_files"] == len(SPLITS) + len(FRESH)
