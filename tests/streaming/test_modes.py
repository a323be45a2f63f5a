"""mixed, stream and batch give the same per-key results as the reference model (Spark runs).

The inputs respect the spike's warning: the plain stream reads every backlog file in its first
micro-batch (no maxFilesPerTrigger), and each fresh file lands after the previous one was
processed, so every mode sees the same micro-batches after the backlog.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fw_magics as fw
from tests.streaming import functions
from tests.streaming.files import TRIGGER, expected_latest, fired_timers, latest_rows, model, model_timers, operator

pytestmark = [pytest.mark.spark]

# Whole seconds around a few keys: records land on watermarks and timers (GAP 4 s) on each other.
rows = st.tuples(st.integers(0, 3), st.integers(0, 9), st.integers(0, 20))
files = st.lists(rows, min_size=1, max_size=6)


def run(area, kind, mode, delay_ms, backlog, fresh, name):
    source = area.source(name)
    for f in backlog:
        area.write(f, name)
    stream = fw.from_files(source, "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay=f"{delay_ms} milliseconds")
    job = operator(kind, stream).start(job_dir=area.jobs, job_name=name, mode=mode, trigger=TRIGGER)
    try:
        job.process_all_available()
        for f in fresh:
            area.write(f, name)
            job.process_all_available()
        return job, latest_rows(job), (fired_timers(job) if kind == "process" else None)
    finally:
        job.stop()


@pytest.mark.parametrize("mode", ["mixed", "batch"])
def test_an_empty_folder_is_an_empty_backlog_then_its_files_are_fresh(area, mode):
    """Spark runs no task over a backlog it knows is empty; every subtask still commits its (empty) result."""
    fresh = [[(1, 2, 3), (2, 5, 4)], [(1, 1, 9)]]
    job, got, _ = run(area, "aggregate", mode, 0, [], fresh if mode == "mixed" else [], f"empty-{mode}")
    assert job.phase == ("stopped" if mode == "mixed" else "finished") and job.backlog_state_writes == 0
    assert got == expected_latest(model("aggregate", 0, [], fresh if mode == "mixed" else []), "aggregate")


@pytest.mark.core
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["reduce", "aggregate", "process"]), backlog=st.lists(files, min_size=1, max_size=2),
       fresh=st.lists(files, max_size=2), delay=st.sampled_from([0, 2000, 5000]))
def test_mixed_stream_and_batch_agree_with_the_model(area, kind, backlog, fresh, delay):
    full, bounded = model(kind, delay, backlog, fresh), model(kind, delay, backlog, [])
    tag = f"{kind}-{area.count}"
    mixed, got_mixed, timers_mixed = run(area, kind, "mixed", delay, backlog, fresh, f"mixed-{tag}")
    _, got_stream, timers_stream = run(area, kind, "stream", delay, backlog, fresh, f"stream-{tag}")
    _, got_batch, timers_batch = run(area, kind, "batch", delay, backlog, [], f"batch-{tag}")
    assert got_mixed == got_stream == expected_latest(full, kind)
    assert got_batch == expected_latest(bounded, kind)
    if kind == "process":
        assert timers_mixed == timers_stream == model_timers(full)
        assert timers_batch == model_timers(bounded)
    keys = {r[0] for f in backlog for r in f}
    assert 0 < mixed.backlog_state_writes <= len(keys)
