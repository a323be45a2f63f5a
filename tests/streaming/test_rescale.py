"""FLIP-8 end to end on Spark: a savepoint restored at another parallelism, and the refusals.

The chains of rescales (2 -> 1, 2 -> 4, 2 -> 5 -> 3) against a run that never rescaled are in
test_seed_rescale.py.
"""

from __future__ import annotations

import os

import pytest

import fw_magics as fw
from fw_magics.errors import ResumeError
from fw_magics.runtime.streaming.savepoints.files import SavepointError, list_savepoints, load_savepoint
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark]

BACKLOG = [[(1, 1, 1), (2, 5, 2), (3, 2, 3)], [(1, 4, 4), (4, 1, 5)]]
FRESH = [[(1, 2, 10), (5, 7, 11), (2, 1, 2)], [(3, 3, 12), (6, 1, 13)], [(2, 2, 14), (7, 9, 15), (1, 1, 16)],
         [(4, 4, 17), (8, 8, 18), (5, 5, 19)]]
KIND = "aggregate"


def _stream(area, name):
    return fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts",
                         watermark_delay="0 milliseconds")


def forge(path: str, name: str, data: bytes) -> None:
    """Replace a savepoint file and recompute its size and SHA-256 in the document: a forgery, not damage."""
    import hashlib
    import json

    rewrite(os.path.join(path, name), data)
    doc_path = os.path.join(path, "savepoint.json")
    with open(doc_path) as f:
        doc = json.load(f)
    doc["files"][name].update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    rewrite(doc_path, json.dumps(doc).encode())


def rewrite(target: str, data: bytes) -> None:
    """``data`` as a new file in ``target``'s place (a savepoint's files are read-only, its base shared)."""
    os.remove(target)
    with open(target, "wb") as f:
        f.write(data)


def _merge(rows: dict, job) -> None:
    rows.update(latest_rows(job))


def test_a_changed_parallelism_on_a_plain_restart_and_a_wrong_savepoint_are_refused(area):
    for f in BACKLOG:
        area.write(f, "r")
    op = operator(KIND, _stream(area, "r"))
    job = op.start(job_dir=area.jobs, job_name="r", trigger=TRIGGER)
    try:
        job.process_all_available()
        path = job.savepoint()
    finally:
        job.stop()
    with pytest.raises(fw.FullWindowError, match=r"phase 'stopped' \(start\(\) continues it; take the savepoint while "
                                                 r"it runs\)$"):
        job.savepoint()
    with pytest.raises(ResumeError, match=r"runs at parallelism 2.*from_savepoint=p, parallelism=3"):
        op.start(job_dir=area.jobs, job_name="r", trigger=TRIGGER, parallelism=3)
    with pytest.raises(ResumeError, match="already ran"):
        op.start(job_dir=area.jobs, job_name="r", trigger=TRIGGER, from_savepoint=path, parallelism=3)
    other = operator("reduce", _stream(area, "r"))
    with pytest.raises(ResumeError, match="different graph"):
        other.start(job_dir=area.jobs, job_name="r-other", from_savepoint=path)
    assert not os.path.exists(os.path.join(area.jobs, "r-other", "checkpoint"))
    assert list_savepoints(os.path.join(area.jobs, "r")) == [path]
    # a savepoint whose manifest names another folder (its digest recomputed) would read that folder
    import json
    import shutil

    forged = os.path.join(area.jobs, "forged")
    shutil.copytree(path, forged)
    with open(os.path.join(forged, "source-manifest.json")) as f:
        manifest = json.load(f)
    decoy = area.source("decoy")
    forge(forged, "source-manifest.json", json.dumps(dict(manifest, directory=decoy)).encode())
    with pytest.raises(ResumeError, match=f"lists the files of '{decoy}', not of the job's source"):
        op.start(job_dir=area.jobs, job_name="r-forged", from_savepoint=forged)
    assert not os.path.exists(os.path.join(area.jobs, "r-forged", "checkpoint"))
    with open(os.path.join(path, "operator-state.json"), "rb") as f:
        rewrite(os.path.join(path, "operator-state.json"), f.read() + b" ")
    with pytest.raises(SavepointError, match="does not match its recorded size and SHA-256"):
        op.start(job_dir=area.jobs, job_name="r-damaged", from_savepoint=path)


