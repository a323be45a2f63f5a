"""A mixed reduce or aggregate starts its streaming query while the backlog runs, its fresh source
held until the handover (fw_magics.runtime.streaming.driver.job ``_holds``): the query exists before the switch, a
file landing during the backlog is read once and only after the handover, the warm-up batch is not
one of the job's micro-batches, and a job whose keys are too many for the lazy seed drops the warm
query for one that takes the backlog's state through initialState (Spark runs)."""

from __future__ import annotations

import pytest

import fw_magics as fw
from fw_magics import hooks
from fw_magics.runtime.streaming.savepoints import keyed_state_frame
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, latest_rows, model, operator

pytestmark = [pytest.mark.spark]

BACKLOG = [[(k, k + 1, k) for k in range(6)], [(k, 2, 10 + k) for k in range(0, 6, 2)]]
DURING = [(1, 100, 30), (7, 5, 31)]  # lands while the backlog runs: fresh, read after the handover
LATER = [(2, 1000, 40)]


def _run(area, name, kind, job_of=None):
    """Start a mixed job whose hook writes DURING at the backlog's first progress report; returns the
    job (running, all available processed) and what the hooks saw at the switch."""
    for f in BACKLOG:
        area.write(f, name)
    seen: dict = {}

    def landed(job, done, total):
        if job.job_name == name and "landed" not in seen:
            seen["landed"] = area.write(DURING, name)

    def switching(job, phase, detail):
        if job.job_name == name and phase == "switching":
            seen["query_at_switch"] = job.query is not None

    handles = [hooks.register("backlog_progress", landed), hooks.register("stream_phase", switching)]
    try:
        stream = fw.from_files(area.source(name), "parquet", functions.SCHEMA, event_time="ts")
        job = operator(kind, stream).start(job_dir=area.jobs, job_name=name, trigger=TRIGGER)
        job.process_all_available()
    finally:
        for handle in handles:
            handle.unregister()
    return job, seen


def _store_keys(job) -> set:
    frame = keyed_state_frame(job.spark, job.storage.path("checkpoint"), job.spec.key_names)
    return {row["k"] for row in frame.collect()}


@pytest.mark.core
@pytest.mark.parametrize("kind", ["reduce", pytest.param("aggregate", marks=pytest.mark.extended)])
def test_the_query_starts_during_the_backlog_and_reads_fresh_files_only_after_the_handover(area, kind):
    job, seen = _run(area, f"warm-{kind}", kind)
    try:
        assert seen["query_at_switch"]  # started while the backlog ran
        assert job.phase == "stream"
        events = job.events()
        kinds = [e["type"] for e in events]
        # the warm-up batch is not the job's: no micro-batch before the switch, and the file that landed
        # during the backlog is in the first one after it, each record once
        assert "micro_batch" not in kinds[:kinds.index("switch")]
        batches = [e for e in events if e["type"] == "micro_batch"]
        assert sum(e["input_rows"] for e in batches) == len(DURING) and batches[0]["input_rows"] == len(DURING)
        area.write(LATER, f"warm-{kind}")
        job.process_all_available()
        assert latest_rows(job) == expected_latest(model(kind, 0, BACKLOG, [DURING, LATER]), kind)
        assert _store_keys(job) == {1, 7, 2}  # the lazy seed: only the keys the stream met
    finally:
        job.stop()
