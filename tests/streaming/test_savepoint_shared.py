"""Issue 47 on Spark: a quiet restarted job's savepoint (item 4), another function's keyed state refused at
restore (item 2b), and a savepoint's shared base file damaged in place, named when read (item 3).

The tampering of each file alone (digests, sizes and counts made to agree) is tested without Spark in
test_savepoint_trust.py and test_savepoint_states.py; these take a real job's savepoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fw_magics as fw
from fw_magics.errors import JobStorageError, ResumeError
from fw_magics.runtime.streaming.savepoints.files import load_savepoint
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark]

BACKLOG = [[(1, 1, 1), (2, 5, 2), (3, 2, 3)], [(1, 4, 4), (4, 1, 5)]]
FRESH = [[(1, 2, 10), (5, 7, 11), (2, 1, 12)]]
KIND = "aggregate"


def _op(area, name: str):
    return operator(KIND, fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts",
                                        watermark_delay="0 milliseconds"))


def _run(area, name: str):
    """A job over BACKLOG, then FRESH read by its stream; returns (its operator, its job, still running)."""
    for f in BACKLOG:
        area.write(f, name)
    op = _op(area, name)
    job = op.start(job_dir=area.jobs, job_name=name, trigger=TRIGGER)
    job.process_all_available()
    area.write(FRESH[0], name)
    job.process_all_available()
    return op, job


def test_a_job_restarted_from_its_checkpoint_that_read_nothing_new_is_savepointed_and_restores_exact(area):
    """Item 4: before, savepoint() said 'has committed no micro-batch yet', even after process_all_available()."""
    op, job = _run(area, "quiet")
    try:
        before = latest_rows(job)
    finally:
        job.stop()
    assert before == expected_latest(model(KIND, 0, BACKLOG, FRESH), KIND)
    again = op.start(job_dir=area.jobs, job_name="quiet", trigger=TRIGGER)
    try:
        again.process_all_available()  # nothing new since the restart
        path = again.savepoint()
    finally:
        again.stop()
    saved = load_savepoint(path)
    assert saved.document["read_files"] == 3 and saved.document["top"] is not None
    restored = op.start(job_dir=area.jobs, job_name="quiet-restored", trigger=TRIGGER, from_savepoint=path)
    try:
        restored.process_all_available()
        assert latest_rows(restored) == before
    finally:
        restored.stop()


def _forge_table(path: str, name: str, table: pa.Table) -> None:
    """A savepoint file replaced by ``table``, its size, digest and row count recomputed (a forgery)."""
    target = os.path.join(path, name)
    os.remove(target)  # read-only, and a new file in its place
    pq.write_table(table, target)
    with open(target, "rb") as f:
        data = f.read()
    doc_path = os.path.join(path, "savepoint.json")
    with open(doc_path) as f:
        doc = json.load(f)
    doc["files"][name].update(size=len(data), sha256=hashlib.sha256(data).hexdigest(), rows=table.num_rows)
    os.remove(doc_path)
    with open(doc_path, "w") as f:
        json.dump(doc, f)


def test_a_keyed_state_file_of_another_function_is_refused_at_restore_naming_its_state(area):
    """Item 2b: a keyed-state file holding a process function's states (Sessions': count, total, seen) in an
    aggregate's savepoint, every count made to agree: before, accepted, every key's state lost."""
    op, job = _run(area, "other")
    try:
        path = job.savepoint()
    finally:
        job.stop()
    keyed = pq.read_table(os.path.join(path, "keyed-state.parquet"))
    assert keyed.num_rows == 3  # keys 1, 2, 5: the fresh file's
    sessions = ['{"v": {"count": 2, "total": 3}, "l": {"seen": [1, 2]}}'] * keyed.num_rows
    _forge_table(path, "keyed-state.parquet", keyed.set_column(1, "__fw_state", pa.array(sessions)))
    with pytest.raises(ResumeError) as refused:
        op.start(job_dir=area.jobs, job_name="other-restored", trigger=TRIGGER, from_savepoint=path)
    message = str(refused.value)
    assert "\n" not in message, message
    assert "holds list state 'seen', which aggregate" in message and "does not declare" in message, message
    assert not os.path.exists(os.path.join(area.jobs, "other-restored", "checkpoint"))


def test_a_shared_base_file_is_read_only_and_one_cut_short_in_place_is_named_when_read(area):
    """Item 3: the savepoint's base files are the job's backlog results (hard links): read-only for every
    holder; root (or a chmod) can still cut one short in place, and the job reading it then fails in one
    line naming the file -- before, 'OSError: Expected to be able to read 256 bytes ...', naming none."""
    op, job = _run(area, "shared")
    try:
        path = job.savepoint()
        saved = load_savepoint(path)
        assert saved.base, "an aggregate with a backlog shares its backlog's results"
        target = saved.base[0][0]
        for name in os.listdir(path):  # the savepoint's own files and its base: nobody's to write
            if name != "base":
                assert not os.stat(os.path.join(path, name)).st_mode & 0o222, name
        assert not os.stat(target).st_mode & 0o222 and os.stat(target).st_nlink >= 2
        os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)  # as root ignores the modes
        size = os.path.getsize(target)
        with open(target, "r+b") as f:  # in place: every job and savepoint sharing the file sees it
            f.truncate(size - 40)
        with pytest.raises(JobStorageError) as failed:
            job.latest()
    finally:
        job.stop()
    # a live job's latest() fails in a Spark task; the worker's JobStorageError comes back as itself, one line
    message = str(failed.value)
    named = re.match(r"the committed file (\S+) cannot be read \(no end-of-stream marker: it was cut short\): it "
                     r"was changed after it was written", message)
    assert named and "\n" not in message and "Expected to be able to read" not in message, message
    assert os.path.samefile(named.group(1), target)  # the job's own link to the savepoint's base file