@pytest.mark.extended  # make test-extended (CI): a stream-mode job, a savepoint, three restores
def test_a_stream_mode_savepoint_restored_at_1_3_and_5_ends_as_the_job_that_never_rescaled(area):
    """FLIP-8 for the baseline a user runs without a backlog (issue 32): mode "stream" reads every file
    as a stream; its savepoint holds every key (no backlog files to share) and restores as a new job
    at any parallelism, in mode "mixed" or "stream" alike (the files it had read are not read again;
    "batch", which has no stream to go on in, is refused in one line), equal to the job that never
    rescaled and to the reference model. A stream-mode restore's own savepoint restores in mixed mode."""
    for f in BACKLOG:
        area.write(f, "m")
    op = operator(KIND, _stream(area, "m"))
    job = op.start(job_dir=area.jobs, job_name="m", trigger=TRIGGER, mode="stream")
    try:
        job.process_all_available()
        area.write(FRESH[0], "m")
        job.process_all_available()
        path = job.savepoint()
        area.write(FRESH[1], "m")
        job.process_all_available()
        unscaled = latest_rows(job)
    finally:
        job.stop()
    expected = expected_latest(model(KIND, 0, BACKLOG, FRESH[:2]), KIND)
    assert unscaled == expected
    saved = load_savepoint(path)
    assert saved.base == () and saved.document["files"]["keyed-state.parquet"]["rows"] == 5  # keys 1..5
    with pytest.raises(fw.FullWindowError, match="mode 'batch' has no stream; accepted: mode 'mixed'.*or 'stream'"):
        op.start(job_dir=area.jobs, job_name="m-batch", from_savepoint=path, mode="batch")
    assert not os.path.exists(os.path.join(area.jobs, "m-batch"))
    modes = {1: "mixed", 3: "stream", 5: "stream"}
    for n, mode in modes.items():
        restored = op.start(job_dir=area.jobs, job_name=f"m{n}", trigger=TRIGGER, from_savepoint=path, parallelism=n,
                            mode=mode)
        try:
            restored.process_all_available()  # FRESH[1], written after the savepoint, is its first fresh file
            assert latest_rows(restored) == expected, n
            assert restored.parallelism == n and not restored.restarts and restored.mode == mode
            assert restored.phase == "stream" and restored.plan.handover.continues
        finally:
            restored.stop()
    # the stream-mode restore at 3 goes on after a restart, then its savepoint restores at 2 in mixed mode
    area.write(FRESH[2], "m")
    again = op.start(job_dir=area.jobs, job_name="m3", trigger=TRIGGER, mode="stream")
    try:
        again.process_all_available()
        second = again.savepoint()
    finally:
        again.stop()
    area.write(FRESH[3], "m")
    last = op.start(job_dir=area.jobs, job_name="m3-2", trigger=TRIGGER, from_savepoint=second, parallelism=2)
    try:
        last.process_all_available()
        assert latest_rows(last) == expected_latest(model(KIND, 0, BACKLOG, FRESH), KIND)
    finally:
        last.stop()


@pytest.mark.core
def test_a_savepoint_restores_at_three_with_every_record_counted_once(area):
    """The core case, also under Spark Connect: backlog + one fresh file at 2, savepoint, restore at 3, one more;
    a stray file of another name in the folder is not listed by the restored job (its glob is the job's)."""
    for f in BACKLOG:
        area.write(f, "c")
    op = operator(KIND, _stream(area, "c"))
    got: dict = {}
    job = op.start(job_dir=area.jobs, job_name="c", trigger=TRIGGER)
    try:
        job.process_all_available()
        area.write(FRESH[0], "c")
        job.process_all_available()
        path = job.savepoint()
        assert job.phase == "stream"  # the job runs on after its savepoint
        _merge(got, job)
    finally:
        job.stop()
    with open(os.path.join(area.source("c"), "notes.txt"), "w") as f:  # not a *.parquet name: never listed
        f.write("a stray file")
    restored = op.start(job_dir=area.jobs, job_name="c3", trigger=TRIGGER, from_savepoint=path, parallelism=3)
    try:
        restored.process_all_available()
        area.write(FRESH[1], "c")
        restored.process_all_available()
        mine = latest_rows(restored)
        changelog = restored.changelog()
    finally:
        restored.stop()
    _merge(got, restored)
    expected = expected_latest(model(KIND, 0, BACKLOG, FRESH[:2]), KIND)
    assert got == expected
    # the restored job alone lists every key: keys 1, 2, 4 and 5 saw no fresh record after the restore
    assert mine == expected
    from_savepoint = changelog[changelog["batch"] == -2]
    assert sorted(from_savepoint["k"]) == [1, 2, 3, 4, 5]  # each key's latest row in the savepoint, once
    splits = load_savepoint(path).operator_state
    assert [len(s["splits"]["units"]) for s in next(iter(splits.values()))] == [2, 1]
